/* SPDX-License-Identifier: MIT */
/* Bench statistics, the round shuffle, calibration growth and thread
 * placement: exact answers on small inputs. */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <cmocka.h>

#include "percore/place.h"
#include "percore/topo.h"
#include "bench/measure.h"
#include "bench/runner.h"
#include "bench/shuffle.h"
#include "percore/bench.h"

#define EPS 1e-12

static void median_of_odd_count(void **state)
{
	double v[] = { 5, 1, 3 };
	struct pc_bench_stats s;
	(void)state;
	assert_int_equal(pc_bench_stats_compute(v, 3, &s), 0);
	assert_float_equal(s.median, 3, EPS);
	assert_float_equal(s.mean, 3, EPS);
	assert_float_equal(s.min, 1, EPS);
	assert_float_equal(s.max, 5, EPS);
	/* The input keeps its order: the median sorts a copy. */
	assert_float_equal(v[0], 5, 0);
	assert_float_equal(v[1], 1, 0);
}

static void median_of_even_count(void **state)
{
	double v[] = { 4, 1, 3, 2 };
	struct pc_bench_stats s;
	(void)state;
	assert_int_equal(pc_bench_stats_compute(v, 4, &s), 0);
	assert_float_equal(s.median, 2.5, EPS);
	assert_float_equal(s.min, 1, EPS);
	assert_float_equal(s.max, 4, EPS);
}

