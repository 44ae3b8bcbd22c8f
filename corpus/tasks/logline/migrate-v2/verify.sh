#!/usr/bin/env bash
# Pass iff converted.log holds exactly the three events in the current (v3) line format.
set -u
f=converted.log
if [ ! -f "$f" ]; then echo "FAIL: converted.log is missing"; exit 1; fi
expected=$(cat <<'EXPECTED'
{"at":1709632800250,"sev":"S4","svc":"cart-api","evt":"cart.checkout.started","msg":"Checkout started","ctx":{"cart_id":"c-55","user_id":"u-981"}}
{"at":1709632802000,"sev":"S3","svc":"cart-api","evt":"cart.payment.retried","msg":"Payment provider timeout, retrying","ctx":{"attempt":1,"retry_in_ms":2000}}
{"at":1709632809731,"sev":"S2","svc":"cart-api","evt":"cart.payment.failed","msg":"Payment failed after retries","ctx":{"attempts":3,"provider":"paygate"}}
EXPECTED
)
got=$(grep -v '^[[:space:]]*$' "$f" || true)
if [ "$got" = "$expected" ]; then echo "PASS"; exit 0; fi
echo "FAIL: converted.log is not the expected v3 conversion"
n=0
while IFS= read -r line; do
  n=$((n + 1))
  want=$(printf '%s\n' "$expected" | sed -n "${n}p")
  [ "$line" = "$want" ] || echo "line $n differs: $line"
done <<< "$got"
exit 1
