/* SPDX-License-Identifier: MIT */
/* SpscQueue rows beside Concurrency Kit's ck_ring in its SPSC mode, 8-byte
 * items both:
 *   Throughput/1024  one thread fills a 1024-slot ring and drains it
 *   Latency          ping-pong over two rings between two pinned threads;
 *                    one iteration is one round trip
 *   Concurrent       producer and consumer on different cores; one
 *                    iteration is one item (ours also in batches of 32) */
#include <ck_ring.h>
#include <errno.h>
#include <stdlib.h>

#include "backoff.h"
#include "percore/spsc.h"
#include "bench_util.h"

#define TP_CAP  1024
#define CON_CAP 4096

PC_SPSC_TYPED(u64q, uint64_t)

struct ours {
	struct u64q *a, *b;     /* a: thread 0 -> 1; b: 1 -> 0 */
};

struct ck {
	struct ck_ring a PC_CACHE_ALIGNED, b PC_CACHE_ALIGNED;
	struct ck_ring_buffer *abuf, *bbuf;
};

/* ---- ours ------------------------------------------------------------- */

static int ours_setup(struct pc_bench_state *st)
{
	struct ours *o = calloc(1, sizeof(*o));
	size_t cap = (size_t)st->bench->arg;

	if (!o)
		return -ENOMEM;
	o->a = u64q_create(cap);
	o->b = u64q_create(cap);
	if (!o->a || !o->b) {
		u64q_destroy(o->a);
		u64q_destroy(o->b);
		free(o);
		return -ENOMEM;
	}
	st->ctx = o;
	return 0;
}

static void ours_teardown(struct pc_bench_state *st)
{
	struct ours *o = st->ctx;

	u64q_destroy(o->a);
	u64q_destroy(o->b);
	free(o);
}

static void ours_throughput(struct pc_bench_state *st)
{
	struct u64q *q = ((struct ours *)st->ctx)->a;
	uint64_t sum = 0, v;

	for (uint64_t i = 0; i < st->iterations;) {
		uint64_t n = st->iterations - i < TP_CAP ? st->iterations - i : TP_CAP;

		for (uint64_t j = 0; j < n; j++) {
			v = i + j;
			u64q_push(q, &v);
		}
		for (uint64_t j = 0; j < n; j++) {
			u64q_pop(q, &v);
			sum += v;
		}
		i += n;
	}
	PC_DO_NOT_OPTIMIZE(sum);
}

static void ours_latency(struct pc_bench_state *st)
{
	struct ours *o = st->ctx;
	struct u64q *out = st->thread_index == 0 ? o->a : o->b;
	struct u64q *in = st->thread_index == 0 ? o->b : o->a;
	struct pc_backoff w = {0};
	uint64_t v;

	for (uint64_t i = 0; i < st->iterations; i++) {
		if (st->thread_index == 0) {
			v = i;
			while (u64q_push(out, &v))
				pc_backoff_wait(&w);
		}
		while (u64q_pop(in, &v))
			pc_backoff_wait(&w);
		if (st->thread_index == 1) {
			while (u64q_push(out, &v))
				pc_backoff_wait(&w);
		}
	}
	bench_split_items(st, st->iterations);
}

static void ours_concurrent(struct pc_bench_state *st)
{
	struct u64q *q = ((struct ours *)st->ctx)->a;
	struct pc_backoff w = {0};
	uint64_t v, sum = 0;

	if (st->thread_index == 0) {
		for (v = 0; v < st->iterations; v++)
			while (u64q_push(q, &v))
				pc_backoff_wait(&w);
	} else {
		for (uint64_t i = 0; i < st->iterations; i++) {
			while (u64q_pop(q, &v))
				pc_backoff_wait(&w);
			sum += v;
		}
	}
	PC_DO_NOT_OPTIMIZE(sum);
	bench_split_items(st, st->iterations);
}

static void ours_concurrent_batch(struct pc_bench_state *st)
{
	enum { BATCH = 32 };
	struct u64q *q = ((struct ours *)st->ctx)->a;
	struct pc_backoff w = {0};
	uint64_t buf[BATCH], sum = 0;

	for (uint64_t done = 0; done < st->iterations;) {
		unsigned want = st->iterations - done < BATCH ? (unsigned)(st->iterations - done) : BATCH;
		unsigned n;

		if (st->thread_index == 0) {
			for (unsigned j = 0; j < want; j++)
				buf[j] = done + j;
			n = u64q_push_burst(q, buf, want);
		} else {
			n = u64q_pop_burst(q, buf, want);
			for (unsigned j = 0; j < n; j++)
				sum += buf[j];
		}
		done += n;
		if (!n)
			pc_backoff_wait(&w);
	}
	PC_DO_NOT_OPTIMIZE(sum);
	bench_split_items(st, st->iterations);
}

/* ---- Concurrency Kit --------------------------------------------------- */

