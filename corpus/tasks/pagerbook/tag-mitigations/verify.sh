#!/usr/bin/env bash
# Pass iff the ### mitigation headings are numbered and tagged per the runbook format,
# and the rest of the runbook is unchanged.
set -u
f=runbooks/search-gw.md
if [ ! -f "$f" ]; then echo "FAIL: $f is missing"; exit 1; fi
expected=$(cat <<'EXPECTED'
### M1 Restart the query pods [safe]
### M2 Flush the result cache [safe]
### M3 Fail over to the secondary region [risky]
### M4 Purge stale index shards [risky]
### M5 Scale out the query tier [safe]
EXPECTED
)
got=$(grep '^###' "$f" | sed 's/[[:space:]]*$//')
if [ "$got" != "$expected" ]; then
  echo "FAIL: mitigation headings are not right:"; printf '%s\n' "$got"; exit 1
fi
# everything except the ### lines must be as before
sig=$(grep -v '^###' "$f" | grep -v '^[[:space:]]*$' | cksum)
want_sig=$(cat <<'ORIG' | grep -v '^###' | grep -v '^[[:space:]]*$' | cksum
---
service: search-gw
crew: crew-discovery
sev-floor: RED-2
pager: pd://discovery-primary
reviewed: 2024-11-18
---
# Runbook: search-gw
## Signals
- `SearchGwLatencyHigh`: p99 latency above 800 ms for 10 minutes
- `SearchGwErrorRate`: more than 1% of queries fail
## First five minutes
1. Check the search-gw dashboard for latency by cell.
2. Check the index freshness panel.
## Mitigations
Rolling restart, one cell at a time.
Use the admin endpoint; the cache warms up again within minutes.
Only with the incident lead's approval.
Deletes the shards older than the last good build; they are rebuilt overnight.
Add replicas until p99 recovers.
## Escalation ladder
| step | page | after |
|------|------|-------|
| E1 | pd://discovery-primary | 0m |
| E2 | pd://discovery-secondary | 10m |
| E3 | pd://ic-rotation | 20m |
## Afterwards
- File the incident review within two business days.
ORIG
)
if [ "$sig" != "$want_sig" ]; then echo "FAIL: other parts of the runbook changed"; exit 1; fi
echo "PASS"
exit 0
