#!/usr/bin/env bash
set -eu
cat > commands.txt <<'CMDS'
tidectl --ticket CHG-4410 freeze --scope cell:cell-use-1 --for 4h
tidectl --ticket CHG-4410 shift checkout-web --from cell-use-1 --to cell-use-3 --weight 100 --confirm=yes
tidectl --ticket CHG-4410 drain checkout-web --drain-window 30m --target cell-use-1 --hold
CMDS
