/* SPDX-License-Identifier: MIT */
/* percore report: turn benchmark results into report.md and report.html. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "subcommand.h"
#include "compare.h"
#include "options.h"
#include "report.h"

#define NAME "report"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: percore report RESULTS.json [MORE.json ...] [--baseline BASE.json]\n"
		"                      [--tune TUNE.json] [-o DIR] [--max-cv X] [--alpha A]\n"
		"                      [--margin M] [--json]\n\n"
		"Writes DIR/report.md and DIR/report.html (self-contained: inline CSS and SVG\n"
		"charts, no scripts or external files) from benchmark results written by\n"
		"`percore bench --out`. Sections: key findings, system and environment audit,\n"
		"micro benchmarks beside their peers, integration, architecture scaling,\n"
		"the noise experiment, fast storage and idle states (the File rows with\n"
		"and without PM QoS), and with --baseline a comparison.\n\n"
		"  RESULTS.json ...      one or more results files; the first describes the\n"
		"                        machine. Rows of a file recorded with --pm-qos are\n"
		"                        named with /pm_qos:on, so they stand beside the others\n"
		"  --baseline BASE.json  compare against an earlier run (as percore compare)\n"
		"  --tune TUNE.json      what `percore tune --dry-run --json` printed on the\n"
		"                        measured machine: which tune steps apply there\n"
		"                        (default: judged from the results' audit)\n"
		"  -o, --out-dir DIR     where to write (default: the first file's folder)\n"
		"  --max-cv X            CV above which a row is noisy (default: the run's\n"
		"                        --max-cv, else 0.05)\n"
		"  --alpha A             significance level of the pair verdicts and the\n"
		"                        comparison (default 0.05)\n"
		"  --margin M            a pair without a significant difference is decided\n"
		"                        when its 95%% interval lies within 1 +- M (default 0.05)\n"
		"  --json                print the key findings as JSON instead of the paths:\n"
		"                        {alpha, margin, max_cv, summary: {pairs, decided,\n"
		"                        undecided, faster, slower, ...}, pairs: [{ours, against,\n"
		"                        kind, section, speedup, ci_low, ci_high, p_value,\n"
		"                        verdict, decided, ...}], findings: [...], files: [...]}\n\n"
		"Every row of ours beside a peer gets a verdict from a two-sided Mann-Whitney\n"
		"U test on the interleaved repetitions: faster, slower or no significant\n"
		"difference, with the p-value and a Hodges-Lehmann interval of the speedup.\n\n"
		"Prints the paths of the two files written. Exit status: 0 written,\n"
		"1 a file could not be read or written, 2 usage error.\n");
}

/* Write one output through a temporary file renamed into place, so a
 * failed run never leaves a half-written report behind. */
static int write_one(const char *dir, const char *file, const struct pc_doc *d, bool html,
		     cJSON *files)
{
	char path[4096], tmp[4200];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	if (!(f = fopen(tmp, "w"))) {
		rc = -errno;
		fprintf(stderr, "percore report: %s: %s\n", tmp, strerror(-rc));
		return rc;
	}
	rc = html ? pc_doc_write_html(d, "percore benchmark report", f) : pc_doc_write_md(d, f);
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc < 0) {
		fprintf(stderr, "percore report: %s: %s\n", path, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	if (files)
		cJSON_AddItemToArray(files, cJSON_CreateString(path));
	else
		printf("%s\n", path);
	return 0;
}

static int ensure_dir(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0755) == 0 || (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)))
		return 0;
	fprintf(stderr, "percore report: %s: %s\n", dir,
		errno == EEXIST ? "exists and is not a directory" : strerror(errno));
	return -1;
}

struct args {
	const char *baseline, *outdir, *tune;
	double max_cv, alpha, margin;
	bool json;
	char **inputs;
	int ninputs;
};

static int parse(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "baseline", required_argument, NULL, 'b' },
		{ "tune", required_argument, NULL, 't' },
		{ "out-dir", required_argument, NULL, 'o' },
		{ "margin", required_argument, NULL, 'g' },
		{ "json", no_argument, NULL, 'j' },
		PC_STAT_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int o;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
		int rc = pc_stat_option(NAME, o, argv, &a->alpha, &a->max_cv);
		if (rc > 0)
			return rc;
		if (o == 'b')
			a->baseline = optarg;
		else if (o == 'o')
			a->outdir = optarg;
		else if (o == 't')
			a->tune = optarg;
		else if (o == 'j')
			a->json = true;
		else if (o == 'g' && pc_parse_level(optarg, 1, &a->margin) < 0)
			return pc_cmd_usage_error(NAME, "--margin wants a number in (0, 1], got '%s'",
						  optarg);
	}
	a->inputs = argv + optind;
	a->ninputs = argc - optind;
	if (a->ninputs < 1)
		return pc_cmd_usage_error(NAME, "no results file given");
	return 0;
}

