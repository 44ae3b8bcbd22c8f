#!/usr/bin/env bash
set -eu
echo '/incident open sev:RED-1 svc:checkout lead:@mira "checkout unusable in eu-west and us-east"'
