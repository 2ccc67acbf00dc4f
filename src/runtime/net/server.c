/* SPDX-License-Identifier: MIT */
/* percore net: the server: configuration, listeners, accepting with
 * limits, per-shard set-up and tear-down, graceful shutdown. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/net.h"
#include "percore/clock.h"
#include "percore/listener.h"
#include "percore/shard.h"

#define ACCEPT_BATCH 64           /* accepts per readiness, then others' turn */
#define ACCEPT_RETRY_NS 100000000 /* out of fds: try accepting again after */

__thread struct net_shard *net_self;

void pc_server_cfg_init(struct pc_server_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	pc_engine_cfg_init(&cfg->engine);
}

static int fail(char *err, size_t len, int rc, const char *why)
{
	if (err && len)
		snprintf(err, len, "%s", why);
	return rc;
}

/* Fill in the defaults and check the configuration. */
static int cfg_resolve(struct pc_server_cfg *c, char *err, size_t len)
{
	if (c->raw ? !c->on_data : !c->on_frame && !c->on_dispatch && !c->on_frames)
		return fail(err, len, -EINVAL, c->raw ? "a raw server needs on_data" :
						       "a framed server needs on_frame, on_frames or on_dispatch");
	if (!c->raw && c->on_frames && (c->on_frame || c->on_dispatch))
		return fail(err, len, -EINVAL, "on_frames takes every frame: not with on_frame or on_dispatch");
	if (c->backlog < 0)
		return fail(err, len, -EINVAL, "negative backlog");
	c->rx_buffer = c->rx_buffer ? c->rx_buffer : PC_SERVER_RX_BUFFER;
	c->tx_buffer = c->tx_buffer ? c->tx_buffer : PC_SERVER_TX_BUFFER;
	c->high_water = c->high_water ? c->high_water : PC_SERVER_HIGH_WATER;
	c->low_water = c->low_water ? c->low_water : c->high_water / 4;
	c->linger_ms = c->linger_ms ? c->linger_ms : PC_SERVER_LINGER_MS;
	c->pool_keep = c->pool_keep ? c->pool_keep : PC_SERVER_POOL_KEEP;
	c->pool_bytes = c->pool_bytes ? c->pool_bytes : PC_SERVER_POOL_BYTES;
	if (c->idle_timeout_ms > INT32_MAX || c->heartbeat_ms > INT32_MAX ||
	    c->frame_timeout_ms > INT32_MAX || c->linger_ms > INT32_MAX)
		return fail(err, len, -EINVAL, "timers are at most 2^31 ms (24 days)");
	if (c->low_water > c->high_water)
		return fail(err, len, -EINVAL, "low water above high water");
	if (!net_buf_class_size(c->rx_buffer) || !net_buf_class_size(c->tx_buffer) ||
	    !net_buf_class_size((size_t)c->high_water + PC_FRAME_HEADER_LEN +
				pc_frame_max_body(c->max_body)))
		return fail(err, len, -EINVAL, "buffer sizes or high water above 16 MiB");
	uint64_t frame = PC_FRAME_HEADER_LEN + (uint64_t)pc_frame_max_body(c->max_body);
	if (c->max_input_bytes && c->max_input_bytes < frame) {
		if (err && len)
			snprintf(err, len, "max_input_bytes %llu is below one largest frame (%llu "
					   "bytes)", (unsigned long long)c->max_input_bytes,
				 (unsigned long long)frame);
		return -EINVAL;
	}
	return 0;
}

/* ---- accepting -------------------------------------------------------------- */

static int watch_listener(struct net_shard *sh);
static void drain_deadline(struct pc_wheel *w, struct pc_timer *t);

static void accept_retry(struct pc_wheel *w, struct pc_timer *t)
{
	struct net_shard *sh = (struct net_shard *)((char *)t - offsetof(struct net_shard, accept_timer));

	(void)w;
	if (sh->lfd >= 0 && sh->accept_paused && !watch_listener(sh))
		sh->accept_paused = false;
	else if (sh->lfd >= 0 && sh->accept_paused)
		pc_reactor_timer_after(sh->r, &sh->accept_timer, ACCEPT_RETRY_NS);
}

