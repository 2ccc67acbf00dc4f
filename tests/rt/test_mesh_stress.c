/* SPDX-License-Identifier: MIT */
/* Mesh stress: every shard sends a numbered stream to every shard (itself
 * included) through all three kinds of message (pointer, inline copy, call
 * with reply), with more shards than cores and small rings so that rings
 * wrap thousands of times and fill up often. Pointer messages come in
 * runs to two functions (KINDS), so slots pack them every way: to one
 * function up to full and past it, mixed, one function then another. Checks: each stream arrives
 * exactly once and in order, every reply comes back in call order, a
 * refused submit (-EAGAIN) loses nothing, and the statistics add up.
 *
 * Sizing: PC_RT_SHARDS (default 8), PC_RT_STRESS_ITEMS per ordered pair
 * (default 200,000; 25,000 under ThreadSanitizer), PC_RT_RING (16..),
 * PC_RT_IDLE (spin, adaptive, sleep; default adaptive), PC_RT_BACKEND
 * (epoll, uring: the shards' reactors, default epoll; with io_uring the
 * shards wake each other from ring to ring, and the test checks that
 * they did, where the kernel offers it). */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "percore/clock.h"
#include "percore/engine.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "rt_util.h"
#include "testmain.h"

#ifdef PC_TSAN
#define DEFAULT_ITEMS 25000
#else
#define DEFAULT_ITEMS 200000
#endif

enum { MAXS = 64 };

struct item {
	uint32_t from;
	uint32_t pad;
	uint64_t seq;
};

/* Per shard; only that shard's thread touches it while running. */
struct peer {
	uint64_t next_send[MAXS];   /* next sequence to send to k */
	uint64_t next_recv[MAXS];   /* next sequence expected from k */
	uint64_t next_reply[MAXS];  /* next reply expected from k */
	uint64_t received, replies, calls, refused;
	uint64_t received_b;        /* of them, by on_ptr_b */
	unsigned rr;                /* round-robin position */
	int done;
} __attribute__((aligned(128)));

static struct peer peers[MAXS];
static unsigned nshards;
static uint64_t items;
static struct pc_engine *engine;
static _Atomic unsigned finished;
/* The shards' reactor figures, added up as each finishes. */
static _Atomic bool ring_wake_offered;
static _Atomic uint64_t ring_wakes_sent, ring_wakes_received;

/* The kind of message number seq of a stream: c an inline copy, a and b
 * pointer messages to on_ptr and on_ptr_b, k a call. */
static const char KINDS[] = "cabaaaaaabkaabbabkbbbbbbabc";

static char kind_of(uint64_t seq)
{
	return KINDS[seq % (sizeof(KINDS) - 1)];
}

/* Messages of kind k in a stream of `items`. */
static uint64_t kind_count(char k)
{
	uint64_t n = 0;

	for (uint64_t seq = 0; seq < items; seq++)
		n += kind_of(seq) == k;
	return n;
}

/* The first call at or after seq, or items when none is left. */
static uint64_t next_call(uint64_t seq)
{
	while (seq < items && kind_of(seq) != 'k')
		seq++;
	return seq < items ? seq : items;
}

static void check_order(unsigned me, uint32_t from, uint64_t seq)
{
	struct peer *p = &peers[me];

	RT_CHECK(from < nshards, "shard %u: bad sender %u", me, from);
	if (from >= nshards)
		return;
	RT_CHECK(seq == p->next_recv[from], "shard %u: from %u got %llu, expected %llu", me, from,
		 (unsigned long long)seq, (unsigned long long)p->next_recv[from]);
	p->next_recv[from] = seq + 1;
	p->received++;
}

static void maybe_finish(void)
{
	struct peer *p = &peers[pc_shard_id()];

	if (p->done || p->received != items * nshards || p->replies != p->calls)
		return;
	for (unsigned k = 0; k < nshards; k++)
		if (p->next_send[k] != items)
			return;
	p->done = 1;
	struct pc_reactor_io_stats io;

	pc_reactor_io_stats(pc_shard_reactor(), &io);
	if (io.ring_wake)
		atomic_store(&ring_wake_offered, true);
	atomic_fetch_add(&ring_wakes_sent, io.ring_wakes_sent);
	atomic_fetch_add(&ring_wakes_received, io.ring_wakes_received);
	if (atomic_fetch_add(&finished, 1) + 1 == nshards)
		pc_engine_stop(pc_shard_engine());
}

