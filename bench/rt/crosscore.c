/* SPDX-License-Identifier: MIT */
/* Cross-core messaging beside its physical limit.
 *
 *   Peer/core2core/RTT          two threads bounce one cache line: the
 *                               cost of the coherence round trip itself
 *   CrossCore/RTT/idle:P        a message from shard 0 to shard 1 and back,
 *                               one at a time, under idle policy P
 *   CrossCore/OneWay/idle:P     the latency of one hop, stamped by the
 *                               sender and read by the receiver
 *                               (CLOCK_MONOTONIC is one clock on all CPUs)
 *   CrossCore/Throughput/mixed  a one-way stream of pointer messages,
 *                               msgs/s, alternating between two functions,
 *                               so that each carries its function beside
 *                               its argument (three a slot): the same
 *                               work as a ring of 8-byte items
 *                               (Peer/ck_ring/Concurrent)
 *   CrossCore/Throughput        the same stream to one function: the mesh
 *                               packs up to five messages a slot, a gain
 *                               shown beside the mixed row
 *   Peer/spsc64/Concurrent      the raw ring under the mesh: 64-byte
 *                               messages between two pinned threads,
 *                               staged and taken in place, published and
 *                               released every 32, as the mesh does (the
 *                               ordinary index ring; the mesh uses its
 *                               slot-sequence mode, which moves the same
 *                               lines in a stream)
 *
 * With the sleep policy every hop wakes a sleeping shard: those rows show
 * what the machine's idle states and wake-up path cost (percore env lists
 * the idle states). The shards run on epoll, the engine's default, where
 * a wake-up is an eventfd write; the /backend:uring rows run them on
 * io_uring, where it is a message from ring to ring. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "percore/clock.h"
#include "percore/defs.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "percore/spsc.h"
#include "rt_bench.h"

/* ---- Peer/core2core/RTT ------------------------------------------------ */

struct line {
	PC_CACHE_ALIGNED _Atomic uint64_t v;
};

static int c2c_setup(struct pc_bench_state *st)
{
	struct line *l = aligned_alloc(PC_CACHE_PAD, sizeof(*l));

	if (!l)
		return -ENOMEM;
	atomic_init(&l->v, 0);
	st->ctx = l;
	return 0;
}

/* Thread 0 writes 2i+1 and waits for 2i+2; thread 1 answers each 2i+1
 * with 2i+2. One iteration = one round trip of the line between the two
 * cores, with nothing else in the way. */
static void c2c_run(struct pc_bench_state *st)
{
	struct line *l = st->ctx;
	uint64_t n = st->iterations;
	bool first = st->thread_index == 0;

	for (uint64_t i = 0; i < n; i++) {
		if (first)
			atomic_store_explicit(&l->v, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&l->v, memory_order_acquire) != 2 * i + 1 + first)
			pc_cpu_relax();
		if (!first)
			atomic_store_explicit(&l->v, 2 * i + 2, memory_order_release);
	}
	if (first)
		st->items = n;
}

static void c2c_teardown(struct pc_bench_state *st)
{
	free(st->ctx);
}

static const struct pc_bench c2c = {
	.name = "Peer/core2core/RTT", .threads = 2,
	.setup = c2c_setup, .run = c2c_run, .teardown = c2c_teardown,
};
PC_BENCH_REGISTER(c2c)

/* ---- CrossCore/RTT ----------------------------------------------------- */

/* Each shard's counter on its own line: a shared one would move between
 * the cores on every message, beside the message itself. */
struct pingpong {
	PC_CACHE_ALIGNED uint64_t left;    /* shard 0: round trips still to make */
	PC_CACHE_ALIGNED uint64_t lat_sum; /* shard 1: one-way latencies (OneWay) */
};

static void rtt_pong(void *arg);

static void rtt_ping(void *arg)
{
	/* Shard 1: straight back. */
	pc_shard_submit(0, rtt_pong, arg);
}

static void rtt_pong(void *arg)
{
	struct rtb *b = arg;
	struct pingpong *p = b->user;

	if (--p->left == 0) {
		rtb_finish(b);
		return;
	}
	pc_shard_submit(1, rtt_ping, b);
}

static void rtt_job(void *arg)
{
	struct rtb *b = arg;
	struct pingpong *p = b->user;

	p->left = b->iterations;
	b->items = b->iterations;
	rtb_begin(b);
	pc_shard_submit(1, rtt_ping, b);
}

