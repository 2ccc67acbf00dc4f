/* SPDX-License-Identifier: MIT */
/* MpscQueue/2P1C beside ck_ring's MPSC mode: two producers and a consumer,
 * 8-byte items popped one at a time by both; one iteration is one item. */
#include <ck_ring.h>
#include <errno.h>
#include <stdlib.h>

#include "backoff.h"
#include "percore/mpsc.h"
#include "bench_util.h"

#define CAP 4096

PC_MPSC_TYPED(u64m, uint64_t)

struct ck {
	struct ck_ring ring PC_CACHE_ALIGNED;
	struct ck_ring_buffer *buf;
};

/* Thread 0 consumes everything; threads 1.. share the producing. */
static uint64_t producer_share(const struct pc_bench_state *st)
{
	return bench_share(st->iterations, st->thread_index - 1, st->threads - 1);
}

static int ours_setup(struct pc_bench_state *st)
{
	st->ctx = u64m_create(CAP);
	return st->ctx ? 0 : -ENOMEM;
}

static void ours_teardown(struct pc_bench_state *st)
{
	u64m_destroy(st->ctx);
}

static void ours_run(struct pc_bench_state *st)
{
	struct u64m *q = st->ctx;
	struct pc_backoff w = {0};
	uint64_t v, sum = 0;

	if (st->thread_index == 0) {
		for (uint64_t i = 0; i < st->iterations; i++) {
			while (u64m_pop(q, &v))
				pc_backoff_wait(&w);
			sum += v;
		}
	} else {
		for (v = producer_share(st); v > 0; v--)
			while (u64m_push(q, &v))
				pc_backoff_wait(&w);
	}
	PC_DO_NOT_OPTIMIZE(sum);
	bench_split_items(st, st->iterations);
}

static int ck_setup(struct pc_bench_state *st)
{
	struct ck *c = aligned_alloc(PC_CACHE_PAD, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->buf = aligned_alloc(PC_CACHE_PAD, CAP * sizeof(struct ck_ring_buffer));
	if (!c->buf) {
		free(c);
		return -ENOMEM;
	}
	ck_ring_init(&c->ring, CAP);
	st->ctx = c;
	return 0;
}

static void ck_teardown(struct pc_bench_state *st)
{
	struct ck *c = st->ctx;

	free(c->buf);
	free(c);
}

static void ck_run(struct pc_bench_state *st)
{
	struct ck *c = st->ctx;
	struct pc_backoff w = {0};
	uint64_t sum = 0;
	void *p = NULL;

	if (st->thread_index == 0) {
		for (uint64_t i = 0; i < st->iterations; i++) {
			while (!ck_ring_dequeue_mpsc(&c->ring, c->buf, &p))
				pc_backoff_wait(&w);
			sum += (uintptr_t)p;
		}
	} else {
		for (uint64_t v = producer_share(st); v > 0; v--)
			while (!ck_ring_enqueue_mpsc(&c->ring, c->buf, (void *)(uintptr_t)v))
				pc_backoff_wait(&w);
	}
	PC_DO_NOT_OPTIMIZE(sum);
	bench_split_items(st, st->iterations);
}

static const struct pc_bench ours_2p1c = {
	.name = "MpscQueue/2P1C", .threads = 3,
	.setup = ours_setup, .run = ours_run, .teardown = ours_teardown,
};
PC_BENCH_REGISTER(ours_2p1c)

static const struct pc_bench ck_2p1c = {
	.name = "Peer/ck_ring/mpsc/2P1C", .threads = 3,
	.setup = ck_setup, .run = ck_run, .teardown = ck_teardown,
};
PC_BENCH_REGISTER(ck_2p1c)
