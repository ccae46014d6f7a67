#!/usr/bin/env bash
# The abuse and security checks of contract section 9, from outside the code, against a running
# `PORT=4000 npm run demo` (curl from several loopback source addresses; needs the demo's .data/runtime.json for
# `npm run users`). Prints one row per attack.
B=http://127.0.0.1:4000
J='content-type: application/json'
row() { printf '%s\t%s\n' "$1" "$2"; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# 1. C22: rotate X-Forwarded-For on 30 failed sign-ins for one email, then the owner from another address.
s=""; for i in $(seq 1 30); do s+="$(code -H "$J" -H "X-Forwarded-For: 10.9.$i.$i" -d '{"email":"demo@example.com","password":"wrong-guess-'$i'"}' $B/api/auth/sign-in/email) "; done
row "C22 30 sign-ins rotating XFF" "$(echo $s | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"
row "C22 owner from 127.0.0.2" "$(code --interface 127.0.0.2 -H "$J" -d '{"email":"demo@example.com","password":"demo-password-1"}' $B/api/auth/sign-in/email)"

# 2. Page doors: password spray and mass sign-up through the server actions (no JS, multipart), from 127.0.0.3.
A=$(curl -s --interface 127.0.0.3 $B/sign-in | grep -o 'name="\$ACTION_ID_[0-9a-f]*"' | head -1 | cut -d'"' -f2)
s=""; for i in $(seq 1 105); do s+="$(curl -s -o /dev/null -w '%{redirect_url}' --interface 127.0.0.3 -H "Origin: $B" -F "$A=" -F "email=spray$i@example.com" -F "password=Summer2026!x" $B/sign-in | sed 's/.*error=//') "; done
row "spray 105 emails via sign-in page, one address" "$(echo $s | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"
U=$(curl -s --interface 127.0.0.4 $B/sign-up | grep -o 'name="\$ACTION_ID_[0-9a-f]*"' | head -1 | cut -d'"' -f2)
s=""; for i in $(seq 1 30); do s+="$(curl -s -o /dev/null -w '%{redirect_url}' --interface 127.0.0.4 -H "Origin: $B" -F "$U=" -F "email=mass$RANDOM$i@example.com" -F "password=long-enough-password" $B/sign-up | sed 's#http://127.0.0.1:4000##') "; done
row "30 sign-ups via page, one address" "$(echo $s | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"

# 3. Lock-out: 5 wrong from 127.0.0.5, then the owner (admin) from 127.0.0.6.
for i in 1 2 3 4 5 6; do code --interface 127.0.0.5 -H "$J" -d '{"email":"admin@example.com","password":"nope-'$i'"}' $B/api/auth/sign-in/email >/dev/null; done
row "lock-out: owner after 6 foreign failures" "$(code --interface 127.0.0.6 -H "$J" -d '{"email":"admin@example.com","password":"admin-password-1"}' $B/api/auth/sign-in/email)"

# 4. Headers / framing.
H=$(curl -s -D - -o /dev/null $B/sign-in)
row "page headers" "$(echo "$H" | grep -iE '^(x-frame-options|x-content-type-options|referrer-policy|x-powered-by):' | tr -d '\r' | tr '\n' ' ') csp-frame-ancestors=$(echo "$H" | grep -io "frame-ancestors 'none'" | head -1) nonce=$(echo "$H" | grep -o "'nonce-[^']*' 'strict-dynamic'" | head -1 | cut -c1-12)… unsafe-eval=$(echo "$H" | grep -c unsafe-eval)"
H=$(curl -s -D - -o /dev/null $B/api/v1/health)
row "API headers" "$(echo "$H" | grep -iE '^(x-frame-options|x-content-type-options|content-security-policy|x-powered-by):' | tr -d '\r' | tr '\n' ' ')"

# 5. C23 and server actions from another origin (the admin's real cookie).
C=$(curl -s -D - -o /dev/null --interface 127.0.0.6 -H "$J" -d '{"email":"admin@example.com","password":"admin-password-1"}' $B/api/auth/sign-in/email | grep -i '^set-cookie' | sed 's/^[^:]*: \([^;]*\);.*/\1/')
row "C23 text/plain body-less POST /admin/reconcile from :4002" "$(curl -s -w ' %{http_code}' -X POST -H "Cookie: $C" -H 'Origin: http://127.0.0.1:4002' -H 'Sec-Fetch-Site: same-site' -H 'content-type: text/plain' $B/api/v1/admin/reconcile | sed 's/.*"code":"\([a-z_]*\)".*\( [0-9]*\)$/\1\2/')"
row "same request from the app's origin" "$(code -X POST -H "Cookie: $C" -H "Origin: $B" $B/api/v1/admin/reconcile)"
row "server action with foreign Origin" "$(code --interface 127.0.0.7 -H 'Origin: http://127.0.0.1:4002' -H 'Sec-Fetch-Site: same-site' -F "$A=" -F email=a@b.c -F password=x $B/sign-in)"

# 6. 300 payments in a burst (one user, fresh order ids) and 200 copies of one new order.
T=$(printf 'attack-password-1' | npm run -s users -- create --email "burst$RANDOM@example.com" --password-stdin --token 2>/dev/null | tail -n 1)
s=$(seq 1 300 | xargs -P 50 -I{} curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $T" -H "$J" -d '{"orderId":"o-{}-'$RANDOM'","amount":1}' $B/api/v1/payments | sort | uniq -c | tr '\n' ' ')
row "300 new payments in a burst" "$s"
T2=$(printf 'attack-password-1' | npm run -s users -- create --email "dup$RANDOM@example.com" --password-stdin --token 2>/dev/null | tail -n 1)
s=$(seq 1 200 | xargs -P 50 -I{} curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $T2" -H "$J" -d '{"orderId":"same-order","amount":1}' $B/api/v1/payments | sort | uniq -c | tr '\n' ' ')
row "200 copies of one new payment" "$s"

# 7. better-auth's own sign-up endpoint with oversized fields.
N=$(python3 -c "print('n'*1000000)")
row "sign-up name 1,000,000 chars" "$(printf '{"email":"big%s@example.com","password":"long-enough-password","name":"%s"}' $RANDOM "$N" | curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.8 -H "$J" --data-binary @- $B/api/auth/sign-up/email)"
row "sign-up email 309 chars" "$(curl -s --interface 127.0.0.8 -H "$J" -d "{\"email\":\"$(python3 -c "print('a'*297)")@example.com\",\"password\":\"long-enough-password\",\"name\":\"A\"}" $B/api/auth/sign-up/email)"
row "/api/auth/update-user" "$(code -H "$J" -d '{"name":"x"}' $B/api/auth/update-user)"

# 8. C24 and unknown paths / methods.
row "GET /api/v1/topups/%ZZ" "$(curl -s -w ' %{http_code} %{content_type}' $B/api/v1/topups/%ZZ | sed 's/.*"code":"\([a-z_]*\)"}/\1/')"
row "GET /admin/topups/%E0%A4%A/x" "$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$B/admin/topups/%E0%A4%A/x")"
row "GET /api/v1/nope" "$(curl -s -o /dev/null -w '%{http_code} %{content_type}' $B/api/v1/nope)"
row "DELETE /api/v1/wallet" "$(curl -s -D - -o /dev/null -X DELETE $B/api/v1/wallet | grep -iE '^(HTTP|allow|content-type)' | tr -d '\r' | tr '\n' ' ')"
