/* SPDX-License-Identifier: MIT */
/* percore net: the load generator's connections: the byte stream both
 * sides derive, sending with D messages in flight, checking every byte
 * that comes back, and the connect-and-close cycle. Shard thread only. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "load/load_impl.h"
#include "percore/clock.h"
#include "percore/frame.h"
#include "percore/hist.h"
#include "percore/listener.h"

/* ---- the stream: message k of connection c ---------------------------------- */

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint32_t lg_size(const struct lg_run *run, uint32_t c, uint64_t k)
{
	uint32_t lo = run->cfg.size_min, hi = run->cfg.size_max;

	if (hi <= lo)
		return lo;
	return lo + (uint32_t)(mix(run->cfg.seed ^ (uint64_t)c << 40 ^ k) % ((uint64_t)hi - lo + 1));
}

static const uint8_t *payload(const struct lg_run *run, uint32_t c, uint64_t k)
{
	uint64_t h = mix((run->cfg.seed * 3 + 1) ^ ((uint64_t)c << 32) ^ (k * 0x9e3779b97f4a7c15ull));

	return run->pattern + (h & (LG_PATTERN - 1));
}

static void header(const struct lg_run *run, uint32_t c, uint64_t k, uint8_t h[PC_FRAME_HEADER_LEN])
{
	pc_frame_header_encode(h, (uint32_t)k, 0, lg_size(run, c, k));
}

static uint64_t in_flight(const struct lg_conn *c)
{
	return c->tx_k - c->rx_k + (c->tx_off ? 1 : 0);
}

/* ---- connection state ------------------------------------------------------- */

static void set_events(struct lg_conn *c, unsigned want)
{
	if (want == c->events)
		return;
	if (!pc_reactor_mod(c->sh->r, c->fd, want))
		c->events = (uint8_t)want;
}

static void all_connected(struct lg_shard *sh);

static void conn_finish(struct lg_conn *c)
{
	struct lg_shard *sh = c->sh;

	if (c->state == LG_DONE)
		return;
	if (c->fd >= 0) {
		pc_reactor_del(sh->r, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	bool was_connecting = c->state == LG_CONNECTING;

	if (was_connecting)
		sh->connecting--;
	c->state = LG_DONE;
	if (--sh->open == 0) {
		lg_shard_finish(sh);
		return;
	}
	/* Echo mode: the others may have been waiting for this one. */
	if (was_connecting && !sh->connecting && !sh->t_start &&
	    sh->run->cfg.mode == PC_LOAD_ECHO)
		all_connected(sh);
}

/* A connection that failed: what it had in flight is lost. */
static void conn_fail(struct lg_conn *c, uint64_t *counter, const char *what, int err)
{
	c->sh->lost += in_flight(c);
	lg_error(c->sh, counter, "connection %u: %s: %s", c->idx, what, strerror(err));
	conn_finish(c);
}

static bool conn_complete(const struct lg_conn *c)
{
	const struct lg_shard *sh = c->sh;

	return in_flight(c) == 0 && (sh->stopping || c->rx_k >= c->limit);
}

/* ---- sending ---------------------------------------------------------------- */

/* Build iovecs for what may be sent now: the rest of message tx_k, then
 * new ones while fewer than depth are unanswered. Returns the count. */
static int build(struct lg_conn *c, struct iovec *iov, uint8_t (*hdrs)[PC_FRAME_HEADER_LEN])
{
	const struct lg_run *run = c->sh->run;
	uint64_t until = c->rx_k + run->cfg.depth, now = 0;
	uint32_t off = c->tx_off;
	int n = 0;

	if (until > c->limit)
		until = c->limit;
	if (c->sh->stopping)
		until = c->tx_off ? c->tx_k + 1 : c->tx_k; /* finish, start nothing */
	for (uint64_t k = c->tx_k; k < until && n + 2 <= LG_IOV; k++, off = 0) {
		uint32_t size = lg_size(run, c->idx, k);

		if (off < run->hdr) {
			header(run, c->idx, k, hdrs[n]);
			iov[n].iov_base = hdrs[n] + off;
			iov[n].iov_len = run->hdr - off;
			n++;
		}
		uint32_t start = off > run->hdr ? off - run->hdr : 0;
		if (size > start) {
			iov[n].iov_base = (void *)(payload(run, c->idx, k) + start);
			iov[n].iov_len = size - start;
			n++;
		}
		if (!off) {
			now = now ? now : pc_now_ns();
			c->sent_at[k % run->cfg.depth] = now;
		}
	}
	return n;
}

/* Move the send position n bytes on. */
static void advance_tx(struct lg_conn *c, size_t n)
{
	const struct lg_run *run = c->sh->run;

	while (n) {
		uint32_t total = run->hdr + lg_size(run, c->idx, c->tx_k), left = total - c->tx_off;

		if (n < left) {
			c->tx_off += (uint32_t)n;
			return;
		}
		n -= left;
		c->tx_off = 0;
		c->tx_k++;
	}
}

static void pump(struct lg_conn *c)
{
	struct iovec iov[LG_IOV];
	uint8_t hdrs[LG_IOV][PC_FRAME_HEADER_LEN];

	for (;;) {
		int n = build(c, iov, hdrs);
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w;

		if (!n) {
			set_events(c, PC_EV_IN);
			return;
		}
		/* MSG_NOSIGNAL: a server gone mid-run (a reset after its FIN gives
		 * EPIPE) is a connection error to report, not SIGPIPE. */
		w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				set_events(c, PC_EV_IN | PC_EV_OUT);
				return;
			}
			if (errno == EINTR)
				continue;
			conn_fail(c, &c->sh->io_errors, "send", errno);
			return;
		}
		advance_tx(c, (size_t)w);
	}
}

