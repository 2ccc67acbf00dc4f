/* SPDX-License-Identifier: MIT */
/* percore net: the load generator: configuration, its engine, results,
 * and the idle mode. Connections: load_conn.c. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "load/load_impl.h"
#include "percore/clock.h"
#include "percore/frame.h"
#include "percore/listener.h"
#include "percore/session.h"
#include "percore/shard.h"

#define DRAIN_DEFAULT_NS 5000000000ull

void pc_load_cfg_init(struct pc_load_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->host = "127.0.0.1";
	cfg->conns = 1;
	cfg->depth = 1;
	cfg->size_min = cfg->size_max = 64;
	cfg->drain_ns = DRAIN_DEFAULT_NS;
	cfg->seed = 1;
	pc_engine_cfg_init(&cfg->engine);
	cfg->engine.shards = 1;
}

int pc_raise_nofile(uint64_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	if (rl.rlim_cur >= want)
		return 0;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return -errno;
	return rl.rlim_cur >= want ? 0 : -EMFILE;
}

void lg_error(struct lg_shard *sh, uint64_t *counter, const char *fmt, ...)
{
	va_list ap;

	(*counter)++;
	if (sh->first_error[0])
		return;
	va_start(ap, fmt);
	vsnprintf(sh->first_error, sizeof(sh->first_error), fmt, ap);
	va_end(ap);
}

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int cfg_check(struct pc_load_cfg *c, char *err, size_t len)
{
	c->conns = c->conns ? c->conns : 1;
	c->depth = c->depth ? c->depth : 1;
	c->drain_ns = c->drain_ns ? c->drain_ns : DRAIN_DEFAULT_NS;
	c->engine.shards = c->engine.shards ? c->engine.shards : 1;
	if (c->size_max < c->size_min)
		c->size_max = c->size_min;
	if (c->mode == PC_LOAD_CONNECT)
		c->depth = 1; /* one round trip per connection */
	if (c->mode > PC_LOAD_IDLE)
		return fail(err, len, -EINVAL, "unknown mode");
	if (c->conns > (1u << 20) || c->depth > 4096)
		return fail(err, len, -EINVAL, "at most 2^20 connections and 4096 in flight");
	if (c->size_max > PC_FRAME_MAX_BODY_CAP)
		return fail(err, len, -EINVAL, "messages are at most 16 MiB");
	if (c->raw && !c->size_min)
		return fail(err, len, -EINVAL, "raw messages need at least one byte");
	if (c->idle_partial > (1u << 19))
		return fail(err, len, -EINVAL, "a partial frame is at most half of 1 MiB");
	if (c->idle_partial && c->idle_partial * 2 < PC_FRAME_HEADER_LEN + 1)
		return fail(err, len, -EINVAL, "a partial frame is at least 7 bytes");
	if (c->mode == PC_LOAD_IDLE ? !c->idle : !c->duration_ns && !c->messages)
		return fail(err, len, -EINVAL, c->mode == PC_LOAD_IDLE ? "idle mode needs a count" :
					       "give a duration or a number of messages");
	if (c->engine.shards > PC_ENGINE_MAX_SHARDS)
		return fail(err, len, -EINVAL, "too many shards");
	return 0;
}

/* ---- one shard of the generator ---------------------------------------------- */

void lg_shard_clock_start(struct lg_shard *sh)
{
	sh->t_start = pc_now_ns();
	sh->cpu_start = pc_thread_cpu_ns();
}

void lg_shard_clock_end(struct lg_shard *sh)
{
	sh->t_end = pc_now_ns();
	sh->cpu_end = pc_thread_cpu_ns();
}

void lg_shard_finish(struct lg_shard *sh)
{
	if (sh->finished)
		return;
	sh->finished = true;
	lg_shard_clock_end(sh);
	pc_wheel_cancel(pc_reactor_wheel(sh->r), &sh->end_timer);
	pc_wheel_cancel(pc_reactor_wheel(sh->r), &sh->watchdog);
	/* The last shard done stops the engine (the starter may not have
	 * stored its pointer yet: ask the runtime). */
	if (atomic_fetch_sub(&sh->run->running, 1) == 1)
		pc_engine_stop(pc_shard_engine());
}

