/* SPDX-License-Identifier: MIT */
/* percore bench: which rows need more rounds (bench_decide.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench_decide.h"
#include "report.h"
#include "stats.h"

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

/* Repetitions a side the pair can still reach: its own plus one per round
 * the budget left affords, at round_s seconds a round; capped at max_reps. */
static double reachable(const struct pc_judgement *j, const struct pc_bench_decide *d,
			double budget_left, double round_s)
{
	double n = (double)(j->n_ours < j->n_other ? j->n_ours : j->n_other);
	double more = round_s > 0 ? floor(budget_left / round_s) : INFINITY;

	return fmin((double)d->max_reps, n + fmax(more, 0));
}

/* Pass 1 (round_s < 0): the pairs worth more rounds with the whole cap
 * ahead of them; marks their rows and returns the seconds a round of them
 * costs. Pass 2: of those, the ones the rounds the budget leaves can
 * still decide; marks their rows only. */
static double mark_pairs(const struct pc_bench_session *s, struct pc_bench_decide *d,
			 const struct pc_results *res, const struct pc_pairing *pp,
			 const struct pc_judged *j, size_t nj, double round_s, bool *want)
{
	double left = pc_bench_session_budget_left_s(s), cost = 0;

	for (size_t k = 0; k < nj; k++) {
		const struct pc_peer *pr = &pp->p[j[k].ours].peers[j[k].peer];
		double reach = round_s < 0 ? d->max_reps : reachable(&j[k].j, d, left, round_s);

		if (pr->kind == PC_PAIR_VARIANT || j[k].j.decided ||
		    pc_bench_decide_futile(&j[k].j, d, reach))
			continue;
		long a = entry_of(s, res->b[j[k].ours].name), b = entry_of(s, res->b[pr->idx].name);
		if (a >= 0 && !want[a]) {
			want[a] = true;
			cost += pc_bench_session_rep_cost_s(s, (size_t)a);
		}
		if (b >= 0 && !want[b]) {
			want[b] = true;
			cost += pc_bench_session_rep_cost_s(s, (size_t)b);
		}
	}
	return cost;
}

size_t pc_bench_decide_more(const struct pc_bench_session *s, bool *want, void *arg)
{
	struct pc_bench_decide *d = arg;
	size_t count = pc_bench_session_count(s), nj, n = 0;
	struct pc_results *res;
	struct pc_pairing pp;
	struct pc_judged *j;
	double round_s;

	if (judge_session(s, &d->interim, &res, &pp, &j, &nj) < 0)
		return 0;
	round_s = mark_pairs(s, d, res, &pp, j, nj, -1, want);
	memset(want, 0, count * sizeof(*want));
	mark_pairs(s, d, res, &pp, j, nj, round_s, want);
	free_judged(res, &pp, j);
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
		if (pp.p[j[k].ours].peers[j[k].peer].kind == PC_PAIR_VARIANT)
			continue;
		d->pairs++;
		d->decided += j[k].j.decided;
	}
	free_judged(res, &pp, j);
	return 0;
}