static struct pingpong pp;

/* A row's arg: its idle policy, and its backend shifted by ROW_BACKEND. */
#define ROW_BACKEND 8

static int rtt_setup(struct pc_bench_state *st)
{
	unsigned arg = (unsigned)st->bench->arg;

	return rtb_setup_backend(st, 2, (enum pc_idle)(arg & 0xff),
				 (enum pc_backend)(arg >> ROW_BACKEND), &pp);
}

static void rtt_run(struct pc_bench_state *st)
{
	rtb_run(st, 0, rtt_job);
}

/* ---- CrossCore/OneWay -------------------------------------------------- */

static void ow_ack(void *arg);

/* Shard 1: the stamp rides in the inline payload. */
static void ow_hop(void *data)
{
	uint64_t stamp, now = pc_now_ns();
	struct rtb *b;

	__builtin_memcpy(&stamp, data, sizeof(stamp));
	__builtin_memcpy(&b, (char *)data + 8, sizeof(b));
	((struct pingpong *)b->user)->lat_sum += now - stamp;
	pc_shard_submit(0, ow_ack, b);
}

static void ow_send(struct rtb *b)
{
	char msg[16];
	uint64_t now = pc_now_ns();

	__builtin_memcpy(msg, &now, 8);
	__builtin_memcpy(msg + 8, &b, sizeof(b));
	pc_shard_submit_copy(1, ow_hop, msg, sizeof(msg));
	/* Out now, not at the end of the turn: the stamp is fresh. */
	pc_shard_flush();
}

static void ow_ack(void *arg)
{
	struct rtb *b = arg;
	struct pingpong *p = b->user;

	if (--p->left == 0) {
		/* The figure: the sum of the one-way latencies. */
		rtb_finish_as(b, p->lat_sum);
		return;
	}
	ow_send(b);
}

static void ow_job(void *arg)
{
	struct rtb *b = arg;
	struct pingpong *p = b->user;

	p->left = b->iterations;
	p->lat_sum = 0;
	b->items = b->iterations;
	ow_send(b);
}

static void ow_run(struct pc_bench_state *st)
{
	rtb_run(st, 0, ow_job);
}

#define IDLE_ROWS(kind, runf)                                                   \
	{ .name = "CrossCore/" kind "/idle:spin", .arg = PC_IDLE_SPIN,           \
	  .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,                     \
	  .setup = rtt_setup, .run = runf, .teardown = rtb_teardown },           \
	{ .name = "CrossCore/" kind "/idle:adaptive", .arg = PC_IDLE_ADAPTIVE,   \
	  .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,                     \
	  .setup = rtt_setup, .run = runf, .teardown = rtb_teardown },           \
	{ .name = "CrossCore/" kind "/idle:sleep", .arg = PC_IDLE_SLEEP,         \
	  .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,                     \
	  .setup = rtt_setup, .run = runf, .teardown = rtb_teardown },           \
	{ .name = "CrossCore/" kind "/idle:sleep/backend:uring",                 \
	  .arg = PC_IDLE_SLEEP | PC_BACKEND_URING << ROW_BACKEND,                \
	  .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,                     \
	  .setup = rtt_setup, .run = runf, .teardown = rtb_teardown }

static const struct pc_bench idle_rows[] = {
	IDLE_ROWS("RTT", rtt_run),
	IDLE_ROWS("OneWay", ow_run),
};

__attribute__((constructor)) static void register_idle_rows(void)
{
	for (size_t i = 0; i < PC_ARRAY_LEN(idle_rows); i++)
		pc_bench_register(&idle_rows[i]);
}

/* ---- CrossCore/Throughput ---------------------------------------------- */

struct stream {
	bool mixed;          /* set before the engine starts: alternate the
	                      * receiving function (slots of pairs) */
	uint64_t sent;       /* shard 0 */
	PC_CACHE_ALIGNED uint64_t received; /* shard 1 */
};

static struct stream stream;

static void tp_recv(void *arg)
{
	struct rtb *b = arg;
	struct stream *s = b->user;

	if (++s->received == b->iterations)
		rtb_finish(b);
}

/* The same receiver under a second name: a message to another function
 * than the previous one carries its function with it (a mixed slot). */