static void end_timer(struct pc_wheel *w, struct pc_timer *t)
{
	(void)w;
	lg_shard_end_time((struct lg_shard *)((char *)t - offsetof(struct lg_shard, end_timer)));
}

/* No progress (a byte verified, a connection made) for drain_ns: the
 * server is not answering; count what is missing and stop. */
static void watchdog(struct pc_wheel *w, struct pc_timer *t)
{
	struct lg_shard *sh = (struct lg_shard *)((char *)t - offsetof(struct lg_shard, watchdog));

	(void)w;
	if (sh->progress == sh->progress_seen) {
		lg_shard_give_up(sh);
		return;
	}
	sh->progress_seen = sh->progress;
	pc_reactor_timer_after(sh->r, t, sh->run->cfg.drain_ns);
}

static int shard_alloc(struct lg_shard *sh, struct lg_run *run, unsigned index)
{
	const struct pc_load_cfg *c = &run->cfg;
	unsigned n = 0;

	for (unsigned i = index; i < c->conns; i += run->nshards)
		n++;
	sh->run = run;
	sh->index = index;
	sh->r = pc_shard_reactor();
	sh->nconns = n;
	sh->conns = calloc(n ? n : 1, sizeof(*sh->conns));
	sh->hist = pc_hist_create();
	sh->rxbuf = malloc(LG_RXBUF);
	uint64_t *sent = calloc((size_t)(n ? n : 1) * c->depth, sizeof(uint64_t));
	if (!sh->conns || !sh->hist || !sh->rxbuf || !sent) {
		free(sent);
		return -ENOMEM;
	}
	for (unsigned j = 0; j < n; j++) {
		struct lg_conn *cn = &sh->conns[j];
		uint32_t idx = index + j * run->nshards;

		cn->sh = sh;
		cn->fd = -1;
		cn->idx = idx;
		cn->sent_at = sent + (size_t)j * c->depth;
		if (c->duration_ns)
			cn->limit = UINT64_MAX;
		else
			cn->limit = c->messages / c->conns + (idx < c->messages % c->conns ? 1 : 0);
	}
	return 0;
}

static void shard_start(void *arg)
{
	struct lg_run *run = arg;
	unsigned index = (unsigned)pc_shard_id();
	struct lg_shard *sh = calloc(1, sizeof(*sh));

	if (!sh || shard_alloc(sh, run, index)) {
		__atomic_store_n(&run->setup_err, -ENOMEM, __ATOMIC_RELAXED);
		if (sh) {
			sh->run = run;
			sh->r = pc_shard_reactor();
			run->shards[index] = sh;
			lg_shard_finish(sh);
		}
		return;
	}
	run->shards[index] = sh;
	pc_timer_init(&sh->end_timer, end_timer);
	pc_timer_init(&sh->watchdog, watchdog);
	if (run->cfg.duration_ns)
		pc_reactor_timer_after(sh->r, &sh->end_timer, run->cfg.duration_ns);
	pc_reactor_timer_after(sh->r, &sh->watchdog, run->cfg.drain_ns);
	if (!sh->nconns)
		lg_shard_finish(sh);
	else
		lg_shard_begin(sh);
}

/* Engine stopped (finished, or from outside): close what is still open. */
static void shard_stop(void *arg)
{
	struct lg_run *run = arg;
	struct lg_shard *sh = run->shards[pc_shard_id()];

	if (!sh || !sh->conns)
		return;
	for (unsigned i = 0; i < sh->nconns; i++)
		if (sh->conns[i].fd >= 0) {
			pc_reactor_del(sh->r, sh->conns[i].fd);
			close(sh->conns[i].fd);
			sh->conns[i].fd = -1;
		}
	if (!sh->finished)
		lg_shard_clock_end(sh);
}

