/* SPDX-License-Identifier: MIT */
/* percore compare: which differences between two runs are real. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subcommand.h"
#include "compare.h"
#include "options.h"
#include "report_stats.h"

#define NAME "compare"
#define DEFAULT_MAX_CV 0.05

static void usage(FILE *out)
{
	fprintf(out,
		"usage: percore compare BASE.json NEW.json [--md|--json] [--alpha A]\n"
		"                       [--max-cv X] [--fail-on-regression [--include-noisy]]\n\n"
		"For every benchmark in both results files: the change of the median real time\n"
		"per iteration (lower is better) and a two-sided Mann-Whitney U test on the\n"
		"per-repetition real times and CPU times, as Google Benchmark's compare.py\n"
		"does (exact distribution when a side has at most 8 repetitions and nothing\n"
		"ties, else the normal approximation with tie correction). Verdicts: improved\n"
		"or regressed when p < alpha, in the direction the U statistic shows;\n"
		"unchanged when not; inconclusive with fewer than %d repetitions on a side\n"
		"(compare.py's minimum) or too few for any untied result to reach alpha.\n"
		"noisy: the CV of either side exceeds --max-cv.\n\n"
		"  --md                  a Markdown table instead of plain text\n"
		"  --json                {\"rows\": [{name, base_median, new_median, change_pct,\n"
		"                        p_value, verdict, noisy, cpu_p_value, cpu_verdict}],\n"
		"                        \"summary\": {...}};\n"
		"                        medians in ns per iteration, p_value null when untested\n"
		"  --alpha A             significance level (default 0.05)\n"
		"  --max-cv X            noisy threshold as a fraction (default: NEW's\n"
		"                        --max-cv, else BASE's, else %.2f)\n"
		"  --fail-on-regression  exit 1 when a benchmark that is not noisy regressed\n"
		"                        significantly, in real or CPU time\n"
		"  --include-noisy       with --fail-on-regression: noisy rows count too\n\n"
		"Exit status: 0 compared, 1 a file could not be read (or a regression with\n"
		"--fail-on-regression), 2 usage error.\n", PC_MWU_MIN_REPS, DEFAULT_MAX_CV);
}

enum format { FMT_TEXT, FMT_MD, FMT_JSON };

struct args {
	enum format fmt;
	double alpha, max_cv;
	bool fail_on_regression, include_noisy;
	const char *base, *cur;
};

static int parse(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "md", no_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "fail-on-regression", no_argument, NULL, 'f' },
		{ "include-noisy", no_argument, NULL, 'n' },
		PC_STAT_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int o;

	opterr = 0;
	optind = 1;
	while ((o = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		int rc = pc_stat_option(NAME, o, argv, &a->alpha, &a->max_cv);
		if (rc > 0)
			return rc;
		if (o == 'f') {
			a->fail_on_regression = true;
		} else if (o == 'n') {
			a->include_noisy = true;
		} else if (o == 'm' || o == 'j') {
			if (a->fmt != FMT_TEXT)
				return pc_cmd_usage_error(NAME, "--md and --json exclude each other");
			a->fmt = o == 'm' ? FMT_MD : FMT_JSON;
		}
	}
	if (a->include_noisy && !a->fail_on_regression)
		return pc_cmd_usage_error(NAME, "--include-noisy goes with --fail-on-regression");
	if (argc - optind != 2)
		return pc_cmd_usage_error(NAME, "want two results files, BASE and NEW (got %d)",
					  argc - optind);
	a->base = argv[optind];
	a->cur = argv[optind + 1];
	return 0;
}

static int print(const struct args *a, const struct pc_cmp *cmp)
{
	struct pc_doc *d;
	int rc;

	if (a->fmt == FMT_JSON)
		return pc_cmp_write_json(cmp, stdout);
	if (!(d = pc_doc_new()))
		return -1;
	pc_cmp_doc(cmp, d);
	rc = a->fmt == FMT_MD ? pc_doc_write_md(d, stdout) : pc_doc_write_text(d, stdout);
	pc_doc_free(d);
	return rc;
}

static int compare_main(int argc, char **argv)
{
	struct args a = { .alpha = 0.05 };
	struct pc_results *base = NULL, *cur = NULL;
	struct pc_cmp cmp;
	char err[512];
	int rc;

	if (pc_cmd_wants_help(argc, argv)) {
		usage(stdout);
		return PC_EXIT_OK;
	}
	if ((rc = parse(argc, argv, &a)) != 0)
		return rc;
	if (!(base = pc_results_load(a.base, 0, err, sizeof(err))) ||
	    !(cur = pc_results_load(a.cur, 0, err, sizeof(err)))) {
		fprintf(stderr, "percore compare: %s\n", err);
		pc_results_free(base);
		return PC_EXIT_FAIL;
	}
	if (!(a.max_cv > 0))
		a.max_cv = pc_results_max_cv(cur, pc_results_max_cv(base, DEFAULT_MAX_CV));
	rc = PC_EXIT_FAIL;
	if (pc_compare(base, cur, a.alpha, a.max_cv, &cmp) < 0) {
		fprintf(stderr, "percore compare: out of memory\n");
	} else if (print(&a, &cmp) < 0) {
		fprintf(stderr, "percore compare: could not write the comparison\n");
		pc_cmp_free(&cmp);
	} else {
		if (!cmp.n)
			fprintf(stderr, "percore compare: no benchmark is in both files\n");
		size_t bad = a.include_noisy ? cmp.regressed_any : cmp.regressed_quiet;
		if (a.fail_on_regression && !bad && cmp.regressed_any)
			fprintf(stderr, "percore compare: %zu regression%s only on noisy rows; "
				"--include-noisy counts them\n", cmp.regressed_any,
				cmp.regressed_any == 1 ? "" : "s");
		rc = a.fail_on_regression && bad ? PC_EXIT_FAIL : PC_EXIT_OK;
		pc_cmp_free(&cmp);
	}
	pc_results_free(base);
	pc_results_free(cur);
	return rc;
}

static const struct pc_cmd compare_cmd = {
	.name = NAME,
	.summary = "compare two benchmark runs: which changes are significant",
	.order = 61,
	.main = compare_main,
};
PC_CMD_REGISTER(compare_cmd)
