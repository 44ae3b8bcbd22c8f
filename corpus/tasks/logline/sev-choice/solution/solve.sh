#!/usr/bin/env bash
set -eu
echo 'sev=S3 key=retry_in_ms'
