/* SPDX-License-Identifier: MIT */
/* percore stat: a live per-shard view of a running server, read from its
 * /metrics endpoint, like vmstat for shards. Rates are the change between
 * two scrapes over the time between them. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "subcommand.h"
#include "net_args.h"
#include "percore/clock.h"
#include "stat_scrape.h"

struct stat_args {
	struct sockaddr_storage addr;
	socklen_t len;
	const char *target;
	uint64_t interval_ns;
	bool once, json;
	long count;                   /* refreshes; 0: until interrupted */
};

struct row {
	double util, frames_s, mesh_s, sessions, p99_s; /* p99 NAN: no requests */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percore stat [OPTIONS] HOST:PORT\n\n"
		"Show a running server's shards, refreshed every interval, from its metrics\n"
		"endpoint (percore echo --metrics-port P, or a server started with\n"
		"cfg.metrics): per shard, utilization (busy time over busy plus idle time),\n"
		"frames received per second, mesh messages run per second, sessions open,\n"
		"and the 99th percentile of request handling time over the interval.\n"
		"HOST:PORT is the endpoint: 127.0.0.1:9100, [::1]:9100 or :9100.\n\n"
		"options:\n"
		"  --interval T   time between refreshes: seconds, or 500ms, 2s (default 1)\n"
		"  --count N      stop after N refreshes (default: until interrupted)\n"
		"  --once         one refresh (two scrapes an interval apart), then exit\n"
		"  --json         one JSON object per refresh, one per line\n"
		"  -h, --help     this text\n\n"
		"Exit status: 0 success, 1 the endpoint could not be read, 2 usage error.\n");
}

enum { OPT_INTERVAL = 256, OPT_COUNT, OPT_ONCE, OPT_JSON };

static const struct option long_opts[] = {
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int take(struct stat_args *a, int c, const char *v)
{
	uint64_t u;

	switch (c) {
	case OPT_ONCE: a->once = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_INTERVAL:
		return net_arg_time(v, 3600, &a->interval_ns) || a->interval_ns < 10000000 ?
			       -EINVAL : 0;
	default: /* OPT_COUNT */
		if (net_arg_count(v, INT32_MAX, &u) || !u)
			return -EINVAL;
		a->count = (long)u;
		return 0;
	}
}

/* Returns -1 to go on, or the exit status (help, usage error). */
static int parse_args(int argc, char **argv, struct stat_args *a)
{
	int c, li = 0;

	memset(a, 0, sizeof(*a));
	a->interval_ns = 1000000000ull;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", long_opts, &li)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return PC_EXIT_OK;
		}
		if (c == ':')
			return pc_cmd_usage_error("stat", "%s needs a value", argv[optind - 1]);
		if (c == '?')
			return pc_cmd_usage_error("stat", "unknown option '%s'", argv[optind - 1]);
		if (take(a, c, optarg))
			return pc_cmd_usage_error("stat", "bad value '%s' for --%s", optarg,
						  long_opts[li].name);
	}
	if (optind != argc - 1)
		return pc_cmd_usage_error("stat", optind < argc ? "one HOST:PORT, not more" :
								   "which endpoint? give HOST:PORT");
	a->target = argv[optind];
	if (stat_parse_target(a->target, &a->addr, &a->len))
		return pc_cmd_usage_error("stat", "bad endpoint '%s': HOST:PORT with a numeric "
					  "host, e.g. 127.0.0.1:9100", a->target);
	if (a->once)
		a->count = 1;
	return -1;
}

/* The p99 of the requests between two scrapes, interpolated inside its
 * bucket as Prometheus's histogram_quantile does; NAN when none. */
static double p99_between(const struct stat_shard *a, const struct stat_shard *b)
{
	unsigned n = b->nle;
	double total = b->cum[n] - a->cum[n], want = 0.99 * total, lo = 0, below = 0;

	if (total <= 0 || a->nle != n)
		return NAN;
	for (unsigned k = 0; k < n; k++) {
		double at = b->cum[k] - a->cum[k];

		if (at >= want) {
			double in = at - below;
			return in > 0 ? lo + (b->le[k] - lo) * (want - below) / in : b->le[k];
		}
		lo = b->le[k];
		below = at;
	}
	return n ? b->le[n - 1] : NAN; /* in +Inf: at least the last bound */
}

static struct row row_of(const struct stat_shard *a, const struct stat_shard *b, double dt)
{
	double busy = b->busy_s - a->busy_s, idle = b->idle_s - a->idle_s;

