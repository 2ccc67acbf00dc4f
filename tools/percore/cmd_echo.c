/* SPDX-License-Identifier: MIT */
/* percore echo: the echo server, framed or raw, with every limit and
 * timer the library has, and its statistics on exit or on SIGUSR1. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subcommand.h"
#include "net_args.h"
#include "percore/crash.h"
#include "serve.h"
#include "percore/json.h"
#include "percore/log.h"
#include "percore/listener.h"
#include "percore/load.h"
#include "percore/server.h"

#define DEFAULT_PORT 7000

struct args {
	struct pc_server_cfg cfg;
	uint64_t drain_ns;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percore echo [OPTIONS]\n\n"
		"Serve the echo protocol: every frame is answered with a frame carrying the\n"
		"same message id, flags and body; a heartbeat request (id not 0) is answered\n"
		"with a heartbeat of id 0 carrying the same body. With --raw, bytes are\n"
		"echoed as they come, so the load generator can drive it like a plain\n"
		"server. Frames with message id\n"
		"0xffffff01 get the server's statistics as JSON (percore load --idle uses it).\n\n"
		"options:\n"
		"  --host H            address to listen on: numeric IPv4 or IPv6, or localhost\n"
		"                      (127.0.0.1); names are not resolved (default: every\n"
		"                      address)\n"
		"  --port P            port (default %d; 0: the kernel chooses)\n"
		"  --reuseport-join    share a port another server of this user already\n"
		"                      listens on (SO_REUSEPORT splits the connections);\n"
		"                      without it such a port is refused\n"
		"  --shards N          shards (default: one per usable CPU)\n"
		"  --oversubscribe     allow more shards than usable CPUs (they share CPUs)\n"
		"  --policy P          placement: auto, compact, spread, pcore, off, or a CPU\n"
		"                      list such as 0,2-3 (default auto; see percore topo)\n"
		"  --idle-policy P     spin, adaptive (default), sleep, mesh, await\n"
		"  --backend B         epoll (default) or uring\n"
		"  --raw               echo bytes without framing\n"
		"  --idle-timeout S    close sessions silent for S seconds (default 60; 0: never)\n"
		"  --heartbeat S       send a heartbeat to sessions silent for S seconds\n"
		"  --frame-timeout S   refuse a session whose frame is still incomplete S\n"
		"                      seconds after its first byte (default 10; 0: never)\n"
		"  --max-sessions N    sessions per shard (default: no limit)\n"
		"  --max-per-addr N    sessions per client address (default: no limit)\n"
		"  --max-body BYTES    largest frame body (default 1M, at most 16M)\n"
		"  --max-input-bytes BYTES\n"
		"                      received bytes a shard may hold, mostly incomplete\n"
		"                      frames (default: no limit; at least one largest\n"
		"                      frame). Above it the sessions holding the most are\n"
		"                      not read; if that leaves none that could finish a\n"
		"                      frame, the oldest incomplete frames are dropped\n"
		"                      (error reply, close) down to three quarters of it\n"
		"  --backlog N         listen backlog (default %d)\n"
		"  --drain S           on SIGINT or SIGTERM, finish for at most S seconds\n"
		"                      (default 5)\n"
		"  --metrics-port P    serve /metrics (Prometheus), /health and /ready over\n"
		"                      HTTP on port P (0: the kernel chooses), from a thread\n"
		"                      of its own\n"
		"  --metrics-host H    address for that endpoint (default 127.0.0.1)\n"
		"  --json              print the statistics on exit as JSON\n"
		"  --log-level L       error, warn, info (default), debug\n"
		"  --log-format F      logfmt (default) or json: one line per message\n"
		"  --log-file PATH     append the log there instead of stderr; SIGHUP\n"
		"                      reopens it (after logrotate moved it)\n"
		"  --stall-threshold MS  warn, with a backtrace, about a shard that runs\n"
		"                      this long (CPU time) away from its loop (default\n"
		"                      %d; 0: never)\n"
		"  -h, --help          this text\n\n"
		"It says \"percore echo: listening on ADDRESS\" on stderr once it accepts,\n"
		"and \"percore echo: metrics on http://ADDRESS/metrics\" with --metrics-port.\n"
		"SIGINT or SIGTERM: stop accepting, answer what was received, flush, exit\n"
		"(a second one exits at once). SIGUSR1: statistics to stderr. SIGHUP:\n"
		"reopen the log file. On exit the statistics (totals, then each shard) go\n"
		"to stdout. A crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) prints the\n"
		"signal, the address, the shard and a backtrace to stderr, then ends the\n"
		"process by that signal.\n"
		"Exit status: 0 success, 1 the server could not start, 2 usage error.\n",
		DEFAULT_PORT, PC_LISTEN_BACKLOG_DEFAULT, PC_ENGINE_DEFAULT_STALL_MS);
}

/* Each frame's answer is the frame itself, header and all: a burst's
 * frames lie one after another, so one write answers them all. A client
 * over its output bound is closed: it stopped reading. */
