/* SPDX-License-Identifier: MIT */
/* Stress of the runner's thread groups: many repetitions of a benchmark
 * with more threads than CPUs (placement wraps), pinned and not. In every
 * repetition each thread index must run exactly once, on the CPU it was
 * given, every pc_bench_barrier must hold all threads, and the sample must
 * add up the items and bytes of all of them.
 * PC_BENCH_STRESS_REPS overrides the number of repetitions. */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bench/measure.h"

#define THREADS 7
#define BARRIERS 5

#ifdef PC_TSAN
#define DEFAULT_REPS 300
#else
#define DEFAULT_REPS 3000
#endif

struct rep_ctx {
	atomic_uint ran_mask;           /* bit i: thread i ran */
	atomic_uint runs;               /* run() calls this repetition */
	atomic_uint arrived[BARRIERS];  /* threads past each phase */
	atomic_uint bad;                /* a broken promise seen */
};

static atomic_uint setups, teardowns;

static int stress_setup(struct pc_bench_state *st)
{
	struct rep_ctx *c = calloc(1, sizeof(*c));

	atomic_fetch_add(&setups, 1);
	st->ctx = c;
	return c ? 0 : -1;
}

static void stress_run(struct pc_bench_state *st)
{
	struct rep_ctx *c = st->ctx;
	unsigned bit = 1u << st->thread_index;

	atomic_fetch_add(&c->runs, 1);
	if (atomic_fetch_or(&c->ran_mask, bit) & bit)
		atomic_fetch_add(&c->bad, 1);           /* an index ran twice */
	if (st->affinity && sched_getcpu() != st->cpu)
		atomic_fetch_add(&c->bad, 1);
	if (!st->affinity && st->cpu != -1)
		atomic_fetch_add(&c->bad, 1);
	for (int p = 0; p < BARRIERS; p++) {
		atomic_fetch_add(&c->arrived[p], 1);
		pc_bench_barrier(st);
		/* Nobody passes phase p before all arrived there. */
		if (atomic_load(&c->arrived[p]) != THREADS)
			atomic_fetch_add(&c->bad, 1);
	}
	st->items = st->thread_index + 1;
	st->bytes = 10;
}

static atomic_uint checked_reps, bad_reps;

static void stress_teardown(struct pc_bench_state *st)
{
	struct rep_ctx *c = st->ctx;

	atomic_fetch_add(&teardowns, 1);
	atomic_fetch_add(&checked_reps, 1);
	if (atomic_load(&c->ran_mask) != (1u << THREADS) - 1 ||
	    atomic_load(&c->runs) != THREADS || atomic_load(&c->bad))
		atomic_fetch_add(&bad_reps, 1);
	free(c);
}

static const struct pc_bench stress = {
	.name = "Stress/threads", .threads = THREADS, .setup = stress_setup,
	.run = stress_run, .teardown = stress_teardown,
};

static void every_thread_once_per_repetition(void **state)
{
	const char *env = getenv("PC_BENCH_STRESS_REPS");
	unsigned reps = env ? (unsigned)strtoul(env, NULL, 10) : DEFAULT_REPS;
	struct pc_bench_sample smp;
	char why[192];
	(void)state;

	for (unsigned r = 0; r < reps; r++) {
		struct pc_bench_job job = {
			.bench = &stress, .threads = THREADS, .threaded = true,
			.affinity = r % 2 == 0, .iterations = r + 1,
		};

		assert_int_equal(bench_measure(&job, &smp, why, sizeof(why)), 0);
		/* Items: 1 + 2 + ... + THREADS; bytes: 10 per thread. */
		assert_int_equal(smp.items, THREADS * (THREADS + 1) / 2);
		assert_int_equal(smp.bytes, 10 * THREADS);
		assert_int_equal(smp.iterations, r + 1);
		assert_true(smp.time_ns >= 0 && smp.time_ns <= smp.total_wall_ns);
	}
	assert_int_equal(atomic_load(&checked_reps), reps);
	assert_int_equal(atomic_load(&bad_reps), 0);
	assert_int_equal(atomic_load(&setups), atomic_load(&teardowns));
}

/* A setup that fails skips: run and teardown never happen. */
static int failing_setup(struct pc_bench_state *st)
{
	(void)st;
	return -ENOENT;
}

static atomic_uint failing_runs;

static void counting_run(struct pc_bench_state *st)
{
	(void)st;
	atomic_fetch_add(&failing_runs, 1);
}

static void failed_setup_runs_nothing(void **state)
{
	static const struct pc_bench b = {
		.name = "Stress/fails", .threads = 3, .setup = failing_setup,
		.run = counting_run, .teardown = counting_run,
	};
	struct pc_bench_job job = { .bench = &b, .threads = 3, .threaded = true,
				    .affinity = true, .iterations = 1 };
	struct pc_bench_sample smp;
	char why[192];
	(void)state;

	assert_int_equal(bench_measure(&job, &smp, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "ENOENT"));
	assert_int_equal(atomic_load(&failing_runs), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_thread_once_per_repetition),
		cmocka_unit_test(failed_setup_runs_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
