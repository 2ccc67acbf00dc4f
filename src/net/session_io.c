/* percore net: a session's bytes: read, decode, dispatch, queue, write.
 *
 * Everything here runs on the session's shard. A session's own callbacks
 * (I/O, timer, flush) hold it "busy", so a handler that closes it, or an
 * error found deep in a call, only marks it dead: it is freed when the
 * outermost callback returns (net_session_unwind). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "net/net.h"
#include "percore/clock.h"

/* ---- buffers ------------------------------------------------------------ */

static void mem_update(struct net_shard *sh)
{
	__atomic_store_n(&sh->stats.buffer_bytes, sh->pool.busy_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->stats.pool_bytes, sh->pool.idle_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->stats.buffers_mapped, sh->pool.maps, __ATOMIC_RELAXED);
}

static struct pc_ringbuf *buf_get(struct net_shard *sh, size_t bytes)
{
	struct pc_ringbuf *rb = net_buf_get(&sh->pool, bytes);

	mem_update(sh);
	return rb;
}

/* Give back a ring once it holds nothing: idle sessions hold no memory. */
static void buf_release_empty(struct net_shard *sh, struct pc_ringbuf **rb)
{
	if (*rb && !pc_ringbuf_used(*rb)) {
		net_buf_put(&sh->pool, *rb);
		*rb = NULL;
		mem_update(sh);
	}
}

static size_t queued(const struct pc_session *s)
{
	return s->tx ? pc_ringbuf_used(s->tx) : 0;
}

/* ---- interest and state --------------------------------------------------- */

static void set_interest(struct pc_session *s)
{
	unsigned want = 0;

	if (s->flags & NS_FIN)
		want = PC_EV_IN; /* only to see the client's EOF; input discarded */
	else if (!(s->flags & (NS_PAUSED | NS_EOF | NS_CLOSING | NS_DRAIN)))
		want = PC_EV_IN;
	if (queued(s))
		want |= PC_EV_OUT;
	/* Nothing wanted happens only on the way to being freed. */
	if (!want || want == s->events)
		return;
	if (pc_reactor_mod(s->sh->r, s->fd, want))
		net_session_abort(s, PC_CLOSE_NOMEM);
	else
		s->events = (uint8_t)want;
}

/* End the connection after the last queued byte: FIN, then wait (at most
 * the linger time) for the client's EOF, discarding its input. Closing at
 * once with unread input would make the kernel send a reset, which can
 * destroy replies the client has not read yet. */
static void send_fin(struct pc_session *s)
{
	struct net_shard *sh = s->sh;

	s->flags |= NS_FIN;
	if (s->rx) {
		NET_STAT_SUB(sh, buffered_bytes, pc_ringbuf_used(s->rx));
		pc_ringbuf_reset(s->rx);
		buf_release_empty(sh, &s->rx);
	}
	if (shutdown(s->fd, SHUT_WR)) {
		net_session_abort(s, (enum pc_close_reason)s->why);
		return;
	}
	pc_wheel_schedule(sh->w, &s->timer, pc_wheel_now(sh->w) + sh->linger_ticks);
}

/* Decide what the session waits for next, after anything happened. */
void net_session_settle(struct pc_session *s)
{
	if (s->flags & (NS_DEAD | NS_FIN)) {
		if (!(s->flags & NS_DEAD))
			set_interest(s);
		return;
	}
	if (!queued(s)) {
		if (s->flags & NS_EOF) {
			/* Every reply written and the client gone: done. */
			net_session_abort(s, (enum pc_close_reason)s->why);
			return;
		}
		if (s->flags & (NS_CLOSING | NS_DRAIN)) {
			send_fin(s);
			if (s->flags & NS_DEAD)
				return;
		}
	}
	set_interest(s);
}

static void pause_reading(struct pc_session *s)
{
	if (s->flags & NS_PAUSED)
		return;
	s->flags |= NS_PAUSED;
	NET_STAT_ADD(s->sh, read_pauses, 1);
	NET_STAT_ADD(s->sh, paused, 1);
}

