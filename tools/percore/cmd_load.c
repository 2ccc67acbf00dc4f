/* SPDX-License-Identifier: MIT */
/* percore load: drive an echo server (percore's or any raw echo server)
 * and report rates, latency percentiles and errors; or open idle sessions
 * and report what they cost the server. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subcommand.h"
#include "net_args.h"
#include "percore/frame.h"
#include "percore/hist.h"
#include "percore/load.h"

struct args {
	struct pc_load_cfg cfg;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percore load [OPTIONS]\n\n"
		"Drive an echo server: --conns connections each keeping --depth messages in\n"
		"flight, every echoed byte checked. Reports messages/s, payload MB/s (each\n"
		"way), round-trip latency p50/p99/p99.9/max and errors. The generator runs\n"
		"on percore's own runtime (--shards, --policy, --idle-policy).\n\n"
		"options:\n"
		"  --host H            server address: numeric IPv4 or IPv6, or localhost\n"
		"                      (127.0.0.1); names are not resolved (default\n"
		"                      127.0.0.1)\n"
		"  --port P            server port (default 7000)\n"
		"  --conns C           connections (default 16)\n"
		"  --depth D           messages in flight per connection (default 16)\n"
		"  --size S            payload bytes (K, M suffixes), or MIN-MAX for sizes\n"
		"                      drawn at random (default 64)\n"
		"  --duration T        how long to send: seconds, or 500ms, 2m (default 10)\n"
		"  --messages N        send exactly N messages instead of for a time\n"
		"  --raw               unframed bytes (for a raw echo server)\n"
		"  --connect           each connection: connect, one round trip, close, again\n"
		"  --idle N            open N idle sessions and report the server's memory\n"
		"                      per session (needs percore echo, framed)\n"
		"  --partial BYTES     with --idle: each session sends the first BYTES of a\n"
		"                      frame twice that size and stops, so the server holds\n"
		"                      an incomplete frame per session (7 to 512k)\n"
		"  --shards N          load generator shards (default 1)\n"
		"  --oversubscribe     allow more shards than usable CPUs (they share CPUs)\n"
		"  --policy P          placement: auto, compact, spread, pcore, off, or a CPU\n"
		"                      list (default auto; see percore topo)\n"
		"  --idle-policy P     spin, adaptive (default), sleep, mesh, await\n"
		"  --seed N            seed of sizes and payloads (default 1)\n"
		"  --json              print the results as JSON\n"
		"  -h, --help          this text\n\n"
		"Exit status: 0 every byte came back as sent, 1 errors or no connection,\n"
		"2 usage error.\n");
}

enum { OPT_HOST = 256, OPT_PORT, OPT_CONNS, OPT_DEPTH, OPT_SIZE, OPT_DURATION, OPT_MESSAGES,
       OPT_RAW, OPT_CONNECT, OPT_IDLE, OPT_SHARDS, OPT_PLACEMENT, OPT_POLICY, OPT_SEED,
       OPT_JSON, OPT_OVER, OPT_PARTIAL };

static const struct option long_opts[] = {
	{ "host", required_argument, NULL, OPT_HOST },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "conns", required_argument, NULL, OPT_CONNS },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "messages", required_argument, NULL, OPT_MESSAGES },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "connect", no_argument, NULL, OPT_CONNECT },
	{ "idle", required_argument, NULL, OPT_IDLE },
	{ "partial", required_argument, NULL, OPT_PARTIAL },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "policy", required_argument, NULL, OPT_PLACEMENT },
	{ "idle-policy", required_argument, NULL, OPT_POLICY },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "oversubscribe", no_argument, NULL, OPT_OVER },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* "S" or "MIN-MAX". */
