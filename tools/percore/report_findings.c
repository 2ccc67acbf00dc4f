/* SPDX-License-Identifier: MIT */
/* percore report: what the pair verdicts add up to. The key findings of the
 * Micro benchmarks and Integration sections, the count of decided pairs,
 * and the JSON summary of `percore report --json`.
 *
 * Only significant results count, judged by the p-value adjusted over all
 * the run's counted pairs (Benjamini-Hochberg, verdict.h): a row is a win
 * when it is significantly faster than every peer it stands beside, and a pair without a
 * significant difference is either within the margin (decided: no
 * difference worth the name) or undecided, listed by name. Variants never
 * and references never count; a row past a physical limit is a measurement
 * problem. A pair whose rule names a finding (a shard's wake-up cost) gets
 * a line of its own. Where the load generator bound a pair's throughput
 * (client-bound, verdict.h), the throughput speaks of the client: the pair
 * is counted and quoted by its server CPU verdict where it has one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "report.h"

struct tally {
	size_t rows, wins;              /* rows with a peer; faster than each */
	size_t pairs, faster, slower, within, undecided;
	size_t limits, below_limit, at_limit, above_limit, limit_undecided;
	double lo, hi;                  /* speedups of the wins */
	char *undecided_names, *problem_names, *bound_names;
	size_t ulen, plen, blen;
	size_t bound;                   /* client-bound pairs judged on CPU */
};

/* Append "`ours` vs `peer`" to a list kept in a memstream-free string. */
static void add_name(char **list, size_t *len, const char *ours, const char *peer)
{
	char *more = NULL;

	if (asprintf(&more, "%s%s`%s` vs `%s`", *list ? *list : "", *list ? ", " : "", ours,
		     peer) < 0)
		return; /* the list stays short of one name; the counts are exact */
	free(*list);
	*list = more;
	*len = strlen(more);
}

static void count_pair(struct tally *ty, const struct pc_report_ctx *c, size_t i,
		       const struct pc_peer *pr, const struct pc_judgement *j)
{
	const char *ours = c->res->b[i].name, *peer = c->res->b[pr->idx].name;

	if (pr->kind == PC_PAIR_LIMIT) {
		ty->limits++;
		if (j->out == PC_OUT_FASTER) {
			ty->below_limit++;
			add_name(&ty->problem_names, &ty->plen, ours, peer);
		} else if (j->out == PC_OUT_SLOWER) {
			ty->above_limit++;
		} else if (j->decided) {
			ty->at_limit++;
		} else {
			ty->limit_undecided++;
			add_name(&ty->undecided_names, &ty->ulen, ours, peer);
		}
		return;
	}
	ty->pairs++;
	if (j->out == PC_OUT_FASTER) {
		ty->faster++;
	} else if (j->out == PC_OUT_SLOWER) {
		ty->slower++;
	} else if (j->decided) {
		ty->within++;
	} else {
		ty->undecided++;
		add_name(&ty->undecided_names, &ty->ulen, ours, peer);
	}
}

/* Add "`ours` vs `peer` 1.25x [1.20x, 1.30x] less CPU" to the client-bound
 * list. */
static void bound_name(struct tally *ty, const struct pc_report_ctx *c, size_t i,
		       const struct pc_peer *pr, const struct pc_judgement *j)
{
	char *more = NULL;

	if (asprintf(&more, "%s%s`%s` vs `%s` %s [%s, %s] %s", ty->bound_names ?
		     ty->bound_names : "", ty->bound_names ? ", " : "", c->res->b[i].name,
		     c->res->b[pr->idx].name, pc_fmt_ratio(j->speedup).s, pc_fmt_ratio(j->lo).s,
		     pc_fmt_ratio(j->hi).s, pc_report_cpu_outcome(j->out)) < 0)
		return; /* the list stays short of one pair; the counts are exact */
	free(ty->bound_names);
	ty->bound_names = more;
	ty->blen = strlen(more);
}

