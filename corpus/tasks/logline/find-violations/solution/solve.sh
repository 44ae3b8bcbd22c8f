#!/usr/bin/env bash
set -eu
printf '%s\n' 2 4 5 7 8 9 10 12 > violations.txt
