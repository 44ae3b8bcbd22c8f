#!/usr/bin/env bash
set -eu
cat > events.redacted.jsonl <<'LOG'
{"at":1718900000000,"sev":"S4","svc":"signup-api","evt":"signup.account.created","msg":"Account created","ctx":{"email":"<pii:email>","plan":"pro","user_id":"u-1"}}
{"at":1718900000450,"sev":"S3","svc":"signup-api","evt":"signup.sms.deferred","msg":"SMS provider busy","ctx":{"contact_phone":"<pii:contact_phone>","ip":"<pii:ip>","retry_in_ms":5000}}
{"at":1718900001200,"sev":"S2","svc":"signup-api","evt":"signup.card.declined","msg":"Card declined","ctx":{"attempts":2,"billing_email":"<pii:billing_email>","card_number":"<pii:card_number>","phone_verified":true}}
LOG