/* ---- receiving -------------------------------------------------------------- */

static void message_done(struct lg_conn *c, uint64_t now)
{
	struct lg_shard *sh = c->sh;
	const struct lg_run *run = sh->run;
	uint64_t t0 = run->cfg.mode == PC_LOAD_CONNECT ? c->cycle_t0 : c->sent_at[c->rx_k % run->cfg.depth];

	pc_hist_record(sh->hist, pc_elapsed(now, t0));
	sh->messages++;
	sh->bytes += lg_size(run, c->idx, c->rx_k);
	sh->progress++;
	c->rx_k++;
	c->rx_off = 0;
}

/* Compare n received bytes with what the stream says comes next.
 * Returns 0, or -EPROTO (the connection has failed). */
static int verify(struct lg_conn *c, const uint8_t *p, size_t n)
{
	const struct lg_run *run = c->sh->run;
	uint64_t now = 0;

	while (n) {
		uint32_t size = lg_size(run, c->idx, c->rx_k), total = run->hdr + size;
		size_t take;

		if (!in_flight(c)) {
			conn_fail(c, &c->sh->verify_errors, "more bytes than were sent", EPROTO);
			return -EPROTO;
		}
		if (c->rx_off < run->hdr) {
			uint8_t h[PC_FRAME_HEADER_LEN];

			take = run->hdr - c->rx_off < n ? run->hdr - c->rx_off : n;
			header(run, c->idx, c->rx_k, h);
			if (memcmp(p, h + c->rx_off, take))
				goto bad;
		} else {
			uint32_t start = c->rx_off - run->hdr;

			take = total - c->rx_off < n ? total - c->rx_off : n;
			if (memcmp(p, payload(run, c->idx, c->rx_k) + start, take))
				goto bad;
		}
		p += take;
		n -= take;
		c->rx_off += (uint32_t)take;
		if (c->rx_off == total) {
			now = now ? now : pc_now_ns();
			message_done(c, now);
		}
	}
	return 0;
bad:
	lg_error(c->sh, &c->sh->verify_errors, "connection %u: message %llu differs at byte %u",
		 c->idx, (unsigned long long)c->rx_k, c->rx_off);
	c->sh->lost += in_flight(c);
	conn_finish(c);
	return -EPROTO;
}

static void start_cycle(struct lg_conn *c);

/* Connect mode: one round trip done; close with a reset and go again. */
static void cycle_done(struct lg_conn *c)
{
	struct lg_shard *sh = c->sh;

	sh->connects++;
	pc_reactor_del(sh->r, c->fd);
	pc_socket_reset_on_close(c->fd);
	close(c->fd);
	c->fd = -1;
	if (sh->stopping || c->rx_k >= c->limit) {
		c->state = LG_READY; /* conn_finish: nothing to close */
		conn_finish(c);
		return;
	}
	start_cycle(c);
}

static void receive(struct lg_conn *c)
{
	struct lg_shard *sh = c->sh;
	ssize_t n = recv(c->fd, sh->rxbuf, LG_RXBUF, MSG_DONTWAIT);

	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			conn_fail(c, &sh->io_errors, "receive", errno);
		return;
	}
	if (n == 0) {
		conn_fail(c, &sh->io_errors, "receive", ECONNRESET);
		return;
	}
	if (verify(c, sh->rxbuf, (size_t)n))
		return;
	if (sh->run->cfg.mode == PC_LOAD_CONNECT && !in_flight(c) && c->rx_k == c->tx_k)
		cycle_done(c);
	else if (conn_complete(c))
		conn_finish(c);
	else
		pump(c);
}

/* ---- connecting --------------------------------------------------------------- */