/* Out of descriptors: the waiting connection would make the listener
 * readable forever. Stop watching it for a while instead of spinning. */
static void accept_pause(struct net_shard *sh)
{
	NET_STAT_ADD(sh, accept_errors, 1);
	if (sh->accept_paused)
		return;
	pc_reactor_del(sh->r, sh->lfd);
	sh->accept_paused = true;
	pc_reactor_timer_after(sh->r, &sh->accept_timer, ACCEPT_RETRY_NS);
}

/* Refuse at once: a reset, so the refused client leaves no TIME_WAIT
 * behind on the server however many times it retries. */
static void refuse(int fd)
{
	pc_socket_reset_on_close(fd);
	close(fd);
}

static void admit(struct net_shard *sh, int fd, const struct sockaddr_storage *peer)
{
	const struct pc_server_cfg *cfg = sh->cfg;
	uint8_t key[NET_ADDR_LEN];
	struct pc_session *s;

	if (cfg->max_sessions && sh->nsessions >= cfg->max_sessions) {
		NET_STAT_ADD(sh, rejected_shard_limit, 1);
		refuse(fd);
		return;
	}
	if (net_addr_key((const struct sockaddr *)peer, key)) {
		NET_STAT_ADD(sh, accept_errors, 1);
		refuse(fd);
		return;
	}
	if (sh->srv->addrs) {
		int rc = net_addrtab_acquire(sh->srv->addrs, key, cfg->max_per_addr);

		if (rc) {
			if (rc == -EBUSY)
				NET_STAT_ADD(sh, rejected_addr_limit, 1);
			else
				NET_STAT_ADD(sh, accept_errors, 1);
			refuse(fd);
			return;
		}
	}
	s = net_session_new(sh, fd, (const struct sockaddr *)peer);
	if (!s) {
		if (sh->srv->addrs)
			net_addrtab_release(sh->srv->addrs, key);
		NET_STAT_ADD(sh, accept_errors, 1);
		refuse(fd);
		return;
	}
	NET_STAT_ADD(sh, accepted, 1);
	net_session_opened(s);
}

/* What an accept's result asks for: false when accepting must pause. */
static bool accept_ok(struct net_shard *sh, int c)
{
	if (c == -EMFILE || c == -ENFILE || c == -ENOBUFS || c == -ENOMEM) {
		accept_pause(sh);
		return false;
	}
	/* Other errors (the client gave up first): next one. */
	return true;
}

static void on_accept(struct pc_reactor *r, int fd, unsigned events, void *arg)
{
	struct net_shard *sh = arg;

	(void)r;
	(void)fd;
	(void)events;
	for (int k = 0; k < ACCEPT_BATCH && sh->lfd >= 0 && !sh->accept_paused; k++) {
		struct sockaddr_storage peer;
		socklen_t len;
		int c = pc_accept(sh->lfd, &peer, &len);

		if (c == -EAGAIN || !accept_ok(sh, c))
			return;
		if (c >= 0)
			admit(sh, c, &peer);
	}
}

/* A connection the reactor accepted (io_uring multishot accept). */
static void on_accepted(struct pc_reactor *r, int lfd, int fd, void *arg)
{
	struct net_shard *sh = arg;
	struct sockaddr_storage peer;
	socklen_t len;

	(void)r;
	(void)lfd;
	if (fd < 0) {
		accept_ok(sh, fd);
		return;
	}
	if (net_accepted(fd, &peer, &len)) {
		/* Reset before we could look at it. */
		NET_STAT_ADD(sh, accept_errors, 1);
		close(fd);
		return;
	}
	admit(sh, fd, &peer);
}

/* Accept in the kernel where the reactor can (one multishot request
 * instead of a readiness, an accept4 and a last accept4 that finds none
 * per wake-up), on readiness otherwise. */
