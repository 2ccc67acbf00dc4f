/* SPDX-License-Identifier: MIT */
/* percore report and bench: the verdict on one pair of rows (verdict.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_stats.h"
#include "verdict.h"

double pc_rsample_tpi(const struct pc_rsample *s)
{
	return s->items_ps > 0 ? 1e9 / s->items_ps : s->real_ns;
}

const char *pc_outcome_name(enum pc_outcome o)
{
	static const char *const names[] = { "faster", "slower", "no significant difference",
					     "untested" };

	return (unsigned)o <= PC_OUT_UNTESTED ? names[o] : "?";
}

const char *pc_pair_kind_name(enum pc_pair_kind k)
{
	static const char *const names[] = { "peer", "limit", "variant", "reference" };

	return (unsigned)k <= PC_PAIR_REFERENCE ? names[k] : "?";
}

bool pc_pair_kind_counts(enum pc_pair_kind k)
{
	return k == PC_PAIR_PEER || k == PC_PAIR_LIMIT;
}

/* The usable times per item of a row, times scale; *n of them. */
static double *times(const struct pc_rbench *b, double scale, size_t *n)
{
	double *v = malloc((b->nsamples ? b->nsamples : 1) * sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < b->nsamples; i++) {
		double t = scale * pc_rsample_tpi(&b->s[i]);
		if (t > 0 && isfinite(t))
			v[(*n)++] = t;
	}
	return v;
}

/* The usable values of one counter of a row, times scale; *n of them. */
static double *counter_values(const struct pc_rbench *b, const struct pc_rcounter *c,
			      double scale, size_t *n)
{
	double *v = malloc((b->nsamples ? b->nsamples : 1) * sizeof(*v));

	*n = 0;
	for (size_t i = 0; v && i < b->nsamples; i++) {
		double t = scale * c->v[i];
		if (t > 0 && isfinite(t))
			v[(*n)++] = t;
	}
	return v;
}

static const struct pc_rcounter *counter(const struct pc_rbench *b, const char *name)
{
	for (size_t k = 0; k < b->ncounters; k++)
		if (!strcmp(b->c[k].name, name))
			return &b->c[k];
	return NULL;
}

/* A pair too small to test: its ratio of medians alone. */
static void untested(struct pc_judgement *j, double speedup)
{
	j->speedup = speedup;
	j->lo = 0;
	j->hi = INFINITY;
	j->p = NAN;
	j->p_adj = NAN;
	j->dir = 0;
	j->out = PC_OUT_UNTESTED;
	j->decided = false;
}

/* The outcome and decided flag from the p that counts: the adjusted one
 * where the pair belongs to the family, else its own. */
static void settle(struct pc_judgement *j, const struct pc_decide *d)
{
	double p = isfinite(j->p_adj) ? j->p_adj : j->p;

	if (p >= d->alpha || j->dir == 0)
		j->out = PC_OUT_SAME;
	else
		j->out = j->dir < 0 ? PC_OUT_FASTER : PC_OUT_SLOWER;
	j->decided = j->out != PC_OUT_SAME ||
		     (j->lo >= 1 / (1 + d->margin) && j->hi <= 1 + d->margin);
}

/* Judge the samples x (ours) against y (the other row's), both already
 * counted in j->n_ours and j->n_other; too few on a side leaves the pair
 * untested with the ratio `median`. Returns 0 or -ENOMEM. */
static int judge(const double *x, const double *y, double median, const struct pc_decide *d,
		 struct pc_judgement *j)
{
	struct pc_ratio_ci ci;
	struct pc_mwu t;
	int rc;

	if (j->n_ours < PC_MWU_MIN_REPS || j->n_other < PC_MWU_MIN_REPS) {
		untested(j, median);
		return 0;
	}
	if ((rc = pc_mwu_test_ties(x, j->n_ours, y, j->n_other, &t)) < 0 ||
	    (rc = pc_ratio_ci(x, j->n_ours, y, j->n_other, d->ci_alpha, &ci)) < 0)
		return rc;
	j->speedup = ci.est;
	j->lo = ci.lo;
	j->hi = ci.hi;
	j->p = t.p;
	j->p_adj = NAN;
	/* u1 counts the pairs where ours took longer: below half, ours is
	 * faster; the direction comes from the statistic that was tested */
	j->dir = t.u1 * 2 < (double)j->n_ours * (double)j->n_other ? -1
		 : t.u1 * 2 > (double)j->n_ours * (double)j->n_other ? 1 : 0;
	settle(j, d);
	return 0;
}

int pc_judge_pair(const struct pc_rbench *ours, const struct pc_rbench *other, double scale,
		  const struct pc_decide *d, struct pc_judgement *j)
{
	double *x = times(ours, 1, &j->n_ours), *y = times(other, scale, &j->n_other);
	int rc = x && y ? judge(x, y, scale * other->st.tpi_ns / ours->st.tpi_ns, d, j) : -ENOMEM;

	free(x);
	free(y);
	return rc;
}

int pc_judge_cpu(const struct pc_rbench *ours, const struct pc_rbench *other, double scale,
		 const struct pc_decide *d, struct pc_judgement *j)
{
	const struct pc_rcounter *a = counter(ours, PC_COUNTER_SERVER_CPU);
	const struct pc_rcounter *b = counter(other, PC_COUNTER_SERVER_CPU);
	double *x, *y;
	int rc;

	if (!a || !b)
		return -ENOENT;
	x = counter_values(ours, a, 1, &j->n_ours);
	y = counter_values(other, b, scale, &j->n_other);
	rc = x && y ? judge(x, y, scale * pc_rcounter_median(other, b) /
			    pc_rcounter_median(ours, a), d, j) : -ENOMEM;
	free(x);
	free(y);
	return rc;
}

bool pc_judge_client_bound(const struct pc_rbench *ours, const struct pc_rbench *other)
{
	const struct pc_rbench *rows[] = { ours, other };

	for (size_t k = 0; k < 2; k++) {
		const struct pc_rcounter *c = counter(rows[k], PC_COUNTER_CLIENT_UTIL);
		/* NAN (no values) compares false */
		if (c && pc_rcounter_median(rows[k], c) >= PC_CLIENT_BOUND)
			return true;
	}
	return false;
}

static int by_p(const void *a, const void *b)
{
	const struct pc_judgement *x = *(struct pc_judgement *const *)a;
	const struct pc_judgement *y = *(struct pc_judgement *const *)b;

	return (x->p > y->p) - (x->p < y->p);
}

int pc_judge_adjust(struct pc_judgement *const *js, size_t n, const struct pc_decide *d)
{
	struct pc_judgement **v = malloc((n ? n : 1) * sizeof(*v));
	size_t m = 0;
	double run = 1;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (js[i]->out != PC_OUT_UNTESTED && isfinite(js[i]->p))
			v[m++] = js[i];
	qsort(v, m, sizeof(*v), by_p);
	/* step-up from the largest p: each adjusted p is the smallest
	 * p_(k) * m / k over k at or above its rank */
	for (size_t r = m; r > 0; r--) {
		run = fmin(run, v[r - 1]->p * (double)m / (double)r);
		v[r - 1]->p_adj = run;
		settle(v[r - 1], d);
	}
	free(v);
	return 0;
}
