/* SPDX-License-Identifier: MIT */
/* percore bench: run the benchmark suite, print a table, write the results
 * file (Google Benchmark JSON plus a "percore" section). */
#define _GNU_SOURCE 1
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/audit.h"
#include "percore/bench.h"
#include "percore/clock.h"
#include "percore/json.h"
#include "percore/place.h"
#include "percore/topo.h"
#include "bench_decide.h"
#include "subcommand.h"

#define PM_QOS_DEVICE PC_BENCH_PM_QOS_DEVICE
/* With --budget and no --max-repetitions (the help text says 500 too): on a
 * VM whose repetitions scatter by 15% or more, telling two rows 2% apart,
 * or showing them within 5%, takes a few hundred a side; the budget, not
 * this cap, is what normally ends the rounds, spent on the pairs cheapest
 * to decide first. */
#define DEFAULT_MAX_REPS 500

struct args {
	struct pc_bench_options opt;
	bool list, json, quiet;
	const char *out;
	struct pc_bench_decide decide;
};

/* The PM QoS request: while the file stays open the kernel keeps every
 * core out of idle states whose exit latency exceeds the value written. */
struct pm_qos {
	bool requested, held;
	int fd, err;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percore bench [OPTIONS]\n\n"
		"Run the benchmark suite: calibrate each benchmark so one repetition lasts\n"
		"at least --min-time, discard a warm-up, then run --repetitions rounds, each\n"
		"running every selected benchmark once in a shuffled order. Prints the\n"
		"median of each (time per item, items/s, bytes/s) with its coefficient of\n"
		"variation; results noisier than --max-cv are marked noisy.\n\n"
		"options:\n"
		"  --filter REGEX      only benchmarks whose name matches (POSIX extended)\n"
		"  --list              print the selected benchmark names and exit\n"
		"  --repetitions N     timed repetitions per benchmark (default 5); with\n"
		"                      --budget or --max-repetitions, the minimum\n"
		"  --budget S          after the minimum, more interleaved rounds of the rows\n"
		"                      whose pair (ours beside a peer, as percore report pairs\n"
		"                      them) is not yet decided, while the whole run stays\n"
		"                      within S seconds (default: no more rounds)\n"
		"  --max-repetitions N at most N repetitions of a row (default with --budget:\n"
		"                      500)\n"
		"  --min-time S        seconds one repetition lasts at least (default 0.2)\n"
		"  --seed N            seed of the shuffled round order (default 1)\n"
		"  --no-interleave     run each benchmark's repetitions back to back\n"
		"  --affinity MODE     threaded benchmarks: on (pinned, default), off, both\n"
		"  --max-cv X          noisy above this CV, a fraction or N%% (default 0.05)\n"
		"  --pm-qos            hold a 0 us request on " PM_QOS_DEVICE " while running\n"
		"  --full              include the long variants (the full suite)\n"
		"  --out FILE          write the results as JSON to FILE\n"
		"  --json              print the JSON instead of the table\n"
		"  --quiet             no progress on stderr\n"
		"  -h, --help          this text\n\n"
		"A pair is decided when the report's two-sided Mann-Whitney U test finds a\n"
		"significant difference or the 95%% interval of its speedup lies within 5%%;\n"
		"more rounds stop early only on stronger evidence (p < 0.001, or a 99%%\n"
		"interval within 5%%), so looking after every round does not make chance\n"
		"differences significant. The budget goes to the pairs cheapest to decide\n"
		"first (the repetitions their interval says they still need, times what\n"
		"one costs); a pair that --max-repetitions could not decide gets no more\n"
		"rounds.\n"
		"With more rounds the end says how many pairs were decided.\n\n"
		"Progress goes to stderr. Exit status: 0 success, 1 nothing matched or\n"
		"every benchmark was skipped or the results could not be written,\n"
		"2 usage error.\n");
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

/* A finite decimal number; with percent, a trailing '%' divides by 100. */
static int parse_double(const char *s, bool percent, double *out)
{
	char *end;

	if (!*s || *s == ' ')
		return -EINVAL;
	errno = 0;
	*out = strtod(s, &end);
	if (percent && *end == '%' && end != s) {
		*out /= 100;
		end++;
	}
	return errno || *end || end == s || !isfinite(*out) ? -EINVAL : 0;
}

