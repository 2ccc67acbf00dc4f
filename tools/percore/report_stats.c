/* SPDX-License-Identifier: MIT */
/* percore report/compare: descriptive statistics and the Mann-Whitney U test.
 * See stats.h for which variant of the test and why. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "percore/bench.h"
#include "report_stats.h"


static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double pc_stat_median(const double *v, size_t n)
{
	struct pc_bench_stats st;

	return pc_bench_stats_compute(v, n, &st) == 0 ? st.median : NAN;
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

/* The count of arrangements f(m, n, k) of two untied samples of sizes m
 * and n giving U = k, for k = 0 .. m n, in a new array of m n + 1 values:
 *   f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k)
 * (the largest value belongs either to the first sample, which then beats
 * all n of the second, or to the second). Rows over m' <= m are kept for the
 * current n' and updated in place; only additions of positive numbers, so
 * doubles stay accurate far beyond the sizes benchmarks use. The counts are
 * the same with m and n swapped. NULL when memory runs out. */
static double *u_counts(size_t m, size_t n)
{
	if (m > n) {
		size_t t = m;
		m = n;
		n = t;
	}
	size_t kmax = m * n, w = kmax + 1;
	double *f = calloc((m + 1) * w, sizeof(*f)), *row;

	if (!f)
		return NULL;
	for (size_t i = 0; i <= m; i++)
		f[i * w] = 1; /* n' = 0: only U = 0 */
	for (size_t np = 1; np <= n; np++)
		for (size_t mp = 1; mp <= m; mp++)
			for (size_t k = mp * np + 1; k-- > np;)
				f[mp * w + k] += f[(mp - 1) * w + k - np];
	row = malloc(w * sizeof(*row));
	if (row)
		memcpy(row, f + m * w, w * sizeof(*row));
	free(f);
	return row;
}