static int watch_listener(struct net_shard *sh)
{
	int rc = pc_reactor_add_accept(sh->r, sh->lfd, on_accept, on_accepted, sh);

	return rc == -EOPNOTSUPP ? pc_reactor_add(sh->r, sh->lfd, PC_EV_IN, on_accept, sh) : rc;
}

static void close_listener(struct net_shard *sh)
{
	if (sh->lfd < 0)
		return;
	if (!sh->accept_paused)
		pc_reactor_del(sh->r, sh->lfd);
	pc_wheel_cancel(sh->w, &sh->accept_timer);
	close(sh->lfd);
	sh->lfd = -1;
}

/* ---- one shard ------------------------------------------------------------ */

static int open_listener(struct pc_server *srv, unsigned index)
{
	if (index == 0)
		return srv->lfd0;
	/* Same address and the port shard 0 was given (port 0 included). */
	return pc_listen((const struct sockaddr *)&srv->addr, srv->addr_len, srv->cfg.backlog,
			 PC_LISTEN_REUSEPORT);
}

/* The dispatcher's ends: ids nobody registered go to on_frame when there
 * is one; the built-in error reply goes out through the session. */
static int frame_default(void *ctx, const struct pc_frame *f, void *arg)
{
	const struct net_shard *sh = ctx;

	sh->cfg->on_frame(arg, f, sh->cfg->user);
	return 0;
}

static int dispatch_reply(void *arg, uint32_t msg_id, uint8_t flags, const void *body, size_t len)
{
	return pc_session_send_flags(arg, msg_id, flags, body, len);
}

static int dispatch_setup(struct net_shard *sh)
{
	const struct pc_server_cfg *c = sh->cfg;
	int rc = pc_dispatch_init(&sh->dispatch, 256);

	if (rc)
		return rc;
	sh->dispatching = true;
	pc_dispatch_set_reply(&sh->dispatch, dispatch_reply);
	if (c->on_frame)
		pc_dispatch_set_default(&sh->dispatch, frame_default, sh);
	rc = c->on_dispatch(&sh->dispatch, sh->index, c->user);
	return rc > 0 ? -EINVAL : rc;
}

static int shard_setup(struct net_shard *sh)
{
	struct pc_server *srv = sh->srv;
	const struct pc_server_cfg *c = &srv->cfg;
	int rc;

	sh->cfg = c;
	sh->nshards = pc_shard_count();
	sh->r = pc_shard_reactor();
	sh->w = pc_reactor_wheel(sh->r);
	sh->lfd = -1;
	sh->free_slot = UINT32_MAX;
	sh->max_body = pc_frame_max_body(c->max_body);
	sh->rx_max = net_buf_class_size(PC_FRAME_HEADER_LEN + (size_t)sh->max_body);
	sh->tx_max = net_buf_class_size((size_t)c->high_water + PC_FRAME_HEADER_LEN + sh->max_body);
	sh->idle_ticks = (uint64_t)c->idle_timeout_ms * 1000000 / PC_REACTOR_TICK_NS;
	sh->hb_ticks = (uint64_t)c->heartbeat_ms * 1000000 / PC_REACTOR_TICK_NS;
	/* A raw session has no frames to time. */
	sh->frame_ticks = c->raw ? 0 : (uint64_t)c->frame_timeout_ms * 1000000 / PC_REACTOR_TICK_NS;
	sh->linger_ticks = (uint64_t)c->linger_ms * 1000000 / PC_REACTOR_TICK_NS;
	sh->max_input = c->max_input_bytes ? c->max_input_bytes : UINT64_MAX;
	sh->input_low = sh->max_input - sh->max_input / 4;
	pc_timer_init(&sh->accept_timer, accept_retry);
	pc_timer_init(&sh->drain_timer, drain_deadline);
	net_move_init(sh);
	/* The shard's own pool for objects of this size (on its node, kept
	 * by the engine): sessions are exactly two cache lines. */
	sh->slab = pc_shard_slab(net_session_bytes());
	sh->scratch = malloc(PC_SERVER_RX_BUFFER);
	if (!sh->slab || !sh->scratch)
		return -ENOMEM;
	rc = net_bufpool_init(&sh->pool, c->pool_keep, c->pool_bytes);
	if (!rc && c->on_dispatch && !c->raw)
		rc = dispatch_setup(sh);
	if (rc)
		return rc;
	rc = open_listener(srv, sh->index);
	if (rc < 0)
		return rc;
	sh->lfd = rc;
	if (sh->index == 0)
		srv->lfd0 = -1; /* the shard owns it now */
	return watch_listener(sh);
}