static void shard_free(struct lg_shard *sh)
{
	if (!sh)
		return;
	if (sh->conns)
		free(sh->conns[0].sent_at);
	free(sh->conns);
	pc_hist_destroy(sh->hist);
	free(sh->rxbuf);
	free(sh);
}

/* ---- results ------------------------------------------------------------------ */

static void collect(struct lg_run *run, struct pc_load_result *res)
{
	uint64_t t0 = UINT64_MAX, t1 = 0;

	for (unsigned i = 0; i < run->nshards; i++) {
		const struct lg_shard *sh = run->shards[i];

		if (!sh)
			continue;
		res->messages += sh->messages;
		res->bytes += sh->bytes;
		res->connects += sh->connects;
		res->connect_errors += sh->connect_errors;
		res->verify_errors += sh->verify_errors;
		res->io_errors += sh->io_errors;
		res->lost += sh->lost;
		if (sh->hist)
			pc_hist_merge(res->latency, sh->hist);
		if (!res->first_error[0] && sh->first_error[0])
			snprintf(res->first_error, sizeof(res->first_error), "%s", sh->first_error);
		if (sh->t_start && sh->t_start < t0)
			t0 = sh->t_start;
		if (sh->t_end > t1)
			t1 = sh->t_end;
		/* a shard that never started its clock spent nothing timed */
		if (sh->t_start && sh->t_end)
			res->cpu_ns += pc_elapsed(sh->cpu_end, sh->cpu_start);
	}
	res->errors = res->connect_errors + res->verify_errors + res->io_errors + res->lost;
	res->elapsed_ns = pc_elapsed(t1, t0); /* 0 when no shard started */
}

static int run_engine(struct lg_run *run, struct pc_load_result *res, char *err, size_t len)
{
	struct pc_engine_cfg ec = run->cfg.engine;
	int rc;

	run->nshards = ec.shards;
	run->shards = calloc(run->nshards, sizeof(*run->shards));
	if (!run->shards)
		return fail(err, len, -ENOMEM, "out of memory");
	atomic_store(&run->running, run->nshards);
	ec.on_start = shard_start;
	ec.on_stop = shard_stop;
	ec.arg = run;
	ec.caller_is_shard0 = false;
	rc = pc_engine_start(&ec, &run->engine, err, len);
	if (rc)
		return rc;
	pc_engine_join(run->engine);
	pc_engine_destroy(run->engine);
	collect(run, res);
	if (run->setup_err)
		return fail(err, len, run->setup_err, "a load shard could not set up");
	if (!res->messages && !res->connects && res->connect_errors)
		return fail(err, len, -ECONNREFUSED, "no connection could be made: %s",
			    res->first_error);
	return 0;
}

/* ---- idle mode ---------------------------------------------------------------- */

static int blocking_connect(const struct lg_run *run)
{
	int fd = socket(run->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = 10 };

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)&run->addr, run->addr_len)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

static int io_all(int fd, void *buf, size_t n, bool out)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);

		if (k <= 0)
			return k < 0 ? -errno : -ECONNRESET;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Ask the server for its statistics (PC_MSG_STATS) on a framed
 * connection; heartbeats met on the way are skipped. */
static cJSON *server_stats(int fd)
{
	uint8_t h[PC_FRAME_HEADER_LEN];
	struct pc_frame f;

	pc_frame_header_encode(h, PC_MSG_STATS, 0, 0);
	if (io_all(fd, h, sizeof(h), true))
		return NULL;
	for (int frames = 0; frames < 64; frames++) {
		if (io_all(fd, h, sizeof(h), false) ||
		    pc_frame_header_check(h, sizeof(h), 1u << 20, &f))
			return NULL;
		char *body = malloc(f.len + 1);
		if (!body || io_all(fd, body, f.len, false)) {
			free(body);
			return NULL;
		}
		body[f.len] = '\0';
		cJSON *o = f.msg_id == PC_MSG_STATS && !(f.flags & PC_FRAME_HEARTBEAT) ? cJSON_Parse(body) :
											NULL;
		free(body);
		if (o)
			return o;
	}
	return NULL;
}

