#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# percore echo and percore load: their contract (help, usage errors with a
# reason, exit codes) and a run of each against the other: framed and raw,
# a count, idle sessions priced by the server, a frame that never
# completes, the statistics on SIGUSR1 and on exit after a graceful
# SIGTERM; --connect runs that end on time, more shards than CPUs only
# with --oversubscribe, a served port refused unless --reuseport-join; a
# server that closes mid-run is a reported error, not SIGPIPE.
# Loopback only; every wait bounded.
set -u
pc="$PC_BUILD_DIR/tools/percore/percore"
tmp=$(mktemp -d)
fail=0
# Only jobs still running: a pid waited for may be another test's process by now.
cleanup() { kill -9 $(jobs -pr) 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
slow=1; [ -n "${PC_SANITIZE:-}" ] && slow=4

check() { # expected-status description command...
  local want=$1 what=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: $what: exit $got, want $want"; cat "$tmp/out" "$tmp/err"; fail=1
  else
    echo "ok: $what"
  fi
}
expect() { # description jq-expression (true on the last output)
  if jq -e "$2" "$tmp/out" >/dev/null; then echo "ok: $1"
  else echo "FAIL: $1: $2"; cat "$tmp/out"; fail=1; fi
}

# Start an echo server; sets port and the server's pid.
start_echo() { # name options...
  local name=$1; shift
  "$pc" echo --host 127.0.0.1 --port 0 --policy off --idle-policy sleep "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" &
  pid=$!
  for _ in $(seq 1 $((100 * slow))); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$name.err")
    [ -n "$port" ] && return 0
    sleep 0.05
  done
  echo "FAIL: $name did not start"; cat "$tmp/$name.err"; fail=1; return 1
}
stop_echo() { # name
  kill -TERM "$pid"
  for _ in $(seq 1 $((200 * slow))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then echo "FAIL: $1 ignored SIGTERM"; fail=1; kill -9 "$pid"; fi
  wait "$pid"; local rc=$?
  [ "$rc" -eq 0 ] && echo "ok: $1 exits 0 after draining" || { echo "FAIL: $1 exit $rc"; fail=1; }
}

# ---- contract ---------------------------------------------------------------
check 0 "echo --help" "$pc" echo --help
check 0 "load --help" "$pc" load --help
for bad in "--port x" "--port 70000" "--max-body 0" "--max-body 17M" "--idle-policy nope" \
           "--shards 0" "--idle-timeout -1" "--frame-timeout x" "--backend kqueue" "--nope" \
           "--max-input-bytes 0" "--max-input-bytes x" "--max-input-bytes 64k" \
           "--max-body 4k --max-input-bytes 4k" \
           "extra" "--host example.com" "--host 1.2.3" "--host"; do
  # shellcheck disable=SC2086
  check 2 "echo $bad" "$pc" echo $bad
  grep -q "percore echo: " "$tmp/err" || { echo "FAIL: echo $bad: no reason"; fail=1; }
done
for bad in "--size 5-1" "--size 1-" "--conns 0" "--depth 5000" "--duration 0" \
           "--duration 3x" "--raw --idle 5" "--raw --size 0" "--port" "--host example.com" \
           "--partial 512" "--idle 5 --partial 6" "--idle 5 --partial 1M"; do
  # shellcheck disable=SC2086
  check 2 "load $bad" "$pc" load $bad
  grep -q "percore load: " "$tmp/err" || { echo "FAIL: load $bad: no reason"; fail=1; }
done

# A host is numeric (or localhost): names are refused, never resolved.
for c in echo load; do
  check 2 "$c --host a name" "$pc" $c --host localhost.localdomain
  grep -q -- "--host" "$tmp/err" || { echo "FAIL: $c --host: the option is not named"; fail=1; }
done

# ---- an input budget --------------------------------------------------------------
if start_echo budget --shards 1 --max-input-bytes 4M --json; then
  check 0 "load against an input budget" "$pc" load --port "$port" --conns 4 --messages 200 \
    --size 3000 --policy off --idle-policy sleep --json
  expect "every message back under a budget" '.messages == 200 and .errors.total == 0'
  check 0 "load --idle --partial" "$pc" load --port "$port" --idle 50 --partial 100 --json
  expect "every half frame held, no mapping per session" \
    '.idle.sessions == 50 and .idle.server_buffered_growth == 5000 and .idle.maps_per_session < 0.5'
  stop_echo budget
  cp "$tmp/budget.out" "$tmp/out"
  expect "the budget's figures reported" '.total.input_pauses == 0 and .total.input_shed == 0'
fi

# ---- more shards than CPUs ------------------------------------------------------
over=$(( $(nproc) + 14 ))
check 1 "echo --shards $over without --oversubscribe" "$pc" echo --port 0 --shards $over
grep -q -- "--oversubscribe" "$tmp/err" || { echo "FAIL: echo: --oversubscribe not named"; fail=1; }
check 1 "load --shards $over without --oversubscribe" "$pc" load --port 1 --shards $over
grep -q -- "--oversubscribe" "$tmp/err" || { echo "FAIL: load: --oversubscribe not named"; fail=1; }
if start_echo over --host localhost --shards $over --oversubscribe --json; then
  check 0 "load --oversubscribe against $over shards" "$pc" load --port "$port" --conns $over \
    --messages 500 --shards $over --oversubscribe --policy off --idle-policy sleep --json
  expect "every message back" '.messages == 500 and .errors.total == 0'
  stop_echo over
  cp "$tmp/over.out" "$tmp/out"
  expect "$over shards served" "(.shards | length) == $over"
fi

# ---- a port already served ----------------------------------------------------
if start_echo first --shards 1; then
  first=$pid
  check 1 "a second echo on a served port is refused" timeout $((10 * slow)) \
    "$pc" echo --host 127.0.0.1 --port "$port" --shards 1 --policy off
  grep -q -- "--reuseport-join" "$tmp/err" || { echo "FAIL: --reuseport-join not named"; fail=1; }
  if start_echo joined --shards 1 --port "$port" --reuseport-join; then
    echo "ok: --reuseport-join shares the port"
    stop_echo joined
  fi
  pid=$first
  stop_echo first
fi

# ---- --connect ends on time ----------------------------------------------------
# A cycle's connect may be in progress when time is up: the run still ends
# then (not at the no-progress watchdog, 5 s later) and its rate divides
# by the time it ran. Several runs, as the timing of the end varies. The
# run's own clock (elapsed_s, to its end) says it ended on time, which is
# well before the watchdog's end (6 s or more): its shard may start late
# on a busy machine (1.51 s under ASan with every CPU busy, a message then
# taking 0.63 s). The wall clock also counts starting and stopping the
# process, which took up to 4.9 s that way, so it only guards against a
# hang.
if start_echo connect --shards 1; then
  for i in 1 2 3 4 5; do
    t0=$(date +%s%N)
    check 0 "load --connect --duration 1, run $i" "$pc" load --port "$port" --connect --conns 2 \
      --duration 1 --policy off --idle-policy sleep --json
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    [ "$ms" -lt $(( 10000 * slow )) ] && echo "ok: run $i took $ms ms" \
      || { echo "FAIL: run $i took $ms ms for a 1 s run"; fail=1; }
    expect "run $i: elapsed is the duration" '.elapsed_s >= 0.99 and .elapsed_s < 3.5'
    expect "run $i: rate is count / elapsed" \
      '(.msgs_per_s * .elapsed_s - .messages) as $d | .connects > 0 and $d * $d < 1'
  done
  stop_echo connect
fi

# ---- framed -------------------------------------------------------------------
"$pc" echo --help | grep -q -- "--frame-timeout S" || { echo "FAIL: --frame-timeout not in --help"; fail=1; }
if start_echo framed --shards 2 --max-sessions 5000 --idle-timeout 30 --frame-timeout "$slow" \
    --json; then
  # Half a header, then nothing: refused at the frame timeout with an error
  # frame, then the connection ends.
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf '\001\000\000\000' >&3
  timeout $((5 * slow)) cat <&3 >"$tmp/late" 2>/dev/null
  exec 3>&-
  grep -q "frame timeout" "$tmp/late" && echo "ok: an incomplete frame is refused in time" \
    || { echo "FAIL: no frame timeout reply"; fail=1; }
  check 0 "load, framed, 1 s" "$pc" load --port "$port" --conns 8 --depth 4 --size 1-3000 \
    --duration 1 --policy off --idle-policy sleep --json
  expect "messages counted" '.messages > 0 and .msgs_per_s > 0 and .mb_per_s > 0'
  expect "no errors" '.errors.total == 0'
  expect "latency percentiles in order" \
    '.latency_us.p50 <= .latency_us.p99 and .latency_us.p99 <= .latency_us.max'
  check 0 "load, a count" "$pc" load --port "$port" --conns 3 --messages 1000 --policy off --json
  expect "exactly that many" '.messages == 1000'
  check 0 "load --connect" "$pc" load --port "$port" --connect --conns 2 --messages 200 \
    --policy off --json
  expect "a connection per message" '.connects == 200 and .errors.total == 0'
  check 0 "load --idle" "$pc" load --port "$port" --idle 300 --json
  expect "idle sessions counted by the server" '.idle.sessions == 300'
  expect "memory per idle session reported" '.idle.accounted_bytes_per_session > 0'
  check 0 "table output" "$pc" load --port "$port" --messages 100 --policy off
  grep -q "^latency us" "$tmp/out" || { echo "FAIL: no latency line"; fail=1; }
  # Raw bytes at a framed server: refused frames, so errors and exit 1.
  check 1 "raw load at a framed server fails" "$pc" load --port "$port" --raw --messages 10 \
    --policy off
  kill -USR1 "$pid"
  for _ in $(seq 1 $((200 * slow))); do
    grep -q "^accepted" "$tmp/framed.err" && break; sleep 0.05
  done
  grep -q "^accepted" "$tmp/framed.err" && echo "ok: SIGUSR1 statistics" \
    || { echo "FAIL: no statistics on SIGUSR1"; fail=1; }
  stop_echo framed
  cp "$tmp/framed.out" "$tmp/out"
  expect "statistics on exit: totals and shards" '.total.accepted > 300 and (.shards | length) == 2'
  expect "the malformed frames were counted" '.total.malformed + .total.oversize >= 1'
  expect "every session closed" '.total.sessions == 0'
  expect "the late frame counted as such" '.total.closed_frame_timeout == 1'
fi

# ---- raw ----------------------------------------------------------------------
if start_echo raw --raw --shards 1; then
  check 0 "load --raw at a raw server" "$pc" load --port "$port" --raw --size 1-5000 \
    --messages 2000 --depth 8 --policy off --json
  expect "raw: every message verified" '.messages == 2000 and .errors.total == 0'
  stop_echo raw
fi

# ---- a server that closes mid-run --------------------------------------------
# It echoes one window (64 messages of 12 + 64 bytes) and closes: the load
# generator's sends that follow meet a closed peer (EPIPE), which must be a
# reported error, exit 1, not death by SIGPIPE (exit 141).
python3 "$(dirname "$0")/closing_server.py" $((64 * (12 + 64))) >"$tmp/closing.port" &
for _ in $(seq 1 $((100 * slow))); do [ -s "$tmp/closing.port" ] && break; sleep 0.05; done
if [ -s "$tmp/closing.port" ]; then
  check 1 "load at a server that closes mid-run: exit 1" "$pc" load --port "$(cat "$tmp/closing.port")" \
    --conns 4 --depth 64 --size 64 --duration 2 --policy off
  grep -q "errors, the first: connection .*: \(send\|receive\)" "$tmp/err" &&
    echo "ok: the closed connections are reported on stderr" ||
    { echo "FAIL: no report of the closed connections on stderr"; cat "$tmp/err"; fail=1; }
else
  echo "FAIL: the closing server did not start"; fail=1
fi

# ---- nobody there -------------------------------------------------------------
check 1 "load at a closed port" "$pc" load --port "$port" --messages 5 --policy off
grep -q "no connection" "$tmp/err" || { echo "FAIL: no reason for refusal"; fail=1; }
exit $fail
