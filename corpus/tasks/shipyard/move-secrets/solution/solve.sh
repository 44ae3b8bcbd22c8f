#!/usr/bin/env bash
set -eu
# drop the plain-text env block (it is the last section) and append lockers
sed -i '/^env:/,$d' shipyard.yaml
cat >> shipyard.yaml <<'YAML'
lockers:
  - env: DKIM_PRIVATE_KEY
    ref: vault://comms/mail-relay/dkim-private-key
  - env: SMTP_PASSWORD
    ref: vault://comms/mail-relay/smtp-password
YAML
