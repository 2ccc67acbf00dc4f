/* SPDX-License-Identifier: MIT */
/* percore report: the Architecture scaling section.
 *
 * Rows named Arch/<design>/cores:<N>/affinity:<on|off> (the design may
 * carry a variant: PerCore/anycore) measure the same
 * work under different designs (PerCore, Shared, LockFree, Striped, or any
 * other name: the designs come from the data). For each design and
 * affinity setting: ops/s per core count, linear efficiency (ops/s at N
 * divided by N times ops/s at 1 core), and what pinning changed. Then
 * the kv server's scaling rows, KV/<command>/P16/shards:<N>, in a table
 * of their own. */
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "report.h"
#include "svg.h"

#define MAX_DESIGNS 16
#define MAX_CORES 256

enum { AFF_ON, AFF_OFF, NAFF };

struct arch {
	size_t ndesigns, ncores;
	char design[MAX_DESIGNS][64];
	unsigned cores[MAX_CORES];              /* ascending */
	long at[MAX_DESIGNS][MAX_CORES][NAFF];  /* benchmark index, -1: none */
};

static size_t design_slot(struct arch *a, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < a->ndesigns; i++)
		if (strlen(a->design[i]) == len && !strncmp(a->design[i], name, len))
			return i;
	if (i == MAX_DESIGNS || len >= sizeof(a->design[0]))
		return MAX_DESIGNS;
	memcpy(a->design[i], name, len);
	a->design[i][len] = 0;
	a->ndesigns++;
	return i;
}

static size_t core_slot(struct arch *a, unsigned n)
{
	size_t i = 0;

	while (i < a->ncores && a->cores[i] < n)
		i++;
	if (i < a->ncores && a->cores[i] == n)
		return i;
	if (a->ncores == MAX_CORES)
		return MAX_CORES;
	/* keep the core counts sorted: shift the later columns right */
	memmove(&a->cores[i + 1], &a->cores[i], (a->ncores - i) * sizeof(a->cores[0]));
	for (size_t d = 0; d < MAX_DESIGNS; d++)
		memmove(&a->at[d][i + 1], &a->at[d][i], (a->ncores - i) * sizeof(a->at[d][0]));
	for (size_t d = 0; d < MAX_DESIGNS; d++)
		a->at[d][i][AFF_ON] = a->at[d][i][AFF_OFF] = -1;
	a->cores[i] = n;
	a->ncores++;
	return i;
}

/* The rows whose names match pattern: group 1 the design, 2 the core
 * count, 4 (when the pattern has it) the affinity tag. */
static void collect(const struct pc_report_ctx *c, struct arch *a, const char *pattern)
{
	regex_t re;
	regmatch_t m[5];

	memset(a, 0, sizeof(*a));
	if (regcomp(&re, pattern, REG_EXTENDED))
		return;
	for (size_t i = 0; i < c->res->n; i++) {
		const char *name = c->res->b[i].name;
		if (regexec(&re, name, 5, m, 0) != 0)
			continue;
		size_t d = design_slot(a, name + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so));
		size_t k = core_slot(a, (unsigned)strtoul(name + m[2].rm_so, NULL, 10));
		/* no affinity tag: the benchmark did not ask to be placed, so it
		 * ran wherever the harness put it; show it with the pinned rows */
		int aff = m[4].rm_so >= 0 && name[m[4].rm_so + 1] == 'f' ? AFF_OFF : AFF_ON;
		if (d < MAX_DESIGNS && k < MAX_CORES)
			a->at[d][k][aff] = (long)i;
	}
	regfree(&re);
}

static const struct pc_rbench *cell(const struct pc_report_ctx *c, const struct arch *a,
				    size_t d, size_t k, int aff)
{
	long i = a->at[d][k][aff];

	return i < 0 ? NULL : &c->res->b[i];
}