static int parse_size(const char *v, struct pc_load_cfg *c)
{
	const char *dash = strchr(v, '-');
	char lo[32];
	uint64_t a, b;

	if (!dash)
		return net_arg_bytes(v, PC_FRAME_MAX_BODY_CAP, &a) ? -EINVAL :
		       (c->size_min = c->size_max = (uint32_t)a, 0);
	if ((size_t)(dash - v) >= sizeof(lo))
		return -EINVAL;
	memcpy(lo, v, (size_t)(dash - v));
	lo[dash - v] = '\0';
	if (net_arg_bytes(lo, PC_FRAME_MAX_BODY_CAP, &a) ||
	    net_arg_bytes(dash + 1, PC_FRAME_MAX_BODY_CAP, &b) || b < a)
		return -EINVAL;
	c->size_min = (uint32_t)a;
	c->size_max = (uint32_t)b;
	return 0;
}

static int take_value(void *arg, int c, const char *v)
{
	struct args *a = arg;
	struct pc_load_cfg *cfg = &a->cfg;
	uint64_t u;

	switch (c) {
	case OPT_RAW: cfg->raw = true; return 0;
	case OPT_CONNECT: cfg->mode = PC_LOAD_CONNECT; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_OVER: cfg->engine.oversubscribe = true; return 0;
	case OPT_HOST: cfg->host = v; return net_arg_host(v);
	case OPT_PLACEMENT: cfg->engine.placement = v; return net_arg_placement(v);
	case OPT_POLICY: return pc_idle_parse(v, &cfg->engine.idle);
	case OPT_SIZE: return parse_size(v, cfg);
	case OPT_DURATION:
		cfg->messages = 0;
		return net_arg_time(v, 86400, &cfg->duration_ns) || !cfg->duration_ns ? -EINVAL : 0;
	case OPT_SEED: return net_arg_count(v, UINT64_MAX >> 1, &cfg->seed);
	case OPT_PARTIAL:
		if (net_arg_bytes(v, 1u << 19, &u) || u < 7)
			return -EINVAL;
		cfg->idle_partial = (uint32_t)u;
		return 0;
	}
	if (net_arg_count(v, c == OPT_PORT ? 65535 : c == OPT_SHARDS ? PC_ENGINE_MAX_SHARDS :
			      c == OPT_DEPTH ? 4096 : c == OPT_MESSAGES ? UINT64_MAX >> 1 : 1u << 20,
			      &u) || (!u && c != OPT_PORT))
		return -EINVAL;
	switch (c) {
	case OPT_PORT: cfg->port = (uint16_t)u; return 0;
	case OPT_CONNS: cfg->conns = (unsigned)u; return 0;
	case OPT_DEPTH: cfg->depth = (unsigned)u; return 0;
	case OPT_MESSAGES: cfg->messages = u; cfg->duration_ns = 0; return 0;
	case OPT_SHARDS: cfg->engine.shards = (unsigned)u; return 0;
	default: cfg->idle = (unsigned)u; cfg->mode = PC_LOAD_IDLE; return 0; /* OPT_IDLE */
	}
}

/* Returns -1 to go on, or the exit status (help, usage error). */
static int parse_args(int argc, char **argv, struct args *a)
{
	int rc;

	memset(a, 0, sizeof(*a));
	pc_load_cfg_init(&a->cfg);
	a->cfg.port = 7000;
	a->cfg.conns = 16;
	a->cfg.depth = 16;
	a->cfg.duration_ns = 10000000000ull;
	rc = net_args_parse("load", argc, argv, long_opts, usage, take_value, a);
	if (rc >= 0)
		return rc;
	if (a->cfg.mode == PC_LOAD_IDLE && a->cfg.raw)
		return pc_cmd_usage_error("load", "--idle needs a framed server (no --raw)");
	if (a->cfg.idle_partial && a->cfg.mode != PC_LOAD_IDLE)
		return pc_cmd_usage_error("load", "--partial goes with --idle");
	if (a->cfg.raw && !a->cfg.size_min)
		return pc_cmd_usage_error("load", "--raw needs messages of at least one byte");
	return -1;
}

static double per_s(uint64_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : 0;
}

