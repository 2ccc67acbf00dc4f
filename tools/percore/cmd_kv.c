/* SPDX-License-Identifier: MIT */
/* percore kv: the Redis-protocol key-value server (apps/kv). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

#include "subcommand.h"
#include "net_args.h"
#include "percore/log.h"
#include "serve.h"
#include "percore/listener.h"
#include "percore/load.h"
#include "num.h"
#include "kv_server.h"

struct args {
	struct kv_server_opts o;
	uint64_t drain_ns;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: percore kv [OPTIONS]\n\n"
		"Serve the Redis protocol (RESP2) over TCP: strings, expiry and the keyspace\n"
		"commands, pipelining, inline commands. Keys are owned by shards (a hash of\n"
		"the key); a request for another shard's key runs there and its reply comes\n"
		"back in request order. MSET, MSETNX, MGET, DEL, EXISTS and RENAME over keys\n"
		"of several shards are atomic. Expired keys are deleted when touched and by\n"
		"each shard's active expiry.\n\n"
		"options:\n"
		"  --host H            address to listen on: numeric IPv4 or IPv6, or localhost\n"
		"                      (default 127.0.0.1)\n"
		"  --port P            port (default %d; 0: the kernel chooses)\n"
		"  --shards N          shards (default: one per usable CPU, less one when\n"
		"                      there are two or more: clients need a CPU too)\n"
		"  --oversubscribe     allow more shards than usable CPUs (they share CPUs)\n"
		"  --policy P          placement: auto, compact, spread, pcore, off, or a CPU\n"
		"                      list such as 0,2-3 (default auto; see percore topo)\n"
		"  --idle-policy P     spin, adaptive, sleep, mesh or await (default): await\n"
		"                      waits in the kernel as soon as nothing is left to do,\n"
		"                      unless another shard owes it an answer: then it polls\n"
		"                      a while first; sleep never polls; mesh polls a while\n"
		"                      after any message to or from another shard\n"
		"  --poll-budget US    how long adaptive, mesh and await poll before they sleep,\n"
		"                      in microseconds, 0-1000000 (default %d; spin never\n"
		"                      sleeps, sleep never polls)\n"
		"  --backend B         uring (default) or epoll; uring falls back to epoll,\n"
		"                      with one log line, where the kernel refuses io_uring\n"
		"  --sched P           the shards' scheduling: batch (default; SCHED_BATCH, a\n"
		"                      woken shard waits for the thread on its CPU to block\n"
		"                      rather than preempt it) or normal (the thread's own)\n"
		"  --move-clients yes|no\n"
		"                      move a connection to the shard its one-key requests\n"
		"                      all went to of late (default yes)\n"
		"  --max-clients N     clients at once; more are answered \"-ERR max number of\n"
		"                      clients reached\" and closed (default %u; 0: no limit)\n"
		"  --maxmemory BYTES   limit of the keyspaces' memory, split evenly over the\n"
		"                      shards (default 0: none)\n"
		"  --maxmemory-policy P\n"
		"                      over the limit: noeviction (refuse writes that add\n"
		"                      memory with -OOM, the default) or allkeys-lru (evict\n"
		"                      the least recently used of a sample of keys)\n"
		"  --client-output-limit BYTES\n"
		"                      close a client whose unsent replies pass BYTES; the\n"
		"                      rest of its requests are not run (default 0: the\n"
		"                      session's own bound, 32mb)\n"
		"  --proto-max-bulk-len BYTES\n"
		"                      longest argument of a request (default 512mb)\n"
		"  --max-args N        most arguments in one request (default 1048576)\n"
		"  --max-input-bytes BYTES\n"
		"                      input a shard may hold: unread, and requests received\n"
		"                      but not run yet, partial ones included (default 1gb;\n"
		"                      0: none; at least 16mb). Over it the clients holding\n"
		"                      the most are not read; when no other could finish a\n"
		"                      request, the oldest are closed, logged and counted\n"
		"  --expire-period MS  active expiry runs every MS milliseconds (default %u)\n"
		"  --appendonly V      yes or no (default): keep every write in append-only\n"
		"                      files (Redis's AOF, one per shard: DIR/NAME-I-of-N) and\n"
		"                      replay them at start\n"
		"  --appendfsync V     always, everysec (default) or no: always answers a\n"
		"                      write once it is on disk (writes arriving together\n"
		"                      share one fdatasync, which the shard waits out, as\n"
		"                      redis-server does, while syncs take under 1 ms);\n"
		"                      everysec syncs once a second; no leaves it to the\n"
		"                      kernel\n"
		"  --appendfilename NAME\n"
		"                      the files' name before -I-of-N (default appendonly.aof)\n"
		"  --aof-load-truncated V\n"
		"                      yes (default) or no: at start, cut a file's torn last\n"
		"                      record (logged), or refuse to start\n"
		"  --auto-aof-rewrite-percentage N\n"
		"                      rewrite the append-only files (BGREWRITEAOF) once they\n"
		"                      grew by N percent over their size after the last\n"
		"                      rewrite or at start (default 100; 0: never)\n"
		"  --auto-aof-rewrite-min-size BYTES\n"
		"                      but not below BYTES in all (default 64mb)\n"
		"  --save RULES        save rules, \"<seconds> <changes> ...\": the dump is saved\n"
		"                      once <changes> writes were made and more than <seconds>\n"
		"                      passed since the last save; \"\" saves only on SAVE\n"
		"                      and SHUTDOWN SAVE (default \"" KV_SAVE_DEFAULT "\")\n"
		"  --dir DIR           where the dump and the append-only files live (default:\n"
		"                      the working directory)\n"
		"  --dbfilename NAME   the dump's file name in DIR (default dump.rdb), loaded at\n"
		"                      start when it exists and appendonly is no\n"
		"  --rdbcompression V  yes (default) or no: LZF for long strings in the dump\n"
		"  --rdbchecksum V     yes (default) or no: the dump's CRC-64 written (0 with no);\n"
		"                      a CRC other than 0 is checked at start either way\n"
		"  --rdb-skip-unsupported\n"
		"                      at start, skip (and count, in the log and INFO) keys of\n"
		"                      types this server does not hold, such as streams,\n"
		"                      rather than refuse to start\n"
		"  --drain S           on SIGINT or SIGTERM, finish for at most S seconds\n"
		"                      (default 5)\n"
		"  --metrics-port P    serve /metrics (Prometheus: the server's series and\n"
		"                      percore_kv_* per shard), /health and /ready over HTTP\n"
		"                      on port P (0: the kernel chooses)\n"
		"  --metrics-host H    address for that endpoint (default 127.0.0.1)\n"
		"  --log-level L       error, warn, info (default), debug\n"
		"  --log-format F      logfmt (default) or json\n"
		"  --log-file PATH     append the log there instead of stderr; SIGHUP\n"
		"                      reopens it\n"
		"  --json              print the totals on exit as JSON\n"
		"  -h, --help          this text\n\n"
		"BYTES: digits and an optional unit, any case, as Redis reads sizes (and as\n"
		"CONFIG SET does): 1k = 1000, 1kb = 1024, 1m = 1000000, 1mb = 1048576,\n"
		"1g = 10^9, 1gb = 2^30.\n"
		"It says \"percore kv: listening on ADDRESS\" on stderr once it accepts,\n"
		"and \"percore kv: metrics on http://ADDRESS/metrics\" with --metrics-port.\n"
		"SIGINT or SIGTERM: stop accepting, answer what was received, save the dump\n"
		"when save rules are set (as Redis), exit (a second one exits at once).\n"
		"SIGUSR1: totals to stderr. SIGHUP: reopen the log file.\n"
		"Exit status: 0 success, 1 the server could not start or the dump at the\n"
		"stop failed, 2 usage error.\n",
		KV_SERVER_PORT, PC_ENGINE_DEFAULT_BUDGET_US, KV_SERVER_MAX_CLIENTS, KV_SERVER_EXPIRE_MS);
}

enum { OPT_HOST = 256, OPT_PORT, OPT_SHARDS, OPT_OVER, OPT_PLACEMENT, OPT_IDLE, OPT_BACKEND,
       OPT_MAX_CLIENTS, OPT_OUTPUT, OPT_MAXMEM, OPT_POLICY, OPT_BULK, OPT_ARGS, OPT_MAX_INPUT, OPT_EXPIRE, OPT_DRAIN, OPT_JSON,
       OPT_METRICS_PORT, OPT_METRICS_HOST, OPT_LOG_LEVEL, OPT_LOG_FORMAT, OPT_LOG_FILE,
       OPT_APPENDONLY, OPT_APPENDFSYNC, OPT_DIR, OPT_APPENDFILENAME, OPT_AOF_TRUNCATED,
       OPT_SAVE, OPT_DBFILENAME, OPT_RDBCOMPRESSION, OPT_RDBCHECKSUM, OPT_SKIP_UNSUP,
       OPT_AUTO_RW_PERC, OPT_AUTO_RW_MIN, OPT_SCHED, OPT_MOVE, OPT_BUDGET };

static const struct option long_opts[] = {
	{ "host", required_argument, NULL, OPT_HOST },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "shards", required_argument, NULL, OPT_SHARDS },
	{ "oversubscribe", no_argument, NULL, OPT_OVER },
	{ "policy", required_argument, NULL, OPT_PLACEMENT },
	{ "idle-policy", required_argument, NULL, OPT_IDLE },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "sched", required_argument, NULL, OPT_SCHED },
	{ "move-clients", required_argument, NULL, OPT_MOVE },
	{ "poll-budget", required_argument, NULL, OPT_BUDGET },
	{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
	{ "client-output-limit", required_argument, NULL, OPT_OUTPUT },
	{ "maxmemory", required_argument, NULL, OPT_MAXMEM },
	{ "maxmemory-policy", required_argument, NULL, OPT_POLICY },
	{ "proto-max-bulk-len", required_argument, NULL, OPT_BULK },
	{ "max-args", required_argument, NULL, OPT_ARGS },
	{ "max-input-bytes", required_argument, NULL, OPT_MAX_INPUT },
	{ "expire-period", required_argument, NULL, OPT_EXPIRE },
	{ "drain", required_argument, NULL, OPT_DRAIN },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "metrics-port", required_argument, NULL, OPT_METRICS_PORT },
	{ "metrics-host", required_argument, NULL, OPT_METRICS_HOST },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "log-format", required_argument, NULL, OPT_LOG_FORMAT },
	{ "log-file", required_argument, NULL, OPT_LOG_FILE },
	{ "appendonly", required_argument, NULL, OPT_APPENDONLY },
	{ "appendfsync", required_argument, NULL, OPT_APPENDFSYNC },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "appendfilename", required_argument, NULL, OPT_APPENDFILENAME },
	{ "aof-load-truncated", required_argument, NULL, OPT_AOF_TRUNCATED },
	{ "auto-aof-rewrite-percentage", required_argument, NULL, OPT_AUTO_RW_PERC },
	{ "auto-aof-rewrite-min-size", required_argument, NULL, OPT_AUTO_RW_MIN },
	{ "save", required_argument, NULL, OPT_SAVE },
	{ "dbfilename", required_argument, NULL, OPT_DBFILENAME },
	{ "rdbcompression", required_argument, NULL, OPT_RDBCOMPRESSION },
	{ "rdbchecksum", required_argument, NULL, OPT_RDBCHECKSUM },
	{ "rdb-skip-unsupported", no_argument, NULL, OPT_SKIP_UNSUP },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* A size by Redis's rules (kv_memtoull, as CONFIG SET reads them), up to
 * max. Returns 0 or -EINVAL. */
