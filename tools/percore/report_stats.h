/* SPDX-License-Identifier: MIT */
/* percore report/compare: descriptive statistics and the Mann-Whitney U
 * test used to call a change between two runs significant or not.
 *
 * The test follows what Google Benchmark's compare.py gets from scipy
 * (scipy.stats.mannwhitneyu, two-sided, method "auto"): the exact null
 * distribution of U when either sample has at most 8 values and there are no
 * ties, otherwise the normal approximation with tie correction and a
 * continuity correction of 1/2. Same inputs, same p-value. */
#ifndef PERCORE_TOOL_STATS_H
#define PERCORE_TOOL_STATS_H

#include <stdbool.h>
#include <stddef.h>

/* compare.py's UTEST_MIN_REPETITIONS: with fewer repetitions on either side
 * it runs no test at all, and neither do we. */
#define PC_MWU_MIN_REPS 2
/* compare.py's UTEST_OPTIMAL_REPETITIONS: below it, it warns the result is
 * unreliable. */
#define PC_MWU_GOOD_REPS 9

/* Median of n values (the library's summary statistics, include/percore/bench.h,
 * computed for one figure); the values are not reordered. Returns NAN when
 * n is 0 or memory runs out. */
double pc_stat_median(const double *v, size_t n);

/* scipy's method "auto" uses the exact distribution only when one sample
 * has at most this many values. */
#define PC_MWU_EXACT_MAX 8

struct pc_mwu {
	double u1;      /* U statistic of the first sample (scipy's statistic):
	                 * pairs with x > y, ties counting one half */
	double p;       /* two-sided p-value, in [0, 1] */
	bool exact;     /* exact distribution (true) or normal approximation */
	bool ties;      /* some value occurs in the pooled samples more than once */
};

/* Two-sided Mann-Whitney U test of x against y. Returns 0, or -EINVAL when
 * either sample is empty or holds a NaN, -ENOMEM when memory runs out. */
int pc_mwu_test(const double *x, size_t nx, const double *y, size_t ny,
		struct pc_mwu *out);

/* The same test where ties stay exact: when either sample has at most
 * PC_MWU_EXACT_MAX values the p-value comes from the distribution of U over
 * every split of the pooled values into samples of these sizes (the
 * permutation distribution, tied values keeping their shared rank), two
 * tails doubled: 2 min(P(U <= u1), P(U >= u1)), capped at 1. Without ties
 * that is scipy's exact p; with ties it is what scipy.stats.permutation_test
 * gives for the U statistic, where pc_mwu_test (like scipy's mannwhitneyu)
 * falls back to the normal approximation. Larger samples: the normal
 * approximation, as pc_mwu_test. Errors as pc_mwu_test. */
int pc_mwu_test_ties(const double *x, size_t nx, const double *y, size_t ny,
		     struct pc_mwu *out);

/* A Hodges-Lehmann estimate of the ratio y/x of two samples of positive
 * values, with its confidence interval: computed on log values, the shift
 * is the median of every difference log y_j - log x_i, and the interval
 * runs from the k-th smallest to the k-th largest difference, k chosen so
 * the interval covers the true shift with probability at least 1 - alpha
 * (the Mann-Whitney distribution: exact when either sample has at most
 * PC_MWU_EXACT_MAX values, else normal with continuity correction). The
 * interval is the set of shifts the two-sided test does not reject at
 * alpha. When no k is small enough (3 against 3 at alpha 0.05) the
 * interval is unbounded: lo 0, hi INFINITY. */
struct pc_ratio_ci {
	double est, lo, hi;
};

/* Returns 0, -EINVAL for an empty sample, a value that is not positive and
 * finite, or alpha outside (0, 1); -ENOMEM. */
int pc_ratio_ci(const double *x, size_t nx, const double *y, size_t ny, double alpha,
		struct pc_ratio_ci *out);

/* The z with P(Z > z) = p for a standard normal Z, p in (0, 1). */
double pc_normal_isf(double p);

/* The smallest two-sided p-value any pair of untied samples of these sizes
 * can give: when it is above alpha, no outcome could be called significant. */
double pc_mwu_min_p(size_t nx, size_t ny);

#endif
