#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions per message on the mesh's path, counted by callgrind: load
# does not change them, so two revisions compare on a busy machine.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: scripts/mesh_cost.sh [--outbox | --raw] [--mixed] [BUILD]

Count the instructions one cross-shard message costs, send to run, with
valgrind --tool=callgrind. One shard streams pointer messages to itself
the way CrossCore/Throughput streams them to another (a pump that sends
until the ring refuses, then again next turn; a handler that counts), so
that no thread spins while another works and the count repeats exactly.
Two runs, of 100,000 and 200,000 messages, counted from the first send to
the last run; their difference over 100,000 is the figure, the start and
the end cancelling out. Then the instructions per message of each
function, from the longer run.

  BUILD      a release build dir holding libpercore.a (default build/release),
             of this revision or any other
  --outbox   the stream of CrossCore/Throughput/outbox instead: a ring of
             64, pc_shard_send, up to 1024 messages waiting
  --mixed    messages to two functions in turn (CrossCore/Throughput/mixed;
             slots of function and argument pairs), with or without
             --outbox
  --raw      the raw ring the mesh is measured against instead
             (Peer/spsc64/Concurrent's loops on one thread: 64-byte slots
             of a 1024-slot ring staged in place until it is full, published
             every 32, then taken until it is empty, released every 32); per
             item, and per side: produce (stage, write, publish, its loop)
             and consume (take, read, release, its loop)
  -h, --help this text

Needs gcc, valgrind and bc. Exit status: 0 counted, 1 a build or a run
failed, 2 usage error.
EOF
}

mode=ring
mixed=
build=build/release
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--outbox) mode=outbox ;;
	--raw) mode=raw ;;
	--mixed) mixed=-DMIXED ;;
	-*) usage >&2; exit 2 ;;
	*) build=$1 ;;
	esac
	shift
done
[ -f "$build/libpercore.a" ] || { echo "mesh_cost: no $build/libpercore.a" >&2; exit 1; }
# The build's own sources, so that another revision's build is counted
# with its headers.
src=$(awk -F= '/^CMAKE_HOME_DIRECTORY:/ {print $2}' "$build/CMakeCache.txt")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/drv.c" <<'EOF'
#include <semaphore.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "percore/engine.h"
#ifdef OUTBOX
#include "percore/outbox.h"
#endif
#include "percore/reactor.h"
#include "percore/shard.h"

static uint64_t n, sent, recvd;
static sem_t done;

static void on_recv(void *arg)
{
	(void)arg;
	if (++recvd == n) {
		CALLGRIND_DUMP_STATS_AT("stream");
		sem_post(&done);
	}
}

/* A second function: a message to it after one to on_recv carries its
 * function with it. */
static uint64_t recvd_other;

static void on_recv_other(void *arg)
{
	recvd_other++;
	on_recv(arg);
}

#ifdef MIXED
#define FN(k) ((k) & 1 ? on_recv_other : on_recv)
#else
#define FN(k) on_recv
#endif

/* The count in a register across the sends, as CrossCore/Throughput's. */
static void pump(void *arg)
{
	uint64_t k = sent;

#ifdef OUTBOX
	/* the depth once a turn, as CrossCore/Throughput/outbox's pump */
	size_t depth = pc_shard_outbox_depth(0);
	uint64_t end = depth < 1024 ? k + (1024 - depth) : k;

	if (end > n)
		end = n;
	while (k < end && pc_shard_send(0, FN(k), arg) == 0)
		k++;
#else
	while (k < n && pc_shard_submit(0, FN(k), arg) == 0)
		k++;
#endif
	sent = k;
	if (sent < n)
		pc_reactor_defer(pc_shard_reactor(), pump, arg);
}

static void job(void *arg)
{
	CALLGRIND_ZERO_STATS;
	pump(arg);
}

