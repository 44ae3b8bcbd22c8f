#!/usr/bin/env bash
set -eu
printf '%s\n' 'shipyard lint --schema 3 --warnings-as-errors deploy/risk/shipyard.yaml' > commands.txt