static int parse_affinity(const char *s, enum pc_bench_affinity_mode *m)
{
	static const char *const names[] = { "on", "off", "both" };

	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, names[i])) {
			*m = (enum pc_bench_affinity_mode)i;
			return 0;
		}
	}
	return -EINVAL;
}

enum { OPT_LIST = 256, OPT_REPS, OPT_MIN_TIME, OPT_SEED, OPT_NO_INTERLEAVE, OPT_AFFINITY,
       OPT_MAX_CV, OPT_PM_QOS, OPT_FULL, OPT_OUT, OPT_JSON, OPT_QUIET, OPT_FILTER,
       OPT_BUDGET, OPT_MAX_REPS };

static const struct option long_opts[] = {
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "repetitions", required_argument, NULL, OPT_REPS },
	{ "budget", required_argument, NULL, OPT_BUDGET },
	{ "max-repetitions", required_argument, NULL, OPT_MAX_REPS },
	{ "min-time", required_argument, NULL, OPT_MIN_TIME },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "no-interleave", no_argument, NULL, OPT_NO_INTERLEAVE },
	{ "affinity", required_argument, NULL, OPT_AFFINITY },
	{ "max-cv", required_argument, NULL, OPT_MAX_CV },
	{ "pm-qos", no_argument, NULL, OPT_PM_QOS },
	{ "full", no_argument, NULL, OPT_FULL },
	{ "out", required_argument, NULL, OPT_OUT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Options that take a value; their syntax is checked here, their range by
 * pc_bench_session_create(). Returns 0, or -EINVAL for a malformed value. */
static int take_value(struct args *a, int c, const char *v)
{
	uint64_t u;

	switch (c) {
	case OPT_FILTER:
		a->opt.filter = v;
		return 0;
	case OPT_REPS:
		if (parse_u64(v, UINT32_MAX, &u))
			return -EINVAL;
		a->opt.repetitions = (unsigned)u;
		return 0;
	case OPT_MAX_REPS:
		if (parse_u64(v, UINT32_MAX, &u))
			return -EINVAL;
		a->opt.max_repetitions = (unsigned)u;
		return 0;
	case OPT_BUDGET:
		return parse_double(v, false, &a->opt.budget_s);
	case OPT_MIN_TIME:
		return parse_double(v, false, &a->opt.min_time);
	case OPT_SEED:
		return parse_u64(v, UINT64_MAX, &a->opt.seed);
	case OPT_AFFINITY:
		return parse_affinity(v, &a->opt.affinity);
	case OPT_MAX_CV:
		return parse_double(v, true, &a->opt.max_cv);
	default:        /* OPT_OUT */
		a->out = v;
		return 0;
	}
}

/* Returns -1 to go on, or the exit status (help, usage error). */
static int parse_args(int argc, char **argv, struct args *a)
{
	int c, li = 0;

	pc_bench_options_init(&a->opt);
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", long_opts, &li)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return PC_EXIT_OK;
		case OPT_LIST: a->list = true; break;
		case OPT_NO_INTERLEAVE: a->opt.interleave = false; break;
		case OPT_PM_QOS: a->opt.pm_qos = true; break;
		case OPT_FULL: a->opt.full = true; break;
		case OPT_JSON: a->json = true; break;
		case OPT_QUIET: a->quiet = true; break;
		case ':':
			return pc_cmd_usage_error("bench", "%s needs a value", argv[optind - 1]);
		case '?':
			return pc_cmd_usage_error("bench", "unknown option '%s'", argv[optind - 1]);
		default:
			if (take_value(a, c, optarg))
				return pc_cmd_usage_error("bench", "bad value '%s' for --%s",
							  optarg, long_opts[li].name);
		}
	}
	if (optind < argc)
		return pc_cmd_usage_error("bench", "unexpected argument '%s'", argv[optind]);
	if (a->quiet)
		a->opt.progress = NULL;
	if (a->opt.budget_s > 0 || a->opt.max_repetitions) {
		if (!a->opt.max_repetitions)
			a->opt.max_repetitions = DEFAULT_MAX_REPS;
		pc_bench_decide_init(&a->decide);
		a->decide.max_reps = a->opt.max_repetitions;
		a->opt.more = pc_bench_decide_more;
		a->opt.more_arg = &a->decide;
	}
	return -1;
}

