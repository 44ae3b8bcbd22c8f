#!/usr/bin/env bash
set -eu
echo 'SEVERITY: RED-2'