static void shard_report(struct pc_server *srv, int rc)
{
	pthread_mutex_lock(&srv->lock);
	srv->started++;
	if (rc && !srv->start_err)
		srv->start_err = rc;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
}

static void shard_start(void *arg)
{
	struct pc_server *srv = arg;
	unsigned i = (unsigned)pc_shard_id();
	struct net_shard *sh;
	int rc = -ENOMEM;

	if (!posix_memalign((void **)&sh, PC_CACHE_PAD, sizeof(*sh))) {
		memset(sh, 0, sizeof(*sh));
		sh->srv = srv;
		sh->index = i;
		__atomic_store_n(&srv->shards[i], sh, __ATOMIC_RELEASE);
		rc = shard_setup(sh);
		if (!rc) {
			net_self = sh;
			if (srv->cfg.on_shard_start)
				srv->cfg.on_shard_start(i, srv->cfg.user);
		} else {
			close_listener(sh);
		}
	}
	shard_report(srv, rc);
}

static void stop_session(struct pc_session *s)
{
	net_session_abort(s, PC_CLOSE_SHUTDOWN);
}

static void shard_stop(void *arg)
{
	struct pc_server *srv = arg;
	struct net_shard *sh = net_self;

	(void)srv;
	if (!sh)
		return; /* its set-up failed: nothing to undo but that */
	close_listener(sh);
	net_each_session(sh, stop_session);
	pc_wheel_cancel(sh->w, &sh->drain_timer);
	pc_wheel_cancel(sh->w, &sh->move_timer);
	if (srv->cfg.on_shard_stop)
		srv->cfg.on_shard_stop(sh->index, srv->cfg.user);
	net_self = NULL;
}

/* Free what a shard allocated (after the engine has ended). */
static void shard_free(struct net_shard *sh)
{
	if (!sh)
		return;
	if (sh->lfd >= 0)
		close(sh->lfd);
	net_bufpool_fini(&sh->pool);
	if (sh->dispatching)
		pc_dispatch_destroy(&sh->dispatch);
	free(sh->slots);
	net_reply_table_free(sh);
	free(sh->refs);
	free(sh->scratch);
	free(sh);
}

/* ---- draining -------------------------------------------------------------- */

void net_shard_drained(struct net_shard *sh)
{
	struct pc_server *srv = sh->srv;

	if (sh->drained)
		return;
	sh->drained = true;
	pc_wheel_cancel(sh->w, &sh->drain_timer);
	/* The last shard done stops the engine. */
	if (atomic_fetch_sub(&srv->draining, 1) == 1)
		pc_engine_stop(srv->engine);
}

static void cut_session(struct pc_session *s)
{
	NET_STAT_ADD(s->sh, drain_aborted, 1);
	net_session_abort(s, PC_CLOSE_SHUTDOWN);
}

static void drain_deadline(struct pc_wheel *w, struct pc_timer *t)
{
	struct net_shard *sh = (struct net_shard *)((char *)t - offsetof(struct net_shard, drain_timer));

	(void)w;
	net_each_session(sh, cut_session);
	net_shard_drained(sh);
}

static void drain_sessions(void *arg)
{
	struct net_shard *sh = arg;

	net_each_session(sh, net_session_drain);
	if (!sh->nsessions)
		net_shard_drained(sh);
}

