/* SPDX-License-Identifier: MIT */
/* The statistics behind percore compare: descriptive figures and the
 * Mann-Whitney U test, checked against values worked out by hand (the
 * scipy comparison over many random samples is test_compare_scipy). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report_stats.h"

#define EPS 1e-12

static void median_of_odd_and_even_counts(void **state)
{
	const double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 };

	(void)state;
	assert_float_equal(pc_stat_median(odd, 3), 3, EPS);
	assert_float_equal(pc_stat_median(even, 4), 2.5, EPS);
	assert_true(isnan(pc_stat_median(odd, 0)));
	/* the input is not reordered */
	assert_float_equal(odd[0], 5, EPS);
}

static void separated_samples_give_the_smallest_exact_p(void **state)
{
	const double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 };
	struct pc_mwu r;

	(void)state;
	assert_int_equal(pc_mwu_test(a, 5, b, 5, &r), 0);
	assert_true(r.exact);
	assert_float_equal(r.u1, 0, EPS);
	/* one arrangement of C(10, 5) = 252 on each side */
	assert_float_equal(r.p, 2.0 / 252, EPS);
	assert_float_equal(pc_mwu_min_p(5, 5), 2.0 / 252, EPS);
	/* the test is symmetric */
	assert_int_equal(pc_mwu_test(b, 5, a, 5, &r), 0);
	assert_float_equal(r.u1, 25, EPS);
	assert_float_equal(r.p, 2.0 / 252, EPS);
}

static void three_against_three_cannot_reach_five_percent(void **state)
{
	const double a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
	struct pc_mwu r;

	(void)state;
	assert_int_equal(pc_mwu_test(a, 3, b, 3, &r), 0);
	assert_float_equal(r.p, 0.1, EPS);
	assert_float_equal(pc_mwu_min_p(3, 3), 0.1, EPS);
	assert_true(pc_mwu_min_p(2, 2) > 0.05);
}

static void exact_distribution_in_the_middle(void **state)
{
	/* U1 = 2 for x = {1, 4}, y = {2, 3}: P(U >= 2) over C(4, 2) = 6
	 * arrangements with U = 0, 1, 2, 2, 3, 4 is 4/6, two-sided 1 */
	const double x[] = { 1, 4 }, y[] = { 2, 3 }, x2[] = { 1, 2, 6 }, y2[] = { 3, 4, 5, 7 };
	struct pc_mwu r;

	(void)state;
	assert_int_equal(pc_mwu_test(x, 2, y, 2, &r), 0);
	assert_float_equal(r.u1, 2, EPS);
	assert_float_equal(r.p, 1, EPS);
	/* U1 = 3 of 12; counts of U = 0..12 for m = 3, n = 4 are
	 * 1 1 2 3 4 4 5 4 4 3 2 1 1 (35 in all): P(U >= 9) = 7/35 */
	assert_int_equal(pc_mwu_test(x2, 3, y2, 4, &r), 0);
	assert_float_equal(r.u1, 3, EPS);
	assert_float_equal(r.p, 2 * 7.0 / 35, EPS);
}

static void ties_use_the_normal_approximation(void **state)
{
	const double a[] = { 10, 10, 10, 11, 11 }, b[] = { 10, 10, 11, 11, 11 };
	struct pc_mwu r;

	(void)state;
	assert_int_equal(pc_mwu_test(a, 5, b, 5, &r), 0);
	assert_false(r.exact);
	/* ranks: five 10s share 3, five 11s share 8; U1 = 3*3 + 2*8 - 15 = 10;
	 * tie term 2 * (125 - 5) = 240; s^2 = 25/12 * (11 - 240/90) */
	double s = sqrt(25.0 / 12 * (11 - 240.0 / 90));
	assert_float_equal(r.u1, 10, EPS);
	assert_float_equal(r.p, erfc((15 - 12.5 - 0.5) / s / sqrt(2)), 1e-12);
}

static void large_samples_use_the_normal_approximation(void **state)
{
	double a[12], b[12];
	struct pc_mwu r;

	(void)state;
	for (int i = 0; i < 12; i++) {
		a[i] = i;
		b[i] = i + 100;
	}
	assert_int_equal(pc_mwu_test(a, 12, b, 12, &r), 0);
	assert_false(r.exact);
	assert_true(r.p < 1e-4);
	assert_float_equal(r.p, pc_mwu_min_p(12, 12), 1e-15);
}

static void identical_values_are_not_different(void **state)
{
	const double a[] = { 3, 3, 3 }, b[] = { 3, 3, 3, 3 };
	struct pc_mwu r;

	(void)state;
	assert_int_equal(pc_mwu_test(a, 3, b, 4, &r), 0);
	assert_float_equal(r.p, 1, EPS);
}

static void bad_input_is_refused(void **state)
{
	const double a[] = { 1, 2 }, nan_in[] = { 1, NAN };
	struct pc_mwu r;

	(void)state;
	assert_int_equal(pc_mwu_test(a, 0, a, 2, &r), -EINVAL);
	assert_int_equal(pc_mwu_test(a, 2, a, 0, &r), -EINVAL);
	assert_int_equal(pc_mwu_test(a, 2, nan_in, 2, &r), -EINVAL);
	assert_float_equal(pc_mwu_min_p(0, 5), 1, EPS);
}

