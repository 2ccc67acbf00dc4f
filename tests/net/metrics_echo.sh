# SPDX-License-Identifier: MIT
# Sourced by the metrics script tests: start percore echo with its metrics
# endpoint on loopback, two shards, ports chosen by the kernel.
# Needs pc, tmp and slow; sets pid, port (echo) and mport (metrics);
# returns 1 (with echo's stderr shown) when it did not start in time.
start_metrics_echo() {
  "$pc" echo --host 127.0.0.1 --port 0 --shards 2 --oversubscribe --policy off \
    --idle-policy sleep --metrics-port 0 >"$tmp/echo.out" 2>"$tmp/echo.err" &
  pid=$!
  port=""; mport=""
  for _ in $(seq 1 $((100 * slow))); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/echo.err")
    mport=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/echo.err")
    [ -n "$port" ] && [ -n "$mport" ] && return 0
    sleep 0.05
  done
  echo "FAIL: echo did not say where it listens"; cat "$tmp/echo.err"
  return 1
}
