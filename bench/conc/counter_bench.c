/* SPDX-License-Identifier: MIT */
/* The cache-line effect, in numbers. Two threads, one iteration is one
 * increment per thread:
 *   Counter/Striped/threads:2   pc_counter_add: each CPU has its own cell
 *   Counter/Atomic/threads:2    one shared atomic, fetch-and-add
 *   FalseSharing/SameLine       each thread its own counter, both counters
 *                               on one cache line
 *   FalseSharing/Padded         the same, counters PC_CACHE_PAD apart */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "percore/bench.h"
#include "percore/counter.h"

struct shared {
	PC_CACHE_ALIGNED _Atomic uint64_t atomic;       /* Counter/Atomic */
	PC_CACHE_ALIGNED _Atomic uint64_t same[2];      /* one line, two writers */
	PC_CACHE_ALIGNED _Atomic uint64_t padded0;      /* written by thread 0 */
	PC_CACHE_ALIGNED _Atomic uint64_t padded1;      /* written by thread 1 */
};

static int striped_setup(struct pc_bench_state *st)
{
	st->ctx = pc_counter_create(0);
	return st->ctx ? 0 : -ENOMEM;
}

static void striped_run(struct pc_bench_state *st)
{
	struct pc_counter *c = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++)
		pc_counter_add(c, 1);
}

static void striped_teardown(struct pc_bench_state *st)
{
	pc_counter_destroy(st->ctx);
}

static int shared_setup(struct pc_bench_state *st)
{
	st->ctx = aligned_alloc(PC_CACHE_PAD, sizeof(struct shared));
	if (!st->ctx)
		return -ENOMEM;
	*(struct shared *)st->ctx = (struct shared){0};
	return 0;
}

static void shared_teardown(struct pc_bench_state *st)
{
	free(st->ctx);
}

static void atomic_run(struct pc_bench_state *st)
{
	struct shared *s = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++)
		atomic_fetch_add_explicit(&s->atomic, 1, memory_order_relaxed);
}

/* Each thread its own counter, incremented with a locked add: the only
 * difference between the two FalseSharing rows is where the counters lie. */
static void bump(_Atomic uint64_t *c, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void same_line_run(struct pc_bench_state *st)
{
	struct shared *s = st->ctx;

	bump(&s->same[st->thread_index & 1], st->iterations);
}

static void padded_run(struct pc_bench_state *st)
{
	struct shared *s = st->ctx;

	bump(st->thread_index & 1 ? &s->padded1 : &s->padded0, st->iterations);
}

static const struct pc_bench rows[] = {
	{.name = "Counter/Striped/threads:2", .threads = 2, .setup = striped_setup,
	 .run = striped_run, .teardown = striped_teardown},
	{.name = "Counter/Atomic/threads:2", .threads = 2, .setup = shared_setup,
	 .run = atomic_run, .teardown = shared_teardown},
	{.name = "FalseSharing/SameLine", .threads = 2, .setup = shared_setup,
	 .run = same_line_run, .teardown = shared_teardown},
	{.name = "FalseSharing/Padded", .threads = 2, .setup = shared_setup,
	 .run = padded_run, .teardown = shared_teardown},
};

__attribute__((constructor)) static void counter_bench_register(void)
{
	for (size_t i = 0; i < PC_ARRAY_LEN(rows); i++)
		pc_bench_register(&rows[i]);
}
