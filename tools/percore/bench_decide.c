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

bool pc_bench_decide_futile(const struct pc_judgement *j, const struct pc_decide *d,
			    unsigned max_reps)
{
	double n = (double)(j->n_ours < j->n_other ? j->n_ours : j->n_other);
	double half = (log(j->hi) - log(j->lo)) / 2, est = fabs(log(j->speedup));
	/* significance needs the estimate beyond the test's own quantile, a
	 * little further out than the interval's */
	double zi = pc_normal_isf(d->ci_alpha / 2), zt = pc_normal_isf(d->alpha / 2);
	double need = fmax(est * zi / zt, log(1 + d->margin) - est);

	if (!max_reps || j->decided || j->out == PC_OUT_UNTESTED || !(j->lo > 0) || !isfinite(j->hi) ||
	    n < PC_DECIDE_FUTILE_MIN_REPS || !(half > 0))
		return false;
	return need <= 0 || half * sqrt(n / (double)max_reps) > need;
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

static void want_row(const struct pc_bench_session *s, const struct pc_results *res, size_t row,
		     bool *want)
{
	long e = entry_of(s, res->b[row].name);

	if (e >= 0)
		want[e] = true;
}

size_t pc_bench_decide_more(const struct pc_bench_session *s, bool *want, void *arg)
{
	struct pc_bench_decide *d = arg;
	struct pc_results *res;
	struct pc_pairing pp;
	struct pc_judged *j;
	size_t nj, n = 0;

	if (judge_session(s, &d->interim, &res, &pp, &j, &nj) < 0)
		return 0;
	for (size_t k = 0; k < nj; k++) {
		const struct pc_peer *pr = &pp.p[j[k].ours].peers[j[k].peer];
		if (pr->kind == PC_PAIR_VARIANT || j[k].j.decided ||
		    pc_bench_decide_futile(&j[k].j, &d->interim, d->max_reps))
			continue;
		want_row(s, res, j[k].ours, want);
		want_row(s, res, pr->idx, want);
	}
	free_judged(res, &pp, j);
	for (size_t i = 0; i < pc_bench_session_count(s); i++)
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