static int ck_setup(struct pc_bench_state *st)
{
	unsigned cap = (unsigned)st->bench->arg;
	struct ck *c = aligned_alloc(PC_CACHE_PAD, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->abuf = aligned_alloc(PC_CACHE_PAD, cap * sizeof(struct ck_ring_buffer));
	c->bbuf = aligned_alloc(PC_CACHE_PAD, cap * sizeof(struct ck_ring_buffer));
	if (!c->abuf || !c->bbuf) {
		free(c->abuf);
		free(c->bbuf);
		free(c);
		return -ENOMEM;
	}
	ck_ring_init(&c->a, cap);
	ck_ring_init(&c->b, cap);
	st->ctx = c;
	return 0;
}

static void ck_teardown(struct pc_bench_state *st)
{
	struct ck *c = st->ctx;

	free(c->abuf);
	free(c->bbuf);
	free(c);
}

static void ck_throughput(struct pc_bench_state *st)
{
	struct ck *c = st->ctx;
	uint64_t sum = 0;
	void *p = NULL;

	/* a ck_ring of 1024 slots holds 1023 items */
	for (uint64_t i = 0; i < st->iterations;) {
		uint64_t n = st->iterations - i < TP_CAP - 1 ? st->iterations - i : TP_CAP - 1;

		for (uint64_t j = 0; j < n; j++)
			ck_ring_enqueue_spsc(&c->a, c->abuf, (void *)(uintptr_t)(i + j));
		for (uint64_t j = 0; j < n; j++) {
			ck_ring_dequeue_spsc(&c->a, c->abuf, &p);
			sum += (uintptr_t)p;
		}
		i += n;
	}
	PC_DO_NOT_OPTIMIZE(sum);
}

static void ck_latency(struct pc_bench_state *st)
{
	struct ck *c = st->ctx;
	struct ck_ring *out = st->thread_index == 0 ? &c->a : &c->b;
	struct ck_ring *in = st->thread_index == 0 ? &c->b : &c->a;
	struct ck_ring_buffer *outbuf = st->thread_index == 0 ? c->abuf : c->bbuf;
	struct ck_ring_buffer *inbuf = st->thread_index == 0 ? c->bbuf : c->abuf;
	struct pc_backoff w = {0};
	void *p = NULL;

	for (uint64_t i = 0; i < st->iterations; i++) {
		if (st->thread_index == 0) {
			p = (void *)(uintptr_t)i;
			while (!ck_ring_enqueue_spsc(out, outbuf, p))
				pc_backoff_wait(&w);
		}
		while (!ck_ring_dequeue_spsc(in, inbuf, &p))
			pc_backoff_wait(&w);
		if (st->thread_index == 1) {
			while (!ck_ring_enqueue_spsc(out, outbuf, p))
				pc_backoff_wait(&w);
		}
	}
	bench_split_items(st, st->iterations);
}

static void ck_concurrent(struct pc_bench_state *st)
{
	struct ck *c = st->ctx;
	struct pc_backoff w = {0};
	uint64_t sum = 0;
	void *p = NULL;

	if (st->thread_index == 0) {
		for (uint64_t v = 0; v < st->iterations; v++)
			while (!ck_ring_enqueue_spsc(&c->a, c->abuf, (void *)(uintptr_t)v))
				pc_backoff_wait(&w);
	} else {
		for (uint64_t i = 0; i < st->iterations; i++) {
			while (!ck_ring_dequeue_spsc(&c->a, c->abuf, &p))
				pc_backoff_wait(&w);
			sum += (uintptr_t)p;
		}
	}
	PC_DO_NOT_OPTIMIZE(sum);
	bench_split_items(st, st->iterations);
}

/* ---- the rows ------------------------------------------------------------ */

#define OURS(label, threads_, cap, fn)                                          \
	{.name = label, .threads = threads_, .arg = cap, .setup = ours_setup,   \
	 .run = fn, .teardown = ours_teardown}
#define CK(label, threads_, cap, fn)                                            \
	{.name = label, .threads = threads_, .arg = cap, .setup = ck_setup,     \
	 .run = fn, .teardown = ck_teardown}

static const struct pc_bench rows[] = {
	OURS("SpscQueue/Throughput/1024", 1, TP_CAP, ours_throughput),
	CK("Peer/ck_ring/Throughput/1024", 1, TP_CAP, ck_throughput),
	OURS("SpscQueue/Latency", 2, CON_CAP, ours_latency),
	CK("Peer/ck_ring/Latency", 2, CON_CAP, ck_latency),
	OURS("SpscQueue/Concurrent", 2, CON_CAP, ours_concurrent),
	OURS("SpscQueue/Concurrent/batch:32", 2, CON_CAP, ours_concurrent_batch),
	CK("Peer/ck_ring/Concurrent", 2, CON_CAP, ck_concurrent),
};

__attribute__((constructor)) static void spsc_bench_register(void)
{
	for (size_t i = 0; i < PC_ARRAY_LEN(rows); i++)
		pc_bench_register(&rows[i]);
}
