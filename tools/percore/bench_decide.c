/* SPDX-License-Identifier: MIT */
/* percore bench: which rows need more rounds (bench_decide.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench_decide.h"
#include "report.h"
#include "report_stats.h"

void pc_bench_decide_init(struct pc_bench_decide *d)
{
	*d = (struct pc_bench_decide){
		.interim = { .alpha = 0.001, .ci_alpha = 0.01, .margin = 0.05 },
		.max_reps = 60,
		.final = { .alpha = 0.05, .ci_alpha = 0.05, .margin = 0.05 },
	};
}

bool pc_bench_decide_futile(const struct pc_judgement *j, const struct pc_bench_decide *d,
			    double reach)
{
	double n = (double)(j->n_ours < j->n_other ? j->n_ours : j->n_other);
	/* j's interval is at the interim level; what counts is whether the
	 * report's rule will decide, so widths are taken at the final level */
	double zi = pc_normal_isf(d->interim.ci_alpha / 2), zf = pc_normal_isf(d->final.ci_alpha / 2);
	double half = (log(j->hi) - log(j->lo)) / 2 * zf / zi, est = fabs(log(j->speedup));
	/* significance needs the estimate beyond the test's own quantile, a
	 * little further out than the interval's when the two levels differ */
	double zt = pc_normal_isf(d->final.alpha / 2);
	double need = fmax(est * zf / zt, log(1 + d->final.margin) - est);

	if (j->decided || j->out == PC_OUT_UNTESTED || !(j->lo > 0) || !isfinite(j->hi) ||
	    n < PC_DECIDE_FUTILE_MIN_REPS || !(half > 0))
		return false;
	return need <= 0 || half * sqrt(n / fmax(reach, n)) > need;
}

/* The session's rows as the report reads them, paired and judged by rule
 * r. Returns 0 or -ENOMEM; on success the caller frees all three. */
static int judge_session(const struct pc_bench_session *s, const struct pc_decide *r,
			 struct pc_results **res, struct pc_pairing *pp,
			 struct pc_judged **j, size_t *nj)
{
	cJSON *root = pc_bench_session_json(s, NULL);

	*res = root ? pc_results_from_json(root, "this run", 0, NULL, 0) : NULL;
	if (!*res)
		return -ENOMEM;
	if (pc_pairing_build(*res, pp) < 0) {
		pc_results_free(*res);
		return -ENOMEM;
	}
	if (pc_pairing_judge(*res, pp, r, j, nj) < 0) {
		pc_pairing_free(pp);
		pc_results_free(*res);
		return -ENOMEM;
	}
	return 0;
}

static void free_judged(struct pc_results *res, struct pc_pairing *pp, struct pc_judged *j)
{
	free(j);
	pc_pairing_free(pp);
	pc_results_free(res);
}

/* The session entry called name, or -1 (a row the harness did not write). */
static long entry_of(const struct pc_bench_session *s, const char *name)
{
	for (size_t i = 0; i < pc_bench_session_count(s); i++)
		if (!strcmp(pc_bench_session_name(s, i), name))
			return (long)i;
	return -1;
}

/* Repetitions a side at which rule r would decide j (judged by the
 * interim rule), its interval shrinking as one over the square root of
 * the repetitions; INFINITY when it never would. */
static double reps_to_decide(const struct pc_judgement *j, const struct pc_bench_decide *d,
			     const struct pc_decide *r)
{
	double n = (double)(j->n_ours < j->n_other ? j->n_ours : j->n_other);
	double zi = pc_normal_isf(d->interim.ci_alpha / 2), zr = pc_normal_isf(r->ci_alpha / 2);
	double half = (log(j->hi) - log(j->lo)) / 2 * zr / zi, est = fabs(log(j->speedup));
	double need = fmax(est * zr / pc_normal_isf(r->alpha / 2), log(1 + r->margin) - est);

	return need > 0 ? n * (half / need) * (half / need) : INFINITY;
}

/* A pair that more rounds could decide, and what deciding it costs. */
struct candidate {
	long a, b;              /* its rows' session entries, or -1 */
	double cost_s;          /* seconds of repetitions still needed */
};

static int by_cost(const void *x, const void *y)
{
	const struct candidate *p = x, *q = y;

	return (p->cost_s > q->cost_s) - (p->cost_s < q->cost_s);
}