int main(int argc, char **argv)
{
	struct pc_engine_cfg cfg;
	struct pc_engine *e;

	n = strtoull(argv[argc - 1], NULL, 10);
	pc_engine_cfg_init(&cfg);
	cfg.shards = 1;
	cfg.idle = PC_IDLE_SPIN;
#ifdef OUTBOX
	cfg.ring_capacity = 64;
#else
	cfg.ring_capacity = 1024;
#endif
	cfg.placement = "off";
	if (pc_engine_start(&cfg, &e, NULL, 0))
		return 1;
	sem_init(&done, 0, 0);
	pc_engine_submit(e, 0, job, NULL);
	sem_wait(&done);
	pc_engine_stop(e);
	pc_engine_join(e);
	pc_engine_destroy(e);
	return 0;
}
EOF
# The raw ring's loops as Peer/spsc64/Concurrent runs them, each side in
# a function of its own so that the two show apart.
cat >"$work/raw.c" <<'EOF'
#include <stdlib.h>
#include <valgrind/callgrind.h>
#include "percore/spsc.h"

struct msg64 {
	void (*fn)(void *);
	uint64_t w[7];
} __attribute__((aligned(64)));

PC_SPSC_TYPED(ring64, struct msg64)

#define CAP 1024
#define BATCH 32

static struct ring64 q;
static uint64_t sent, sum;

static __attribute__((noinline)) void produce(uint64_t n)
{
	while (sent < n) {
		struct msg64 *m = ring64_stage(&q);

		if (!m)
			break;
		m->fn = NULL;
		m->w[0] = sent++;
		if (sent % BATCH == 0)
			ring64_publish(&q);
	}
	ring64_publish(&q);
}

static __attribute__((noinline)) uint64_t consume(void)
{
	struct msg64 *m;
	uint64_t k = 0;

	while ((m = ring64_take(&q))) {
		sum += m->w[0];
		if (++k % BATCH == 0)
			ring64_release(&q);
	}
	ring64_release(&q);
	return k;
}

int main(int argc, char **argv)
{
	uint64_t n = strtoull(argv[argc - 1], NULL, 10), got = 0;
	struct msg64 *buf = aligned_alloc(64, CAP * sizeof(*buf));

	if (!buf || ring64_init(&q, buf, CAP))
		return 1;
	CALLGRIND_ZERO_STATS;
	while (got < n) {
		produce(n);
		got += consume();
	}
	CALLGRIND_DUMP_STATS_AT("stream");
	return sum == n * (n - 1) / 2 ? 0 : 1;
}
EOF
def=
[ $mode = outbox ] && def=-DOUTBOX
if [ $mode = raw ]; then
	gcc -O2 -g -I"$src/include" -o "$work/drv" "$work/raw.c" "$build/libpercore.a" || exit 1
else
	gcc -O2 -g $def $mixed -I"$src/include" -o "$work/drv" "$work/drv.c" "$build/libpercore.a" \
		-lm -lcjson -lhwloc -luring -lnuma -lpthread || exit 1
fi
for k in 100000 200000; do
	valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
		--callgrind-out-file="$work/cg.$k" "$work/drv" $k >/dev/null 2>&1 || exit 1
done
a=$(awk '/^summary:/ {print $2}' "$work/cg.100000.1")
b=$(awk '/^summary:/ {print $2}' "$work/cg.200000.1")
echo "$mode: $(echo "scale=1; ($b - $a) / 100000" | bc) instructions per message"
# Self cost per function: cost lines not under a calls= line.
# A function callgrind counts in several contexts (name'N) counts once.
awk '/^fn=/ {fn = substr($0, 4); sub(/'"'"'[0-9]+$/, "", fn)} /^calls=/ {call = 1; next}
     /^[0-9]/ {if (!call) self[fn] += $2; call = 0}
     END {for (f in self) if (self[f] > 20000) printf "  %6.1f  %s\n", self[f] / 200000, f}' \
	"$work/cg.200000.1" | sort -rn
