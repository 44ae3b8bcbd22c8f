#!/usr/bin/env bash
set -eu
echo 'PARTNER=cell-apse-2 WINDOW=30m'