static void conn_io(struct pc_reactor *r, int fd, unsigned events, void *arg);

static int conn_connect(struct lg_conn *c)
{
	const struct lg_run *run = c->sh->run;
	int fd = pc_connect_start((const struct sockaddr *)&run->addr, run->addr_len);

	if (fd < 0)
		return fd;
	if (pc_reactor_add(c->sh->r, fd, PC_EV_OUT, conn_io, c)) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->events = PC_EV_OUT;
	c->state = LG_CONNECTING;
	c->sh->connecting++;
	return 0;
}

static void start_cycle(struct lg_conn *c)
{
	int rc;

	c->cycle_t0 = pc_now_ns();
	rc = conn_connect(c);
	if (rc) {
		c->state = LG_READY;
		lg_error(c->sh, &c->sh->connect_errors, "connection %u: connect: %s", c->idx,
			 strerror(-rc));
		conn_finish(c);
	}
}

/* Echo mode starts the clock once every connection of the shard is up. */
static void all_connected(struct lg_shard *sh)
{
	lg_shard_clock_start(sh);
	for (unsigned i = 0; i < sh->nconns; i++) {
		struct lg_conn *c = &sh->conns[i];

		if (c->state != LG_READY)
			continue;
		c->state = LG_RUNNING;
		if (conn_complete(c))
			conn_finish(c);
		else
			pump(c);
	}
}

static void connected(struct lg_conn *c)
{
	struct lg_shard *sh = c->sh;
	int rc = pc_connect_result(c->fd);

	if (rc) {
		conn_fail(c, &sh->connect_errors, "connect", -rc);
		return;
	}
	sh->connecting--;
	sh->progress++;
	set_events(c, PC_EV_IN);
	if (sh->run->cfg.mode == PC_LOAD_CONNECT) {
		c->state = LG_RUNNING;
		pump(c);
		return;
	}
	c->state = LG_READY;
	if (!sh->connecting)
		all_connected(sh);
}

static void conn_io(struct pc_reactor *r, int fd, unsigned events, void *arg)
{
	struct lg_conn *c = arg;

	(void)r;
	(void)fd;
	if (c->state == LG_CONNECTING) {
		connected(c);
		return;
	}
	if (c->state != LG_RUNNING) {
		/* Ready, waiting for the others: only errors matter. */
		if (events & (PC_EV_ERR | PC_EV_HUP))
			conn_fail(c, &c->sh->io_errors, "connection", ECONNRESET);
		return;
	}
	if (events & (PC_EV_IN | PC_EV_ERR | PC_EV_HUP))
		receive(c);
	if (c->state == LG_RUNNING && (events & PC_EV_OUT))
		pump(c);
}

/* ---- the shard's connections ---------------------------------------------------- */

void lg_shard_begin(struct lg_shard *sh)
{
	bool cycle = sh->run->cfg.mode == PC_LOAD_CONNECT;

	sh->open = sh->nconns;
	if (cycle)
		lg_shard_clock_start(sh);
	for (unsigned i = 0; i < sh->nconns; i++) {
		struct lg_conn *c = &sh->conns[i];

		if (!c->limit) {
			c->state = LG_READY;
			conn_finish(c);
			continue;
		}
		if (cycle) {
			start_cycle(c);
			continue;
		}
		int rc = conn_connect(c);
		if (rc) {
			c->state = LG_READY;
			lg_error(sh, &sh->connect_errors, "connection %u: connect: %s", c->idx,
				 strerror(-rc));
			conn_finish(c);
		}
	}
	if (!cycle && sh->open && !sh->connecting)
		all_connected(sh);
}

/* Time is up: what has a message in flight finishes it; everything else
 * ends now. A connection still connecting has nothing to answer, and
 * waiting for it would stretch the run past its duration (until the
 * watchdog in the worst case), so it is closed without an error. */
void lg_shard_end_time(struct lg_shard *sh)
{
	sh->stopping = true;
	for (unsigned i = 0; i < sh->nconns; i++) {
		struct lg_conn *c = &sh->conns[i];

		if (c->state == LG_RUNNING ? conn_complete(c) : c->state != LG_DONE)
			conn_finish(c);
	}
}

void lg_shard_give_up(struct lg_shard *sh)
{
	for (unsigned i = 0; i < sh->nconns; i++) {
		struct lg_conn *c = &sh->conns[i];

		if (c->state == LG_DONE)
			continue;
		if (c->state == LG_CONNECTING)
			conn_fail(c, &sh->connect_errors, "connect", ETIMEDOUT);
		else if (in_flight(c))
			conn_fail(c, &sh->io_errors, "no reply", ETIMEDOUT);
		else
			conn_finish(c);
	}
}
