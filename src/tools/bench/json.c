/* SPDX-License-Identifier: MIT */
/* percore bench: the results file, Google Benchmark's JSON layout plus a
 * "percore" object (docs/ARCHITECTURE.md, "Benchmark results file").
 *
 * Rows are grouped per benchmark (its repetitions, then its aggregates) in
 * selection order whatever order the rounds ran in, as Google Benchmark
 * writes them: its compare.py pairs rows by name and reads them in order. */
#define _GNU_SOURCE 1
#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "percore/clock.h"
#include "bench/runner.h"
#include "percore_build.h"

/* Building stops at the first allocation that fails; ok records it. */
struct builder {
	const struct pc_bench_session *s;
	bool ok;
};

static void add_num(struct builder *b, cJSON *o, const char *key, double v)
{
	b->ok = b->ok && cJSON_AddNumberToObject(o, key, v);
}

static void add_str(struct builder *b, cJSON *o, const char *key, const char *v)
{
	b->ok = b->ok && cJSON_AddStringToObject(o, key, v);
}

static void add_bool(struct builder *b, cJSON *o, const char *key, bool v)
{
	b->ok = b->ok && cJSON_AddBoolToObject(o, key, v);
}

/* Attach item (NULL when its creation failed) to an object, or to an array
 * when key is NULL; on failure the item is freed. */
static void add_item(struct builder *b, cJSON *o, const char *key, cJSON *item)
{
	bool done = b->ok && item &&
		    (key ? cJSON_AddItemToObject(o, key, item) : cJSON_AddItemToArray(o, item));

	if (!done) {
		cJSON_Delete(item);
		b->ok = false;
	}
}

/* A counter whose name clashes with a standard field is left out rather
 * than written as a duplicate key. */
static void add_counter(struct builder *b, cJSON *row, const char *name, double v)
{
	if (!cJSON_GetObjectItemCaseSensitive(row, name))
		add_num(b, row, name, v);
}

/* Fields every row of an entry shares. */
static cJSON *row_new(struct builder *b, const struct pc_bench_entry *e, const char *name,
		      const char *run_type)
{
	cJSON *row = cJSON_CreateObject();

	b->ok = b->ok && row;
	if (!b->ok)
		return row;
	add_str(b, row, "name", name);
	add_num(b, row, "family_index", e->family);
	add_num(b, row, "per_family_instance_index", e->instance);
	add_str(b, row, "run_name", e->name);
	add_str(b, row, "run_type", run_type);
	if (e->bench->label)
		add_str(b, row, "label", e->bench->label);
	add_num(b, row, "repetitions", e->nsamples);
	return row;
}

static void iteration_row(struct builder *b, cJSON *arr, const struct pc_bench_entry *e,
			  unsigned k)
{
	const struct pc_bench_sample *smp = &e->samples[k];
	cJSON *row = row_new(b, e, e->name, "iteration");

	add_num(b, row, "repetition_index", k);
	add_num(b, row, "threads", e->threads);
	add_num(b, row, "iterations", (double)smp->iterations * e->threads);
	add_num(b, row, "real_time", bench_sample_real(e, smp));
	add_num(b, row, "cpu_time", bench_sample_cpu(e, smp));
	add_str(b, row, "time_unit", "ns");
	add_num(b, row, "items_per_second", bench_sample_items_ps(e, smp));
	add_num(b, row, "bytes_per_second", bench_sample_bytes_ps(e, smp));
	for (unsigned c = 0; c < smp->ncounters; c++)
		add_counter(b, row, smp->counters[c].name, smp->counters[c].value);
	add_item(b, arr, NULL, row);
}

/* A failed repetition, as Google Benchmark writes a run that called
 * SkipWithError(): no figures, error_occurred and the reason. Numbered
 * after the repetitions that produced figures. */
static void error_row(struct builder *b, cJSON *arr, const struct pc_bench_entry *e,
		      unsigned k)
{
	cJSON *row = row_new(b, e, e->name, "iteration");

	add_num(b, row, "repetition_index", e->nsamples + k);
	add_num(b, row, "threads", e->threads);
	add_num(b, row, "iterations", (double)e->iterations * e->threads);
	add_bool(b, row, "error_occurred", true);
	add_str(b, row, "error_message", e->fail_why);
	add_item(b, arr, NULL, row);
}

static const struct {
	const char *name;
	size_t off;
} aggregates[] = {
	{ "mean", offsetof(struct pc_bench_stats, mean) },
	{ "median", offsetof(struct pc_bench_stats, median) },
	{ "stddev", offsetof(struct pc_bench_stats, stddev) },
	{ "cv", offsetof(struct pc_bench_stats, cv) },
	{ "min", offsetof(struct pc_bench_stats, min) },
	{ "max", offsetof(struct pc_bench_stats, max) },
};

static double pick(const struct pc_bench_stats *st, size_t off)
{
	return *(const double *)((const char *)st + off);
}