static void sample_stddev_and_cv(void **state)
{
	/* Squared deviations from the mean 5 sum to 32; sample variance 32/7. */
	double v[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct pc_bench_stats s;
	(void)state;
	assert_int_equal(pc_bench_stats_compute(v, 8, &s), 0);
	assert_float_equal(s.mean, 5, EPS);
	assert_float_equal(s.median, 4.5, EPS);
	assert_float_equal(s.stddev, sqrt(32.0 / 7), 1e-12);
	assert_float_equal(s.cv, sqrt(32.0 / 7) / 5, 1e-12);
	assert_float_equal(s.min, 2, EPS);
	assert_float_equal(s.max, 9, EPS);
}

static void single_value_and_zero_mean(void **state)
{
	double one = 7, zeros[] = { -1, 1 };
	struct pc_bench_stats s;
	(void)state;
	assert_int_equal(pc_bench_stats_compute(&one, 1, &s), 0);
	assert_float_equal(s.stddev, 0, 0);
	assert_float_equal(s.cv, 0, 0);
	assert_float_equal(s.median, 7, 0);
	/* A zero mean gives cv 0 rather than a division by zero. */
	assert_int_equal(pc_bench_stats_compute(zeros, 2, &s), 0);
	assert_float_equal(s.mean, 0, 0);
	assert_float_equal(s.cv, 0, 0);
	assert_true(s.stddev > 1.4);
}

static void empty_input_is_rejected(void **state)
{
	struct pc_bench_stats s;
	double v = 1;
	(void)state;
	assert_int_equal(pc_bench_stats_compute(&v, 0, &s), -EINVAL);
}

static void rng_is_splitmix64(void **state)
{
	struct pc_bench_rng r;
	(void)state;
	/* The published first outputs of splitmix64 seeded with 0 and 1234567:
	 * the same sequence on every machine. */
	bench_rng_seed(&r, 0);
	assert_true(bench_rng_next(&r) == 0xe220a8397b1dcdafull);
	bench_rng_seed(&r, 1234567);
	assert_true(bench_rng_next(&r) == 6457827717110365317ull);
	assert_true(bench_rng_next(&r) == 3203168211198807973ull);
}

static void shuffle_of(uint64_t seed, size_t *idx, size_t n, int rounds)
{
	struct pc_bench_rng r;

	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	bench_rng_seed(&r, seed);
	for (int k = 0; k < rounds; k++)
		bench_shuffle(idx, n, &r);
}

static void shuffle_is_a_permutation(void **state)
{
	size_t idx[17];
	bool seen[17];
	(void)state;
	for (uint64_t seed = 0; seed < 50; seed++) {
		shuffle_of(seed, idx, 17, 3);
		memset(seen, 0, sizeof(seen));
		for (size_t i = 0; i < 17; i++) {
			assert_true(idx[i] < 17);
			assert_false(seen[idx[i]]);
			seen[idx[i]] = true;
		}
	}
	/* Nothing to do for 0 or 1 elements, and nothing breaks. */
	shuffle_of(3, idx, 1, 1);
	assert_int_equal(idx[0], 0);
	shuffle_of(3, idx, 0, 1);
}

static void shuffle_is_deterministic_per_seed(void **state)
{
	size_t a[10], b[10];
	int differ = 0;
	(void)state;
	shuffle_of(42, a, 10, 2);
	shuffle_of(42, b, 10, 2);
	assert_memory_equal(a, b, sizeof(a));
	for (uint64_t seed = 43; seed < 53; seed++) {
		shuffle_of(seed, b, 10, 2);
		differ += memcmp(a, b, sizeof(a)) != 0;
	}
	/* 10! orders: ten other seeds give at least one other order. */
	assert_true(differ > 0);
}

static void shuffle_reaches_every_order(void **state)
{
	int count[6] = { 0 };
	struct pc_bench_rng r;
	(void)state;
	bench_rng_seed(&r, 9);
	for (int k = 0; k < 6000; k++) {
		size_t idx[3] = { 0, 1, 2 };

		bench_shuffle(idx, 3, &r);
		count[idx[0] * 2 + (idx[1] > idx[2])]++;
	}
	for (int p = 0; p < 6; p++)
		assert_true(count[p] > 800 && count[p] < 1200);
}

static void calibration_growth(void **state)
{
	(void)state;
	/* Far from the target: capped at PC_BENCH_MAX_GROWTH. */
	assert_int_equal(bench_next_iterations(1, 1e-9, 0.2), 10);
	assert_int_equal(bench_next_iterations(1000, 0, 0.2), 10000);
	/* Near it: aim 20% past min_time from the measured rate. */
	assert_int_equal(bench_next_iterations(1000, 0.1, 0.2), 2400);
	/* Always at least one more iteration. */
	assert_int_equal(bench_next_iterations(1, 0.199, 0.2), 2);
	assert_true(bench_next_iterations(PC_BENCH_MAX_ITERATIONS / 2, 1e-9, 0.2) ==
		    PC_BENCH_MAX_ITERATIONS);
}

/* Benchmark threads go where pc_place's auto policy puts shards, and
 * share CPUs in the same order when they outnumber them. */
static void placement_follows_pc_place(void **state)
{
	struct pc_topo *t;
	struct pc_placement *p;
	char err[256];
	int n, cpus[65];
	(void)state;
	assert_int_equal(pc_topo_load(NULL, &t, err, sizeof(err)), 0);
	n = (int)pc_topo_limits(t)->nusable;
	if (n > 64)
		n = 64;
	assert_int_equal(pc_place(t, (unsigned)n, PC_PLACE_AUTO, NULL, 0, &p, err, sizeof(err)), 0);
	assert_int_equal(bench_place_threads((unsigned)n, true, cpus), 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(cpus[i], p->shards[i].cpu);
		assert_true(pc_topo_cpu_by_os(t, cpus[i])->usable);
	}
	/* one thread more than usable CPUs: the first CPU again */
	if (n == (int)pc_topo_limits(t)->nusable) {
		assert_int_equal(bench_place_threads((unsigned)n + 1, true, cpus), 0);
		assert_int_equal(cpus[n], cpus[0]);
	}
	pc_placement_free(p);
	pc_topo_free(t);
	assert_int_equal(bench_place_threads(3, false, cpus), 0);
	assert_int_equal(cpus[0], -1);
	assert_int_equal(cpus[2], -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(median_of_odd_count),
		cmocka_unit_test(median_of_even_count),
		cmocka_unit_test(sample_stddev_and_cv),
		cmocka_unit_test(single_value_and_zero_mean),
		cmocka_unit_test(empty_input_is_rejected),
		cmocka_unit_test(rng_is_splitmix64),
		cmocka_unit_test(shuffle_is_a_permutation),
		cmocka_unit_test(shuffle_is_deterministic_per_seed),
		cmocka_unit_test(shuffle_reaches_every_order),
		cmocka_unit_test(calibration_growth),
		cmocka_unit_test(placement_follows_pc_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