/* ---- output --------------------------------------------------------------- */

void net_session_mark_dirty(struct pc_session *s)
{
	struct net_shard *sh = s->sh;

	if (s->flags & NS_DIRTY)
		return;
	s->flags |= NS_DIRTY;
	s->dirty_next = sh->dirty;
	sh->dirty = s;
	if (!sh->flush_queued && !pc_reactor_defer(sh->r, (pc_task_fn)net_shard_flush, sh))
		sh->flush_queued = true;
}

int net_session_queue(struct pc_session *s, const struct iovec *iov, int iovcnt, size_t len)
{
	struct net_shard *sh = s->sh;
	size_t used = queued(s);

	if (s->flags & (NS_CLOSING | NS_FIN | NS_DEAD | NS_EOF))
		return -EPIPE;
	if (used + len > sh->tx_max) {
		NET_STAT_ADD(sh, send_refused, 1);
		return -ENOBUFS;
	}
	if (!s->tx) {
		s->tx = buf_get(sh, len > sh->cfg->tx_buffer ? len : sh->cfg->tx_buffer);
		if (!s->tx)
			return -ENOMEM;
	} else if (pc_ringbuf_space(s->tx) < len) {
		struct pc_ringbuf *n = net_buf_grow(&sh->pool, s->tx, used + len);

		mem_update(sh);
		if (!n)
			return -ENOMEM;
		s->tx = n;
	}
	for (int i = 0; i < iovcnt; i++)
		pc_ringbuf_write(s->tx, iov[i].iov_base, iov[i].iov_len);
	NET_STAT_ADD(sh, queued_bytes, len);
	net_session_mark_dirty(s);
	return 0;
}

/* Write what the output ring holds: one sendmsg of its (at most two)
 * readable regions. MSG_NOSIGNAL: a client gone is an error, not SIGPIPE. */
static void write_out(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	struct iovec iov[2];
	struct msghdr m = { .msg_iov = iov };
	ssize_t n;

	m.msg_iovlen = (size_t)pc_ringbuf_read_iov(s->tx, iov);
	if (!m.msg_iovlen)
		return;
	n = sendmsg(s->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			net_session_abort(s, PC_CLOSE_RESET);
		return;
	}
	pc_ringbuf_consume(s->tx, (size_t)n);
	NET_STAT_ADD(sh, bytes_out, n);
	NET_STAT_SUB(sh, queued_bytes, n);
}

static void flush(struct pc_session *s)
{
	struct net_shard *sh = s->sh;

	if (s->tx)
		write_out(s);
	if (s->flags & NS_DEAD)
		return;
	buf_release_empty(sh, &s->tx);
	if ((s->flags & NS_PAUSED) && queued(s) <= sh->cfg->low_water) {
		s->flags &= (uint16_t)~NS_PAUSED;
		NET_STAT_SUB(sh, paused, 1);
		/* Frames may be waiting in the input ring with no more bytes
		 * coming to announce them: decode them now. */
		net_session_input(s);
	}
	net_session_settle(s);
}

void net_shard_flush(struct net_shard *sh)
{
	struct pc_session *s;

	sh->flush_queued = false;
	/* Pop one at a time: a session freed meanwhile unlinks itself from
	 * this same list, and one that queues more goes back on it. */
	while ((s = sh->dirty)) {
		sh->dirty = s->dirty_next;
		s->flags &= (uint16_t)~NS_DIRTY;
		s->busy++;
		flush(s);
		net_session_unwind(s);
	}
}

/* ---- input ---------------------------------------------------------------- */

/* Error reply (flags bit 1) naming what was wrong, then a graceful close:
 * the client learns why before the FIN. */