/* Linear efficiency of design d at core column k: ops(N) / (N * ops(1)). */
static double efficiency(const struct pc_report_ctx *c, const struct arch *a,
			 size_t d, size_t k, int aff)
{
	const struct pc_rbench *one = a->ncores && a->cores[0] == 1 ? cell(c, a, d, 0, aff) : NULL;
	const struct pc_rbench *b = cell(c, a, d, k, aff);

	if (!one || !b)
		return NAN;
	return pc_report_ops(b) / ((double)a->cores[k] * pc_report_ops(one));
}

static void aff_cells(const struct pc_report_ctx *c, const struct arch *a, struct pc_table *t,
		      size_t d, size_t k, int aff)
{
	const struct pc_rbench *b = cell(c, a, d, k, aff);

	if (!b) {
		for (int i = 0; i < 3; i++)
			pc_table_add(t, PC_MARK_MUTED, "%s", PC_FMT_NONE);
		return;
	}
	pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_rate(pc_report_ops(b), "/s").s);
	pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_pct(efficiency(c, a, d, k, aff)).s);
	pc_report_cv_cell(c, t, b);
}

static void table(struct pc_report_ctx *c, const struct arch *a)
{
	static const char *const head[] = { "Design", "Cores", "ops/s pinned", "Efficiency",
					    "CV", "ops/s unpinned", "Efficiency", "CV",
					    "OFF\xe2\x86\x92ON" };
	struct pc_table *t = pc_doc_table(c->doc, 9, head, "lrrrrrrrr");

	for (size_t d = 0; t && d < a->ndesigns; d++)
		for (size_t k = 0; k < a->ncores; k++) {
			const struct pc_rbench *on = cell(c, a, d, k, AFF_ON);
			const struct pc_rbench *off = cell(c, a, d, k, AFF_OFF);
			double delta;
			if (!on && !off)
				continue;
			pc_table_add(t, PC_MARK_CODE, "%s", a->design[d]);
			pc_table_add(t, PC_MARK_NONE, "%u", a->cores[k]);
			aff_cells(c, a, t, d, k, AFF_ON);
			aff_cells(c, a, t, d, k, AFF_OFF);
			delta = on && off ? (pc_report_ops(on) / pc_report_ops(off) - 1) * 100 : NAN;
			pc_table_add(t, delta > 5 ? PC_MARK_GOOD : delta < -5 ? PC_MARK_BAD : PC_MARK_NONE,
				     "%s", pc_fmt_change(delta).s);
		}
}

static void chart(struct pc_report_ctx *c, const struct arch *a)
{
	struct pc_chart *ch = pc_report_chart(c, PC_CHART_LINE, "Throughput against cores",
					      "cores", "ops/s");
	char name[96];

	if (!ch)
		return;
	for (size_t d = 0; d < a->ndesigns; d++)
		for (int aff = AFF_ON; aff < NAFF; aff++) {
			int s = -1;
			for (size_t k = 0; k < a->ncores; k++) {
				const struct pc_rbench *b = cell(c, a, d, k, aff);
				if (!b || !isfinite(pc_report_ops(b)))
					continue;
				if (s < 0) {
					snprintf(name, sizeof(name), "%s, %s", a->design[d],
						 aff == AFF_ON ? "pinned" : "unpinned");
					s = pc_chart_series(ch, name, (unsigned)d, aff == AFF_OFF);
				}
				pc_chart_point(ch, s, a->cores[k], pc_report_ops(b));
			}
		}
	pc_doc_chart(c->doc, ch);
}

/* The design with the highest ops/s at core column k, or MAX_DESIGNS. */
static size_t best_at(const struct pc_report_ctx *c, const struct arch *a, size_t k, int aff)
{
	size_t best = MAX_DESIGNS;
	double top = 0;

	for (size_t d = 0; d < a->ndesigns; d++) {
		const struct pc_rbench *b = cell(c, a, d, k, aff);
		if (b && pc_report_ops(b) > top) {
			top = pc_report_ops(b);
			best = d;
		}
	}
	return best;
}

