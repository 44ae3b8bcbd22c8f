#!/usr/bin/env bash
# Pass iff violations.txt lists exactly the non-compliant line numbers of sample.log, ascending.
set -u
f=violations.txt
if [ ! -f "$f" ]; then echo "FAIL: violations.txt is missing"; exit 1; fi
expected='2 4 5 7 8 9 10 12'
got=$(sed 's/^[[:space:]]*//; s/[[:space:]]*$//' "$f" | grep -v '^$' | tr '\n' ' ' | sed 's/ $//')
if [ "$got" = "$expected" ]; then echo "PASS"; exit 0; fi
echo "FAIL: listed [$got]; that is not exactly the set of non-compliant lines (ascending, one per line)"
exit 1
