#!/usr/bin/env bash
set -eu
f=runbooks/ticket-hub.md
sed -i 's#^| E2 | pd://support-secondary | 15m |$#| E2 | pd://support-secondary | 10m |#' "$f"
sed -i 's#^| E3 | pd://support-lead | 30m |$#| E3 | pd://ic-rotation | 20m |#' "$f"