/* How long draining sessions go on reading: half the drain, so that what
 * was read is answered before the deadline, and at most DRAIN_READ_MAX_MS:
 * what a client sent before the shutdown has arrived by then. */
#define DRAIN_READ_MAX_MS 1000u

static uint64_t drain_read_ns(uint32_t drain_ms)
{
	uint32_t ms = drain_ms / 2 < DRAIN_READ_MAX_MS ? drain_ms / 2 : DRAIN_READ_MAX_MS;

	return (uint64_t)ms * 1000000;
}

static void shard_drain(void *arg)
{
	struct pc_server *srv = arg;
	struct net_shard *sh = net_self;
	struct pc_reactor_io_stats io;

	if (!sh || sh->draining)
		return;
	sh->draining = true;
	sh->drain_read_end = pc_now_ns() + drain_read_ns(srv->drain_ms);
	close_listener(sh);
	pc_reactor_timer_after(sh->r, &sh->drain_timer, (uint64_t)srv->drain_ms * 1000000);
	/* A draining session answers what has arrived. On the completion
	 * path, bytes already in a socket are received in the next wait (a
	 * read here would overtake them), so the sessions drain one turn
	 * later. */
	pc_reactor_io_stats(sh->r, &io);
	if (io.completion && pc_reactor_defer(sh->r, drain_sessions, sh) == 0)
		return;
	drain_sessions(sh);
}