static size_t echo_frames(struct pc_session *s, const struct pc_frame *f, size_t n, void *user)
{
	(void)user;
	if (pc_session_send_frames(s, f, n) == -ENOBUFS)
		pc_session_close(s);
	return n;
}

static size_t echo_raw(struct pc_session *s, const uint8_t *data, size_t len, void *user)
{
	(void)user;
	return pc_session_write(s, data, len) ? 0 : len;
}

enum { OPT_HOST = 256, OPT_PORT, OPT_SHARDS, OPT_PLACEMENT, OPT_POLICY, OPT_BACKEND, OPT_RAW,
       OPT_IDLE, OPT_HB, OPT_FRAME, OPT_MAX_SESSIONS, OPT_MAX_ADDR, OPT_MAX_BODY, OPT_MAX_INPUT, OPT_BACKLOG,
       OPT_DRAIN, OPT_JSON, OPT_OVER, OPT_JOIN, OPT_METRICS_PORT, OPT_METRICS_HOST, OPT_LOG_LEVEL,
       OPT_LOG_FORMAT, OPT_LOG_FILE, OPT_STALL };

static const struct option long_opts[] = {
	{ "host", required_argument, NULL, OPT_HOST },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "policy", required_argument, NULL, OPT_PLACEMENT },
	{ "idle-policy", required_argument, NULL, OPT_POLICY },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "heartbeat", required_argument, NULL, OPT_HB },
	{ "frame-timeout", required_argument, NULL, OPT_FRAME },
	{ "max-sessions", required_argument, NULL, OPT_MAX_SESSIONS },
	{ "max-per-addr", required_argument, NULL, OPT_MAX_ADDR },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "max-input-bytes", required_argument, NULL, OPT_MAX_INPUT },
	{ "backlog", required_argument, NULL, OPT_BACKLOG },
	{ "drain", required_argument, NULL, OPT_DRAIN },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "oversubscribe", no_argument, NULL, OPT_OVER },
	{ "reuseport-join", no_argument, NULL, OPT_JOIN },
	{ "metrics-port", required_argument, NULL, OPT_METRICS_PORT },
	{ "metrics-host", required_argument, NULL, OPT_METRICS_HOST },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "log-file", required_argument, NULL, OPT_LOG_FILE },
	{ "stall-threshold", required_argument, NULL, OPT_STALL },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int ms_of(const char *v, uint32_t *ms)
{
	uint64_t ns;

	if (net_arg_time(v, 86400 * 30, &ns))
		return -EINVAL;
	*ms = (uint32_t)((ns + 999999) / 1000000);
	return 0;
}

static int take_value(void *arg, int c, const char *v)
{
	struct args *a = arg;
	struct pc_server_cfg *cfg = &a->cfg;
	uint64_t u;

	switch (c) {
	case OPT_RAW: cfg->raw = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_OVER: cfg->engine.oversubscribe = true; return 0;
	case OPT_JOIN: cfg->reuseport_join = true; return 0;
	case OPT_HOST: cfg->host = v; return net_arg_host(v);
	case OPT_METRICS_HOST: cfg->metrics_host = v; return net_arg_host(v);
	case OPT_PLACEMENT: cfg->engine.placement = v; return net_arg_placement(v);
	case OPT_LOG_LEVEL: return pc_log_level_parse(v, &cfg->engine.log_level);
	case OPT_LOG_FORMAT: return pc_log_format_parse(v, &cfg->engine.log_format);
	case OPT_LOG_FILE:
		cfg->engine.log_file = v;
		return *v ? 0 : -EINVAL;
	case OPT_POLICY: return pc_idle_parse(v, &cfg->engine.idle);
	case OPT_BACKEND:
		if (strcmp(v, "epoll") && strcmp(v, "uring"))
			return -EINVAL;
		cfg->engine.backend = !strcmp(v, "uring") ? PC_BACKEND_URING : PC_BACKEND_EPOLL;
		return 0;
	case OPT_IDLE: return ms_of(v, &cfg->idle_timeout_ms);
	case OPT_HB: return ms_of(v, &cfg->heartbeat_ms);
	case OPT_FRAME: return ms_of(v, &cfg->frame_timeout_ms);
	case OPT_DRAIN: return net_arg_time(v, 86400, &a->drain_ns);
	case OPT_MAX_BODY:
		if (net_arg_bytes(v, PC_FRAME_MAX_BODY_CAP, &u) || !u)
			return -EINVAL;
		cfg->max_body = (uint32_t)u;
		return 0;
	case OPT_MAX_INPUT:
		/* At least one frame: checked with max_body at the start. */
		if (net_arg_bytes(v, PC_RINGBUF_MAX_CAPACITY, &u) || !u)
			return -EINVAL;
		cfg->max_input_bytes = u;
		return 0;
	}
	if (net_arg_count(v, c == OPT_PORT || c == OPT_METRICS_PORT ? 65535 :
			      c == OPT_SHARDS ? PC_ENGINE_MAX_SHARDS :
			      c == OPT_STALL ? 3600000 : INT32_MAX, &u))
		return -EINVAL;
	switch (c) {
	case OPT_STALL: cfg->engine.stall_threshold_ms = (uint32_t)u; return 0;
	case OPT_PORT: cfg->port = (uint16_t)u; return 0;
	case OPT_METRICS_PORT:
		cfg->metrics = true;
		cfg->metrics_port = (uint16_t)u;
		return 0;
	case OPT_SHARDS: cfg->engine.shards = (unsigned)u; return u ? 0 : -EINVAL;
	case OPT_MAX_SESSIONS: cfg->max_sessions = (uint32_t)u; return 0;
	case OPT_MAX_ADDR: cfg->max_per_addr = (uint32_t)u; return 0;
	default: cfg->backlog = (int)u; return 0; /* OPT_BACKLOG */
	}
}