static int size_arg(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t u;

	if (!kv_memtoull(v, strlen(v), &u) || u > max)
		return -EINVAL;
	*out = u;
	return 0;
}

/* yes or no, as Redis's settings read them. */
static int yes_no(const char *v, bool *out)
{
	if (strcasecmp(v, "yes") && strcasecmp(v, "no"))
		return -EINVAL;
	*out = !strcasecmp(v, "yes");
	return 0;
}

/* A text setting that fits its field (and, for a name, is not a path). */
static int text_arg(const char *v, char *field, size_t cap, bool name)
{
	if (!*v || strlen(v) >= cap || (name && strchr(v, '/')))
		return -EINVAL;
	strcpy(field, v);
	return 0;
}

/* The settings of the dump and the append-only files. Returns 0,
 * -EINVAL, or 1 when c is not one of them. */
static int persist_arg(struct kv_config *cfg, int c, const char *v)
{
	char path[PATH_MAX];
	int64_t n;

	switch (c) {
	case OPT_APPENDONLY: return yes_no(v, &cfg->appendonly);
	case OPT_AOF_TRUNCATED: return yes_no(v, &cfg->aof_load_truncated);
	case OPT_APPENDFILENAME:
		return text_arg(v, cfg->appendfilename, sizeof(cfg->appendfilename), true);
	case OPT_DBFILENAME: return text_arg(v, cfg->dbfilename, sizeof(cfg->dbfilename), true);
	case OPT_DIR: /* kept absolute, as Redis reports it after its chdir */
		return realpath(v, path) ? text_arg(path, cfg->dir, sizeof(cfg->dir), false) :
					   -EINVAL;
	case OPT_APPENDFSYNC:
		for (int i = KV_FSYNC_ALWAYS; i <= KV_FSYNC_NO; i++)
			if (!strcasecmp(v, kv_fsync_names[i])) {
				cfg->appendfsync = (enum kv_fsync)i;
				return 0;
			}
		return -EINVAL;
	case OPT_SAVE: return kv_config_save_parse(cfg, v, strlen(v)) ? 0 : -EINVAL;
	case OPT_RDBCOMPRESSION: return yes_no(v, &cfg->rdbcompression);
	case OPT_RDBCHECKSUM: return yes_no(v, &cfg->rdbchecksum);
	case OPT_AUTO_RW_MIN: return size_arg(v, INT64_MAX, &cfg->auto_aof_rewrite_min_size);
	case OPT_AUTO_RW_PERC:
		if (!kv_str2ll(v, strlen(v), &n) || n < 0 || n > INT32_MAX)
			return -EINVAL;
		cfg->auto_aof_rewrite_percentage = (uint32_t)n;
		return 0;
	}
	return 1;
}

