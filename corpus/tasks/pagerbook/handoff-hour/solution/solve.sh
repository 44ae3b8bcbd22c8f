#!/usr/bin/env bash
set -eu
echo 'UNKNOWN'
