/* SPDX-License-Identifier: MIT */
/* percore report/compare: comparing two runs, benchmark by benchmark. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "compare.h"
#include "fmt.h"
#include "report_stats.h"

const char *pc_verdict_name(enum pc_verdict v)
{
	static const char *const names[] = { "improved", "regressed", "unchanged", "inconclusive" };

	return v < PC_VERDICT_COUNT ? names[v] : "?";
}

/* One figure of every repetition: real (cpu false) or CPU time per
 * iteration. */
static int sample_times(const struct pc_rbench *b, bool cpu, double **out)
{
	*out = malloc((b->nsamples ? b->nsamples : 1) * sizeof(double));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < b->nsamples; i++)
		(*out)[i] = cpu ? b->s[i].cpu_ns : b->s[i].real_ns;
	return 0;
}

/* The test of one figure, as compare.py runs it (scipy's mannwhitneyu,
 * two-sided): *p stays NAN when a side lacks the figure. The verdict's
 * direction is read from the same U statistic: u1 counts the pairs where
 * the base took longer, so above half of them the new run is faster. */
static int test_figure(const struct pc_rbench *a, const struct pc_rbench *b, bool cpu,
		       double alpha, double *p, enum pc_verdict *v)
{
	double *x = NULL, *y = NULL;
	struct pc_mwu t;
	int rc;

	*p = NAN;
	*v = PC_VERDICT_INCONCLUSIVE;
	if ((rc = sample_times(a, cpu, &x)) < 0 || (rc = sample_times(b, cpu, &y)) < 0)
		goto out;
	rc = pc_mwu_test(x, a->nsamples, y, b->nsamples, &t);
	if (rc == -EINVAL) { /* a NaN: the file has no such figure */
		rc = 0;
		goto out;
	}
	if (rc < 0)
		goto out;
	*p = t.p;
	double half = (double)a->nsamples * (double)b->nsamples / 2;
	if (t.p < alpha && t.u1 != half)
		*v = t.u1 > half ? PC_VERDICT_IMPROVED : PC_VERDICT_REGRESSED;
	else if (pc_mwu_min_p(a->nsamples, b->nsamples) >= alpha)
		*v = PC_VERDICT_INCONCLUSIVE; /* no outcome could have been significant */
	else
		*v = PC_VERDICT_UNCHANGED;
out:
	free(x);
	free(y);
	return rc;
}

static int judge(const struct pc_rbench *a, const struct pc_rbench *b, double alpha,
		 struct pc_cmp_row *r)
{
	int rc;

	r->p_value = r->cpu_p_value = NAN;
	r->cpu_verdict = PC_VERDICT_INCONCLUSIVE;
	if (r->n_base < PC_MWU_MIN_REPS || r->n_new < PC_MWU_MIN_REPS) {
		r->verdict = PC_VERDICT_INCONCLUSIVE;
		r->why = "too few repetitions (the U test needs 2 or more on each side)";
		return 0;
	}
	if ((rc = test_figure(a, b, false, alpha, &r->p_value, &r->verdict)) < 0 ||
	    (rc = test_figure(a, b, true, alpha, &r->cpu_p_value, &r->cpu_verdict)) < 0)
		return rc;
	if (r->verdict == PC_VERDICT_INCONCLUSIVE)
		r->why = isnan(r->p_value) ? "no real time to compare"
					   : "too few repetitions to reach significance at this alpha";
	return 0;
}

/* Settings that change what a benchmark measures: if they differ between
 * the runs, the reader should know before trusting a verdict. */
static const char *const setup_keys[] = {
	"context.host_name", "context.num_cpus", "percore.build_type", "percore.compiler",
	"percore.flags", "percore.options.repetitions", "percore.options.min_time",
	"percore.options.interleave", "percore.options.affinity", "percore.options.pm_qos",
	"percore.pm_qos.held", "percore.options.suite",
};

static char *json_text(const cJSON *v)
{
	return cJSON_IsString(v) ? strdup(v->valuestring) : cJSON_PrintUnformatted(v);
}

static int setup_diff(const struct pc_results *a, const struct pc_results *b, struct pc_cmp *out)
{
	size_t len = 0;
	FILE *f = open_memstream(&out->setup_diff, &len);
	const char *sep = "";

	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(setup_keys) / sizeof(setup_keys[0]); i++) {
		const cJSON *x = pc_results_get(a, 0, setup_keys[i]);
		const cJSON *y = pc_results_get(b, 0, setup_keys[i]);
		char *tx, *ty;
		if (!x || !y || cJSON_Compare(x, y, true))
			continue; /* absent on a side: nothing to compare */
		tx = json_text(x);
		ty = json_text(y);
		fprintf(f, "%s%s %s \xe2\x86\x92 %s", sep, strrchr(setup_keys[i], '.') + 1,
			tx ? tx : "?", ty ? ty : "?");
		sep = "; ";
		free(tx);
		free(ty);
	}
	if (fclose(f) != 0) {
		free(out->setup_diff);
		out->setup_diff = NULL;
		return -ENOMEM;
	}
	if (!len) {
		free(out->setup_diff);
		out->setup_diff = NULL;
	}
	return 0;
}