/* The designs ranked at the largest core count, pinned when measured so. */
static void finding(struct pc_report_ctx *c, const struct arch *a)
{
	size_t k = a->ncores - 1, best = MAX_DESIGNS;
	struct pc_block *l;
	double top;
	int aff;

	for (aff = AFF_ON; aff < NAFF && best == MAX_DESIGNS; aff++)
		best = best_at(c, a, k, aff);
	if (best == MAX_DESIGNS)
		return;
	aff--; /* the loop stepped past the setting that had data */
	top = pc_report_ops(cell(c, a, best, k, aff));
	pc_report_finding(c, "Architecture: at %u cores (%s) **%s** leads with %s ops/s, "
			     "linear efficiency %s.", a->cores[k], aff == AFF_ON ? "pinned" : "unpinned",
			  a->design[best], pc_fmt_si(top).s, pc_fmt_pct(efficiency(c, a, best, k, aff)).s);
	l = pc_doc_list(c->doc, PC_MARK_NONE);
	for (size_t d = 0; d < a->ndesigns; d++) {
		const struct pc_rbench *b = cell(c, a, d, k, aff);
		if (b)
			pc_doc_item(c->doc, l, "At %u cores (%s), %s: %s ops/s, %s of %s.",
				    a->cores[k], aff == AFF_ON ? "pinned" : "unpinned", a->design[d],
				    pc_fmt_si(pc_report_ops(b)).s,
				    pc_fmt_ratio(pc_report_ops(b) / top).s, a->design[best]);
	}
}

/* KV/<command>/P16/shards:N: the kv server's requests/s at each shard
 * count (the client on the other CPUs), in a (reused) arch. */
static void kv_scaling(struct pc_report_ctx *c, struct arch *a)
{
	static const char *const head[] = { "Command", "Shards", "requests/s", "Efficiency",
					    "CV" };
	struct pc_table *t;

	collect(c, a, "^KV/(.+)/shards:([0-9]+)$");
	if (!a->ndesigns)
		return;
	pc_doc_heading(c->doc, 3, "KV scaling");
	pc_doc_para(c->doc, "`percore kv --shards N` on N CPUs, redis-benchmark on the others, "
		    "over random keys. Efficiency is requests/s at N shards over N times "
		    "requests/s at 1 shard.");
	t = pc_doc_table(c->doc, 5, head, "lrrrr");
	for (size_t d = 0; t && d < a->ndesigns; d++)
		for (size_t k = 0; k < a->ncores; k++) {
			if (!cell(c, a, d, k, AFF_ON))
				continue;
			pc_table_add(t, PC_MARK_CODE, "%s", a->design[d]);
			pc_table_add(t, PC_MARK_NONE, "%u", a->cores[k]);
			aff_cells(c, a, t, d, k, AFF_ON);
		}
}

void pc_report_arch(struct pc_report_ctx *c)
{
	struct arch *a = malloc(sizeof(*a));

	pc_doc_heading(c->doc, 2, "Architecture scaling");
	if (!a) {
		c->doc->failed = true;
		return;
	}
	/* the design may have variants of its own: Arch/PerCore/anycore/... */
	collect(c, a, "^Arch/(.+)/cores:([0-9]+)(/affinity:(on|off))?$");
	if (!a->ndesigns) {
		pc_doc_para(c->doc, "No `Arch/...` rows in these results.");
		kv_scaling(c, a);
		free(a);
		return;
	}
	pc_doc_para(c->doc, "The same stateful work per message under each design, at each core "
		    "count. Efficiency is ops/s at N cores over N times ops/s at 1 core (100%% "
		    "is linear scaling); OFF\xe2\x86\x92ON is the change in ops/s when the "
		    "threads are pinned.");
	table(c, a);
	chart(c, a);
	finding(c, a);
	kv_scaling(c, a);
	free(a);
}