/* The first `bytes` bytes of a frame of 2 x bytes (0: send nothing):
 * the server then holds an incomplete frame for this connection. */
static int half_frame(int fd, uint32_t bytes)
{
	uint8_t *f;
	int rc;

	if (!bytes)
		return 0;
	/* The header is written whole even when fewer of its bytes go. */
	f = calloc(1, bytes > PC_FRAME_HEADER_LEN ? bytes : PC_FRAME_HEADER_LEN);
	if (!f)
		return -ENOMEM;
	pc_frame_header_encode(f, 1, 0, 2 * bytes - PC_FRAME_HEADER_LEN);
	rc = io_all(fd, f, bytes, true);
	free(f);
	return rc;
}

static uint64_t num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

/* TCP socket buffer memory of the whole machine, in bytes (the "mem"
 * field of /proc/net/sockstat is in pages); -1 when unreadable. */
static int64_t tcp_mem(void)
{
	FILE *f = fopen("/proc/net/sockstat", "re");
	char line[256];
	long long pages = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *m = strstr(line, " mem ");
		if (!strncmp(line, "TCP:", 4) && m)
			pages = atoll(m + 5);
	}
	fclose(f);
	return pages < 0 ? -1 : pages * sysconf(_SC_PAGESIZE);
}

static void close_all(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

/* Poll the server's figures until it counts `want` sessions and holds
 * `bytes` received bytes (or a bound on the wait passes). Returns the
 * last answer, NULL when none came. */
static cJSON *wait_sessions(int ctl, uint64_t want, uint64_t bytes, unsigned n)
{
	uint64_t end = pc_now_ns() + 10000000000ull + (uint64_t)n * 1000000;
	cJSON *o = NULL;

	for (;;) {
		cJSON_Delete(o);
		o = server_stats(ctl);
		if (!o || (num(o, "sessions") >= want && num(o, "buffered_bytes") >= bytes) ||
		    pc_now_ns() > end)
			return o;
		nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	}
}

static int run_idle(struct lg_run *run, struct pc_load_result *res, char *err, size_t len)
{
	unsigned n = run->cfg.idle, opened = 0;
	int *fds = calloc(n, sizeof(int)), ctl, rc = 0;
	cJSON *before = NULL, *after = NULL;

	if (!fds)
		return fail(err, len, -ENOMEM, "out of memory");
	ctl = blocking_connect(run);
	if (ctl < 0) {
		free(fds);
		return fail(err, len, ctl, "cannot connect: %s", strerror(-ctl));
	}
	before = server_stats(ctl);
	if (!before) {
		rc = fail(err, len, -EPROTO, "the server does not answer statistics requests "
					     "(a framed server with stats frames on)");
		goto out;
	}
	int64_t kmem0 = tcp_mem();
	uint64_t t0 = pc_now_ns(), sent = 0;
	for (; opened < n; opened++) {
		fds[opened] = blocking_connect(run);
		int e = fds[opened] < 0 ? fds[opened] : half_frame(fds[opened], run->cfg.idle_partial);
		if (e) {
			if (fds[opened] >= 0)
				close(fds[opened]);
			res->connect_errors++;
			snprintf(res->first_error, sizeof(res->first_error), "connection %u: %s", opened,
				 strerror(-e));
			break;
		}
		sent += run->cfg.idle_partial;
	}
	after = wait_sessions(ctl, num(before, "sessions") + opened,
			      num(before, "buffered_bytes") + sent, opened);
	if (!after) {
		rc = fail(err, len, -EPROTO, "the server stopped answering statistics requests");
		goto out;
	}
	res->elapsed_ns = pc_elapsed(pc_now_ns(), t0); /* opened and counted by the server */
	int64_t kmem1 = tcp_mem();
	res->idle_open = num(after, "sessions") - num(before, "sessions");
	res->server_accepted_before = num(before, "accepted");
	res->server_rss_before = num(before, "rss_bytes");
	res->server_rss_after = num(after, "rss_bytes");
	res->server_session_bytes_before = num(before, "session_bytes");
	res->server_session_bytes_after = num(after, "session_bytes");
	res->server_buffer_bytes_after = num(after, "buffer_bytes");
	/* Less before: both answers count their own request, being read. */
	res->server_buffered_growth = num(after, "buffered_bytes") - num(before, "buffered_bytes");
	res->server_maps_before = num(before, "maps");
	res->server_maps_after = num(after, "maps");
	if (res->idle_open) {
		res->rss_per_session = ((double)res->server_rss_after - (double)res->server_rss_before) /
				       (double)res->idle_open;
		res->acct_per_session = ((double)res->server_session_bytes_after -
					 (double)res->server_session_bytes_before) / (double)res->idle_open;
		res->maps_per_session = ((double)res->server_maps_after -
					 (double)res->server_maps_before) / (double)res->idle_open;
	}
	res->kernel_tcp_mem_delta = kmem0 >= 0 && kmem1 >= 0 ? kmem1 - kmem0 : 0;
	res->errors = res->connect_errors;
out:
	cJSON_Delete(before);
	cJSON_Delete(after);
	close_all(fds, opened);
	close(ctl);
	free(fds);
	return rc;
}

/* ---- the run ------------------------------------------------------------------ */

static uint8_t *make_pattern(uint64_t seed, size_t n)
{
	uint8_t *p = malloc(n);
	uint64_t s = seed ^ 0x6a09e667f3bcc909ull;

	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(s >> 56);
	}
	return p;
}

