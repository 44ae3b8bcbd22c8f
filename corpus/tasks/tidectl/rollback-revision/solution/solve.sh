#!/usr/bin/env bash
set -eu
cat > commands.txt <<'CMDS'
tidectl --ticket CHG-3080 rollback inventory-svc --to-rev r042
CMDS
