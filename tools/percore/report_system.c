/* SPDX-License-Identifier: MIT */
/* percore report: the System section.
 *
 * Which machine, which limits, which build, which options, and what the
 * environment audit found. Results files of different ages carry different
 * fields, so each line of the table names the places its value may be
 * found, first found wins, and a line with none is left out. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "report.h"

#define VALUE_MAX 300   /* characters of one value before it is cut */

enum { F_COUNT = 1 };   /* an array is shown as how many it holds */

struct sys_field {
	const char *label;
	unsigned flags;
	/* dotted paths into the first results file; "audit:ID" is the value
	 * of that audit entry */
	const char *paths[4];
	/* how to write the value found at paths[0]; NULL (or a value found
	 * elsewhere): generically */
	void (*render)(FILE *f, const cJSON *v);
};

static void kinds(FILE *f, const cJSON *v);
static void nodes(FILE *f, const cJSON *v);
static void placement(FILE *f, const cJSON *v);
static void quota(FILE *f, const cJSON *v);

static const struct sys_field fields[] = {
	{ "CPU model", 0, { "audit:cpu.model" }, NULL },
	{ "Logical CPUs", F_COUNT, { "percore.topology.cpus", "context.num_cpus" }, NULL },
	{ "Physical cores", F_COUNT, { "percore.topology.cores" }, NULL },
	{ "Packages", 0, { "percore.topology.packages" }, NULL },
	{ "Core kinds", 0, { "percore.topology.kinds" }, kinds },
	{ "SMT", 0, { "audit:cpu.smt" }, NULL },
	{ "NUMA nodes", 0, { "percore.topology.nodes" }, nodes },
	{ "Affinity mask", 0, { "percore.topology.limits.affinity" }, NULL },
	{ "Usable CPUs", 0, { "percore.topology.limits.usable_cpus" }, NULL },
	{ "cgroup cpuset", 0, { "percore.topology.limits.cpuset", "audit:cgroup.cpuset" }, NULL },
	{ "cgroup CPU quota", 0, { "percore.topology.limits", "audit:cgroup.cpu_quota" }, quota },
	{ "cgroup memory limit", 0, { "audit:cgroup.memory_limit" }, NULL },
	{ "Hypervisor", 0, { "audit:vm.hypervisor" }, NULL },
	{ "Placement", 0, { "percore.placement" }, placement },
	{ "Clock (MHz)", 0, { "context.mhz_per_cpu" }, NULL },
	{ "CPU scaling enabled", 0, { "context.cpu_scaling_enabled" }, NULL },
	{ "Load average", 0, { "context.load_avg" }, NULL },
	{ "Compiler", 0, { "percore.compiler" }, NULL },
	{ "Flags", 0, { "percore.flags" }, NULL },
	{ "Build type", 0, { "percore.build_type", "context.library_build_type" }, NULL },
	{ "percore version", 0, { "percore.version" }, NULL },
	{ "Git revision", 0, { "percore.git_revision" }, NULL },
	{ "Run options", 0, { "percore.options" }, NULL },
	{ "Run duration (s)", 0, { "percore.duration_s" }, NULL },
};

static void value(FILE *f, const cJSON *v);

static void scalar(FILE *f, const cJSON *v)
{
	if (cJSON_IsString(v))
		fputs(v->valuestring, f);
	else if (cJSON_IsBool(v))
		fputs(cJSON_IsTrue(v) ? "yes" : "no", f);
	else if (cJSON_IsNumber(v) && v->valuedouble == (double)(long long)v->valuedouble)
		fprintf(f, "%lld", (long long)v->valuedouble);
	else if (cJSON_IsNumber(v)) /* a load average, a duration: 4 digits say it */
		fprintf(f, "%.4g", v->valuedouble);
	else if (cJSON_IsNull(v))
		fputs(PC_FMT_NONE, f);
}

static void value(FILE *f, const cJSON *v)
{
	const cJSON *e;
	const char *sep = "";

	if (cJSON_IsArray(v)) {
		bool objs = cJSON_IsObject(cJSON_GetArrayItem(v, 0));
		cJSON_ArrayForEach(e, v) {
			fputs(sep, f);
			value(f, e);
			sep = objs ? "; " : ", ";
		}
	} else if (cJSON_IsObject(v)) {
		cJSON_ArrayForEach(e, v) {
			if (cJSON_IsString(e) && !*e->valuestring)
				continue; /* an empty option says nothing */
			fprintf(f, "%s%s ", sep, e->string);
			if (cJSON_IsObject(e) || cJSON_IsArray(e))
				fputc('(', f);
			value(f, e);
			if (cJSON_IsObject(e) || cJSON_IsArray(e))
				fputc(')', f);
			sep = ", ";
		}
	} else {
		scalar(f, v);
	}
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "?";
}