static void count_row(struct tally *ty, const struct pc_report_ctx *c, size_t i)
{
	const struct pc_pair *p = &c->pairs->p[i];
	size_t peers = 0, faster = 0;

	for (size_t k = 0; k < p->npeers; k++) {
		const struct pc_judged *jd = pc_report_judged_pair(c, i, k);
		if (!pc_pair_kind_counts(p->peers[k].kind) || !jd)
			continue;
		const struct pc_judgement *j = pc_judged_server(jd);
		if (j == &jd->cpu) {
			ty->bound++;
			bound_name(ty, c, i, &p->peers[k], j);
		}
		count_pair(ty, c, i, &p->peers[k], j);
		if (p->peers[k].kind == PC_PAIR_PEER) {
			peers++;
			faster += j->out == PC_OUT_FASTER;
		}
	}
	if (!peers)
		return;
	ty->rows++;
	if (faster == peers) {
		const struct pc_judgement *j =
			pc_judged_server(pc_report_judged_pair(c, i, (size_t)pc_report_fastest(c, i)));
		ty->wins++;
		ty->lo = fmin(ty->lo, j->speedup);
		ty->hi = fmax(ty->hi, j->speedup);
	}
}

static void tally_section(struct tally *ty, const struct pc_report_ctx *c, enum pc_section sec)
{
	*ty = (struct tally){ .lo = INFINITY, .hi = -INFINITY };
	for (size_t i = 0; i < c->res->n; i++)
		if (c->pairs->p[i].sec == sec)
			count_row(ty, c, i);
}

/* The findings the pairing table asks for by name: "<title>: `ours` takes
 * T per item against T' for `other`, D more (ratio [interval])." */
static void named_findings(struct pc_report_ctx *c, enum pc_section sec)
{
	for (size_t n = 0; n < c->njudged; n++) {
		const struct pc_judged *jd = &c->judged[n];
		const struct pc_peer *pr = &c->pairs->p[jd->ours].peers[jd->peer];
		const struct pc_rbench *a = &c->res->b[jd->ours], *b = &c->res->b[pr->idx];
		double ta = a->st.tpi_ns, tb = pr->scale * b->st.tpi_ns;

		if (!pr->finding || c->pairs->p[jd->ours].sec != sec)
			continue;
		pc_report_finding(c, "%s: `%s` takes %s per item against %s for `%s`, %s %s "
				     "(%s [%s, %s]).", pr->finding, a->name, pc_fmt_time(ta).s,
				  pc_fmt_time(tb).s, b->name, pc_fmt_time(fabs(ta - tb)).s,
				  ta >= tb ? "more" : "less", pc_fmt_ratio(jd->j.speedup).s,
				  pc_fmt_ratio(jd->j.lo).s, pc_fmt_ratio(jd->j.hi).s);
	}
}

void pc_report_tally(struct pc_report_ctx *c, enum pc_section sec, const char *what)
{
	struct tally ty;

	named_findings(c, sec);
	tally_section(&ty, c, sec);
	if (ty.rows) {
		char range[160] = "";
		if (ty.wins == 1)
			snprintf(range, sizeof(range), " (speedup against the fastest peer %s)",
				 pc_fmt_ratio(ty.lo).s);
		else if (ty.wins)
			snprintf(range, sizeof(range), " (speedup against the fastest peer %s to %s)",
				 pc_fmt_ratio(ty.lo).s, pc_fmt_ratio(ty.hi).s);
		pc_report_finding(c, "%s: **%zu of %zu rows significantly faster than every peer**%s; "
				     "of %zu pairs, ours faster in %zu, slower in %zu, no significant "
				     "difference within %s in %zu, **%zu undecided**.", what, ty.wins,
				  ty.rows, range, ty.pairs, ty.faster, ty.slower,
				  pc_fmt_pct(c->decide.margin).s, ty.within, ty.undecided);
	}
	if (ty.limits)
		pc_report_finding(c, "%s against the physical limit: %zu pairs, at the limit in %zu, "
				     "slower in %zu, undecided in %zu, **below the limit in %zu**%s%s%s.",
				  what, ty.limits, ty.at_limit, ty.above_limit, ty.limit_undecided,
				  ty.below_limit, ty.below_limit ? " (a measurement problem, not a "
				  "win: " : "", ty.problem_names ? ty.problem_names : "",
				  ty.below_limit ? ")" : "");
	if (ty.bound)
		pc_report_finding(c, "%s, client-bound pairs (the load generator at least %.0f%% busy, "
				     "so the throughput measures the client), counted by the server's CPU "
				     "per request (its speedup: the other server's CPU over ours): %s.",
				  what, PC_CLIENT_BOUND * 100, ty.bound_names ? ty.bound_names : "");
	if (ty.undecided_names)
		pc_report_finding(c, "%s, undecided pairs (no significant difference, interval wider "
				     "than %s): %s.", what, pc_fmt_pct(c->decide.margin).s,
				  ty.undecided_names);
	free(ty.undecided_names);
	free(ty.problem_names);
	free(ty.bound_names);
}

