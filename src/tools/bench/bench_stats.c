/* SPDX-License-Identifier: MIT */
/* percore bench: summary statistics of repeated measurements.
 *
 * The sample standard deviation (divided by n - 1) is what Google
 * Benchmark writes, so our stddev and cv rows mean what its tools expect. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "percore/bench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(const double *v, size_t n, double *scratch)
{
	memcpy(scratch, v, n * sizeof(*v));
	qsort(scratch, n, sizeof(*scratch), cmp_double);
	if (n % 2)
		return scratch[n / 2];
	return (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
}

int pc_bench_stats_compute(const double *v, size_t n, struct pc_bench_stats *out)
{
	double sum = 0, sq = 0, *scratch;

	if (n == 0)
		return -EINVAL;
	scratch = malloc(n * sizeof(*scratch));
	if (!scratch)
		return -ENOMEM;
	out->min = out->max = v[0];
	for (size_t i = 0; i < n; i++) {
		sum += v[i];
		out->min = v[i] < out->min ? v[i] : out->min;
		out->max = v[i] > out->max ? v[i] : out->max;
	}
	out->mean = sum / (double)n;
	/* Two passes: subtracting the mean first keeps the squares small, so
	 * nearly equal repetitions do not lose their spread to rounding. */
	for (size_t i = 0; i < n; i++)
		sq += (v[i] - out->mean) * (v[i] - out->mean);
	out->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	out->cv = out->mean != 0 ? out->stddev / fabs(out->mean) : 0;
	out->median = median_of(v, n, scratch);
	free(scratch);
	return 0;
}