static double number(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* "IntelCore up to 5200 MHz: CPUs 0-15; IntelAtom: CPUs 16-27" */
static void kinds(FILE *f, const cJSON *v)
{
	const cJSON *k;
	const char *sep = "";

	cJSON_ArrayForEach(k, v) {
		fprintf(f, "%s%s", sep, str(k, "name"));
		if (number(k, "max_mhz") > 0)
			fprintf(f, " up to %.0f MHz", number(k, "max_mhz"));
		fprintf(f, ": CPUs %s", str(k, "cpus"));
		sep = "; ";
	}
}

/* "1: node 0 with CPUs 0-1, 5.84 GiB" */
static void nodes(FILE *f, const cJSON *v)
{
	const cJSON *n;
	const char *sep = ": ";

	fprintf(f, "%d", cJSON_GetArraySize(v));
	cJSON_ArrayForEach(n, v) {
		fprintf(f, "%snode %.0f with CPUs %s", sep, number(n, "node"), str(n, "cpus"));
		if (number(n, "memory_bytes") > 0)
			fprintf(f, ", %s", pc_fmt_size(number(n, "memory_bytes")).s);
		sep = "; ";
	}
}

/* "1.5 CPUs (1 shard)"; nothing when there is no quota */
static void quota(FILE *f, const cJSON *v)
{
	double q = number(v, "quota_cpus"), shards = number(v, "quota_shards");

	if (!(q > 0))
		return;
	fprintf(f, "%.4g CPUs", q);
	if (shards > 0)
		fprintf(f, " (%.0f shard%s)", shards, shards == 1 ? "" : "s");
}

/* "auto, 2 shards pinned: 0 on CPU 0 (node 0), 1 on CPU 1 (node 0)" */
static void placement(FILE *f, const cJSON *v)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "placement"), *s;
	const cJSON *warn = cJSON_GetObjectItemCaseSensitive(v, "warnings");
	const char *sep = ": ";

	fprintf(f, "%s, %.0f shards %s", str(v, "policy"), number(v, "shards"),
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "pinned")) ? "pinned" : "not pinned");
	cJSON_ArrayForEach(s, p) {
		fprintf(f, "%sshard %.0f on CPU %.0f (node %.0f)", sep, number(s, "shard"),
			number(s, "cpu"), number(s, "node"));
		sep = ", ";
	}
	if (cJSON_GetArraySize(warn))
		fputs("; warnings: ", f), value(f, warn);
}

/* The value as one line of text, cut at VALUE_MAX; NULL when absent. */
static char *render(const cJSON *v, unsigned flags, void (*custom)(FILE *, const cJSON *))
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!v || cJSON_IsNull(v) || !(f = open_memstream(&text, &len)))
		return NULL;
	if (custom)
		custom(f, v);
	else if ((flags & F_COUNT) && cJSON_IsArray(v))
		fprintf(f, "%d", cJSON_GetArraySize(v));
	else
		value(f, v);
	if (fclose(f) != 0 || !len) { /* nothing written: treat as absent */
		free(text);
		return NULL;
	}
	if (len > VALUE_MAX) {
		size_t cut = VALUE_MAX;
		while (cut && ((unsigned char)text[cut] & 0xc0) == 0x80)
			cut--; /* never split a UTF-8 sequence */
		strcpy(text + cut, "\xe2\x80\xa6");
	}
	return text;
}

static const cJSON *lookup(const struct pc_report_ctx *c, const char *path)
{
	if (!strncmp(path, "audit:", 6)) {
		const cJSON *e = pc_report_audit(c, path + 6);
		return e ? cJSON_GetObjectItemCaseSensitive(e, "value") : NULL;
	}
	return pc_results_get(c->res, 0, path);
}

static void machine_table(struct pc_report_ctx *c)
{
	static const char *const head[] = { "", "" };
	struct pc_table *t = NULL;

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct sys_field *fl = &fields[i];
		char *v = NULL;
		for (size_t k = 0; k < 4 && fl->paths[k] && !v; k++)
			v = render(lookup(c, fl->paths[k]), fl->flags, k ? NULL : fl->render);
		if (!v)
			continue;
		if (!t)
			t = pc_doc_table(c->doc, 2, head, "ll");
		pc_table_add(t, PC_MARK_STRONG, "%s", fl->label);
		pc_table_add(t, PC_MARK_NONE, "%s", v);
		free(v);
	}
	if (!t)
		pc_doc_para(c->doc, "These results carry no description of the machine.");
}

