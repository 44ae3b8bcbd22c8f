#!/usr/bin/env bash
set -eu
cat > commands.txt <<'CMDS'
tidectl --ticket CHG-9102 freeze --scope crew:payments --for 6h
CMDS