	return (struct row){
		.util = busy + idle > 0 ? busy / (busy + idle) : 0,
		.frames_s = (b->frames_in - a->frames_in) / dt,
		.mesh_s = (b->mesh_in - a->mesh_in) / dt,
		.sessions = b->sessions,
		.p99_s = p99_between(a, b),
	};
}

static void print_row(const char *who, const struct row *r)
{
	char p99[32] = "-";

	if (!isnan(r->p99_s))
		snprintf(p99, sizeof(p99), "%.1fus", r->p99_s * 1e6);
	printf("%5s %6.1f %12.0f %12.0f %9.0f %10s\n", who, r->util * 100, r->frames_s, r->mesh_s,
	       r->sessions, p99);
}

static cJSON *row_json(const struct row *r)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "utilization", r->util);
	cJSON_AddNumberToObject(o, "frames_per_s", r->frames_s);
	cJSON_AddNumberToObject(o, "mesh_messages_per_s", r->mesh_s);
	cJSON_AddNumberToObject(o, "sessions", r->sessions);
	if (isnan(r->p99_s))
		cJSON_AddNullToObject(o, "p99_s");
	else
		cJSON_AddNumberToObject(o, "p99_s", r->p99_s);
	return o;
}

/* One refresh: every shard, then the whole server (utilization averaged,
 * rates and sessions summed). */
static void show(const struct stat_args *a, const struct stat_sample *s0,
		 const struct stat_sample *s1, unsigned refresh)
{
	double dt = (double)pc_elapsed(s1->t_ns, s0->t_ns) / 1e9;
	struct row all = { .p99_s = NAN };
	cJSON *o = a->json ? cJSON_CreateObject() : NULL, *arr = NULL;
	unsigned n = 0;
	char who[16];

	if (o) {
		cJSON_AddNumberToObject(o, "interval_s", dt);
		cJSON_AddNumberToObject(o, "rss_bytes", s1->rss_bytes);
		arr = cJSON_AddArrayToObject(o, "shards");
	} else if (refresh % 20 == 0) {
		printf("%5s %6s %12s %12s %9s %10s\n", "shard", "util%", "frames/s", "mesh/s",
		       "sessions", "p99");
	}
	for (unsigned i = 0; i < s1->nshards; i++) {
		if (!s1->sh[i].seen || !s0->sh[i].seen)
			continue;
		struct row r = row_of(&s0->sh[i], &s1->sh[i], dt);
		all.util += r.util;
		all.frames_s += r.frames_s;
		all.mesh_s += r.mesh_s;
		all.sessions += r.sessions;
		if (!isnan(r.p99_s) && (isnan(all.p99_s) || r.p99_s > all.p99_s))
			all.p99_s = r.p99_s; /* the worst shard's */
		n++;
		if (o) {
			cJSON *j = row_json(&r);
			cJSON_AddNumberToObject(j, "shard", i);
			cJSON_AddItemToArray(arr, j);
		} else {
			snprintf(who, sizeof(who), "%u", i);
			print_row(who, &r);
		}
	}
	all.util = n ? all.util / n : 0;
	if (o) {
		cJSON_AddItemToObject(o, "all", row_json(&all));
		char *text = cJSON_PrintUnformatted(o);
		if (text)
			printf("%s\n", text);
		cJSON_free(text);
		cJSON_Delete(o);
	} else {
		print_row("all", &all);
	}
	fflush(stdout);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int stat_main(int argc, char **argv)
{
	struct stat_args a;
	struct stat_sample *s[2];
	char err[200];
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	s[0] = malloc(sizeof(*s[0]));
	s[1] = malloc(sizeof(*s[1]));
	if (!s[0] || !s[1]) {
		free(s[0]);
		free(s[1]);
		fprintf(stderr, "percore stat: out of memory\n");
		return PC_EXIT_FAIL;
	}
	rc = stat_scrape(&a.addr, a.len, 5000, s[0], err, sizeof(err));
	for (unsigned k = 0; !rc && (!a.count || k < (unsigned long)a.count); k++) {
		sleep_ns(a.interval_ns);
		rc = stat_scrape(&a.addr, a.len, 5000, s[1], err, sizeof(err));
		if (!rc)
			show(&a, s[0], s[1], k);
		struct stat_sample *t = s[0];
		s[0] = s[1];
		s[1] = t;
	}
	free(s[0]);
	free(s[1]);
	if (rc) {
		fprintf(stderr, "percore stat: %s: %s\n", a.target, err);
		return PC_EXIT_FAIL;
	}
	return PC_EXIT_OK;
}

static const struct pc_cmd stat_cmd = {
	.name = "stat",
	.summary = "live per-shard view of a running server from its /metrics endpoint",
	.order = 62,
	.main = stat_main,
};
PC_CMD_REGISTER(stat_cmd)
