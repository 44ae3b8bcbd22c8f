#!/usr/bin/env bash
# Pass iff commands.txt holds exactly the strict schema-3 lint command for the manifest.
set -u
f=commands.txt
if [ ! -f "$f" ]; then echo "FAIL: commands.txt is missing"; exit 1; fi
want='shipyard lint --schema 3 --warnings-as-errors deploy/risk/shipyard.yaml'
lines=$(grep -v '^[[:space:]]*$' "$f" | grep -v '^[[:space:]]*#' | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
n=$(printf '%s\n' "$lines" | grep -c . || true)
if [ "$n" != "1" ]; then echo "FAIL: expected exactly one command line, found $n"; exit 1; fi
if [ "$lines" != "$want" ]; then
  echo "FAIL: got:  $lines"
  echo "      want: <the strict schema-3 lint command, flags before the path>"
  exit 1
fi
echo "PASS"
exit 0
