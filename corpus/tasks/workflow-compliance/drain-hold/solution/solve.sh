#!/usr/bin/env bash
set -eu
cat > commands.txt <<'CMDS'
tidectl --ticket CHG-6630 drain cart-api --drain-window 25m --target cell-use-2 --hold
CMDS