/* Pairs that count (peers and limits), how many of them are decided (by
 * the verdict that speaks for their servers), and the tests among them
 * (one or two a pair) that the adjustment took together. */
struct decided {
	size_t total, decided, variants, tests, bound;
};

static void decided_counts(const struct pc_report_ctx *c, struct decided *dc)
{
	*dc = (struct decided){ 0 };
	for (size_t n = 0; n < c->njudged; n++) {
		const struct pc_judged *j = &c->judged[n];
		if (!pc_pair_kind_counts(c->pairs->p[j->ours].peers[j->peer].kind)) {
			dc->variants++;
			continue;
		}
		dc->total++;
		dc->decided += pc_judged_server(j)->decided;
		dc->tests += (j->j.out != PC_OUT_UNTESTED) +
			     (j->has_cpu && j->cpu.out != PC_OUT_UNTESTED);
		dc->bound += pc_judged_server(j) == &j->cpu;
	}
}

void pc_report_decided_finding(struct pc_report_ctx *c)
{
	struct decided dc;

	decided_counts(c, &dc);
	if (!dc.total)
		return;
	pc_report_finding(c, "Pairs decided: **%zu of %zu** (significant at alpha %g after the "
			     "Benjamini-Hochberg adjustment over the %zu tests of these pairs, time "
			     "per item and server CPU per request, or a 95%% interval within %s); "
			     "%zu variant%s and reference%s shown beside, not counted.",
			  dc.decided, dc.total, c->decide.alpha, dc.tests,
			  pc_fmt_pct(c->decide.margin).s, dc.variants, dc.variants == 1 ? "" : "s",
			  dc.variants == 1 ? "" : "s");
}

