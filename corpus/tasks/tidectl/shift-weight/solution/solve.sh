#!/usr/bin/env bash
set -eu
cat > commands.txt <<'CMDS'
tidectl --ticket CHG-7710 shift search-gw --from cell-euw-1 --to cell-euw-2 --weight 35 --confirm=yes
CMDS
