#!/usr/bin/env bash
set -eu
mkdir -p runbooks
cat > runbooks/stock-ledger.md <<'MD'
---
service: stock-ledger
crew: crew-inventory
sev-floor: AMBER
pager: pd://inventory-primary
reviewed: 2025-02-10
---
# Runbook: stock-ledger

## Signals
- `StockLedgerLagHigh`: replication lag to the reporting replica is above 5 minutes
- `StockLedgerWriteErrors`: more than 1% of ledger writes are failing

## First five minutes
1. Check the ledger dashboard for replication lag and write errors.
2. Check whether the nightly reconciliation job is running.

## Mitigations
### M1 Restart the ledger consumers [safe]
Roll the consumer deployment and watch the lag graph.

### M2 Replay the dead-letter queue [risky]
Re-applies the failed ledger writes; coordinate with the inventory team first.

### M3 Fail over writes to the standby region [risky]
Only with the incident lead's approval.

## Escalation ladder
| step | page | after |
|------|------|-------|
| E1 | pd://inventory-primary | 0m |
| E2 | pd://inventory-secondary | 30m |
| E3 | pd://inventory-lead | 90m |

## Afterwards
- File the incident review within two business days.
MD
