# SPDX-License-Identifier: MIT
# Sourced by the metrics script tests: start percore echo with its metrics
# endpoint on loopback, two shards, ports chosen by the kernel.
# Needs pc, tmp and slow; sets pid, port (echo) and mport (metrics);
# returns 1 (with echo's stderr shown) when it did not start in time.
# Every wait here is woken by the event it waits for (a line written, a
# process ending) and bounded in wall-clock seconds, so that a loaded
# machine makes it slower, never longer than its bound.

# wait_line FILE REGEX SECONDS [WRITER]: 0 once a line of FILE (from its
# start) matches REGEX, 1 when SECONDS pass first or the process WRITER
# ends without writing it. tail -F wakes on each write.
wait_line() {
  local fd tpid rc
  exec {fd}< <(exec timeout "$3" tail -n +1 -F ${4:+--pid="$4"} "$1" 2>/dev/null)
  tpid=$!
  grep -q -m1 -E "$2" <&"$fd"; rc=$?
  kill "$tpid" 2>/dev/null
  exec {fd}<&-
  return $rc
}

# wait_exit PID SECONDS: 0 once PID (a child of this shell) has ended,
# 1 when SECONDS pass first; its status is then `wait PID`'s.
wait_exit() {
  timeout "$2" tail -s 0.05 --pid="$1" -f /dev/null 2>/dev/null
  ! kill -0 "$1" 2>/dev/null
}

# start_metrics_echo [ECHO-OPTION...]
start_metrics_echo() {
  "$pc" echo --host 127.0.0.1 --port 0 --shards 2 --oversubscribe --policy off \
    --idle-policy sleep --metrics-port 0 "$@" >"$tmp/echo.out" 2>"$tmp/echo.err" &
  pid=$!
  port=""; mport=""
  if wait_line "$tmp/echo.err" 'listening on 127\.0\.0\.1:[0-9]+' $((15 * slow)) "$pid" &&
     wait_line "$tmp/echo.err" 'metrics on http://127\.0\.0\.1:[0-9]+/metrics' $((15 * slow)) "$pid"; then
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/echo.err")
    mport=$(sed -n 's|.*metrics on http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$tmp/echo.err")
    return 0
  fi
  echo "FAIL: echo did not say where it listens"; cat "$tmp/echo.err"
  return 1
}