static void aggregate_row(struct builder *b, cJSON *arr, const struct pc_bench_entry *e,
			  const struct pc_bench_summary *sum, size_t a)
{
	size_t off = aggregates[a].off;
	char name[512];
	cJSON *row;

	snprintf(name, sizeof(name), "%s_%s", e->name, aggregates[a].name);
	row = row_new(b, e, name, "aggregate");
	add_str(b, row, "aggregate_name", aggregates[a].name);
	add_str(b, row, "aggregate_unit", strcmp(aggregates[a].name, "cv") ? "time" : "percentage");
	add_num(b, row, "threads", e->threads);
	add_num(b, row, "iterations", (double)e->iterations * e->threads);
	add_num(b, row, "real_time", pick(&sum->real, off));
	add_num(b, row, "cpu_time", pick(&sum->cpu, off));
	add_str(b, row, "time_unit", "ns");
	add_num(b, row, "items_per_second", pick(&sum->items_ps, off));
	add_num(b, row, "bytes_per_second", pick(&sum->bytes_ps, off));
	for (unsigned c = 0; c < sum->ncounters; c++)
		add_counter(b, row, sum->counter_names[c], pick(&sum->counters[c], off));
	add_bool(b, row, "noisy", sum->noisy);
	add_num(b, row, "failed_repetitions", e->nfailed);
	add_item(b, arr, NULL, row);
}

static void entry_rows(struct builder *b, cJSON *arr, const struct pc_bench_entry *e)
{
	struct pc_bench_summary sum;

	if (e->skip)
		return;
	for (unsigned k = 0; k < e->nsamples; k++)
		iteration_row(b, arr, e, k);
	for (unsigned k = 0; k < e->nfailed; k++)
		error_row(b, arr, e, k);
	if (!e->nsamples)
		return; /* every repetition failed: nothing to aggregate */
	if (bench_summarize(b->s, e, &sum)) {
		b->ok = false;
		return;
	}
	for (size_t a = 0; a < sizeof(aggregates) / sizeof(aggregates[0]); a++)
		aggregate_row(b, arr, e, &sum, a);
}

static cJSON *options_json(struct builder *b)
{
	static const char *const affinity[] = { "on", "off", "both" };
	const struct pc_bench_options *o = &b->s->opt;
	cJSON *opt = cJSON_CreateObject();

	add_num(b, opt, "repetitions", o->repetitions);
	add_num(b, opt, "min_time", o->min_time);
	add_num(b, opt, "seed", (double)o->seed);
	add_bool(b, opt, "interleave", o->interleave);
	add_str(b, opt, "affinity", affinity[o->affinity]);
	add_bool(b, opt, "pm_qos", o->pm_qos);
	add_num(b, opt, "max_cv", o->max_cv);
	add_str(b, opt, "suite", o->full ? "full" : "default");
	add_str(b, opt, "filter", o->filter ? o->filter : "");
	add_num(b, opt, "max_repetitions",
		o->max_repetitions > o->repetitions ? o->max_repetitions : o->repetitions);
	add_num(b, opt, "budget_s", o->budget_s);
	return opt;
}

static cJSON *skipped_json(struct builder *b)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < b->s->n; i++) {
		const struct pc_bench_entry *e = &b->s->e[i];
		const char *errname = strerrorname_np(-e->skip);
		cJSON *one;

		if (!e->skip)
			continue;
		one = cJSON_CreateObject();
		add_str(b, one, "name", e->name);
		add_str(b, one, "error", errname ? errname : "?");
		add_str(b, one, "reason", e->why);
		add_item(b, arr, NULL, one);
	}
	return arr;
}

/* Move extra's members to the end of pc (extra itself is then freed). */
static void merge_extra(struct builder *b, cJSON *pc, cJSON *extra)
{
	while (extra && extra->child) {
		cJSON *item = cJSON_DetachItemViaPointer(extra, extra->child);
		char *key = item->string;

		/* Passing item's own key is safe: cJSON copies the key before it
		 * frees the one the item had. */
		add_item(b, pc, key ? key : "", item);
	}
	cJSON_Delete(extra);
}

static cJSON *percore_json(struct builder *b, cJSON *extra)
{
	const struct pc_bench_session *s = b->s;
	cJSON *pc = cJSON_CreateObject();

	add_str(b, pc, "version", pc_version());
	add_str(b, pc, "git_revision", PC_GIT_REVISION);
	add_str(b, pc, "compiler", PC_COMPILER);
	add_str(b, pc, "flags", PC_C_FLAGS);
	add_str(b, pc, "build_type", PC_BUILD_TYPE);
	add_item(b, pc, "options", options_json(b));
	add_num(b, pc, "duration_s", (double)pc_elapsed(s->finished_ns, s->started_ns) / 1e9);
	add_num(b, pc, "rounds", s->rounds);
	add_str(b, pc, "rounds_stopped", s->stop ? s->stop : "running");
	add_item(b, pc, "skipped", skipped_json(b));
	merge_extra(b, pc, extra);
	return pc;
}

cJSON *pc_bench_session_json(const struct pc_bench_session *s, cJSON *extra)
{
	struct builder b = { .s = s, .ok = s->ran };
	cJSON *root = cJSON_CreateObject(), *rows = cJSON_CreateArray();

	add_item(&b, root, "context", bench_context_json());
	for (size_t i = 0; b.ok && i < s->n; i++)
		entry_rows(&b, rows, &s->e[i]);
	add_item(&b, root, "benchmarks", rows);
	if (b.ok)
		add_item(&b, root, "percore", percore_json(&b, extra));
	else
		cJSON_Delete(extra);
	if (!b.ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}