static void refuse_frame(struct pc_session *s, int err)
{
	struct net_shard *sh = s->sh;
	const char *why = err == -EMSGSIZE ? "frame body over the maximum" : "malformed frame header";
	struct iovec iov[2];
	uint8_t h[PC_FRAME_HEADER_LEN];

	if (err == -EMSGSIZE)
		NET_STAT_ADD(sh, oversize, 1);
	else
		NET_STAT_ADD(sh, malformed, 1);
	s->why = err == -EMSGSIZE ? PC_CLOSE_OVERSIZE : PC_CLOSE_MALFORMED;
	pc_frame_encode_iov(h, iov, 0, PC_FRAME_ERROR, why, strlen(why));
	if (!net_session_queue(s, iov, 2, PC_FRAME_HEADER_LEN + strlen(why)))
		NET_STAT_ADD(sh, error_replies, 1);
	pc_session_close(s);
}

static int send_heartbeat(struct pc_session *s, uint32_t id)
{
	int rc = pc_session_send_flags(s, id, PC_FRAME_HEARTBEAT, NULL, 0);

	if (!rc)
		NET_STAT_ADD(s->sh, heartbeats_out, 1);
	return rc;
}

int net_session_ping(struct pc_session *s)
{
	return send_heartbeat(s, 1);
}

static void dispatch(struct pc_session *s, const struct pc_frame *f)
{
	const struct pc_server_cfg *cfg = s->sh->cfg;

	if (f->flags & PC_FRAME_HEARTBEAT) {
		NET_STAT_ADD(s->sh, heartbeats_in, 1);
		/* id 0 is an answer: answering it would ping-pong forever. */
		if (f->msg_id)
			send_heartbeat(s, 0);
		return;
	}
	NET_STAT_ADD(s->sh, frames_in, 1);
	if (f->msg_id == PC_MSG_STATS && cfg->stats_frames) {
		net_stats_reply(s);
	} else if (s->sh->dispatching) {
		pc_dispatch_frame(&s->sh->dispatch, f, s);
		__atomic_store_n(&s->sh->stats.unknown_ids, pc_dispatch_unknown(&s->sh->dispatch),
				 __ATOMIC_RELAXED);
	} else {
		cfg->on_frame(s, f, cfg->user);
	}
}

/* A frame refused with -EMSGSIZE is either over the body maximum (the
 * client's fault) or merely larger than the ring it sits in: then move it
 * to a larger ring. Returns 0 when grown, else the error to report. */
static int grow_for_frame(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	uint8_t h[PC_FRAME_HEADER_LEN];
	struct pc_frame f;
	struct pc_ringbuf *n;

	if (pc_ringbuf_peek(s->rx, h, sizeof(h)) ||
	    pc_frame_header_check(h, sizeof(h), sh->max_body, &f))
		return -EMSGSIZE;
	n = net_buf_grow(&sh->pool, s->rx, pc_frame_size(&f));
	mem_update(sh);
	if (!n)
		return -ENOMEM;
	s->rx = n;
	return 0;
}

static void input_frames(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	struct pc_frame f;

	while (s->rx && pc_ringbuf_used(s->rx) &&
	       !(s->flags & (NS_DEAD | NS_CLOSING | NS_FIN))) {
		if (queued(s) >= sh->cfg->high_water) {
			pause_reading(s);
			return;
		}
		int rc = pc_frame_peek(s->rx, sh->max_body, &f);
		if (rc == -EMSGSIZE)
			rc = grow_for_frame(s) ? -EMSGSIZE : -EINTR;
		if (rc == -EINTR)
			continue;
		if (rc == -EAGAIN)
			return;
		if (rc == -ENOMEM) {
			net_session_abort(s, PC_CLOSE_NOMEM);
			return;
		}
		if (rc) {
			refuse_frame(s, rc);
			return;
		}
		dispatch(s, &f);
		pc_frame_consume(s->rx, &f);
		NET_STAT_SUB(sh, buffered_bytes, pc_frame_size(&f));
	}
}