int pc_server_shutdown(struct pc_server *srv, uint32_t drain_ms)
{
	if (atomic_exchange(&srv->shutdown, true) || pc_engine_stopping(srv->engine))
		return -EALREADY;
	srv->drain_ms = drain_ms;
	atomic_store(&srv->draining, srv->n);
	for (unsigned i = 0; i < srv->n; i++) {
		int rc;

		/* The ring for outside threads may be full for a moment. */
		for (int tries = 0; (rc = pc_engine_submit(srv->engine, i, shard_drain, srv)) == -EAGAIN &&
				    tries < 1000; tries++)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		if (rc == -ESHUTDOWN)
			return -EALREADY;
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the server ------------------------------------------------------------- */

static int server_listen(struct pc_server *srv, const char *host, char *err, size_t len)
{
	unsigned flags = PC_LISTEN_REUSEPORT | (srv->cfg.reuseport_join ? 0 : PC_LISTEN_FIRST);
	struct sockaddr_storage ss;
	socklen_t alen;
	int fd;

	if (pc_sockaddr_parse(host, srv->cfg.port, &ss, &alen))
		return fail(err, len, -EINVAL, "the host is not a numeric IPv4 or IPv6 address");
	fd = pc_listen((struct sockaddr *)&ss, alen, srv->cfg.backlog, flags);
	if (fd == -EAFNOSUPPORT && (!host || !*host || !strcmp(host, "*"))) {
		/* No IPv6 in this kernel: every IPv4 address instead. */
		pc_sockaddr_parse("0.0.0.0", srv->cfg.port, &ss, &alen);
		fd = pc_listen((struct sockaddr *)&ss, alen, srv->cfg.backlog, flags);
	}
	if (fd < 0) {
		if (err && len && fd == -EADDRINUSE && !srv->cfg.reuseport_join)
			snprintf(err, len, "cannot listen: port %u is in use (another server "
				 "listens there)", srv->cfg.port);
		else if (err && len)
			snprintf(err, len, "cannot listen: %s", strerror(-fd));
		return fd;
	}
	srv->lfd0 = fd;
	if (pc_socket_local(fd, &srv->addr, &srv->addr_len)) {
		close(fd);
		srv->lfd0 = -1;
		return fail(err, len, -errno, "cannot read the listening address");
	}
	srv->port = pc_sockaddr_port((struct sockaddr *)&srv->addr);
	return 0;
}

static struct pc_server *server_alloc(const struct pc_server_cfg *cfg)
{
	struct pc_server *srv = calloc(1, sizeof(*srv));

	if (!srv)
		return NULL;
	srv->shards = calloc(PC_ENGINE_MAX_SHARDS, sizeof(*srv->shards));
	if (!srv->shards) {
		free(srv);
		return NULL;
	}
	srv->cfg = *cfg;
	srv->cfg.host = NULL; /* the caller's string may not outlive us */
	srv->lfd0 = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->cond, NULL);
	return srv;
}

static void server_free(struct pc_server *srv)
{
	for (unsigned i = 0; i < PC_ENGINE_MAX_SHARDS; i++)
		shard_free(srv->shards[i]);
	if (srv->lfd0 >= 0)
		close(srv->lfd0);
	net_addrtab_destroy(srv->addrs);
	net_server_metrics_free(srv);
	pthread_mutex_destroy(&srv->lock);
	pthread_cond_destroy(&srv->cond);
	free(srv->shards);
	free(srv);
}

static int engine_start(struct pc_server *srv, char *err, size_t len)
{
	struct pc_engine_cfg ec = srv->cfg.engine;
	int rc;

	ec.on_start = shard_start;
	ec.on_stop = shard_stop;
	ec.arg = srv;
	ec.caller_is_shard0 = false;
	rc = pc_engine_start(&ec, &srv->engine, err, len);
	if (rc)
		return rc;
	__atomic_store_n(&srv->n, pc_engine_shards(srv->engine), __ATOMIC_RELEASE);
	/* Every shard set up (or failed) before we say the server runs. */
	pthread_mutex_lock(&srv->lock);
	while (srv->started < srv->n)
		pthread_cond_wait(&srv->cond, &srv->lock);
	rc = srv->start_err;
	pthread_mutex_unlock(&srv->lock);
	if (rc) {
		if (err && len)
			snprintf(err, len, "a shard could not set up its sessions: %s", strerror(-rc));
		pc_engine_stop(srv->engine);
		pc_engine_join(srv->engine);
		pc_engine_destroy(srv->engine);
		srv->engine = NULL;
	}
	return rc;
}

int pc_server_start(const struct pc_server_cfg *cfg, struct pc_server **out, char *err, size_t len)
{
	struct pc_server *srv;
	struct pc_server_cfg c = *cfg;
	int rc;

	*out = NULL;
	rc = cfg_resolve(&c, err, len);
	if (rc)
		return rc;
	srv = server_alloc(&c);
	if (!srv)
		return fail(err, len, -ENOMEM, "out of memory");
	if (c.max_per_addr && !(srv->addrs = net_addrtab_create()))
		rc = fail(err, len, -ENOMEM, "out of memory");
	if (!rc)
		rc = server_listen(srv, cfg->host, err, len);
	if (!rc)
		rc = engine_start(srv, err, len);
	if (!rc && (rc = net_server_metrics_start(srv, cfg->metrics_host, err, len))) {
		pc_engine_stop(srv->engine);
		pc_engine_join(srv->engine);
	}
	if (rc) {
		net_server_metrics_stop(srv);
		pc_engine_destroy(srv->engine);
		server_free(srv);
		return rc;
	}
	atomic_store(&srv->ready, true);
	*out = srv;
	return 0;
}

uint16_t pc_server_port(const struct pc_server *srv)
{
	return srv->port;
}

struct pc_engine *pc_server_engine(struct pc_server *srv)
{
	return srv->engine;
}

unsigned pc_server_shards(const struct pc_server *srv)
{
	return srv->n;
}

void pc_server_stop(struct pc_server *srv)
{
	pc_engine_stop(srv->engine);
}

bool pc_server_stopping(const struct pc_server *srv)
{
	return pc_engine_stopping(srv->engine);
}

int pc_server_wait(struct pc_server *srv)
{
	return pc_engine_join(srv->engine);
}

void pc_server_destroy(struct pc_server *srv)
{
	if (!srv)
		return;
	net_server_metrics_stop(srv);
	pc_engine_destroy(srv->engine);
	server_free(srv);
}