static int take_value(void *arg, int c, const char *v)
{
	struct args *a = arg;
	struct kv_server_opts *o = &a->o;
	uint64_t u;
	int rc = persist_arg(&o->cfg, c, v);

	if (rc <= 0)
		return rc;
	switch (c) {
	case OPT_OVER: o->net.engine.oversubscribe = true; return 0;
	case OPT_SKIP_UNSUP: o->rdb_skip_unsupported = true; return 0;
	case OPT_JSON: a->json = true; return 0;
	case OPT_HOST: o->net.host = v; return net_arg_host(v);
	case OPT_METRICS_HOST: o->net.metrics_host = v; return net_arg_host(v);
	case OPT_LOG_LEVEL: return pc_log_level_parse(v, &o->net.engine.log_level);
	case OPT_LOG_FORMAT: return pc_log_format_parse(v, &o->net.engine.log_format);
	case OPT_LOG_FILE:
		o->net.engine.log_file = v;
		return *v ? 0 : -EINVAL;
	case OPT_PLACEMENT: o->net.engine.placement = v; return net_arg_placement(v);
	case OPT_IDLE: return pc_idle_parse(v, &o->net.engine.idle);
	case OPT_BACKEND:
		if (strcmp(v, "epoll") && strcmp(v, "uring"))
			return -EINVAL;
		o->net.engine.backend = !strcmp(v, "uring") ? PC_BACKEND_URING : PC_BACKEND_EPOLL;
		return 0;
	case OPT_SCHED:
		if (strcmp(v, "batch") && strcmp(v, "normal"))
			return -EINVAL;
		o->net.engine.sched_batch = !strcmp(v, "batch");
		return 0;
	case OPT_MOVE:
		if (strcmp(v, "yes") && strcmp(v, "no"))
			return -EINVAL;
		o->move_clients = !strcmp(v, "yes");
		return 0;
	case OPT_DRAIN: return net_arg_time(v, 86400, &a->drain_ns);
	case OPT_OUTPUT: return size_arg(v, UINT64_MAX >> 1, &o->cfg.client_output_limit);
	case OPT_MAXMEM: return size_arg(v, UINT64_MAX >> 1, &o->cfg.maxmemory);
	case OPT_POLICY:
		if (!strcmp(v, "noeviction"))
			o->cfg.maxmemory_policy = KV_POLICY_NOEVICTION;
		else if (!strcmp(v, "allkeys-lru"))
			o->cfg.maxmemory_policy = KV_POLICY_ALLKEYS_LRU;
		else
			return -EINVAL;
		return 0;
	case OPT_MAX_INPUT:
		if (size_arg(v, UINT64_MAX >> 1, &u) || (u && u < KV_SERVER_MIN_INPUT))
			return -EINVAL;
		o->net.max_input_bytes = u;
		return 0;
	case OPT_BULK:
		if (size_arg(v, INT64_MAX, &u) || !u)
			return -EINVAL;
		o->cfg.proto_max_bulk_len = u;
		return 0;
	}
	if (net_arg_count(v, c == OPT_PORT || c == OPT_METRICS_PORT ? 65535 :
			      c == OPT_SHARDS ? PC_ENGINE_MAX_SHARDS :
			      c == OPT_BUDGET ? 1000000 :
			      INT32_MAX, &u))
		return -EINVAL;
	switch (c) {
	case OPT_PORT: o->net.port = (uint16_t)u; return 0;
	case OPT_METRICS_PORT:
		o->net.metrics = true;
		o->net.metrics_port = (uint16_t)u;
		return 0;
	case OPT_SHARDS: o->net.engine.shards = (unsigned)u; return u ? 0 : -EINVAL;
	case OPT_MAX_CLIENTS: o->cfg.maxclients = (uint32_t)u; return 0;
	case OPT_ARGS: o->cfg.max_multibulk_len = (uint32_t)u; return u ? 0 : -EINVAL;
	case OPT_BUDGET: o->net.engine.poll_budget_us = (uint32_t)u; return 0;
	default: o->expire_ms = (uint32_t)u; return u ? 0 : -EINVAL; /* OPT_EXPIRE */
	}
}