/* The --json summary on stdout (nothing to do without it). */
static int print_json(const cJSON *json)
{
	char *text = json ? cJSON_Print(json) : NULL;
	int rc = PC_EXIT_OK;

	if (!json)
		return rc;
	if (!text || printf("%s\n", text) < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "percore report: could not write the JSON summary\n");
		rc = PC_EXIT_FAIL;
	}
	free(text);
	return rc;
}

static int run(const struct args *a, struct pc_results *res, struct pc_results *base,
	       const cJSON *tune)
{
	struct pc_report_opts o = {
		.tune = tune, .margin = a->margin,
		.max_cv = a->max_cv, .alpha = a->alpha, .baseline = base,
		.inputs = (const char *const *)a->inputs, .ninputs = (size_t)a->ninputs,
		.baseline_name = a->baseline,
	};
	char *dup = strdup(a->inputs[0]);
	const char *dir = a->outdir ? a->outdir : dup ? dirname(dup) : ".";
	cJSON *json = NULL, *files = NULL;
	struct pc_doc *d = pc_report_build(res, &o, a->json ? &json : NULL);
	int rc = PC_EXIT_FAIL;

	if (json)
		files = cJSON_AddArrayToObject(json, "files");
	if (!d || (a->json && !files))
		fprintf(stderr, "percore report: out of memory\n");
	else if (ensure_dir(dir) == 0 && write_one(dir, "report.md", d, false, files) == 0 &&
		 write_one(dir, "report.html", d, true, files) == 0)
		rc = print_json(json);
	pc_doc_free(d);
	cJSON_Delete(json);
	free(dup);
	return rc;
}

/* A tune report: an object with a "steps" array of objects. */
static cJSON *load_tune(const char *path, char *err, size_t len)
{
	cJSON *t = pc_json_load(path, err, len);
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(t, "steps"), *e;

	bool ok = cJSON_IsArray(steps);

	if (!t)
		return NULL;
	for (e = ok ? steps->child : NULL; e; e = e->next)
		ok &= cJSON_IsObject(e);
	if (!ok) {
		snprintf(err, len, "%s: not a `percore tune --json` report (no \"steps\" array "
			 "of objects)", path);
		cJSON_Delete(t);
		return NULL;
	}
	return t;
}

static int report_main(int argc, char **argv)
{
	struct args a = { .alpha = 0.05 };
	struct pc_results *res = NULL, *base = NULL;
	cJSON *tune = NULL;
	char err[512];
	int rc;

	if (pc_cmd_wants_help(argc, argv)) {
		usage(stdout);
		return PC_EXIT_OK;
	}
	if ((rc = parse(argc, argv, &a)) != 0)
		return rc;
	rc = PC_EXIT_FAIL;
	if (!(res = pc_results_load(a.inputs[0], PC_RESULTS_TAG_PMQOS, err, sizeof(err))))
		goto fail;
	for (int i = 1; i < a.ninputs; i++)
		if (pc_results_append(res, a.inputs[i], PC_RESULTS_TAG_PMQOS, err, sizeof(err)) < 0)
			goto fail;
	if (a.baseline && !(base = pc_results_load(a.baseline, PC_RESULTS_TAG_PMQOS, err, sizeof(err))))
		goto fail;
	if (a.tune && !(tune = load_tune(a.tune, err, sizeof(err))))
		goto fail;
	rc = run(&a, res, base, tune);
	goto out;
fail:
	fprintf(stderr, "percore report: %s\n", err);
out:
	pc_results_free(res);
	pc_results_free(base);
	cJSON_Delete(tune);
	return rc;
}

static const struct pc_cmd report_cmd = {
	.name = NAME,
	.summary = "write report.md and report.html from benchmark results",
	.order = 60,
	.main = report_main,
};
PC_CMD_REGISTER(report_cmd)