static void pm_qos_hold(struct pm_qos *q)
{
	q->requested = true;
	q->fd = pc_bench_pm_qos_hold();
	if (q->fd >= 0) {
		q->held = true;
		return;
	}
	q->err = -q->fd;
	q->fd = -1;
	fprintf(stderr, "percore bench: warning: cannot hold a PM QoS request on %s: %s;"
			" cores may enter deep idle states\n", PM_QOS_DEVICE, strerror(q->err));
}

static void pm_qos_release(struct pm_qos *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
}

/* What the "percore" section says about the PM QoS request. */
static cJSON *pm_qos_json(const struct pm_qos *q)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "requested", q->requested);
	cJSON_AddBoolToObject(o, "held", q->held);
	cJSON_AddStringToObject(o, "device", PM_QOS_DEVICE);
	if (q->held)
		cJSON_AddNumberToObject(o, "latency_us", 0);
	if (q->err) {
		cJSON_AddStringToObject(o, "error", strerrorname_np(q->err) ?: "?");
		cJSON_AddStringToObject(o, "reason", strerror(q->err));
	}
	return o;
}

static int list(const struct pc_bench_session *s, bool json)
{
	size_t n = pc_bench_session_count(s);
	cJSON *arr = json ? cJSON_CreateArray() : NULL;
	char *text;

	for (size_t i = 0; i < n; i++) {
		if (!json) {
			printf("%s\n", pc_bench_session_name(s, i));
			continue;
		}
		cJSON *one = cJSON_CreateObject();

		cJSON_AddStringToObject(one, "name", pc_bench_session_name(s, i));
		cJSON_AddNumberToObject(one, "threads", pc_bench_session_threads(s, i));
		cJSON_AddItemToArray(arr, one);
	}
	if (!json)
		return PC_EXIT_OK;
	text = cJSON_Print(arr);
	cJSON_Delete(arr);
	if (!text)
		return PC_EXIT_FAIL;
	printf("%s\n", text);
	free(text);
	return PC_EXIT_OK;
}

static int nothing_selected(const struct args *a, const struct pc_bench_session *s)
{
	size_t more = pc_bench_session_full_only(s);

	fprintf(stderr, "percore bench: no benchmark matches '%s'", a->opt.filter ?: "");
	if (more)
		fprintf(stderr, " in the default suite (%zu more in the full suite: add --full)",
			more);
	fputc('\n', stderr);
	return PC_EXIT_FAIL;
}

/* The output file is opened under a temporary name before anything runs,
 * so a path that cannot be written fails at once instead of after the
 * whole suite; the finished file replaces FILE in one rename. */
struct out_file {
	char *path, *tmp;
	FILE *f;
};

static int out_open(struct out_file *o, const char *path)
{
	o->path = (char *)path;
	if (asprintf(&o->tmp, "%s.tmp", path) < 0) {
		o->tmp = NULL;
		return -ENOMEM;
	}
	o->f = fopen(o->tmp, "w");
	if (!o->f) {
		int err = errno;

		fprintf(stderr, "percore bench: cannot write %s: %s\n", path, strerror(err));
		free(o->tmp);
		o->tmp = NULL;
		return -err;
	}
	return 0;
}

/* Write text and put the file in place; or, with text NULL, drop it. */
static int out_close(struct out_file *o, const char *text)
{
	int rc = 0;

	if (!o->f)
		return 0;
	if (text && (fputs(text, o->f) < 0 || fputc('\n', o->f) < 0))
		rc = -EIO;
	if (fclose(o->f))
		rc = -EIO;
	o->f = NULL;
	if (text && !rc && rename(o->tmp, o->path))
		rc = -errno;
	if (!text || rc)
		unlink(o->tmp);
	if (rc)
		fprintf(stderr, "percore bench: cannot write %s: %s\n", o->path, strerror(-rc));
	free(o->tmp);
	o->tmp = NULL;
	return rc;
}

/* percore.topology and percore.placement: the machine the threads were
 * placed on, and its default placement (policy auto; a benchmark with k
 * threads takes pc_place's auto answer for k). Left out when hwloc cannot
 * read the machine: the results are still worth writing. */
