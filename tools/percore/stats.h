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

/* Median of n values (the library's summary statistics, src/bench/stats.h,
 * computed for one figure); the values are not reordered. Returns NAN when
 * n is 0 or memory runs out. */
double pc_stat_median(const double *v, size_t n);

struct pc_mwu {
	double u1;      /* U statistic of the first sample (scipy's statistic) */
	double p;       /* two-sided p-value, in [0, 1] */
	bool exact;     /* exact distribution (true) or normal approximation */
};

/* Two-sided Mann-Whitney U test of x against y. Returns 0, or -EINVAL when
 * either sample is empty or holds a NaN, -ENOMEM when memory runs out. */
int pc_mwu_test(const double *x, size_t nx, const double *y, size_t ny,
		struct pc_mwu *out);

/* The smallest two-sided p-value any pair of untied samples of these sizes
 * can give: when it is above alpha, no outcome could be called significant. */
double pc_mwu_min_p(size_t nx, size_t ny);

#endif
