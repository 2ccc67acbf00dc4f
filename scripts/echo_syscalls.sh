#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# System calls per echoed message of a one-shard percore echo server, by
# kind, under percore load: the server runs under strace -c -f on one CPU,
# the load generator on another, and every count is divided by the
# messages echoed. strace slows the server, which then finds more bytes per
# wake-up: the figures are a lower bound for the real run and compare
# revisions and backends, not absolute costs.
#
# usage: scripts/echo_syscalls.sh BUILD BACKEND SIZE [MESSAGES] [CONNS]
#   BUILD     a build folder (build/release)
#   BACKEND   epoll or uring
#   SIZE      payload bytes (64, 4096, ...)
#   MESSAGES  messages to echo (default 200000)
#   CONNS     connections, 16 in flight each (default 16)
set -euo pipefail

if [[ $# -lt 3 || $1 == -h || $1 == --help ]]; then
	sed -n '3,16p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
build=$1 backend=$2 size=$3 messages=${4:-200000} conns=${5:-16}
percore=$build/tools/percore/percore
[[ -x $percore ]] || { echo "no $percore: build it first" >&2; exit 1; }
command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 1; }

ncpu=$(nproc)
srv_cpu=0
load_cpu=$((ncpu > 1 ? 1 : 0))
port=$((20000 + RANDOM % 20000))
out=$(mktemp)

"$percore" echo --host 127.0.0.1 --port "$port" --shards 1 --policy "$srv_cpu" \
	--backend "$backend" --idle-timeout 0 >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 100); do
	"$percore" load --port "$port" --messages 1 --conns 1 --policy "$load_cpu" \
		>/dev/null 2>&1 && break
	sleep 0.1
done
# Attached for the load alone: start-up and the idle time after are not
# in the counts.
strace -f -c -o "$out" -p "$server" 2>/dev/null &
tracer=$!
sleep 1
"$percore" load --port "$port" --size "$size" --messages "$messages" --conns "$conns" \
	--depth 16 --policy "$load_cpu" >/dev/null 2>&1 || echo "load reported errors" >&2
kill -INT "$tracer"
wait "$tracer" || true

echo "backend $backend, $size B, $conns connections x 16, $messages messages"
awk -v n="$messages" '
	$1 ~ /^[0-9.]+$/ && NF >= 5 {
		name = $NF; calls = $4
		if (name == "total") next
		printf "  %-24s %10.4f per echo\n", name, calls / n
		total += calls
	}
	END { printf "  %-24s %10.4f per echo\n", "all", total / n }' "$out"
