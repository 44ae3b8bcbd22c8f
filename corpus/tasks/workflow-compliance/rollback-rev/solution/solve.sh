#!/usr/bin/env bash
set -eu
cat > commands.txt <<'CMDS'
tidectl --ticket CHG-6645 rollback ledger-api --to-rev r041
CMDS
