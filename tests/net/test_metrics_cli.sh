#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The metrics endpoint of percore echo and percore stat, end to end: their
# contract (help, usage errors, exit codes), promtool's verdict on the
# exposition, series holding exactly the load sent (percore load
# --messages), /health and /ready, and percore stat's table and JSON.
# Loopback only; every wait is woken by its event and bounded in seconds
# (metrics_echo.sh), so that it passes quickly with every CPU busy.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
tmp=$(mktemp -d)
fail=0
pid=""
# Only jobs still running: a pid that ended may be another test's process by now.
cleanup() { kill -9 $(jobs -pr) 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
slow=1; [ -n "${PC_SANITIZE:-}" ] && slow=4

ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
check() { # expected-status description command...
  local want=$1 what=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" -ne "$want" ]; then bad "$what: exit $got, want $want"; cat "$tmp/out" "$tmp/err"
  else ok "$what"; fi
}
# GET a path of the endpoint: prints the status (000: no answer), the
# body into $tmp/body.
get() {
  curl -s -o "$tmp/body" -w '%{http_code}' --max-time 20 "http://127.0.0.1:$mport$1"
}
# The sum over shards of a series in $tmp/body.
total() { awk -v n="$1" '$1 ~ "^"n"({|$)" { s += $2 } END { printf "%d\n", s }' "$tmp/body"; }

# ---- contract ------------------------------------------------------------------
check 0 "stat --help" "$pc" stat --help
check 2 "stat without an endpoint" "$pc" stat
for args in "nohost" "example.com:80" "127.0.0.1:0" "127.0.0.1:70000" "--interval 0 :9" \
            "--count 0 :9" "--nope :9" ":9 :10" "--interval"; do
  # shellcheck disable=SC2086
  check 2 "stat $args is a usage error" "$pc" stat $args
done
grep -q "HOST:PORT" "$tmp/err" || grep -q "needs a value" "$tmp/err" || bad "usage errors say why"
check 1 "stat of a closed port fails" "$pc" stat --once 127.0.0.1:1
grep -q "cannot connect" "$tmp/err" && ok "and says it cannot connect" || bad "no reason given"
check 2 "echo --metrics-port x" "$pc" echo --metrics-port x
check 2 "echo --metrics-host name" "$pc" echo --metrics-host metrics.example --metrics-port 0

# ---- a server with metrics ----------------------------------------------------------
# shellcheck source=tests/net/metrics_echo.sh
. "$(dirname "$0")/metrics_echo.sh"
start_metrics_echo --drain 120 || exit 1
ok "echo serves metrics on 127.0.0.1:$mport"

[ "$(get /health)" = 200 ] && ok "/health 200" || bad "/health"
[ "$(get /ready)" = 200 ] && ok "/ready 200 once listening" || bad "/ready"
[ "$(get /nope)" = 404 ] && ok "/nope 404" || bad "/nope"

msgs=3000; conns=6
check 0 "load of $msgs messages over $conns connections" \
  timeout $((60 * slow)) "$pc" load --port "$port" --conns $conns --depth 4 --messages $msgs
[ "$(get /metrics)" = 200 ] || bad "/metrics"
if promtool check metrics <"$tmp/body" >"$tmp/promtool" 2>&1; then ok "promtool check metrics"
else bad "promtool check metrics"; cat "$tmp/promtool"; fi
got=$(total percore_frames_received_total)
[ "$got" = "$msgs" ] && ok "frames received: $got" || bad "frames received $got, want $msgs"
got=$(total percore_frames_sent_total)
[ "$got" = "$msgs" ] && ok "frames sent: $got" || bad "frames sent $got, want $msgs"
got=$(total percore_sessions_accepted_total)
[ "$got" = "$conns" ] && ok "sessions accepted: $got" || bad "accepted $got, want $conns"
got=$(total percore_request_duration_seconds_count)
[ "$got" = "$msgs" ] && ok "latency histogram counts $got" || bad "histogram counts $got"
grep -q '^percore_reactor_busy_seconds_total{shard="1"} ' "$tmp/body" && ok "per-shard reactor time" ||
  bad "no reactor time for shard 1"
grep -q '^percore_process_resident_memory_bytes [1-9]' "$tmp/body" && ok "process RSS" || bad "RSS"
for series in percore_stalls_total percore_log_dropped_total; do
  grep -q "^$series{shard=\"1\"} [0-9]" "$tmp/body" && ok "$series per shard" ||
    bad "no $series for shard 1"
done

# percore stat while a load runs.
timeout $((60 * slow)) "$pc" load --port "$port" --conns 2 --depth 2 --duration $((3 * slow)) \
  >/dev/null 2>&1 &
lpid=$!
# Until both of its sessions are in (the endpoint is all there is to ask).
deadline=$((SECONDS + 30 * slow))
until { [ "$(get /metrics)" = 200 ] && [ "$(total percore_sessions_accepted_total)" -ge $((conns + 2)) ]; } ||
      [ $SECONDS -ge $deadline ]; do sleep 0.02; done
check 0 "stat --once --json" timeout $((30 * slow)) "$pc" stat --once --json --interval 500ms "127.0.0.1:$mport"
if jq -e '(.shards | length) == 2 and .all.sessions == 2 and .all.frames_per_s > 0
          and .all.utilization >= 0 and .all.utilization <= 1 and .rss_bytes > 0' \
     "$tmp/out" >/dev/null; then ok "stat JSON: 2 shards, 2 sessions, frames flowing"
else bad "stat JSON"; cat "$tmp/out"; fi
check 0 "stat --count 2 (table)" timeout $((30 * slow)) "$pc" stat --count 2 --interval 300ms "127.0.0.1:$mport"
[ "$(grep -c '^  all ' "$tmp/out")" = 2 ] && ok "two refreshes, each with its total row" ||
  { bad "stat table"; cat "$tmp/out"; }
wait "$lpid"

# Draining: /ready 503 while the server finishes (a client holds it open;
# --drain 120 above keeps it draining however long a loaded machine takes
# to look). The server says it drains just before it starts to, so /ready
# turns within moments of that line.
exec 3<>/dev/tcp/127.0.0.1/"$port"
kill -TERM "$pid"
ready=""
if wait_line "$tmp/echo.err" 'draining' $((15 * slow)) "$pid"; then
  deadline=$((SECONDS + 10 * slow))
  until ready=$(get /ready); [ "$ready" = 503 ] || [ $SECONDS -ge $deadline ]; do sleep 0.01; done
fi
[ "$ready" = 503 ] && ok "/ready 503 while draining" || bad "/ready $ready while draining"
exec 3>&-
if wait_exit "$pid" $((30 * slow)); then
  wait "$pid"; rc=$?
else
  kill -9 "$pid"; wait "$pid" 2>/dev/null; rc="still running after $((30 * slow)) s"
fi
pid=""
[ "$rc" = 0 ] && ok "echo exits 0" || bad "echo exit $rc"
exit $fail