static void on_copy(void *data)
{
	struct item it;

	memcpy(&it, data, sizeof(it));
	check_order((unsigned)pc_shard_id(), it.from, it.seq);
	maybe_finish();
}

/* Pointer messages carry (seq << 16 | from) in the pointer itself. */
static void on_ptr(void *arg)
{
	uintptr_t v = (uintptr_t)arg;

	check_order((unsigned)pc_shard_id(), (uint32_t)(v & 0xffff), v >> 16);
	maybe_finish();
}

/* The second pointer function: checks its kind too, so that the two are
 * never folded into one. */
static void on_ptr_b(void *arg)
{
	uintptr_t v = (uintptr_t)arg;

	RT_CHECK(kind_of(v >> 16) == 'b', "message %llu ran on_ptr_b",
		 (unsigned long long)(v >> 16));
	peers[pc_shard_id()].received_b++;
	on_ptr(arg);
}

static intptr_t on_call(void *arg)
{
	on_ptr(arg);
	return (intptr_t)((uintptr_t)arg >> 16);
}

static void on_reply(void *ctx, intptr_t result)
{
	struct peer *p = &peers[pc_shard_id()];
	unsigned to = (unsigned)(uintptr_t)ctx;

	RT_CHECK((uint64_t)result == p->next_reply[to], "shard %d: reply from %u out of order",
		 pc_shard_id(), to);
	/* The next call to `to` had a larger sequence; skip the ones sent
	 * by other kinds. */
	p->next_reply[to] = next_call((uint64_t)result + 1);
	p->replies++;
	maybe_finish();
}

static int send_one(unsigned me, unsigned to, uint64_t seq)
{
	void *ptr = (void *)(uintptr_t)(seq << 16 | me);

	switch (kind_of(seq)) {
	case 'c': {
		struct item it = { .from = me, .seq = seq };
		return pc_shard_submit_copy(to, on_copy, &it, sizeof(it));
	}
	case 'a':
		return pc_shard_submit(to, on_ptr, ptr);
	case 'b':
		return pc_shard_submit(to, on_ptr_b, ptr);
	default:
		return pc_shard_call(to, on_call, ptr, on_reply, (void *)(uintptr_t)to);
	}
}

/* A task that sends as much as the rings take, then defers itself to the
 * next turn until every stream is sent. */
static void pump(void *arg)
{
	unsigned me = (unsigned)pc_shard_id(), left = 0;
	struct peer *p = &peers[me];
	uint64_t refused = p->refused;
	(void)arg;

	for (unsigned n = 0; n < nshards; n++) {
		unsigned to = (p->rr + n) % nshards;

		/* A burst per destination, until its ring refuses. */
		for (int b = 0; b < 48 && p->next_send[to] < items; b++) {
			int rc = send_one(me, to, p->next_send[to]);

			if (rc == -EAGAIN) {
				p->refused++;
				break;
			}
			RT_CHECK(rc == 0, "shard %u: submit to %u failed: %d", me, to, rc);
			if (kind_of(p->next_send[to]) == 'k')
				p->calls++;
			p->next_send[to]++;
		}
		if (p->next_send[to] < items)
			left++;
	}
	p->rr++;
	/* Every ring refused: with more shards than cores, let the
	 * receivers have the CPU instead of asking again at once. */
	if (left && p->refused - refused == left)
		sched_yield();
	if (left)
		pc_reactor_defer(pc_shard_reactor(), pump, NULL);
	else
		maybe_finish();
}

static void on_start(void *arg)
{
	unsigned me = (unsigned)pc_shard_id();
	(void)arg;

	for (unsigned k = 0; k < nshards; k++)
		peers[me].next_reply[k] = next_call(0);
	pc_reactor_defer(pc_shard_reactor(), pump, NULL);
}

