/* percore report/compare: descriptive statistics and the Mann-Whitney U test.
 * See stats.h for which variant of the test and why. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats.h"
#include "stats.h"

/* scipy switches to the normal approximation when both samples are larger
 * than this (or when there are ties). */
#define MWU_EXACT_MAX 8

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double pc_stat_median(const double *v, size_t n)
{
	struct pc_bench_stats st;

	return bench_stats_compute(v, n, &st) == 0 ? st.median : NAN;
}

struct tagged {
	double v;
	int from_x;
};

static int cmp_tagged(const void *a, const void *b)
{
	return cmp_double(&((const struct tagged *)a)->v, &((const struct tagged *)b)->v);
}

/* Ranks the pooled samples (ties get their average rank) and returns the
 * rank sum of x; *tie_term is sum(t^3 - t) over groups of t tied values. */
static double rank_sum_x(struct tagged *all, size_t n, double *tie_term)
{
	double r1 = 0;

	qsort(all, n, sizeof(*all), cmp_tagged);
	*tie_term = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && all[j + 1].v == all[i].v)
			j++;
		double t = (double)(j - i + 1), rank = (double)(i + j) / 2 + 1;
		for (size_t k = i; k <= j; k++)
			if (all[k].from_x)
				r1 += rank;
		*tie_term += t * t * t - t;
		i = j + 1;
	}
	return r1;
}

/* P(U >= u) under the null hypothesis for samples of sizes m and n, from
 * the count of arrangements f(m, n, k) giving U = k:
 *   f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k)
 * (the largest value belongs either to the first sample, which then beats
 * all n of the second, or to the second). Rows over m' <= m are kept for the
 * current n' and updated in place; only additions of positive numbers, so
 * doubles stay accurate far beyond the sizes benchmarks use. */
static int exact_sf(size_t m, size_t n, double u, double *out)
{
	if (m > n) {
		size_t t = m;
		m = n;
		n = t;
	}
	size_t kmax = m * n, w = kmax + 1;
	double *f = calloc((m + 1) * w, sizeof(*f)), tail = 0, total = 0;

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i <= m; i++)
		f[i * w] = 1; /* n' = 0: only U = 0 */
	for (size_t np = 1; np <= n; np++)
		for (size_t mp = 1; mp <= m; mp++)
			for (size_t k = mp * np + 1; k-- > np;)
				f[mp * w + k] += f[(mp - 1) * w + k - np];
	for (size_t k = 0; k <= kmax; k++) {
		total += f[m * w + k];
		if ((double)k >= u)
			tail += f[m * w + k];
	}
	free(f);
	*out = tail / total;
	return 0;
}

/* Normal approximation with tie correction and continuity correction, as
 * scipy's _get_mwu_z; returns the two-sided p-value for U = max(U1, U2). */
static double normal_p(double u, double n1, double n2, double tie_term)
{
	double n = n1 + n2, mu = n1 * n2 / 2;
	double s = sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));

	if (!(s > 0))
		return 1; /* every value equal: nothing to tell apart */
	return erfc((u - mu - 0.5) / s / M_SQRT2); /* 2 * normal survival */
}

static double clamp01(double p)
{
	return p < 0 ? 0 : p > 1 ? 1 : p;
}

int pc_mwu_test(const double *x, size_t nx, const double *y, size_t ny,
		struct pc_mwu *out)
{
	size_t n = nx + ny;
	struct tagged *all;
	double tie_term, u1, u;
	int rc = 0;

	if (nx == 0 || ny == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (isnan(i < nx ? x[i] : y[i - nx]))
			return -EINVAL;
	if (!(all = malloc(n * sizeof(*all))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		all[i] = i < nx ? (struct tagged){ x[i], 1 } : (struct tagged){ y[i - nx], 0 };
	u1 = rank_sum_x(all, n, &tie_term) - (double)nx * (double)(nx + 1) / 2;
	free(all);
	u = fmax(u1, (double)nx * (double)ny - u1);
	out->u1 = u1;
	out->exact = (nx <= MWU_EXACT_MAX || ny <= MWU_EXACT_MAX) && tie_term == 0;
	if (out->exact) {
		double sf;
		if ((rc = exact_sf(nx, ny, u, &sf)) < 0)
			return rc;
		out->p = clamp01(2 * sf);
	} else {
		out->p = clamp01(normal_p(u, (double)nx, (double)ny, tie_term));
	}
	return 0;
}

double pc_mwu_min_p(size_t nx, size_t ny)
{
	double c = 1;

	if (nx == 0 || ny == 0)
		return 1;
	if (nx > MWU_EXACT_MAX && ny > MWU_EXACT_MAX)
		return clamp01(normal_p((double)nx * (double)ny, (double)nx, (double)ny, 0));
	/* completely separated samples: one arrangement of C(nx + ny, nx) on
	 * each side */
	for (size_t i = 1; i <= nx; i++)
		c = c * (double)(ny + i) / (double)i;
	return clamp01(2 / c);
}
