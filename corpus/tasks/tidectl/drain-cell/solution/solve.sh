#!/usr/bin/env bash
set -eu
cat > commands.txt <<'CMDS'
tidectl --ticket CHG-5521 drain orders-api --drain-window 15m --target cell-usw-1
CMDS
