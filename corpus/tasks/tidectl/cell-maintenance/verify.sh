#!/usr/bin/env bash
# Pass iff commands.txt holds exactly these command lines, in this order
# (blank lines and lines starting with # are ignored; surrounding spaces trimmed).
set -u
f=commands.txt
if [ ! -f "$f" ]; then echo "FAIL: commands.txt is missing"; exit 1; fi
expected=$(cat <<'EXPECTED'
tidectl --ticket CHG-4410 freeze --scope cell:cell-use-1 --for 4h
tidectl --ticket CHG-4410 shift checkout-web --from cell-use-1 --to cell-use-3 --weight 100 --confirm=yes
tidectl --ticket CHG-4410 drain checkout-web --drain-window 30m --target cell-use-1 --hold
EXPECTED
)
got=$(sed 's/^[[:space:]]*//; s/[[:space:]]*$//' "$f" | grep -v '^$' | grep -v '^#' || true)
if [ "$got" = "$expected" ]; then echo "PASS"; exit 0; fi
echo "FAIL: commands.txt does not match the expected command(s)."
echo "--- got ---"; printf "%s\n" "$got"
exit 1