static void caches_table(struct pc_report_ctx *c)
{
	static const char *const head[] = { "Cache", "Type", "Size", "Shared by" };
	const cJSON *caches = pc_results_get(c->res, 0, "context.caches"), *e;
	struct pc_table *t;

	if (!cJSON_IsArray(caches) || !cJSON_GetArraySize(caches))
		return;
	if (!(t = pc_doc_table(c->doc, 4, head, "llrr")))
		return;
	cJSON_ArrayForEach(e, caches) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type");
		const cJSON *lvl = cJSON_GetObjectItemCaseSensitive(e, "level");
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(e, "size");
		const cJSON *share = cJSON_GetObjectItemCaseSensitive(e, "num_sharing");

		pc_table_add(t, PC_MARK_NONE, "L%d", cJSON_IsNumber(lvl) ? lvl->valueint : 0);
		pc_table_add(t, PC_MARK_NONE, "%s", cJSON_IsString(type) ? type->valuestring : "");
		pc_table_add(t, PC_MARK_NONE, "%s",
			     pc_fmt_size(cJSON_IsNumber(size) ? size->valuedouble : NAN).s);
		if (cJSON_IsNumber(share))
			pc_table_add(t, PC_MARK_NONE, "%d CPU%s", share->valueint,
				     share->valueint == 1 ? "" : "s");
		else
			pc_table_add(t, PC_MARK_NONE, PC_FMT_NONE);
	}
}

/* Audit statuses in the order the table shows them: what needs action
 * first, what is fine last. */
static int status_rank(const char *s)
{
	if (!strcmp(s, "warn"))
		return 0;
	if (!strcmp(s, "ok"))
		return 3;
	if (!strcmp(s, "unknown"))
		return 1;
	return 2;
}

static enum pc_mark status_mark(const char *s)
{
	switch (status_rank(s)) {
	case 0:  return PC_MARK_WARN;
	case 3:  return PC_MARK_GOOD;
	default: return PC_MARK_MUTED;
	}
}

static void audit_table(struct pc_report_ctx *c)
{
	static const char *const head[] = { "Check", "Status", "Value", "Fix" };
	const cJSON *audit = pc_results_get(c->res, 0, "percore.audit"), *e;
	struct pc_table *t;
	size_t warns = 0;
	char *names = NULL;
	size_t nlen = 0;
	FILE *nf;

	pc_doc_heading(c->doc, 3, "Environment audit");
	if (!cJSON_IsArray(audit) || !cJSON_GetArraySize(audit)) {
		pc_doc_para(c->doc, "These results carry no environment audit "
			    "(an older file, or `percore env` was not available).");
		return;
	}
	if (!(t = pc_doc_table(c->doc, 4, head, "llll")) || !(nf = open_memstream(&names, &nlen)))
		return;
	for (int rank = 0; rank <= 3; rank++) {
		cJSON_ArrayForEach(e, audit) {
			const char *st = pc_report_audit_str(e, "status");
			char *v;
			if (status_rank(st) != rank)
				continue;
			v = render(cJSON_GetObjectItemCaseSensitive(e, "value"), 0, NULL);
			pc_table_add(t, PC_MARK_CODE, "%s", pc_report_audit_str(e, "id"));
			pc_table_add(t, status_mark(st), "%s", st);
			pc_table_add(t, PC_MARK_NONE, "%s", v ? v : "");
			pc_table_add(t, PC_MARK_NONE, "%s", pc_report_audit_str(e, "fix"));
			free(v);
			if (rank == 0)
				fprintf(nf, "%s`%s`", warns++ ? ", " : "", pc_report_audit_str(e, "id"));
		}
	}
	if (fclose(nf) == 0 && names) {
		if (warns)
			pc_report_finding(c, "Environment audit: **%zu warning%s** (%s).", warns,
					  warns == 1 ? "" : "s", names);
		else
			pc_report_finding(c, "Environment audit: no warnings.");
	}
	free(names);
}

/* Benchmarks whose setup declined to run (a peer library missing, say):
 * absent rows must not pass unnoticed. */
static void skipped_table(struct pc_report_ctx *c)
{
	static const char *const head[] = { "Skipped benchmark", "Error", "Reason" };
	const cJSON *sk = pc_results_get(c->res, 0, "percore.skipped"), *e;
	struct pc_table *t;
	int n = cJSON_IsArray(sk) ? cJSON_GetArraySize(sk) : 0;

	if (!n || !(t = pc_doc_table(c->doc, 3, head, "lll")))
		return;
	cJSON_ArrayForEach(e, sk) {
		pc_table_add(t, PC_MARK_CODE, "%s", pc_report_audit_str(e, "name"));
		pc_table_add(t, PC_MARK_WARN, "%s", pc_report_audit_str(e, "error"));
		pc_table_add(t, PC_MARK_NONE, "%s", pc_report_audit_str(e, "reason"));
	}
	pc_report_finding(c, "**%d benchmark%s skipped** in this run (see System).", n,
			  n == 1 ? "" : "s");
}

void pc_report_system(struct pc_report_ctx *c)
{
	pc_doc_heading(c->doc, 2, "System");
	machine_table(c);
	caches_table(c);
	skipped_table(c);
	audit_table(c);
}
