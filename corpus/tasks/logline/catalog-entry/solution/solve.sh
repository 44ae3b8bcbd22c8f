#!/usr/bin/env bash
set -eu
cat >> events.catalog.yaml <<'YAML'
  signup.invite.sent:
    sev: S4
    owner: crew-growth
    since: "4.6.0"
    ctx_keys: [invite_id, invitee_email, inviter_id]
    pii: true
YAML