/* P(U >= u) under the null hypothesis for untied samples of sizes m, n. */
static int exact_sf(size_t m, size_t n, double u, double *out)
{
	double *f = u_counts(m, n), tail = 0, total = 0;

	if (!f)
		return -ENOMEM;
	for (size_t k = 0; k <= m * n; k++) {
		total += f[k];
		if ((double)k >= u)
			tail += f[k];
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
	out->ties = tie_term > 0;
	out->exact = (nx <= PC_MWU_EXACT_MAX || ny <= PC_MWU_EXACT_MAX) && tie_term == 0;
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
	if (nx > PC_MWU_EXACT_MAX && ny > PC_MWU_EXACT_MAX)
		return clamp01(normal_p((double)nx * (double)ny, (double)nx, (double)ny, 0));
	/* completely separated samples: one arrangement of C(nx + ny, nx) on
	 * each side */
	for (size_t i = 1; i <= nx; i++)
		c = c * (double)(ny + i) / (double)i;
	return clamp01(2 / c);
}

/* Binomial coefficient C(t, c) as a double (t small: one tie group). */
static double choose(size_t t, size_t c)
{
	double r = 1;

	for (size_t i = 1; i <= c; i++)
		r = r * (double)(t - c + i) / (double)i;
	return r;
}

/* Exact two-sided p of the rank sum of sample A (from_x == a_is_x) among the
 * pooled values, over all C(n, m) ways to choose A's m positions, tied
 * values sharing their mean rank. Ranks are doubled so every rank sum is an
 * integer: g[s] counts (weighted by the ways to pick inside each tie group)
 * the choices of k values of A with doubled rank sum s, group by group. */
static int exact_ties_p(struct tagged *all, size_t n, size_t m, int a_is_x, double *out)
{
	size_t smax = m * (2 * n - m + 1), w = smax + 1, obs = 0;
	double *g = calloc((m + 1) * w, sizeof(*g)), le = 0, ge = 0, total = 0;

	if (!g)
		return -ENOMEM;
	g[0] = 1;
	qsort(all, n, sizeof(*all), cmp_tagged);
	for (size_t i = 0; i < n;) {
		size_t j = i, t, d;
		while (j + 1 < n && all[j + 1].v == all[i].v)
			j++;
		t = j - i + 1;
		d = i + j + 2; /* twice the mean of ranks i + 1 .. j + 1 */
		for (size_t k = i; k <= j; k++)
			obs += all[k].from_x == a_is_x ? d : 0;
		for (size_t k = m; k >= 1; k--)
			for (size_t c = 1; c <= t && c <= k; c++) {
				double wc = choose(t, c);
				for (size_t s = smax + 1; s-- > c * d;)
					g[k * w + s] += wc * g[(k - c) * w + s - c * d];
			}
		i = j + 1;
	}
	for (size_t s = 0; s <= smax; s++) {
		total += g[m * w + s];
		le += s <= obs ? g[m * w + s] : 0;
		ge += s >= obs ? g[m * w + s] : 0;
	}
	free(g);
	*out = clamp01(2 * fmin(le, ge) / total);
	return 0;
}

int pc_mwu_test_ties(const double *x, size_t nx, const double *y, size_t ny,
		     struct pc_mwu *out)
{
	int rc = pc_mwu_test(x, nx, y, ny, out);
	size_t n = nx + ny;
	struct tagged *all;

	if (rc < 0 || !out->ties || (nx > PC_MWU_EXACT_MAX && ny > PC_MWU_EXACT_MAX))
		return rc;
	if (!(all = malloc(n * sizeof(*all))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		all[i] = i < nx ? (struct tagged){ x[i], 1 } : (struct tagged){ y[i - nx], 0 };
	rc = exact_ties_p(all, n, nx <= ny ? nx : ny, nx <= ny, &out->p);
	free(all);
	out->exact = rc == 0;
	return rc;
}

double pc_normal_isf(double p)
{
	double lo = -40, hi = 40;

	/* P(Z > z) falls as z grows: bisect to double precision */
	for (int i = 0; i < 200 && hi - lo > 1e-15; i++) {
		double mid = (lo + hi) / 2;
		if (erfc(mid / M_SQRT2) / 2 > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* How many of the sorted differences the interval leaves out on each side,
 * plus one: the largest k with P(U <= k - 1) <= alpha / 2; 0 when even
 * k = 1 is too likely (no interval at this alpha). */
static int ci_rank(size_t nx, size_t ny, double alpha, size_t *k)
{
	double big_n = (double)nx * (double)ny;

	if (nx > PC_MWU_EXACT_MAX && ny > PC_MWU_EXACT_MAX) {
		double sd = sqrt(big_n * (double)(nx + ny + 1) / 12);
		double kk = floor(big_n / 2 + 0.5 - pc_normal_isf(alpha / 2) * sd);
		*k = kk < 1 ? 0 : kk > big_n / 2 ? (size_t)(big_n / 2) : (size_t)kk;
		return 0;
	}
	double *f = u_counts(nx, ny), total = 0, cdf = 0;

	if (!f)
		return -ENOMEM;
	for (size_t u = 0; u <= nx * ny; u++)
		total += f[u];
	*k = 0;
	for (size_t u = 0; u <= nx * ny; u++) {
		cdf += f[u];
		if (2 * cdf / total > alpha)
			break;
		*k = u + 1;
	}
	free(f);
	return 0;
}

int pc_ratio_ci(const double *x, size_t nx, const double *y, size_t ny, double alpha,
		struct pc_ratio_ci *out)
{
	size_t big_n = nx * ny, k, at = 0;
	double *d;
	int rc;

	if (!nx || !ny || !(alpha > 0 && alpha < 1))
		return -EINVAL;
	for (size_t i = 0; i < nx + ny; i++) {
		double v = i < nx ? x[i] : y[i - nx];
		if (!(v > 0) || !isfinite(v))
			return -EINVAL;
	}
	if ((rc = ci_rank(nx, ny, alpha, &k)) < 0)
		return rc;
	if (!(d = malloc(big_n * sizeof(*d))))
		return -ENOMEM;
	for (size_t i = 0; i < nx; i++)
		for (size_t j = 0; j < ny; j++)
			d[at++] = log(y[j]) - log(x[i]);
	qsort(d, big_n, sizeof(*d), cmp_double);
	out->est = exp(big_n % 2 ? d[big_n / 2] : (d[big_n / 2 - 1] + d[big_n / 2]) / 2);
	out->lo = k ? exp(d[k - 1]) : 0;
	out->hi = k ? exp(d[big_n - k]) : INFINITY;
	free(d);
	return 0;
}