static void print_totals(const struct kv_server *k, bool json, FILE *out)
{
	struct kv_server_totals t;

	kv_server_totals(k, &t);
	fprintf(out,
		json ? "{\"keys\": %llu, \"used_bytes\": %llu, \"expired\": %llu, "
		       "\"commands\": %llu, \"clients\": %llu, \"rejected_clients\": %llu, "
		       "\"output_limit_closes\": %llu, \"closing\": %llu, \"input_held\": %llu, "
		       "\"input_shed\": %llu, \"protocol_errors\": %llu}\n" :
		       "keys %llu\nused_bytes %llu\nexpired %llu\ncommands %llu\nclients %llu\n"
		       "rejected_clients %llu\noutput_limit_closes %llu\nclosing %llu\n"
		       "input_held %llu\ninput_shed %llu\nprotocol_errors %llu\n",
		(unsigned long long)t.keys, (unsigned long long)t.used_bytes,
		(unsigned long long)t.expired, (unsigned long long)t.commands,
		(unsigned long long)t.clients, (unsigned long long)t.rejected_clients,
		(unsigned long long)t.output_limit_closes, (unsigned long long)t.closing,
		(unsigned long long)t.input_held, (unsigned long long)t.input_shed,
		(unsigned long long)t.protocol_errors);
}