static double us(const struct pc_hist *h, double p)
{
	return (double)pc_hist_percentile(h, p) / 1000.0;
}

static cJSON *result_json(const struct args *a, const struct pc_load_result *r)
{
	const struct pc_load_cfg *c = &a->cfg;
	cJSON *o = cJSON_CreateObject(), *cfg = cJSON_AddObjectToObject(o, "config");

	cJSON_AddStringToObject(cfg, "host", c->host);
	cJSON_AddNumberToObject(cfg, "port", c->port);
	cJSON_AddStringToObject(cfg, "mode", c->mode == PC_LOAD_IDLE ? "idle" :
					     c->mode == PC_LOAD_CONNECT ? "connect" : "echo");
	cJSON_AddBoolToObject(cfg, "raw", c->raw);
	cJSON_AddNumberToObject(cfg, "conns", c->conns);
	cJSON_AddNumberToObject(cfg, "depth", c->depth);
	cJSON_AddNumberToObject(cfg, "size_min", c->size_min);
	cJSON_AddNumberToObject(cfg, "size_max", c->size_max);
	cJSON_AddNumberToObject(cfg, "duration_s", (double)c->duration_ns / 1e9);
	cJSON_AddNumberToObject(cfg, "messages", (double)c->messages);
	cJSON_AddNumberToObject(o, "messages", (double)r->messages);
	cJSON_AddNumberToObject(o, "connects", (double)r->connects);
	cJSON_AddNumberToObject(o, "elapsed_s", (double)r->elapsed_ns / 1e9);
	cJSON_AddNumberToObject(o, "msgs_per_s", per_s(r->messages, r->elapsed_ns));
	cJSON_AddNumberToObject(o, "mb_per_s", per_s(r->bytes, r->elapsed_ns) / 1e6);
	cJSON *lat = cJSON_AddObjectToObject(o, "latency_us");
	cJSON_AddNumberToObject(lat, "p50", us(r->latency, 50));
	cJSON_AddNumberToObject(lat, "p99", us(r->latency, 99));
	cJSON_AddNumberToObject(lat, "p99_9", us(r->latency, 99.9));
	cJSON_AddNumberToObject(lat, "max", (double)pc_hist_max(r->latency) / 1000.0);
	cJSON *e = cJSON_AddObjectToObject(o, "errors");
	cJSON_AddNumberToObject(e, "total", (double)r->errors);
	cJSON_AddNumberToObject(e, "connect", (double)r->connect_errors);
	cJSON_AddNumberToObject(e, "verify", (double)r->verify_errors);
	cJSON_AddNumberToObject(e, "io", (double)r->io_errors);
	cJSON_AddNumberToObject(e, "lost", (double)r->lost);
	if (r->first_error[0])
		cJSON_AddStringToObject(e, "first", r->first_error);
	if (c->mode == PC_LOAD_IDLE) {
		cJSON *i = cJSON_AddObjectToObject(o, "idle");
		cJSON_AddNumberToObject(i, "sessions", (double)r->idle_open);
		cJSON_AddNumberToObject(i, "server_rss_before", (double)r->server_rss_before);
		cJSON_AddNumberToObject(i, "server_rss_after", (double)r->server_rss_after);
		cJSON_AddNumberToObject(i, "rss_bytes_per_session", r->rss_per_session);
		cJSON_AddNumberToObject(i, "accounted_bytes_per_session", r->acct_per_session);
		cJSON_AddNumberToObject(i, "kernel_tcp_mem_delta", (double)r->kernel_tcp_mem_delta);
		cJSON_AddNumberToObject(i, "server_maps_before", (double)r->server_maps_before);
		cJSON_AddNumberToObject(i, "server_maps_after", (double)r->server_maps_after);
		cJSON_AddNumberToObject(i, "maps_per_session", r->maps_per_session);
		cJSON_AddNumberToObject(i, "server_buffered_growth", (double)r->server_buffered_growth);
	}
	return o;
}