int pc_compare(const struct pc_results *base, const struct pc_results *cur,
	       double alpha, double max_cv, struct pc_cmp *out)
{
	memset(out, 0, sizeof(*out));
	out->alpha = alpha;
	out->max_cv = max_cv;
	out->rows = calloc(cur->n ? cur->n : 1, sizeof(*out->rows));
	if (!out->rows)
		return -ENOMEM;
	for (size_t i = 0; i < cur->n; i++) {
		const struct pc_rbench *b = &cur->b[i], *a = pc_results_find(base, b->name);
		struct pc_cmp_row *r = &out->rows[out->n];
		int rc;

		if (!a) {
			out->only_new++;
			continue;
		}
		*r = (struct pc_cmp_row){
			.name = b->name,
			.base_median = a->st.real_ns, .new_median = b->st.real_ns,
			.n_base = a->nsamples, .n_new = b->nsamples,
			.cv_base = a->st.cv, .cv_new = b->st.cv,
		};
		r->change_pct = (r->new_median - r->base_median) / r->base_median * 100;
		r->noisy = r->cv_base > max_cv || r->cv_new > max_cv;
		if ((rc = judge(a, b, alpha, r)) < 0) {
			pc_cmp_free(out);
			return rc;
		}
		out->count[r->verdict]++;
		out->noisy += r->noisy;
		out->significant_noisy += r->noisy && (r->verdict == PC_VERDICT_IMPROVED ||
						       r->verdict == PC_VERDICT_REGRESSED);
		out->regressed_quiet += !r->noisy && (r->verdict == PC_VERDICT_REGRESSED ||
						      r->cpu_verdict == PC_VERDICT_REGRESSED);
		out->regressed_any += r->verdict == PC_VERDICT_REGRESSED ||
				      r->cpu_verdict == PC_VERDICT_REGRESSED;
		out->n++;
	}
	out->only_base = base->n - out->n;
	return setup_diff(base, cur, out);
}

void pc_cmp_free(struct pc_cmp *c)
{
	free(c->rows);
	free(c->setup_diff);
	c->rows = NULL;
	c->setup_diff = NULL;
	c->n = 0;
}

static enum pc_mark verdict_mark(enum pc_verdict v)
{
	switch (v) {
	case PC_VERDICT_IMPROVED:  return PC_MARK_GOOD;
	case PC_VERDICT_REGRESSED: return PC_MARK_BAD;
	case PC_VERDICT_UNCHANGED: return PC_MARK_MUTED;
	default:                   return PC_MARK_WARN;
	}
}