size_t pc_bench_decide_plan(const double *cost_s, size_t n, double left_s, bool *take)
{
	struct candidate *c = calloc(n + 1, sizeof(*c));
	double spent = 0;
	size_t k = 0;

	if (!c)
		return 0;
	for (size_t i = 0; i < n; i++)
		c[i] = (struct candidate){ .a = (long)i, .cost_s = cost_s[i] };
	qsort(c, n, sizeof(*c), by_cost);
	for (; k < n && spent + c[k].cost_s <= left_s; k++) {
		spent += c[k].cost_s;
		take[c[k].a] = true;
	}
	free(c);
	return k;
}

/* The candidate for judged pair k, or false when it needs no more rounds
 * (decided at the interim level, a variant) or cannot be decided within
 * the cap. Until the report's rule decides it, it needs the repetitions
 * that rule asks; after that, those the interim rule asks to stop. A pair
 * with too few repetitions to tell costs nothing, so it always runs. */
static bool candidate_of(const struct pc_bench_session *s, const struct pc_bench_decide *d,
			 const struct pc_results *res, const struct pc_pairing *pp,
			 const struct pc_judged *jk, struct candidate *c)
{
	const struct pc_peer *pr = &pp->p[jk->ours].peers[jk->peer];
	const struct pc_judgement *j = &jk->j;
	double n = (double)(j->n_ours < j->n_other ? j->n_ours : j->n_other), target;

	if (!pc_pair_kind_counts(pr->kind) || j->decided ||
	    pc_bench_decide_futile(j, d, (double)d->max_reps))
		return false;
	c->a = entry_of(s, res->b[jk->ours].name);
	c->b = entry_of(s, res->b[pr->idx].name);
	c->cost_s = 0;
	if (n < PC_DECIDE_FUTILE_MIN_REPS || !(j->lo > 0) || !isfinite(j->hi))
		return true;
	target = reps_to_decide(j, d, &d->final);
	if (target <= n)
		target = reps_to_decide(j, d, &d->interim);
	target = fmin(fmax(target, n + 1), (double)d->max_reps);
	c->cost_s = (target - n) * ((c->a >= 0 ? pc_bench_session_rep_cost_s(s, (size_t)c->a) : 0) +
				    (c->b >= 0 ? pc_bench_session_rep_cost_s(s, (size_t)c->b) : 0));
	return true;
}

size_t pc_bench_decide_more(const struct pc_bench_session *s, bool *want, void *arg)
{
	struct pc_bench_decide *d = arg;
	size_t count = pc_bench_session_count(s), nj, nc = 0, n = 0;
	struct candidate *c;
	struct pc_results *res;
	struct pc_pairing pp;
	struct pc_judged *j;
	double *cost;
	bool *take;

	if (judge_session(s, &d->interim, &res, &pp, &j, &nj) < 0)
		return 0;
	c = calloc(nj + 1, sizeof(*c));
	cost = calloc(nj + 1, sizeof(*cost));
	take = calloc(nj + 1, sizeof(*take));
	for (size_t k = 0; c && cost && take && k < nj; k++)
		nc += candidate_of(s, d, res, &pp, &j[k], &c[nc]);
	free_judged(res, &pp, j);
	for (size_t k = 0; k < nc; k++)
		cost[k] = c[k].cost_s;
	if (c && cost && take)
		pc_bench_decide_plan(cost, nc, pc_bench_session_budget_left_s(s), take);
	for (size_t k = 0; take && k < nc; k++) {
		if (take[k] && c[k].a >= 0)
			want[c[k].a] = true;
		if (take[k] && c[k].b >= 0)
			want[c[k].b] = true;
	}
	free(c);
	free(cost);
	free(take);
	for (size_t i = 0; i < count; i++)
		n += want[i];
	return n;
}

int pc_bench_decide_count(const struct pc_bench_session *s, struct pc_bench_decide *d)
{
	struct pc_results *res;
	struct pc_pairing pp;
	struct pc_judged *j;
	size_t nj;

	if (judge_session(s, &d->final, &res, &pp, &j, &nj) < 0)
		return -ENOMEM;
	d->pairs = d->decided = 0;
	for (size_t k = 0; k < nj; k++) {
		if (!pc_pair_kind_counts(pp.p[j[k].ours].peers[j[k].peer].kind))
			continue;
		d->pairs++;
		d->decided += j[k].j.decided;
	}
	free_judged(res, &pp, j);
	return 0;
}