static void every_stream_exactly_once_in_order(void **state)
{
	struct pc_engine_cfg cfg;
	char err[200];
	const char *idle = getenv("PC_RT_IDLE");
	const char *backend = getenv("PC_RT_BACKEND");
	uint64_t t0 = pc_now_ns();
	(void)state;

	nshards = (unsigned)rt_env_u64("PC_RT_SHARDS", 8);
	items = rt_env_u64("PC_RT_STRESS_ITEMS", DEFAULT_ITEMS);
	assert_true(nshards >= 2 && nshards <= MAXS);
	pc_engine_cfg_init(&cfg);
	cfg.shards = nshards;
	cfg.oversubscribe = true;
	cfg.ring_capacity = (uint32_t)rt_env_u64("PC_RT_RING", 32);
	cfg.publish_batch = 8;
	cfg.on_start = on_start;
	if (idle)
		assert_int_equal(pc_idle_parse(idle, &cfg.idle), 0);
	if (backend && !strcmp(backend, "uring"))
		cfg.backend = PC_BACKEND_URING;
	assert_int_equal(pc_engine_start(&cfg, &engine, err, sizeof(err)), 0);
	if (pc_engine_backend(engine) != cfg.backend) {
		pc_engine_stop(engine);
		pc_engine_join(engine);
		pc_engine_destroy(engine);
		PC_SKIP("io_uring cannot be set up here");
	}
	pc_engine_join(engine);

	assert_int_equal(atomic_load(&rt_failures), 0);
	assert_int_equal(atomic_load(&finished), nshards);
	uint64_t refused = 0;
	for (unsigned i = 0; i < nshards; i++) {
		struct pc_shard_stats st;

		assert_int_equal(peers[i].received, items * nshards);
		assert_int_equal(peers[i].received_b, kind_count('b') * nshards);
		assert_int_equal(peers[i].replies, peers[i].calls);
		for (unsigned k = 0; k < nshards; k++) {
			assert_int_equal(peers[i].next_recv[k], items);
			assert_int_equal(peers[i].next_send[k], items);
		}
		refused += peers[i].refused;
		assert_int_equal(pc_engine_stats_read(engine, i, &st), 0);
		/* Runs: the streams plus the replies to this shard's calls. */
		assert_int_equal(st.msgs_in, items * nshards + peers[i].calls);
	}
	/* Everything staged ran; nothing was left over. */
	assert_int_equal(RT_SUM(engine, msgs_out), RT_SUM(engine, msgs_in));
	assert_int_equal(RT_SUM(engine, unrun_at_stop), 0);
	assert_int_equal(RT_SUM(engine, ring_full), refused);
	/* Both paths carried streams, so their merge was exercised: a mail
	 * opens each burst that finds its ring empty, the rest follow it on
	 * the ring while it waits. */
	assert_true(RT_SUM(engine, mail_out) > 0);
	assert_true(RT_SUM(engine, publishes) > 0);
	assert_true(RT_SUM(engine, publishes) <= RT_SUM(engine, msgs_out) - RT_SUM(engine, mail_out));
	if (cfg.backend == PC_BACKEND_URING && ring_wake_offered) {
		assert_true(ring_wakes_sent > 0);
		assert_true(ring_wakes_received > 0);
	}
	printf("%u shards, %llu items per pair, %llu messages in %.2f s; %llu refused (ring full), "
	       "%llu by mailbox, %.1f ring messages per publish, %llu wake-ups\n",
	       nshards, (unsigned long long)items, (unsigned long long)RT_SUM(engine, msgs_in),
	       (double)(pc_now_ns() - t0) / 1e9, (unsigned long long)refused,
	       (unsigned long long)RT_SUM(engine, mail_out),
	       (double)(RT_SUM(engine, msgs_out) - RT_SUM(engine, mail_out)) /
		       (double)RT_SUM(engine, publishes),
	       (unsigned long long)RT_SUM(engine, wakeups_sent));
	pc_engine_destroy(engine);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_stream_exactly_once_in_order),
	};
	return pc_test_main(tests, argc, argv);
}