static void ties_stay_exact_in_small_samples(void **state)
{
	const double a[] = { 1, 1, 1 }, b[] = { 2, 2, 2 };
	const double x[] = { 10, 10, 11, 12, 13 }, y[] = { 12, 13, 13, 14, 15 };
	struct pc_mwu r;

	(void)state;
	/* scipy's mannwhitneyu: ties, so the normal approximation, p = 0.047 */
	assert_int_equal(pc_mwu_test(a, 3, b, 3, &r), 0);
	assert_false(r.exact);
	assert_true(r.ties);
	assert_true(r.p < 0.05);
	/* exactly: 2 of the C(6, 3) = 20 splits are this extreme */
	assert_int_equal(pc_mwu_test_ties(a, 3, b, 3, &r), 0);
	assert_true(r.exact);
	assert_float_equal(r.p, 2.0 / 20, EPS);
	/* ranks 1.5 1.5 3 4.5 4.5 6.5 6.5 6.5 9 10: x's rank sum 17.5 (U1 2.5);
	 * 7 of the 252 splits give 17.5 or less, so p = 2 * 7 / 252 */
	assert_int_equal(pc_mwu_test_ties(x, 5, y, 5, &r), 0);
	assert_float_equal(r.u1, 2.5, EPS);
	assert_float_equal(r.p, 14.0 / 252, 1e-12);
	/* the same from the other side */
	assert_int_equal(pc_mwu_test_ties(y, 5, x, 5, &r), 0);
	assert_float_equal(r.p, 14.0 / 252, 1e-12);
	/* without ties it is the plain exact test */
	{
		const double u[] = { 1, 2, 3, 4, 5 }, v[] = { 6, 7, 8, 9, 10 };
		assert_int_equal(pc_mwu_test_ties(u, 5, v, 5, &r), 0);
		assert_float_equal(r.p, 2.0 / 252, EPS);
	}
}

static void ratio_interval_from_the_sorted_log_differences(void **state)
{
	const double x[] = { 1, 1, 1, 1, 1 }, y[] = { 2, 4, 8, 16, 32 };
	struct pc_ratio_ci ci;

	(void)state;
	/* 25 differences: log 2, 4, 8, 16, 32 five times each. Median: the
	 * 13th, log 8. 5 vs 5 at 0.05: P(U <= 2) = 4/252, doubled 0.032, but
	 * P(U <= 3) doubled is 0.056, so k = 3: the 3rd and the 23rd. */
	assert_int_equal(pc_ratio_ci(x, 5, y, 5, 0.05, &ci), 0);
	assert_float_equal(ci.est, 8, 1e-12);
	assert_float_equal(ci.lo, 2, 1e-12);
	assert_float_equal(ci.hi, 32, 1e-12);
	/* 3 vs 3 cannot give a 95% interval: 2/20 > 0.05 */
	assert_int_equal(pc_ratio_ci(x, 3, y, 3, 0.05, &ci), 0);
	assert_float_equal(ci.lo, 0, EPS);
	assert_true(isinf(ci.hi));
	/* bad input */
	const double zero[] = { 0, 1 };
	assert_int_equal(pc_ratio_ci(zero, 2, y, 2, 0.05, &ci), -EINVAL);
	assert_int_equal(pc_ratio_ci(x, 0, y, 2, 0.05, &ci), -EINVAL);
	assert_int_equal(pc_ratio_ci(x, 2, y, 2, 1, &ci), -EINVAL);
}

static void large_sample_interval_uses_the_normal_quantile(void **state)
{
	double x[10], y[10];
	struct pc_ratio_ci ci;

	(void)state;
	assert_float_equal(pc_normal_isf(0.025), 1.959963984540054, 1e-12);
	assert_float_equal(pc_normal_isf(0.5), 0, 1e-12);
	/* 10 vs 10: k = floor(50.5 - 1.96 * sqrt(100 * 21 / 12)) = 24, as the
	 * exact table has it (P(U <= 23) = 0.022). x = 1, y = e^j for
	 * j = 1..10: each log difference j ten times, so the 24th is 3 and the
	 * 77th is 8. */
	for (int i = 0; i < 10; i++) {
		x[i] = 1;
		y[i] = exp(i + 1);
	}
	assert_int_equal(pc_ratio_ci(x, 10, y, 10, 0.05, &ci), 0);
	assert_float_equal(log(ci.lo), 3, 1e-12);
	assert_float_equal(log(ci.hi), 8, 1e-12);
	assert_float_equal(log(ci.est), 5.5, 1e-12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(median_of_odd_and_even_counts),
		cmocka_unit_test(separated_samples_give_the_smallest_exact_p),
		cmocka_unit_test(three_against_three_cannot_reach_five_percent),
		cmocka_unit_test(exact_distribution_in_the_middle),
		cmocka_unit_test(ties_use_the_normal_approximation),
		cmocka_unit_test(large_samples_use_the_normal_approximation),
		cmocka_unit_test(identical_values_are_not_different),
		cmocka_unit_test(bad_input_is_refused),
		cmocka_unit_test(ties_stay_exact_in_small_samples),
		cmocka_unit_test(ratio_interval_from_the_sorted_log_differences),
		cmocka_unit_test(large_sample_interval_uses_the_normal_quantile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