static void tp_recv_other(void *arg)
{
	tp_recv(arg);
}

/* Shard 0: as many as the ring takes this turn, then again next turn.
 * The count stays in a register across the sends (a store and two loads
 * a message otherwise, as the raw rows' loops do not pay). */
static void tp_pump(void *arg)
{
	struct rtb *b = arg;
	struct stream *s = b->user;
	uint64_t sent = s->sent, n = b->iterations;

	if (s->mixed) {
		while (sent < n && pc_shard_submit(1, sent & 1 ? tp_recv_other : tp_recv, b) == 0)
			sent++;
	} else {
		while (sent < n && pc_shard_submit(1, tp_recv, b) == 0)
			sent++;
	}
	s->sent = sent;
	if (sent < n)
		pc_reactor_defer(pc_shard_reactor(), tp_pump, b);
}

static void tp_job(void *arg)
{
	struct rtb *b = arg;
	struct stream *s = b->user;

	s->sent = 0;
	s->received = 0;
	b->items = b->iterations;
	rtb_begin(b);
	tp_pump(b);
}

static int tp_setup(struct pc_bench_state *st)
{
	stream.mixed = st->bench->arg != 0;
	return rtb_setup(st, 2, PC_IDLE_SPIN, 1024, &stream);
}

static void tp_run(struct pc_bench_state *st)
{
	rtb_run(st, 0, tp_job);
}

static const struct pc_bench throughput = {
	.name = "CrossCore/Throughput", .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,
	.setup = tp_setup, .run = tp_run, .teardown = rtb_teardown,
};
PC_BENCH_REGISTER(throughput)

static const struct pc_bench throughput_mixed = {
	.name = "CrossCore/Throughput/mixed", .arg = 1,
	.flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,
	.setup = tp_setup, .run = tp_run, .teardown = rtb_teardown,
};
PC_BENCH_REGISTER(throughput_mixed)

/* ---- Peer/spsc64/Concurrent -------------------------------------------- */

struct msg64 {
	void (*fn)(void *);
	uint64_t w[7];
} __attribute__((aligned(PC_CACHE_LINE)));

PC_SPSC_TYPED(ring64, struct msg64)

#define RAW_CAP 1024
#define RAW_BATCH 32

struct raw64 {
	struct ring64 q;
	struct msg64 *buf;
};

static int raw64_setup(struct pc_bench_state *st)
{
	struct raw64 *r = aligned_alloc(PC_CACHE_PAD, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->buf = aligned_alloc(PC_CACHE_LINE, RAW_CAP * sizeof(struct msg64));
	if (!r->buf || ring64_init(&r->q, r->buf, RAW_CAP)) {
		free(r->buf);
		free(r);
		return -ENOMEM;
	}
	memset(r->buf, 0, RAW_CAP * sizeof(struct msg64));
	st->ctx = r;
	return 0;
}

static void raw64_run(struct pc_bench_state *st)
{
	struct raw64 *r = st->ctx;
	uint64_t n = st->iterations, sum = 0;

	if (st->thread_index == 0) {
		for (uint64_t i = 0; i < n;) {
			struct msg64 *m = ring64_stage(&r->q);

			if (!m) {
				ring64_publish(&r->q);
				pc_cpu_relax();
				continue;
			}
			m->fn = NULL;
			m->w[0] = i++;
			if (i % RAW_BATCH == 0)
				ring64_publish(&r->q);
		}
		ring64_publish(&r->q);
		st->items = n;
		return;
	}
	for (uint64_t i = 0; i < n;) {
		struct msg64 *m = ring64_take(&r->q);

		if (!m) {
			ring64_release(&r->q);
			pc_cpu_relax();
			continue;
		}
		sum += m->w[0];
		if (++i % RAW_BATCH == 0)
			ring64_release(&r->q);
	}
	ring64_release(&r->q);
	PC_DO_NOT_OPTIMIZE(sum);
}

static void raw64_teardown(struct pc_bench_state *st)
{
	struct raw64 *r = st->ctx;

	free(r->buf);
	free(r);
}

static const struct pc_bench raw64 = {
	.name = "Peer/spsc64/Concurrent", .threads = 2,
	.setup = raw64_setup, .run = raw64_run, .teardown = raw64_teardown,
};
PC_BENCH_REGISTER(raw64)
