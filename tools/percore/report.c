/* SPDX-License-Identifier: MIT */
/* percore report: the whole document and the helpers its sections share. */
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "fmt.h"
#include "report.h"
#include "svg.h"

#define DEFAULT_MAX_CV 0.05
#define DEFAULT_MARGIN 0.05

void pc_report_finding(struct pc_report_ctx *c, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s) {
		c->head->failed = true;
		return;
	}
	pc_doc_item(c->head, c->findings, "%s", s);
	if (c->json) {
		cJSON *f = cJSON_GetObjectItemCaseSensitive(c->json, "findings");
		if (!cJSON_AddItemToArray(f, cJSON_CreateString(s)))
			c->head->failed = true;
	}
	free(s);
}

struct pc_chart *pc_report_chart(struct pc_report_ctx *c, int kind, const char *title,
				 const char *xlabel, const char *ylabel)
{
	struct pc_chart *ch = pc_chart_new((enum pc_chart_kind)kind, title, xlabel, ylabel);

	if (!ch)
		c->doc->failed = true;
	return ch;
}

bool pc_report_noisy(const struct pc_report_ctx *c, const struct pc_rbench *b)
{
	return b->st.cv > c->max_cv;
}

double pc_report_ops(const struct pc_rbench *b)
{
	if (b->st.items_ps > 0)
		return b->st.items_ps;
	return b->st.tpi_ns > 0 ? 1e9 / b->st.tpi_ns : NAN;
}

void pc_report_cv_cell(const struct pc_report_ctx *c, struct pc_table *t,
		       const struct pc_rbench *b)
{
	if (pc_report_noisy(c, b))
		pc_table_add(t, PC_MARK_WARN, "%s noisy", pc_fmt_pct(b->st.cv).s);
	else
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_pct(b->st.cv).s);
}

void pc_report_cells(const struct pc_report_ctx *c, struct pc_table *t,
		     const struct pc_rbench *b)
{
	pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(b->st.tpi_ns).s);
	if (b->st.bytes_ps > 0)
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_rate(b->st.bytes_ps, "B/s").s);
	else
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_rate(pc_report_ops(b), "/s").s);
	pc_report_cv_cell(c, t, b);
}

void pc_report_base_name(const char *name, char *buf, size_t len)
{
	static const char *const tags[] = { "/affinity:on", "/affinity:off", "/pm_qos:on" };
	size_t n;

	snprintf(buf, len, "%s", name);
	/* strip the configuration tags from the end, in any order */
	for (bool again = true; again;) {
		again = false;
		n = strlen(buf);
		for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
			size_t tl = strlen(tags[i]);
			if (n > tl && !strcmp(buf + n - tl, tags[i])) {
				buf[n - tl] = 0;
				again = true;
				break;
			}
		}
	}
}

const cJSON *pc_report_audit(const struct pc_report_ctx *c, const char *id)
{
	const cJSON *a = pc_results_get(c->res, 0, "percore.audit"), *e;

	if (!cJSON_IsArray(a))
		return NULL;
	cJSON_ArrayForEach(e, a) {
		const cJSON *eid = cJSON_GetObjectItemCaseSensitive(e, "id");
		if (cJSON_IsString(eid) && !strcmp(eid->valuestring, id))
			return e;
	}
	return NULL;
}

const char *pc_report_audit_str(const cJSON *entry, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, field);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static const char *opt_str(const struct pc_results *r, const char *path, char *buf, size_t len)
{
	const cJSON *v = pc_results_get(r, 0, path);

	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsNumber(v)) {
		snprintf(buf, len, "%g", v->valuedouble);
		return buf;
	}
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v) ? "yes" : "no";
	return NULL;
}

static void header(struct pc_report_ctx *c, const struct pc_report_opts *o)
{
	char b1[32], b2[32], b3[32], b4[32], *text = NULL;
	const char *date = opt_str(c->res, "context.date", b1, sizeof(b1));
	const char *host = opt_str(c->res, "context.host_name", b2, sizeof(b2));
	const char *ver = opt_str(c->res, "percore.version", b3, sizeof(b3));
	const char *rev = opt_str(c->res, "percore.git_revision", b4, sizeof(b4));
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f) {
		c->head->failed = true;
		return;
	}
	fputs("Results from ", f);
	for (size_t i = 0; i < o->ninputs; i++) {
		char *dup = strdup(o->inputs[i]);
		fprintf(f, "%s`%s`", i ? (i + 1 == o->ninputs ? " and " : ", ") : "",
			dup ? basename(dup) : o->inputs[i]);
		free(dup);
	}
	if (date)
		fprintf(f, ", recorded %s", date);
	if (host)
		fprintf(f, " on `%s`", host);
	if (ver)
		fprintf(f, " by percore %s", ver);
	if (rev)
		fprintf(f, " at revision `%s`", rev);
	fputc('.', f);
	if (fclose(f) != 0 || !text) {
		c->head->failed = true;
		free(text);
		return;
	}
	pc_doc_heading(c->head, 1, "percore benchmark report");
	pc_doc_para(c->head, "%s", text);
	free(text);
}

static void counts_finding(struct pc_report_ctx *c)
{
	size_t noisy = 0;

	for (size_t i = 0; i < c->res->n; i++)
		noisy += pc_report_noisy(c, &c->res->b[i]);
	pc_report_finding(c, "%zu benchmarks; **%zu noisy** (CV of time per iteration above %s).",
			  c->res->n, noisy, pc_fmt_pct(c->max_cv).s);
}