/* Returns -1 to go on, or the exit status (help, usage error). */
static int parse_args(int argc, char **argv, struct args *a)
{
	memset(a, 0, sizeof(*a));
	pc_server_cfg_init(&a->cfg);
	a->cfg.port = DEFAULT_PORT;
	a->cfg.idle_timeout_ms = 60000;
	a->cfg.frame_timeout_ms = 10000;
	a->cfg.stats_frames = true;
	a->cfg.on_frames = echo_frames;
	a->cfg.on_data = echo_raw;
	a->drain_ns = 5000000000ull;
	return net_args_parse("echo", argc, argv, long_opts, usage, take_value, a);
}

static int print_stats(const struct pc_server *srv, bool json, FILE *out)
{
	struct pc_server_stats st;
	unsigned n = pc_server_shards(srv);

	pc_server_stats(srv, -1, &st);
	if (!json) {
		pc_server_stats_print(&st, false, out);
		return 0;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "total", pc_server_stats_json(&st));
	cJSON *shards = cJSON_AddArrayToObject(o, "shards");
	for (unsigned i = 0; i < n; i++) {
		pc_server_stats(srv, (int)i, &st);
		cJSON_AddItemToArray(shards, pc_server_stats_json(&st));
	}
	char *text = cJSON_Print(o);
	int rc = text && fprintf(out, "%s\n", text) > 0 ? 0 : -EIO;
	cJSON_free(text);
	cJSON_Delete(o);
	return rc;
}

static void usr1_stats(void *arg)
{
	print_stats(arg, false, stderr);
}

static uint64_t drain_ns;

static void say_draining(void *arg)
{
	(void)arg;
	fprintf(stderr, "percore echo: draining (at most %.1f s)\n", (double)drain_ns / 1e9);
}

static int echo_main(int argc, char **argv)
{
	struct args a;
	struct pc_server *srv;
	char err[200], addr[80];
	sigset_t set;
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	uint64_t frame = PC_FRAME_HEADER_LEN + (uint64_t)pc_frame_max_body(a.cfg.max_body);
	if (a.cfg.max_input_bytes && a.cfg.max_input_bytes < frame) {
		fprintf(stderr, "percore echo: --max-input-bytes %llu is below one largest frame "
				"(%llu bytes; see --max-body)\n",
			(unsigned long long)a.cfg.max_input_bytes, (unsigned long long)frame);
		return PC_EXIT_USAGE;
	}
	pc_raise_nofile(UINT64_MAX >> 1); /* as many sessions as allowed */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pc_crash_install(); /* this thread too, not only the shards */
	rc = pc_server_start(&a.cfg, &srv, err, sizeof(err));
	if (rc)
		return pc_cmd_refused("echo", rc, err);
	struct sockaddr_storage ss;
	socklen_t len;
	pc_sockaddr_parse(a.cfg.host, pc_server_port(srv), &ss, &len);
	pc_sockaddr_format((struct sockaddr *)&ss, addr, sizeof(addr));
	fprintf(stderr, "percore echo: listening on %s (%u shards, %s, %s, idle %s)\n", addr,
		pc_server_shards(srv), a.cfg.raw ? "raw" : "framed",
		pc_backend_name(pc_engine_backend(pc_server_engine(srv))),
		pc_idle_name(a.cfg.engine.idle));
	pc_serve_say_metrics("echo", srv, &a.cfg);
	drain_ns = a.drain_ns;
	pc_serve_signals(srv, &set, a.drain_ns, usr1_stats, say_draining, srv);
	pc_server_wait(srv);
	rc = print_stats(srv, a.json, stdout) ? PC_EXIT_FAIL : PC_EXIT_OK;
	pc_server_destroy(srv);
	return rc;
}

static const struct pc_cmd echo_cmd = {
	.name = "echo",
	.summary = "serve the echo protocol (framed or raw) with limits and statistics",
	.order = 60,
	.main = echo_main,
};
PC_CMD_REGISTER(echo_cmd)
