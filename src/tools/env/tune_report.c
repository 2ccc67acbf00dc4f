/* SPDX-License-Identifier: MIT */
/* percore: the report of a tune or reset: its steps, as text and JSON. */
#include "env/tune_impl.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "percore/cpulist.h"

struct pc_tune_report *sys_tune_report_new(bool reset, bool dry_run)
{
	struct pc_tune_report *r = calloc(1, sizeof(*r));

	if (r) {
		r->reset = reset;
		r->dry_run = dry_run;
	}
	return r;
}

struct pc_tune_step *sys_tune_report_add(struct pc_tune_report *r, const char *setting, int cpu,
					 const char *path)
{
	struct pc_tune_step *s;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		struct pc_tune_step *n = realloc(r->step, cap * sizeof(*n));

		if (!n)
			return NULL;
		r->step = n;
		r->cap = cap;
	}
	s = &r->step[r->n++];
	memset(s, 0, sizeof(*s));
	s->setting = setting;
	s->cpu = cpu;
	s->result = PC_TUNE_ALREADY;
	snprintf(s->path, sizeof(s->path), "%s", path);
	return s;
}

size_t pc_tune_report_count(const struct pc_tune_report *r)
{
	return r ? r->n : 0;
}

const struct pc_tune_step *pc_tune_report_step(const struct pc_tune_report *r, size_t i)
{
	return r && i < r->n ? &r->step[i] : NULL;
}

size_t pc_tune_report_count_result(const struct pc_tune_report *r, enum pc_tune_result res)
{
	size_t n = 0;

	for (size_t i = 0; r && i < r->n; i++)
		n += r->step[i].result == res;
	return n;
}

const char *pc_tune_result_name(enum pc_tune_result res)
{
	static const char *const name[] = {
		[PC_TUNE_APPLIED] = "applied",
		[PC_TUNE_ALREADY] = "already set",
		[PC_TUNE_NOT_APPLICABLE] = "not applicable",
		[PC_TUNE_FAILED] = "failed",
		[PC_TUNE_WOULD_APPLY] = "would apply",
		[PC_TUNE_NOT_REQUESTED] = "not requested",
	};

	return (unsigned)res < sizeof(name) / sizeof(name[0]) ? name[res] : "?";
}

/* A reset's applied step put a value back. */
static const char *result_word(const struct pc_tune_report *r, enum pc_tune_result res)
{
	if (r->reset && res == PC_TUNE_APPLIED)
		return "restored";
	if (r->reset && res == PC_TUNE_WOULD_APPLY)
		return "would restore";
	return pc_tune_result_name(res);
}

/* Per-CPU steps with the same outcome print as one line. */
static bool same_line(const struct pc_tune_step *a, const struct pc_tune_step *b)
{
	return a->cpu >= 0 && b->cpu >= 0 && !strcmp(a->setting, b->setting) &&
	       a->result == b->result && !strcmp(a->old_value, b->old_value) &&
	       !strcmp(a->new_value, b->new_value) && !strcmp(a->reason, b->reason);
}

static void print_step(const struct pc_tune_report *r, const struct pc_tune_step *s,
		       const cpu_set_t *cpus, FILE *out)
{
	char list[1024];

	fprintf(out, "%-20s %-15s ", s->setting, result_word(r, s->result));
	switch (s->result) {
	case PC_TUNE_APPLIED:
	case PC_TUNE_WOULD_APPLY:
		fprintf(out, "%s -> %s", s->old_value, s->new_value);
		break;
	case PC_TUNE_ALREADY:
		fprintf(out, "%s", s->new_value);
		break;
	case PC_TUNE_FAILED:
		fprintf(out, "%s -> %s: %s", s->old_value[0] ? s->old_value : "?", s->new_value, s->reason);
		break;
	default:
		fprintf(out, "%s", s->reason);
	}
	if (s->cpu >= 0 && pc_cpulist_format(cpus, list, sizeof(list)) >= 0)
		fprintf(out, " (CPU%s %s)", CPU_COUNT(cpus) > 1 ? "s" : "", list);
	else if (s->cpu < 0 && s->result != PC_TUNE_NOT_APPLICABLE && s->result != PC_TUNE_NOT_REQUESTED)
		fprintf(out, " (%s)", s->path);
	fputc('\n', out);
}

static void print_footer(const struct pc_tune_report *r, FILE *out)
{
	size_t failed = pc_tune_report_count_result(r, PC_TUNE_FAILED);

	if (r->dry_run)
		fprintf(out, "dry run: nothing was written\n");
	else if (r->reset && r->state_written)
		fprintf(out, "every saved value is back; removed %s\n", r->state_path);
	else if (r->reset)
		fprintf(out, "kept %s: %zu value%s could not be restored; run percore reset again\n",
			r->state_path, failed, failed == 1 ? "" : "s");
	else if (r->state_written)
		fprintf(out, "saved the previous values to %s; percore reset restores them\n",
			r->state_path);
	else
		fprintf(out, "nothing to change\n");
}

void pc_tune_report_print(const struct pc_tune_report *r, FILE *out)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; ) {
		size_t j = i + 1;
		cpu_set_t cpus;

		CPU_ZERO(&cpus);
		if (r->step[i].cpu >= 0 && r->step[i].cpu < CPU_SETSIZE)
			CPU_SET(r->step[i].cpu, &cpus);
		for (; j < r->n && same_line(&r->step[i], &r->step[j]); j++)
			if (r->step[j].cpu < CPU_SETSIZE)
				CPU_SET(r->step[j].cpu, &cpus);
		print_step(r, &r->step[i], &cpus, out);
		i = j;
	}
	print_footer(r, out);
}

static cJSON *steps_json(const struct pc_tune_report *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < r->n; i++) {
		const struct pc_tune_step *s = &r->step[i];
		cJSON *o = cJSON_CreateObject();
		bool ok = o && cJSON_AddItemToArray(arr, o) &&
			  cJSON_AddStringToObject(o, "setting", s->setting);

		if (ok && s->cpu >= 0)
			ok = cJSON_AddNumberToObject(o, "cpu", s->cpu) != NULL;
		ok = ok && cJSON_AddStringToObject(o, "path", s->path) &&
		     cJSON_AddStringToObject(o, "old", s->old_value) &&
		     cJSON_AddStringToObject(o, "new", s->new_value) &&
		     cJSON_AddStringToObject(o, "result", result_word(r, s->result)) &&
		     cJSON_AddStringToObject(o, "reason", s->reason);
		if (!ok) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

cJSON *pc_tune_report_to_json(const struct pc_tune_report *r)
{
	cJSON *j = r ? cJSON_CreateObject() : NULL, *steps = j ? steps_json(r) : NULL;

	if (!steps || !cJSON_AddStringToObject(j, "state", r->state_path) ||
	    !cJSON_AddBoolToObject(j, "dry_run", r->dry_run) ||
	    !cJSON_AddBoolToObject(j, r->reset ? "state_removed" : "state_saved", r->state_written) ||
	    !cJSON_AddItemToObject(j, "steps", steps)) {
		cJSON_Delete(steps);
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

void pc_tune_report_free(struct pc_tune_report *r)
{
	if (!r)
		return;
	free(r->step);
	free(r);
}