static void print_table(const struct args *a, const struct pc_load_result *r)
{
	const struct pc_load_cfg *c = &a->cfg;

	if (c->mode == PC_LOAD_IDLE) {
		printf("idle sessions    %llu (counted by the server)\n", (unsigned long long)r->idle_open);
		printf("server memory    %.0f bytes per session (resident set growth), "
		       "%.0f bytes per session (its own accounting)\n",
		       r->rss_per_session, r->acct_per_session);
		printf("kernel tcp mem   %+lld bytes (socket buffers of both ends)\n",
		       (long long)r->kernel_tcp_mem_delta);
		printf("server mappings  %llu before, %llu after (%.4f per session)\n",
		       (unsigned long long)r->server_maps_before,
		       (unsigned long long)r->server_maps_after, r->maps_per_session);
		if (c->idle_partial)
			printf("server holds     %llu bytes of incomplete frames\n",
			       (unsigned long long)r->server_buffered_growth);
	} else {
		printf("messages         %llu in %.2f s%s\n", (unsigned long long)r->messages,
		       (double)r->elapsed_ns / 1e9, c->mode == PC_LOAD_CONNECT ? " (one per connection)" : "");
		printf("rate             %.0f msgs/s, %.1f MB/s payload each way\n",
		       per_s(r->messages, r->elapsed_ns), per_s(r->bytes, r->elapsed_ns) / 1e6);
		printf("latency us       p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", us(r->latency, 50),
		       us(r->latency, 99), us(r->latency, 99.9), (double)pc_hist_max(r->latency) / 1e3);
	}
	printf("errors           %llu (connect %llu, verify %llu, io %llu, lost %llu)\n",
	       (unsigned long long)r->errors, (unsigned long long)r->connect_errors,
	       (unsigned long long)r->verify_errors, (unsigned long long)r->io_errors,
	       (unsigned long long)r->lost);
	if (r->first_error[0])
		printf("first error      %s\n", r->first_error);
}

static int load_main(int argc, char **argv)
{
	struct args a;
	struct pc_load_result r;
	char err[200];
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	if (a.cfg.mode == PC_LOAD_IDLE)
		fprintf(stderr, "percore load: opening %u idle sessions to %s:%u\n", a.cfg.idle,
			a.cfg.host, a.cfg.port);
	else
		fprintf(stderr, "percore load: %u connections x %u in flight, %u-%u bytes, %s to %s:%u\n",
			a.cfg.conns, a.cfg.mode == PC_LOAD_CONNECT ? 1 : a.cfg.depth, a.cfg.size_min,
			a.cfg.size_max > a.cfg.size_min ? a.cfg.size_max : a.cfg.size_min,
			a.cfg.raw ? "raw" : "framed", a.cfg.host, a.cfg.port);
	rc = pc_load_run(&a.cfg, &r, err, sizeof(err));
	if (rc) {
		pc_load_result_fini(&r);
		return pc_cmd_refused("load", rc, err);
	}
	if (a.json) {
		cJSON *o = result_json(&a, &r);
		char *text = cJSON_Print(o);
		printf("%s\n", text ? text : "{}");
		cJSON_free(text);
		cJSON_Delete(o);
	} else {
		print_table(&a, &r);
	}
	rc = r.errors ? PC_EXIT_FAIL : PC_EXIT_OK;
	/* Exit 1 says why on stderr too, where --json output does not reach. */
	if (r.errors)
		fprintf(stderr, "percore load: %llu errors, the first: %s\n",
			(unsigned long long)r.errors, r.first_error[0] ? r.first_error : "unknown");
	pc_load_result_fini(&r);
	return rc;
}

static const struct pc_cmd load_cmd = {
	.name = "load",
	.summary = "drive an echo server: rates, latency, errors, idle session memory",
	.order = 61,
	.main = load_main,
};
PC_CMD_REGISTER(load_cmd)