static void usr1_totals(void *arg)
{
	print_totals(arg, false, stderr);
}

/* glibc raises its mmap threshold to the largest mapped chunk freed (up to
 * 32 MiB), so a pipeline's held input or an old key table, once given
 * back, comes from the heap the next time, and the keys stored meanwhile
 * split what it leaves: 1 MB of holes per million list elements pushed in
 * bursts of 230 KB, 4 MB per million small hashes (RSS, beside Redis's
 * jemalloc). With the threshold fixed every chunk of 128 KiB or more is a
 * mapping of its own, returned whole when freed. Fixing it also fixes
 * the heap's trim threshold, at 128 KiB unless set: 4 MiB, so that frees
 * near the heap's top do not hand back pages that are faulted in again. */
static void allocator_settings(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 4 * 1024 * 1024);
}

static int kv_main(int argc, char **argv)
{
	struct args a;
	struct kv_server *k;
	char err[200], addr[80];
	sigset_t set;
	int rc;

	memset(&a, 0, sizeof(a));
	kv_server_opts_init(&a.o);
	a.o.load_dump = true; /* as Redis: the dump there is loaded at start */
	a.o.save_on_stop = true; /* and saved at SIGTERM when save rules are set */
	a.drain_ns = 5000000000ull;
	rc = net_args_parse("kv", argc, argv, long_opts, usage, take_value, &a);
	if (rc >= 0)
		return rc;
	pc_raise_nofile(UINT64_MAX >> 1);
	allocator_settings();
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	rc = kv_server_start(&a.o, &k, err, sizeof(err));
	if (rc == -EADDRINUSE) { /* kv has no --reuseport-join to suggest */
		fprintf(stderr, "percore kv: %s; --port and --metrics-port must be free and "
			"differ\n", err);
		return PC_EXIT_FAIL;
	}
	if (rc)
		return pc_cmd_refused("kv", rc, err);
	struct sockaddr_storage ss;
	socklen_t len;
	pc_sockaddr_parse(a.o.net.host, kv_server_port(k), &ss, &len);
	pc_sockaddr_format((struct sockaddr *)&ss, addr, sizeof(addr));
	fprintf(stderr, "percore kv: listening on %s (%u shards)\n", addr,
		pc_server_shards(kv_server_net(k)));
	pc_serve_say_metrics("kv", kv_server_net(k), &a.o.net);
	pc_serve_signals(kv_server_net(k), &set, a.drain_ns, usr1_totals, NULL, k);
	rc = kv_server_wait(k);
	print_totals(k, a.json, stdout);
	kv_server_destroy(k);
	return rc ? PC_EXIT_FAIL : PC_EXIT_OK;
}

static const struct pc_cmd kv_cmd = {
	.name = "kv",
	.summary = "serve the Redis protocol: a sharded key-value server",
	.order = 62,
	.main = kv_main,
};
PC_CMD_REGISTER(kv_cmd)