static void comparison(struct pc_report_ctx *c, const struct pc_report_opts *o)
{
	struct pc_cmp cmp;

	if (!o->baseline)
		return;
	if (pc_compare(o->baseline, c->res, o->alpha, c->max_cv, &cmp) < 0) {
		c->doc->failed = true;
		return;
	}
	pc_doc_heading(c->doc, 2, "Comparison with the baseline");
	char *dup = strdup(o->baseline_name ? o->baseline_name : "?");

	pc_doc_para(c->doc, "Baseline `%s` against these results.", dup ? basename(dup) : "?");
	free(dup);
	pc_cmp_doc(&cmp, c->doc);
	pc_report_finding(c, "Against the baseline: %zu improved, %zu regressed, %zu unchanged, "
			     "%zu inconclusive.", cmp.count[PC_VERDICT_IMPROVED],
			  cmp.count[PC_VERDICT_REGRESSED], cmp.count[PC_VERDICT_UNCHANGED],
			  cmp.count[PC_VERDICT_INCONCLUSIVE]);
	pc_cmp_free(&cmp);
}

static void method(struct pc_report_ctx *c)
{
	struct pc_block *l;

	pc_doc_heading(c->doc, 2, "Method");
	l = pc_doc_list(c->doc, PC_MARK_NONE);
	pc_doc_item(c->doc, l, "Every figure is the **median** over the repetitions of a "
		    "benchmark: one slow repetition (a preemption, a migration) moves a mean "
		    "but not a median.");
	pc_doc_item(c->doc, l, "Time/item is the median time per item (per iteration when a "
		    "benchmark reports no items); rates are items/s, or bytes/s for benchmarks "
		    "that move bytes.");
	pc_doc_item(c->doc, l, "CV is the coefficient of variation (stddev / mean) of the real "
		    "time per iteration across repetitions; above %s a row is marked "
		    "**noisy**: its ratios deserve less trust.", pc_fmt_pct(c->max_cv).s);
	pc_doc_item(c->doc, l, "Speedup is the peer's time per item divided by ours: above "
		    "1x ours is faster. Peers run in the same process and, with interleaving, "
		    "in the same rounds, so they saw the same machine.");
	pc_doc_item(c->doc, l, "Each pair is judged from the interleaved repetitions of both "
		    "rows: a two-sided Mann-Whitney U test on the times per item (exact, ties "
		    "included, when a side has at most 8 repetitions; else the normal "
		    "approximation with tie correction), the direction read from the same U "
		    "statistic, and the Hodges-Lehmann estimate of the ratio on log times with "
		    "its %g%% interval. Faster or slower only where p < %g; otherwise no "
		    "significant difference, decided when the interval lies within %s of 1x and "
		    "undecided when it is wider. Only significant results are counted.",
		    100 * (1 - c->decide.ci_alpha), c->decide.alpha,
		    pc_fmt_pct(c->decide.margin).s);
	pc_doc_item(c->doc, l, "With `percore bench --budget`, rounds go on past the minimum "
		    "only for rows in a pair not yet decided; a pair stops early only on "
		    "stronger evidence than the report asks for (p < 0.001, or a 99%% interval "
		    "within the margin), so looking after every round does not make chance "
		    "differences significant; the budget goes to the pairs cheapest to decide "
		    "first.");
	pc_doc_item(c->doc, l, "Comparisons between runs use a two-sided Mann-Whitney U test on "
		    "the per-repetition real times, as Google Benchmark's compare.py does; "
		    "`percore compare` prints the same table.");
}

struct pc_doc *pc_report_build(const struct pc_results *res, const struct pc_report_opts *o,
			       cJSON **json)
{
	struct pc_pairing pairs = { 0 };
	struct pc_report_ctx c = {
		.res = res, .pairs = &pairs,
		.max_cv = o->max_cv > 0 ? o->max_cv : pc_results_max_cv(res, DEFAULT_MAX_CV),
		.doc = pc_doc_new(), .head = pc_doc_new(), .tune = o->tune,
		.decide = { .alpha = o->alpha > 0 ? o->alpha : 0.05,
			    .ci_alpha = 0.05,
			    .margin = o->margin > 0 ? o->margin : DEFAULT_MARGIN },
	};

	if (json)
		*json = NULL;
	if (!c.doc || !c.head || pc_pairing_build(res, &pairs) < 0 ||
	    pc_pairing_judge(res, &pairs, &c.decide, &c.judged, &c.njudged) < 0 ||
	    (json && !(c.json = pc_report_json_start(&c)))) {
		pc_pairing_free(&pairs);
		free(c.judged);
		pc_doc_free(c.doc);
		pc_doc_free(c.head);
		return NULL;
	}
	header(&c, o);
	pc_doc_heading(c.head, 2, "Key findings");
	c.findings = pc_doc_list(c.head, PC_MARK_WARN);
	counts_finding(&c);
	pc_report_decided_finding(&c);
	pc_report_system(&c);
	pc_report_benches(&c);
	pc_report_arch(&c);
	pc_report_noise(&c);
	pc_report_storage(&c);
	comparison(&c, o);
	method(&c);
	pc_pairing_free(&pairs);
	free(c.judged);
	pc_doc_append(c.head, c.doc);
	if (json)
		*json = c.json;
	return c.head;
}
