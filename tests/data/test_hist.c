/* SPDX-License-Identifier: MIT */
/* Histogram: percentiles within 1% of the sorted values for several
 * distributions; exact count, min, max and mean; merge and reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include <cmocka.h>

#include "percore/defs.h"
#include "percore/hist.h"
#include "testutil.h"
#include "validate_check.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The reference: the smallest value with at least p% of values <= it. */
static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double p)
{
	double r = ceil(p / 100.0 * (double)n);
	size_t rank = r < 1 ? 1 : (size_t)r;
	return sorted[(rank > n ? n : rank) - 1];
}

static void assert_within_one_percent(uint64_t got, uint64_t want)
{
	double err = fabs((double)got - (double)want);
	if (err > 0.01 * (double)want) {
		fprintf(stderr, "got %llu want %llu\n", (unsigned long long)got,
			(unsigned long long)want);
		fail();
	}
}

enum dist { UNIFORM, EXPONENTIAL, LOG_UNIFORM, SMALL, CONSTANT, DIST_COUNT };

static uint64_t draw(struct rng *r, enum dist d)
{
	double u = ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
	switch (d) {
	case UNIFORM:     return rng_below(r, 10000000);
	case EXPONENTIAL: return (uint64_t)(-log(u) * 50000.0);
	case LOG_UNIFORM: return (uint64_t)exp2(u * 63.9);
	case SMALL:       return rng_below(r, 300);
	default:          return 123456789;
	}
}

static void percentiles_match_sorted_values(void **state)
{
	static const double ps[] = { 0, 0.1, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100 };
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));
	struct pc_hist *h = pc_hist_create();
	struct rng r = test_rng("test_hist");
	(void)state;
	assert_non_null(v);
	assert_non_null(h);
	for (int d = 0; d < DIST_COUNT; d++) {
		unsigned __int128 sum = 0;
		pc_hist_reset(h);
		for (size_t i = 0; i < n; i++) {
			v[i] = draw(&r, (enum dist)d);
			sum += v[i];
			pc_hist_record(h, v[i]);
		}
		qsort(v, n, sizeof(*v), cmp_u64);
		assert_int_equal(pc_hist_validate(h, NULL, 0), 0);
		assert_int_equal(pc_hist_count(h), n);
		assert_int_equal(pc_hist_min(h), v[0]);
		assert_int_equal(pc_hist_max(h), v[n - 1]);
		double mean = (double)sum / (double)n;
		assert_true(fabs(pc_hist_mean(h) - mean) <= 1e-9 * mean);
		for (size_t i = 0; i < PC_ARRAY_LEN(ps); i++)
			assert_within_one_percent(pc_hist_percentile(h, ps[i]),
						  exact_percentile(v, n, ps[i]));
		/* Every rank, not only the named ones. */
		for (size_t k = 1; k <= 1000; k++) {
			double p = (double)k / 10.0;
			assert_within_one_percent(pc_hist_percentile(h, p), exact_percentile(v, n, p));
		}
	}
	free(v);
	pc_hist_destroy(h);
}

static void buckets_tile_the_range(void **state)
{
	(void)state;
	assert_int_equal(pc_hist_bucket_low(0), 0);
	for (unsigned b = 1; b < PC_HIST_BUCKETS; b++) {
		uint64_t lo = pc_hist_bucket_low(b), hi = pc_hist_bucket_high(b);
		assert_int_equal(lo, pc_hist_bucket_high(b - 1) + 1);
		assert_int_equal(pc_hist_bucket(lo), b);
		assert_int_equal(pc_hist_bucket(hi), b);
		/* Width within 1/128 of the lowest value: the 1% bound. */
		assert_true((double)(hi - lo) <= (double)lo / 128.0);
	}
	assert_int_equal(pc_hist_bucket_high(PC_HIST_BUCKETS - 1), UINT64_MAX);
	assert_int_equal(pc_hist_bucket(UINT64_MAX), PC_HIST_BUCKETS - 1);
}

static void empty_and_extreme_values(void **state)
{
	struct pc_hist h;
	(void)state;
	pc_hist_reset(&h);
	assert_int_equal(pc_hist_validate(&h, NULL, 0), 0);
	assert_int_equal(pc_hist_count(&h), 0);
	assert_int_equal(pc_hist_min(&h), 0);
	assert_int_equal(pc_hist_max(&h), 0);
	assert_int_equal(pc_hist_percentile(&h, 50), 0);
	assert_true(pc_hist_mean(&h) == 0.0);
	pc_hist_record(&h, 0);
	pc_hist_record_n(&h, UINT64_MAX, 3);
	assert_int_equal(pc_hist_validate(&h, NULL, 0), 0);
	assert_int_equal(pc_hist_count(&h), 4);
	assert_int_equal(pc_hist_percentile(&h, 0), 0);
	assert_int_equal(pc_hist_percentile(&h, 25), 0);
	assert_within_one_percent(pc_hist_percentile(&h, 26), UINT64_MAX);
	assert_int_equal(pc_hist_percentile(&h, 1000), UINT64_MAX);
	assert_int_equal(pc_hist_percentile(&h, -5), 0);
	assert_int_equal(pc_hist_percentile(&h, NAN), 0);
	/* The sum does not wrap. */
	assert_true(pc_hist_mean(&h) > 1e19);
}

static void merge_equals_recording_everything(void **state)
{
	struct pc_hist *a = pc_hist_create(), *b = pc_hist_create(), *all = pc_hist_create();
	struct rng r = { 42 };
	(void)state;
	assert_true(a && b && all);
	for (int i = 0; i < 50000; i++) {
		uint64_t v = draw(&r, LOG_UNIFORM);
		pc_hist_record(i % 3 ? a : b, v);
		pc_hist_record(all, v);
	}
	pc_hist_merge(a, b);
	assert_int_equal(pc_hist_validate(a, NULL, 0), 0);
	assert_memory_equal(a, all, sizeof(*a));
	pc_hist_reset(a);
	assert_int_equal(pc_hist_count(a), 0);
	pc_hist_merge(a, b);  /* into an empty one */
	assert_int_equal(pc_hist_min(a), pc_hist_min(b));
	assert_int_equal(pc_hist_max(a), pc_hist_max(b));
	pc_hist_destroy(a);
	pc_hist_destroy(b);
	pc_hist_destroy(all);
}

static void validate_catches_corruption(void **state)
{
	struct pc_hist h;
	(void)state;
	pc_hist_reset(&h);
	pc_hist_record(&h, 1000);
	pc_hist_record(&h, 5000);
	assert_int_equal(pc_hist_validate(&h, NULL, 0), 0);
	h._buckets[3]++;
	PC_EXPECT_BROKEN(pc_hist_validate(&h, PC_WHY), "count says");
	h._buckets[3]--;
	h._min = 10;
	PC_EXPECT_BROKEN(pc_hist_validate(&h, PC_WHY), "min 10 and max");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(percentiles_match_sorted_values),
		cmocka_unit_test(buckets_tile_the_range),
		cmocka_unit_test(empty_and_extreme_values),
		cmocka_unit_test(merge_equals_recording_everything),
		cmocka_unit_test(validate_catches_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