int pc_load_run(const struct pc_load_cfg *cfg, struct pc_load_result *res, char *err, size_t len)
{
	struct lg_run *run;
	int rc;

	memset(res, 0, sizeof(*res));
	run = calloc(1, sizeof(*run));
	if (!run)
		return fail(err, len, -ENOMEM, "out of memory");
	run->cfg = *cfg;
	rc = cfg_check(&run->cfg, err, len);
	if (!rc && pc_sockaddr_parse(cfg->host ? cfg->host : "127.0.0.1", cfg->port, &run->addr,
				     &run->addr_len))
		rc = fail(err, len, -EINVAL, "the host is not a numeric IPv4 or IPv6 address");
	uint64_t fds = (run->cfg.mode == PC_LOAD_IDLE ? run->cfg.idle : run->cfg.conns) + 64ull;
	if (!rc && pc_raise_nofile(fds))
		rc = fail(err, len, -EMFILE, "needs %llu open files; the hard limit is lower (ulimit -Hn)",
			  (unsigned long long)fds);
	res->latency = pc_hist_create();
	if (!rc && !res->latency)
		rc = fail(err, len, -ENOMEM, "out of memory");
	if (!rc && run->cfg.mode == PC_LOAD_IDLE) {
		rc = run_idle(run, res, err, len);
	} else if (!rc) {
		run->hdr = run->cfg.raw ? 0 : PC_FRAME_HEADER_LEN;
		run->pattern = make_pattern(run->cfg.seed, LG_PATTERN + (size_t)run->cfg.size_max);
		rc = run->pattern ? run_engine(run, res, err, len) :
				    fail(err, len, -ENOMEM, "out of memory");
	}
	if (run->shards)
		for (unsigned i = 0; i < run->nshards; i++)
			shard_free(run->shards[i]);
	free(run->shards);
	free(run->pattern);
	free(run);
	return rc;
}

void pc_load_result_fini(struct pc_load_result *res)
{
	pc_hist_destroy(res->latency);
	res->latency = NULL;
}
