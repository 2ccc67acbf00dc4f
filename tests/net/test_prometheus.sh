#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Prometheus server scrapes percore echo --metrics-port every second
# while percore load sends a known load; Prometheus's own HTTP query API
# must then give exactly that load: sessions accepted, frames received and
# sent, request count in the latency histogram, and the target up.
# Loopback only, storage in a temporary folder; every wait bounded.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
tmp=$(mktemp -d)
fail=0
# Only jobs still running: a pid that ended may be another test's process by now.
cleanup() { local p; for p in $(jobs -pr); do { kill -9 "$p"; wait "$p"; } 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
slow=1; [ -n "${PC_SANITIZE:-}" ] && slow=4
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
command -v prometheus >/dev/null || { echo "prometheus is not installed (scripts/deps.sh)"; exit 1; }

# shellcheck source=tests/net/metrics_echo.sh
. "$(dirname "$0")/metrics_echo.sh"
start_metrics_echo; started=$?
[ $started = 0 ] || exit 1

# A free loopback port for Prometheus's own web server.
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: percore
    static_configs:
      - targets: ['127.0.0.1:$mport']
YML
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$tmp/prom.log" 2>&1 &

# query EXPR: the scalar value of an instant query, or "" when none yet.
query() {
  python3 - "$pport" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
port, expr = sys.argv[1:]
try:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    r = json.load(urllib.request.urlopen(url, timeout=10))
    res = r["data"]["result"]
    print(res[0]["value"][1] if r["status"] == "success" and res else "")
except Exception:
    print("")
PY
}
# wait_for EXPR WANT: poll until the query gives WANT (Prometheus scrapes
# every second; a loaded machine may take a while).
wait_for() {
  local got=""
  for _ in $(seq 1 $((90 * slow))); do
    got=$(query "$1"); [ "$got" = "$2" ] && break; sleep 1
  done
  [ "$got" = "$2" ] && ok "$1 = $2" || bad "$1 is '$got', want $2"
}

wait_for 'up{job="percore"}' 1
msgs=4000; conns=8
"$pc" load --port "$port" --conns $conns --depth 4 --messages $msgs >"$tmp/load.out" 2>&1 ||
  { bad "load failed"; cat "$tmp/load.out"; }
wait_for 'sum(percore_sessions_accepted_total)' $conns
wait_for 'sum(percore_frames_received_total)' $msgs
wait_for 'sum(percore_frames_sent_total)' $msgs
wait_for 'sum(percore_request_duration_seconds_count)' $msgs
wait_for 'count(percore_reactor_busy_seconds_total)' 2
wait_for 'sum(percore_sessions_open)' 0
[ $fail = 0 ] || { echo "--- prometheus log"; tail -20 "$tmp/prom.log"; }
exit $fail