/* ---- JSON --------------------------------------------------------------- */

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* The server CPU verdict of a pair, or null where a row lacks the figure. */
static cJSON *cpu_json(const struct pc_judged *jd)
{
	const struct pc_judgement *j = &jd->cpu;
	cJSON *o;

	if (!jd->has_cpu)
		return cJSON_CreateNull();
	if (!(o = cJSON_CreateObject()))
		return NULL;
	cJSON_AddItemToObject(o, "speedup", num_or_null(j->speedup));
	cJSON_AddItemToObject(o, "ci_low", num_or_null(j->out == PC_OUT_UNTESTED ? NAN : j->lo));
	cJSON_AddItemToObject(o, "ci_high", num_or_null(j->out == PC_OUT_UNTESTED ? NAN : j->hi));
	cJSON_AddItemToObject(o, "p_value", num_or_null(j->p));
	cJSON_AddItemToObject(o, "p_adjusted", num_or_null(j->p_adj));
	cJSON_AddItemToObject(o, "verdict", cJSON_CreateString(pc_report_cpu_outcome(j->out)));
	cJSON_AddItemToObject(o, "decided", cJSON_CreateBool(j->decided));
	cJSON_AddItemToObject(o, "n_ours", cJSON_CreateNumber((double)j->n_ours));
	cJSON_AddItemToObject(o, "n_against", cJSON_CreateNumber((double)j->n_other));
	if (cJSON_GetArraySize(o) != 9) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *pair_json(const struct pc_report_ctx *c, const struct pc_judged *jd)
{
	const struct pc_peer *pr = &c->pairs->p[jd->ours].peers[jd->peer];
	const struct pc_judgement *j = &jd->j;
	cJSON *o = cJSON_CreateObject();
	char text[128];

	if (!o)
		return NULL;
	pc_report_pair_text(c, pr->kind, jd, text, sizeof(text));
	cJSON_AddItemToObject(o, "ours", cJSON_CreateString(c->res->b[jd->ours].name));
	cJSON_AddItemToObject(o, "against", cJSON_CreateString(c->res->b[pr->idx].name));
	cJSON_AddItemToObject(o, "kind", cJSON_CreateString(pc_pair_kind_name(pr->kind)));
	cJSON_AddItemToObject(o, "section", cJSON_CreateString(
		c->pairs->p[jd->ours].sec == PC_SEC_MICRO ? "micro" : "integration"));
	cJSON_AddItemToObject(o, "speedup", num_or_null(j->speedup));
	cJSON_AddItemToObject(o, "ci_low", num_or_null(j->out == PC_OUT_UNTESTED ? NAN : j->lo));
	cJSON_AddItemToObject(o, "ci_high", num_or_null(j->out == PC_OUT_UNTESTED ? NAN : j->hi));
	cJSON_AddItemToObject(o, "p_value", num_or_null(j->p));
	cJSON_AddItemToObject(o, "p_adjusted", num_or_null(j->p_adj));
	cJSON_AddItemToObject(o, "verdict", cJSON_CreateString(pc_outcome_name(j->out)));
	cJSON_AddItemToObject(o, "decided", cJSON_CreateBool(j->decided));
	cJSON_AddItemToObject(o, "measurement_problem",
			      cJSON_CreateBool(pr->kind == PC_PAIR_LIMIT && j->out == PC_OUT_FASTER));
	cJSON_AddItemToObject(o, "text", cJSON_CreateString(text));
	cJSON_AddItemToObject(o, "n_ours", cJSON_CreateNumber((double)j->n_ours));
	cJSON_AddItemToObject(o, "n_against", cJSON_CreateNumber((double)j->n_other));
	cJSON_AddItemToObject(o, "failed_ours",
			      cJSON_CreateNumber((double)c->res->b[jd->ours].nfailed));
	cJSON_AddItemToObject(o, "failed_against",
			      cJSON_CreateNumber((double)c->res->b[pr->idx].nfailed));
	cJSON_AddItemToObject(o, "client_bound", cJSON_CreateBool(jd->client_bound));
	cJSON_AddItemToObject(o, "server_cpu", cpu_json(jd));
	/* a missing member means an allocation failed somewhere above */
	if (cJSON_GetArraySize(o) != 19) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *summary_json(const struct pc_report_ctx *c)
{
	struct tally m, in;
	struct decided dc;
	cJSON *s = cJSON_CreateObject();

	if (!s)
		return NULL;
	decided_counts(c, &dc);
	tally_section(&m, c, PC_SEC_MICRO);
	tally_section(&in, c, PC_SEC_INTEGRATION);
	cJSON_AddNumberToObject(s, "pairs", (double)dc.total);
	cJSON_AddNumberToObject(s, "decided", (double)dc.decided);
	cJSON_AddNumberToObject(s, "undecided", (double)(dc.total - dc.decided));
	cJSON_AddNumberToObject(s, "tests", (double)dc.tests);
	cJSON_AddNumberToObject(s, "client_bound", (double)dc.bound);
	cJSON_AddNumberToObject(s, "faster", (double)(m.faster + in.faster));
	cJSON_AddNumberToObject(s, "slower", (double)(m.slower + in.slower));
	cJSON_AddNumberToObject(s, "within_margin", (double)(m.within + in.within));
	cJSON_AddNumberToObject(s, "rows_with_peers", (double)(m.rows + in.rows));
	cJSON_AddNumberToObject(s, "rows_faster_than_every_peer", (double)(m.wins + in.wins));
	cJSON_AddNumberToObject(s, "limit_pairs", (double)(m.limits + in.limits));
	cJSON_AddNumberToObject(s, "below_limit", (double)(m.below_limit + in.below_limit));
	cJSON_AddNumberToObject(s, "variants", (double)dc.variants);
	for (struct tally *t = &m; t; t = t == &m ? &in : NULL) {
		free(t->undecided_names);
		free(t->problem_names);
		free(t->bound_names);
	}
	if (cJSON_GetArraySize(s) != 13) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

cJSON *pc_report_json_start(const struct pc_report_ctx *c)
{
	cJSON *root = cJSON_CreateObject(), *pairs = cJSON_CreateArray();
	cJSON *sum = summary_json(c);
	bool ok = root && pairs && sum;

	if (ok) {
		cJSON_AddNumberToObject(root, "alpha", c->decide.alpha);
		cJSON_AddNumberToObject(root, "margin", c->decide.margin);
		cJSON_AddNumberToObject(root, "max_cv", c->max_cv);
		cJSON_AddItemToObject(root, "summary", sum);
		sum = NULL;
		for (size_t n = 0; ok && n < c->njudged; n++) {
			cJSON *one = pair_json(c, &c->judged[n]);
			ok = one != NULL;
			cJSON_AddItemToArray(pairs, one);
		}
		cJSON_AddItemToObject(root, "pairs", pairs);
		pairs = NULL;
		ok = ok && cJSON_AddArrayToObject(root, "findings") != NULL;
	}
	cJSON_Delete(pairs);
	cJSON_Delete(sum);
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}