static void add_machine(cJSON *extra)
{
	struct pc_topo *t = NULL;
	struct pc_placement *p = NULL;

	if (pc_topo_load(NULL, &t, NULL, 0))
		return;
	cJSON_AddItemToObject(extra, "topology", pc_topo_to_json(t));
	if (!pc_place(t, 0, PC_PLACE_AUTO, NULL, 0, &p, NULL, 0))
		cJSON_AddItemToObject(extra, "placement", pc_placement_to_json(t, p));
	pc_placement_free(p);
	pc_topo_free(t);
}

/* Print the results and write the file. */
static int report(const struct args *a, const struct pc_bench_session *s,
		  const struct pm_qos *q, const struct pc_audit *audit, struct out_file *of)
{
	cJSON *extra = cJSON_CreateObject(), *root;
	char *text = NULL;
	int rc = PC_EXIT_OK;

	if (extra) {
		cJSON_AddItemToObject(extra, "pm_qos", pm_qos_json(q));
		add_machine(extra);
	}
	if (extra && audit)
		cJSON_AddItemToObject(extra, "audit", pc_audit_to_json(audit));
	root = pc_bench_session_json(s, extra);
	text = root ? cJSON_Print(root) : NULL;
	cJSON_Delete(root);
	if (!text) {
		fprintf(stderr, "percore bench: out of memory building the results\n");
		out_close(of, NULL);
		return PC_EXIT_FAIL;
	}
	if (a->json)
		printf("%s\n", text);
	else if (pc_bench_session_print(s, stdout))
		rc = PC_EXIT_FAIL;
	if (out_close(of, text))
		rc = PC_EXIT_FAIL;
	free(text);
	return rc;
}

/* With more rounds: how many pairs the report will call decided. */
static void decided(struct args *a, const struct pc_bench_session *s, double secs)
{
	if (!a->opt.more || pc_bench_decide_count(s, &a->decide) < 0)
		return;
	fprintf(stderr, "percore bench: %zu of %zu pairs decided after %u rounds (stopped: %s) "
			"in %.0f s\n", a->decide.decided, a->decide.pairs,
		pc_bench_session_rounds(s), pc_bench_session_stop_reason(s), secs);
}

static int run(struct args *a, struct pc_bench_session *s)
{
	struct pm_qos q = { .fd = -1 };
	struct out_file of = { 0 };
	struct pc_audit *audit = NULL;
	int measured, rc;

	if (a->out && out_open(&of, a->out))
		return PC_EXIT_FAIL;
	/* The audit first, on the machine as the benchmarks will find it; its
	 * warnings say why results may come out noisy. */
	if (pc_audit_collect(NULL, &audit) == 0 && !a->quiet &&
	    pc_audit_count_status(audit, PC_AUDIT_WARN)) {
		fprintf(stderr, "percore bench: this machine adds noise (see percore env):\n");
		pc_audit_print(audit, stderr, PC_AUDIT_PRINT_WARN_ONLY);
	}
	if (a->opt.pm_qos)
		pm_qos_hold(&q);
	uint64_t t0 = pc_now_ns();

	measured = pc_bench_session_run(s);
	pm_qos_release(&q);
	if (measured <= 0) {
		fprintf(stderr, "percore bench: %s\n", measured == 0
			? "every selected benchmark was skipped" : strerror(-measured));
		out_close(&of, NULL);
		pc_audit_free(audit);
		return PC_EXIT_FAIL;
	}
	decided(a, s, (double)(pc_now_ns() - t0) / 1e9);
	rc = report(a, s, &q, audit, &of);
	pc_audit_free(audit);
	return rc;
}

static int bench_main(int argc, char **argv)
{
	struct args a = { 0 };
	struct pc_bench_session *s;
	char why[256];
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	rc = pc_bench_session_create(&a.opt, &s, why, sizeof(why));
	if (rc == -EINVAL)
		return pc_cmd_usage_error("bench", "%s", why);
	if (rc) {
		fprintf(stderr, "percore bench: %s\n", why);
		return PC_EXIT_FAIL;
	}
	if (pc_bench_session_count(s) == 0)
		rc = nothing_selected(&a, s);
	else if (a.list)
		rc = list(s, a.json);
	else
		rc = run(&a, s);
	pc_bench_session_destroy(s);
	return rc;
}

static const struct pc_cmd bench_cmd = {
	.name = "bench",
	.summary = "run the benchmark suite and write Google Benchmark JSON",
	.order = 30,
	.main = bench_main,
};
PC_CMD_REGISTER(bench_cmd)
