/* SPDX-License-Identifier: MIT */
/* percore bench: summary statistics of repeated measurements. */
#ifndef PERCORE_SRC_BENCH_STATS_H
#define PERCORE_SRC_BENCH_STATS_H

#include <stddef.h>

struct pc_bench_stats {
	double mean, median;
	double stddev;          /* sample standard deviation (n - 1) */
	double cv;              /* stddev / mean as a fraction; 0 when mean is 0 */
	double min, max;
};

/* Summarise v[0..n-1] (v is not modified). stddev and cv are 0 for n == 1.
 * Returns 0, or -EINVAL for n == 0, -ENOMEM. */
int bench_stats_compute(const double *v, size_t n, struct pc_bench_stats *out);

#endif