void pc_cmp_doc(const struct pc_cmp *c, struct pc_doc *d)
{
	static const char *const head[] = { "Benchmark", "Base", "New", "Change", "p-value",
					    "Reps", "Verdict", "CPU p-value", "CPU verdict", "Note" };
	struct pc_table *t;

	pc_doc_para(d, "**%zu improved, %zu regressed, %zu unchanged, %zu inconclusive** "
		       "(%zu noisy) of %zu benchmarks in both runs; %zu only in the base, "
		       "%zu only in the new run.",
		    c->count[PC_VERDICT_IMPROVED], c->count[PC_VERDICT_REGRESSED],
		    c->count[PC_VERDICT_UNCHANGED], c->count[PC_VERDICT_INCONCLUSIVE],
		    c->noisy, c->n, c->only_base, c->only_new);
	pc_doc_para(d, "Median real time per iteration (the figure tested), base and new; lower is better. Verdicts come "
		       "from a two-sided Mann-Whitney U test on the per-repetition real times "
		       "(and, in the CPU columns, CPU times) at alpha %g, as Google Benchmark's "
		       "compare.py tests them; the direction is read from the same U statistic, "
		       "not from the medians. Noisy means a CV above %s in either run.",
		    c->alpha, pc_fmt_pct(c->max_cv).s);
	if (c->setup_diff)
		pc_doc_para(d, "**The runs were set up differently:** %s.", c->setup_diff);
	if (c->significant_noisy)
		pc_doc_para(d, "**%zu of the %zu significant changes are on noisy rows.** The test "
			       "assumes both runs sampled the same machine; when its load or clock "
			       "drifts between runs, repetitions differ as a block and the test calls "
			       "that a change. Confirm these on a quiet machine.",
			    c->significant_noisy,
			    c->count[PC_VERDICT_IMPROVED] + c->count[PC_VERDICT_REGRESSED]);
	if (!c->n)
		return;
	if (!(t = pc_doc_table(d, 10, head, "lrrrrrlrll")))
		return;
	for (size_t i = 0; i < c->n; i++) {
		const struct pc_cmp_row *r = &c->rows[i];
		enum pc_mark cm = r->verdict == PC_VERDICT_IMPROVED ? PC_MARK_GOOD
				: r->verdict == PC_VERDICT_REGRESSED ? PC_MARK_BAD : PC_MARK_NONE;

		pc_table_add(t, PC_MARK_CODE, "%s", r->name);
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(r->base_median).s);
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(r->new_median).s);
		pc_table_add(t, cm, "%s", pc_fmt_change(r->change_pct).s);
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_p(r->p_value).s);
		pc_table_add(t, PC_MARK_NONE, "%zu vs %zu", r->n_base, r->n_new);
		pc_table_add(t, verdict_mark(r->verdict), "%s", pc_verdict_name(r->verdict));
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_p(r->cpu_p_value).s);
		pc_table_add(t, verdict_mark(r->cpu_verdict), "%s", pc_verdict_name(r->cpu_verdict));
		pc_table_add(t, r->noisy ? PC_MARK_WARN : PC_MARK_MUTED, "%s%s%s",
			     r->noisy ? "noisy" : "", r->noisy && r->why ? "; " : "",
			     r->why ? r->why : "");
	}
}

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *row_json(const struct pc_cmp_row *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddItemToObject(o, "name", cJSON_CreateString(r->name));
	cJSON_AddItemToObject(o, "base_median", num_or_null(r->base_median));
	cJSON_AddItemToObject(o, "new_median", num_or_null(r->new_median));
	cJSON_AddItemToObject(o, "change_pct", num_or_null(r->change_pct));
	cJSON_AddItemToObject(o, "p_value", num_or_null(r->p_value));
	cJSON_AddItemToObject(o, "verdict", cJSON_CreateString(pc_verdict_name(r->verdict)));
	cJSON_AddItemToObject(o, "noisy", cJSON_CreateBool(r->noisy));
	cJSON_AddItemToObject(o, "cpu_p_value", num_or_null(r->cpu_p_value));
	cJSON_AddItemToObject(o, "cpu_verdict", cJSON_CreateString(pc_verdict_name(r->cpu_verdict)));
	/* a missing member means an allocation failed somewhere above */
	if (cJSON_GetArraySize(o) != 9) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *summary_json(const struct pc_cmp *c)
{
	cJSON *s = cJSON_CreateObject();

	for (int v = 0; s && v < PC_VERDICT_COUNT; v++)
		cJSON_AddNumberToObject(s, pc_verdict_name((enum pc_verdict)v), (double)c->count[v]);
	if (!s)
		return NULL;
	cJSON_AddNumberToObject(s, "noisy", (double)c->noisy);
	cJSON_AddNumberToObject(s, "significant_noisy", (double)c->significant_noisy);
	cJSON_AddNumberToObject(s, "regressed_quiet", (double)c->regressed_quiet);
	cJSON_AddNumberToObject(s, "total", (double)c->n);
	cJSON_AddNumberToObject(s, "only_in_base", (double)c->only_base);
	cJSON_AddNumberToObject(s, "only_in_new", (double)c->only_new);
	cJSON_AddNumberToObject(s, "alpha", c->alpha);
	cJSON_AddNumberToObject(s, "max_cv", c->max_cv);
	cJSON_AddNumberToObject(s, "min_repetitions", PC_MWU_MIN_REPS);
	cJSON_AddItemToObject(s, "setup_differs", c->setup_diff ? cJSON_CreateString(c->setup_diff)
								 : cJSON_CreateNull());
	if (cJSON_GetArraySize(s) != 14) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

int pc_cmp_write_json(const struct pc_cmp *c, FILE *out)
{
	cJSON *root = cJSON_CreateObject(), *rows = cJSON_CreateArray(), *sum = summary_json(c);
	char *text = NULL;
	int rc = -ENOMEM;

	if (!root || !rows || !sum)
		goto out;
	cJSON_AddItemToObject(root, "rows", rows);
	rows = NULL;
	cJSON_AddItemToObject(root, "summary", sum);
	sum = NULL;
	for (size_t i = 0; i < c->n; i++) {
		cJSON *r = row_json(&c->rows[i]);
		if (!r)
			goto out;
		cJSON_AddItemToArray(cJSON_GetObjectItem(root, "rows"), r);
	}
	if (!(text = cJSON_Print(root)))
		goto out;
	rc = fprintf(out, "%s\n", text) < 0 ? -EIO : 0;
out:
	free(text);
	cJSON_Delete(root);
	cJSON_Delete(rows);
	cJSON_Delete(sum);
	return rc;
}

