#!/usr/bin/env bash
# Pass iff commands.txt holds exactly these command lines, in this order
# (blank lines and lines starting with # are ignored; surrounding spaces trimmed).
set -u
f=commands.txt
if [ ! -f "$f" ]; then echo "FAIL: commands.txt is missing"; exit 1; fi
expected=$(cat <<'EXPECTED'
tidectl --ticket CHG-6630 drain cart-api --drain-window 25m --target cell-use-2 --hold
EXPECTED
)
got=$(sed 's/^[[:space:]]*//; s/[[:space:]]*$//' "$f" | grep -v '^$' | grep -v '^#' || true)
if [ "$got" = "$expected" ]; then echo "PASS"; exit 0; fi
echo "FAIL: commands.txt does not match the expected command(s)."
echo "--- got ---"; printf "%s\n" "$got"
exit 1
