#!/usr/bin/env bash
set -eu
cat > converted.log <<'LOG'
{"at":1709632800250,"sev":"S4","svc":"cart-api","evt":"cart.checkout.started","msg":"Checkout started","ctx":{"cart_id":"c-55","user_id":"u-981"}}
{"at":1709632802000,"sev":"S3","svc":"cart-api","evt":"cart.payment.retried","msg":"Payment provider timeout, retrying","ctx":{"attempt":1,"retry_in_ms":2000}}
{"at":1709632809731,"sev":"S2","svc":"cart-api","evt":"cart.payment.failed","msg":"Payment failed after retries","ctx":{"attempts":3,"provider":"paygate"}}
LOG
