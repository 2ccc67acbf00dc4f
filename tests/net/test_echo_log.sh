#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore echo's log options and crash report: usage errors with a reason
# for a bad --log-level, --log-format or --stall-threshold, a log file
# that cannot be opened refused, JSON lines in the file at --log-level
# debug, the file reopened on SIGHUP after it was moved, and a SIGSEGV
# that prints the report and still ends the process by SIGSEGV.
# Loopback only; every wait bounded.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
tmp=$(mktemp -d)
fail=0
pid=
# Only jobs still running: a pid that ended may be another test's process by now.
cleanup() { kill -9 $(jobs -pr) 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
slow=1; [ -n "${PC_SANITIZE:-}" ] && slow=4
ulimit -c 0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

for opt in "--log-level loud" "--log-format xml" "--stall-threshold x" "--stall-threshold -1" \
           "--log-file"; do
  # shellcheck disable=SC2086
  "$pc" echo $opt >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ "$rc" -eq 2 ] && [ -s "$tmp/err" ]; then ok "echo $opt: usage error"
  else bad "echo $opt: exit $rc, want 2 with a reason"; cat "$tmp/err"; fi
done
"$pc" echo --port 0 --log-file "$tmp/no/such/dir.log" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -eq 1 ] && grep -q "cannot open the log file .*No such file" "$tmp/err"; then
  ok "an unopenable log file is refused with its reason"
else bad "unopenable log file: exit $rc"; cat "$tmp/err"; fi

# Start a server; sets pid once it listens.
start_echo() { # stderr-file options...
  local err=$1; shift
  "$pc" echo --host 127.0.0.1 --port 0 --policy off --idle-policy sleep --shards 2 \
    --oversubscribe "$@" >"$tmp/stdout" 2>"$err" &
  pid=$!
  for _ in $(seq 1 $((100 * slow))); do
    grep -q "listening on" "$err" && return 0
    sleep 0.05
  done
  bad "echo did not start"; cat "$err"; return 1
}
wait_for() { # file pattern
  for _ in $(seq 1 $((100 * slow))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

log="$tmp/echo.log"
if start_echo "$tmp/err" --log-file "$log" --log-format json --log-level debug; then
  if wait_for "$log" '"msg":"engine started"' &&
     jq -e 'select(.msg == "engine started") | .level == "debug" and .shards == 2' "$log" >/dev/null
  then ok "JSON lines in the log file"; else bad "no JSON start line"; cat "$log"; fi
  mv "$log" "$log.1"
  kill -HUP "$pid"
  kill -TERM "$pid"
  wait "$pid"; rc=$?; pid=
  [ "$rc" -eq 0 ] && ok "exits 0 after SIGHUP and SIGTERM" || bad "exit $rc after SIGHUP"
  if grep -q '"msg":"engine stopped"' "$log" && ! grep -q '"engine stopped"' "$log.1"; then
    ok "SIGHUP reopened the moved log file"
  else bad "SIGHUP did not reopen the log"; cat "$log.1" "$log" 2>&1; fi
fi

# ASan's own SIGSEGV handler would report instead (the report leaves it).
if ASAN_OPTIONS=handle_segv=0 start_echo "$tmp/crash.err"; then
  kill -SEGV "$pid"
  wait "$pid"; rc=$?; pid=
  if [ "$rc" -eq $((128 + 11)) ]; then ok "SIGSEGV still ends it by SIGSEGV"
  else bad "exit $rc after SIGSEGV, want 139"; fi
  if grep -q "^percore: fatal signal SIGSEGV (11), .*pid [0-9]*$" "$tmp/crash.err" &&
     grep -q "^backtrace:$" "$tmp/crash.err"; then ok "the crash report was printed"
  else bad "no crash report"; cat "$tmp/crash.err"; fi
fi
exit $fail