static void input_raw(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	size_t len, used;

	while (s->rx && pc_ringbuf_used(s->rx) &&
	       !(s->flags & (NS_DEAD | NS_CLOSING | NS_FIN))) {
		if (queued(s) >= sh->cfg->high_water) {
			pause_reading(s);
			return;
		}
		const uint8_t *p = pc_ringbuf_read_span(s->rx, &len);
		used = sh->cfg->on_data(s, p, len, sh->cfg->user);
		if (used > len)
			used = len;
		if (!used)
			return;
		pc_ringbuf_consume(s->rx, used);
		NET_STAT_SUB(sh, buffered_bytes, used);
	}
}

void net_session_input(struct pc_session *s)
{
	if (s->sh->cfg->raw)
		input_raw(s);
	else
		input_frames(s);
	if (!(s->flags & NS_DEAD))
		buf_release_empty(s->sh, &s->rx);
}

/* A raw handler that leaves a full ring unconsumed can never progress. */
static bool rx_stuck(const struct pc_session *s)
{
	return s->rx && !pc_ringbuf_space(s->rx) && !(s->flags & NS_PAUSED);
}

static void read_in(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	size_t len;
	uint8_t *p;
	ssize_t n;

	if (!s->rx && !(s->rx = buf_get(sh, sh->cfg->rx_buffer))) {
		net_session_abort(s, PC_CLOSE_NOMEM);
		return;
	}
	p = pc_ringbuf_write_span(s->rx, &len);
	if (!len)
		return; /* full: frames wait for the output to drain */
	n = recv(s->fd, p, len, MSG_DONTWAIT);
	if (n > 0) {
		pc_ringbuf_commit(s->rx, (size_t)n);
		NET_STAT_ADD(sh, bytes_in, n);
		NET_STAT_ADD(sh, buffered_bytes, n);
		if (sh->idle_ticks || sh->hb_ticks)
			s->last_rx = (uint32_t)(pc_now_ns() / PC_REACTOR_TICK_NS);
		net_session_input(s);
		if (!(s->flags & NS_DEAD) && rx_stuck(s))
			net_session_abort(s, PC_CLOSE_NOMEM);
		return;
	}
	if (n == 0) {
		/* The client is done sending; what it sent is answered, a
		 * partial frame is dropped. */
		s->flags |= NS_EOF;
		if (s->why == PC_CLOSE_REASONS)
			s->why = PC_CLOSE_PEER;
		NET_STAT_SUB(sh, buffered_bytes, pc_ringbuf_used(s->rx));
		pc_ringbuf_reset(s->rx);
	} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		net_session_abort(s, PC_CLOSE_RESET);
		return;
	}
	buf_release_empty(sh, &s->rx);
}

/* After FIN: read and drop until the client's EOF. */
static void discard_in(struct pc_session *s)
{
	ssize_t n = recv(s->fd, s->sh->scratch, PC_SERVER_RX_BUFFER, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		net_session_abort(s, (enum pc_close_reason)s->why);
}

void net_session_read_once(struct pc_session *s)
{
	if (!(s->flags & (NS_PAUSED | NS_EOF | NS_CLOSING | NS_FIN | NS_DEAD)))
		read_in(s);
}

void net_session_io(struct pc_reactor *r, int fd, unsigned events, void *arg)
{
	struct pc_session *s = arg;

	(void)r;
	(void)fd;
	s->busy++;
	if (events & PC_EV_OUT)
		flush(s);
	if (!(s->flags & NS_DEAD) && (events & (PC_EV_IN | PC_EV_ERR | PC_EV_HUP))) {
		if (s->flags & NS_FIN)
			discard_in(s);
		else if (events & PC_EV_IN)
			net_session_read_once(s);
		else if (!(events & PC_EV_OUT) || !queued(s))
			/* Error or hang-up with nothing to write that would
			 * reveal it: level-triggered, it would fire forever. */
			net_session_abort(s, PC_CLOSE_RESET);
	}
	if (!(s->flags & NS_DEAD))
		net_session_settle(s);
	net_session_unwind(s);
}
