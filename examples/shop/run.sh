#!/usr/bin/env bash
# The shop case study end to end against a running rmq (or Apache RocketMQ) cluster:
#
#   rmq standalone &                      # or any cluster; RMQ_NAMESRV names its name server
#   examples/shop/run.sh                  # prints the shop's final state as JSON
#
# Three orders: A is paid (a transactional message), B fails half way (an order_cancel message
# rolls every service back), C is never paid (its delayed order_timeout message cancels it).
# Then B's cancel message is sent again with `rmq consume | rmq produce`, and every service
# skips the duplicate.  SHOP_CANCEL_LEVEL is the delay level of the time-out (3: 10 s with
# the broker's default messageDelayLevel); SHOP_DIR keeps the databases and service logs.
# SHOP_CHECK_BACK=1 pays A with the transaction's outcome withheld, so the broker's check-back
# (after transactionTimeOut, every transactionCheckInterval: a minute by default) commits it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export RMQ_NAMESRV=${RMQ_NAMESRV:-127.0.0.1:9876}
dir=${SHOP_DIR:-$(mktemp -d -t shop.XXXXXX)}
level=${SHOP_CANCEL_LEVEL:-3}
python=${PYTHON:-python3}

shop() { "$python" "$here/shop.py" "$@"; }
field() { "$python" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
say() { echo "shop: $*" >&2; }

say "topics and databases in $dir"
rmq topic update orderTopic -o json >/dev/null
rmq topic update payTopic -o json >/dev/null
shop setup "$dir"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for service in goods coupon user order; do
    # python itself in the background (not the shell function), so $! is its pid
    "$python" "$here/shop.py" serve "$dir" "$service" >"$dir/$service.log" 2>&1 &
    pids+=($!)
done
services=(goods coupon user order)
for i in "${!services[@]}"; do
    service=${services[$i]}
    for _ in $(seq 600); do
        grep -q '"ready": true' "$dir/$service.log" && break
        kill -0 "${pids[$i]}" 2>/dev/null || { cat "$dir/$service.log" >&2; exit 1; }
        sleep 0.1
    done
    grep -q '"ready": true' "$dir/$service.log" || { say "$service did not start"; exit 1; }
done

say "order A: 2 phones, coupon 1, 500 from the balance, then paid"
a=$(shop order "$dir" --user 1 --goods 1 --number 2 --coupon 1 --money 500 \
    --cancel-level "$level" | field orderId)
shop pay "$dir" "$a" ${SHOP_CHECK_BACK:+--answer-by-check} >&2
shop wait "$dir" --order "$a" --status paid

say "order B: fails after its last step; the cancel message rolls it back"
b=$( (shop order "$dir" --user 1 --goods 1 --number 1 --coupon 2 --money 300 \
    --fail-at confirm || true) | field orderId)
shop wait "$dir" --order "$b" --status cancelled
shop wait "$dir" --key "$b" --count 4

say "order C: never paid; its time-out cancels it"
c=$(shop order "$dir" --user 1 --goods 1 --number 3 --coupon 3 --money 200 \
    --cancel-level "$level" | field orderId)
shop wait "$dir" --order "$c" --status cancelled --timeout 120
shop wait "$dir" --key "$c" --count 4
shop wait "$dir" --key "$a" --tag order_timeout --timeout 120

say "B's cancel message, as the broker has it:"
rmq message by-key orderTopic "$b" -o json >&2
say "sending it again: every service skips the duplicate"
rmq consume orderTopic --from first -e --filter order_cancel | grep "\"$b\"" |
    rmq produce orderTopic >/dev/null
shop wait "$dir" --key "$b" --count 4 --duplicates

shop show "$dir"
