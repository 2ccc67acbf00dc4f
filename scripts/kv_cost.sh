#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions and system calls per request of `percore kv` and
# redis-server under the same redis-benchmark load: figures that a busy
# machine does not change the way it changes requests per second.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/kv_cost.sh [OPTIONS] [BUILD]

Count what one request costs each server, percore kv (--shards 1) and
redis-server (no persistence), under redis-benchmark with 50 connections:

  instructions  valgrind --tool=callgrind on the server; the counts are
                dumped just before and just after the load, so start-up
                and shutdown are not in them; their total over requests
  syscalls      strace -c -f attached to the server for the load (a
                separate run, at full speed): calls of each kind over
                requests

  BUILD            a release build dir holding tools/percore/percore
                   (default build/release)
  -t, --tests T    redis-benchmark tests, comma-separated (default get,set)
  -P, --pipeline N pipeline depths, comma-separated (default 1,16)
  -n, --requests N requests per run (default 200000)
  --server S       kv, redis or both (default both)
  --no-syscalls    instructions only
  --no-instr       system calls only
  -r, --keyspace N random keys among N (redis-benchmark -r; default: one
                   key), so that with --kv-args "--shards 2" half the
                   requests hop to the other shard
  --kv-args ARGS   more options for percore kv (e.g. "--idle-policy sleep";
                   with several shards add "--oversubscribe --backend
                   epoll": valgrind runs one thread at a time and cannot
                   leave one blocked in io_uring_enter)
  --top N          also list the N functions with the most instructions
                   of their own per request (default 0)
  -h, --help       this text

The servers run on the first CPU this shell may use, redis-benchmark on
the second (unpinned with one). Needs valgrind, strace, redis-server and
redis-benchmark (scripts/deps.sh installs them). Exit status: 0 counted,
1 a run failed, 2 usage error.
EOF
}

build=build/release
tests=get,set
depths=1,16
requests=200000
servers=both
do_sys=1
do_ins=1
top=0
kv_args=
keyspace=
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	-t | --tests) tests=${2:?}; shift ;;
	-P | --pipeline) depths=${2:?}; shift ;;
	-n | --requests) requests=${2:?}; shift ;;
	--server) servers=${2:?}; shift ;;
	--no-syscalls) do_sys=0 ;;
	--no-instr) do_ins=0 ;;
	--top) top=${2:?}; shift ;;
	-r | --keyspace) keyspace=${2:?}; shift ;;
	--kv-args) kv_args=$2; shift ;;
	-*) usage >&2; exit 2 ;;
	*) build=$1 ;;
	esac
	shift
done
case $servers in kv) servers=kv ;; redis) servers=redis ;; both) servers="kv redis" ;;
*) usage >&2; exit 2 ;; esac
[[ $requests =~ ^[0-9]+$ && $top =~ ^[0-9]+$ && $keyspace =~ ^[0-9]*$ ]] ||
	{ usage >&2; exit 2; }
random=()
[ -n "$keyspace" ] && random=(-r "$keyspace")
pc=$build/tools/percore/percore
[ -x "$pc" ] || { echo "kv_cost: no $pc" >&2; exit 1; }
for t in valgrind strace redis-server redis-benchmark; do
	command -v $t >/dev/null || { echo "kv_cost: $t is not installed" >&2; exit 1; }
done

cpus=($(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])'))
scpu=${cpus[0]}
ccpu=${cpus[1]:-}
client_pin=()
[ -n "$ccpu" ] && client_pin=(taskset -c "$ccpu")
work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Starts server $1 (kv or redis) on port $2, under the command in $3...
# (may be empty), and waits until it answers PING.
start() {
	local kind=$1 p=$2
	shift 2
	if [ "$kind" = kv ]; then
		# no snapshots, as redis-server below: a save's walk of the
		# data set would count as the requests' own instructions
		taskset -c "$scpu" "$@" "$pc" kv --port "$p" --shards 1 --policy off \
			--max-clients 0 --save '' --dir "$work" $kv_args >"$work/server.log" 2>&1 &
	else
		taskset -c "$scpu" "$@" redis-server --port "$p" --bind 127.0.0.1 --save '' \
			--appendonly no --daemonize no >"$work/server.log" 2>&1 &
	fi
	pid=$!
	for _ in $(seq 600); do
		[ "$(redis-cli -p "$p" ping 2>/dev/null)" = PONG ] && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "kv_cost: the $kind server did not start" >&2
	cat "$work/server.log" >&2
	exit 1
}

stop() {
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}

load() { # port test depth
	redis-cli -p "$1" set key:__rand_int__ xxx >/dev/null
	"${client_pin[@]}" redis-benchmark -p "$1" -c 50 -n "$requests" -P "$3" -t "$2" "${random[@]}" -q \
		>/dev/null 2>&1
}

# Instructions per request (callgrind, dumps around the load).
instr() { # kind test depth
	local p out
	p=$(port)
	out=$work/cg.$1
	rm -f "$out"*
	start "$1" "$p" valgrind --tool=callgrind --callgrind-out-file="$out" \
		--compress-strings=no --compress-pos=no
	load "$p" "$2" 1 # warm: the first connections, the key's entry
	callgrind_control -d "$pid" >/dev/null 2>&1
	load "$p" "$2" "$3"
	callgrind_control -d "$pid" >/dev/null 2>&1
	stop
	# dumps: .1 start-up and warm-up, .2 the load, then shutdown
	local f=$out.2
	[ -f "$f" ] || f=$(ls "$out".*[0-9] | sort -t. -k3 -n | sed -n 2p)
	awk -v n="$requests" '/^summary:/ {printf "%.0f", $2 / n}' "$f"
	if [ "$top" -gt 0 ]; then
		echo
		awk -v n="$requests" '/^fn=/ {fn = substr($0, 4)} /^calls=/ {call = 1; next}
		     /^[0-9+-]/ {if (!call) self[fn] += $2; call = 0}
		     END {for (f in self) printf "      %7.1f  %s\n", self[f] / n, f}' "$f" |
			sort -rn | head -n "$top" || true # head closing the pipe is no failure
	fi
}

# System calls per request: strace -c attached for the load.
syscalls() { # kind test depth
	local p spid
	p=$(port)
	start "$1" "$p"
	load "$p" "$2" 1
	strace -c -f -q -p "$pid" -o "$work/strace" &
	spid=$!
	sleep 0.5
	load "$p" "$2" "$3"
	kill -INT "$spid"
	wait "$spid" 2>/dev/null || true
	stop
	awk -v n="$requests" '$1 ~ /^[0-9.]+$/ && NF >= 5 {
		name = $NF; calls = $4
		if (calls / n >= 0.001) printf "%s %.3f ", name, calls / n }' "$work/strace"
}

printf '%-6s %-5s %-3s %12s  %s\n' server test P instr/req 'syscalls/req'
for t in ${tests//,/ }; do
	for d in ${depths//,/ }; do
		for s in $servers; do
			i=-
			y=-
			[ $do_ins = 1 ] && i=$(instr $s $t $d)
			[ $do_sys = 1 ] && y=$(syscalls $s $t $d)
			printf '%-6s %-5s %-3s %12s  %s\n' $s $t $d "${i%%$'\n'*}" "$y"
			[ "$top" -gt 0 ] && [ $do_ins = 1 ] && printf '%s\n' "${i#*$'\n'}"
		done
	done
done
