/* SPDX-License-Identifier: MIT */
/* percore net: a session's input: read, decode, dispatch; its interest
 * in readiness and what it waits for next. Output: session_out.c.
 *
 * Everything here runs on the session's shard. A session's own callbacks
 * (I/O, timer, flush) hold it "busy", so a handler that closes it, or an
 * error found deep in a call, only marks it dead: it is freed when the
 * outermost callback returns (net_session_unwind). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "net/net.h"
#include "percore/fb_heartbeat.h"
#include "percore/clock.h"

/* ---- interest and state --------------------------------------------------- */

/* A draining session answers what its client sent before the drain:
 * whatever is still in its socket, or received and not yet offered (the
 * completion path takes bytes off the socket ahead of the session), for
 * the reading part of the drain (net_shard.drain_read_end). The socket
 * is asked first: a completion may take its bytes meanwhile. */
static bool drain_input_left(const struct pc_session *s)
{
	int unread = 0;

	/* Bytes in hand: an early flush settles the session halfway. */
	if (s->sh->feeding == s)
		return true;
	/* Past the reading part of the drain (a client that kept sending):
	 * what was read is answered, the rest is not taken. */
	if ((int64_t)(pc_now_ns() - s->sh->drain_read_end) >= 0)
		return false;
	if (ioctl(s->fd, FIONREAD, &unread) == 0 && unread > 0)
		return true;
	return (s->flags & NS_RECV) && pc_reactor_recv_pending(s->sh->r, s->fd);
}

/* Whether the session takes input now. */
static bool wants_input(const struct pc_session *s)
{
	if (s->flags & (NS_PAUSED | NS_EOF | NS_CLOSING | NS_HELD | NS_BUDGET))
		return false;
	return !(s->flags & NS_DRAIN) || drain_input_left(s);
}

/* Output waits for writability only once a write came back short: the
 * usual turn (read, queue, flush at its end) writes everything and must
 * not pay two epoll_ctl calls to add and remove OUT around it. */
void net_session_set_interest(struct pc_session *s)
{
	unsigned want = 0;

	if (s->flags & NS_FIN)
		want = PC_EV_IN; /* only to see the client's EOF; input discarded */
	else if (wants_input(s))
		want = PC_EV_IN;
	if (net_session_queued(s) && ((s->flags & NS_WBLOCKED) || !want))
		want |= PC_EV_OUT;
	/* Nothing wanted happens on the way to being freed, or while held
	 * with nothing to write: then only errors and hang-ups. */
	if ((!want && !(s->flags & (NS_HELD | NS_EOF | NS_DRAIN | NS_BUDGET))) || want == s->events)
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
		net_session_buf_release(sh, &s->rx);
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
			net_session_set_interest(s);
		return;
	}
	/* Answers still owed (reply.h) keep it open as queued bytes do. */
	if (!net_session_queued(s) && !net_reply_owed(s)) {
		if (s->flags & NS_EOF) {
			/* Every reply written and the client gone: done. */
			net_session_abort(s, (enum pc_close_reason)s->why);
			return;
		}
		if ((s->flags & NS_CLOSING) || ((s->flags & NS_DRAIN) && !drain_input_left(s))) {
			send_fin(s);
			if (s->flags & NS_DEAD)
				return;
		}
	}
	net_session_set_interest(s);
}

void net_session_pause(struct pc_session *s)
{
	if (s->flags & NS_PAUSED)
		return;
	s->flags |= NS_PAUSED;
	NET_STAT_ADD(s->sh, read_pauses, 1);
	NET_STAT_ADD(s->sh, paused, 1);
}

/* ---- input ---------------------------------------------------------------- */

/* Error reply (flags bit 1, id 0: the header cannot be trusted) naming
 * what was wrong, then a graceful close: the client learns why before the
 * FIN. */
static void refuse_frame(struct pc_session *s, int err)
{
	const char *why = err == -EMSGSIZE ? "frame body over the maximum" : "malformed frame header";

	pc_session_refuse(s, err == -EMSGSIZE ? PC_CLOSE_OVERSIZE : PC_CLOSE_MALFORMED, 0, why,
			  strlen(why));
}

static int send_heartbeat(struct pc_session *s, uint32_t id, const void *body, uint32_t len)
{
	int rc = pc_session_send_flags(s, id, PC_FRAME_HEARTBEAT, body, len);

	/* A heartbeat, not a frame: the send counted it as one. The frame
	 * path stays free of the test. */
	if (!rc) {
		NET_STAT_ADD(s->sh, heartbeats_out, 1);
		NET_STAT_SUB(s->sh, frames_out, 1);
	}
	return rc;
}

int net_session_ping(struct pc_session *s)
{
	return send_heartbeat(s, PC_MSG_HEARTBEAT, NULL, 0);
}

/* While a handler looks at bytes of this session's input ring, what it
 * sends from them may stay there until the flush (struct net_ref). A
 * plain ring lends them too: nothing is read into it before the flush,
 * and without a read at most one frame of a pass wraps (the next ones
 * begin after its end), so the wrapped part copied after the ring's end
 * is not overwritten either; offering the same frame again copies the
 * same bytes to the same place. */
static void refs_open(struct pc_session *s, const uint8_t *p, size_t len)
{
	struct net_shard *sh = s->sh;

	sh->ref_owner = s;
	sh->ref_lo = p;
	sh->ref_hi = p + len;
}

static void handle(struct pc_session *s, const struct pc_frame *f,
		   const struct pc_server_cfg *cfg)
{
	if (s->sh->dispatching) {
		pc_dispatch_frame(&s->sh->dispatch, f, s);
		__atomic_store_n(&s->sh->stats.unknown_ids, pc_dispatch_unknown(&s->sh->dispatch),
				 __ATOMIC_RELAXED);
	} else if (cfg->on_frame) {
		cfg->on_frame(s, f, cfg->user);
	} else if (!cfg->on_frames(s, f, 1, cfg->user)) {
		pc_session_unread_frame(s);
	}
}

/* lend: replies may point into f's body until the flush (refs_open). */
static void dispatch(struct pc_session *s, const struct pc_frame *f, bool lend)
{
	const struct pc_server_cfg *cfg = s->sh->cfg;
	struct pc_metric *lat;

	if (f->flags & PC_FRAME_HEARTBEAT) {
		NET_STAT_ADD(s->sh, heartbeats_in, 1);
		/* id 0 is an answer: answering it would ping-pong forever. The
		 * answer carries the request's body back (a Heartbeat table holds
		 * the sender's clock, so the sender learns the round trip). */
		if (f->msg_id)
			send_heartbeat(s, 0, f->body, f->len);
		return;
	}
	if (f->msg_id == PC_MSG_STATS && cfg->stats_frames) {
		net_stats_reply(s);
		return;
	}
	/* The whole frame, header included: an echo's header is its own. */
	if (lend)
		refs_open(s, f->body - PC_FRAME_HEADER_LEN, pc_frame_size(f));
	lat = net_server_latency(s->sh->srv);
	if (PC_UNLIKELY(lat)) {
		/* Two clock reads per frame, only when metrics are on. */
		uint64_t t0 = pc_now_ns();

		handle(s, f, cfg);
		pc_metric_observe(lat, s->sh->index, pc_elapsed(pc_now_ns(), t0));
	} else {
		handle(s, f, cfg);
	}
	s->sh->ref_owner = NULL;
}

/* Hand one decoded frame to the application. Returns false when it was
 * left unread (pc_session_unread_frame(): offered again on resume); it
 * is counted received once, when taken. */
static bool offer_frame(struct pc_session *s, const struct pc_frame *f, bool lend)
{
	s->sh->in_frame = s;
	dispatch(s, f, lend);
	s->sh->in_frame = NULL;
	if (!(s->flags & NS_UNREAD)) {
		if (!(f->flags & PC_FRAME_HEARTBEAT))
			NET_STAT_ADD(s->sh, frames_in, 1);
		return true;
	}
	s->flags &= (uint16_t)~NS_UNREAD;
	return false;
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
	/* The old ring goes back to the pool: nothing may point into it. */
	if (net_session_materialize(s))
		return -ENOMEM;
	n = net_buf_grow(&sh->pool, s->rx, pc_frame_size(&f));
	net_mem_update(sh);
	if (!n)
		return -ENOMEM;
	s->rx = n;
	return 0;
}

static void input_frames(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	struct pc_frame f;
	bool consumed = false;

	/* Only an incomplete frame left at the end keeps NS_PARTIAL (and its
	 * deadline); whatever else ends this loop clears it. */
	while (s->rx && pc_ringbuf_used(s->rx) &&
	       !(s->flags & (NS_DEAD | NS_CLOSING | NS_FIN | NS_HELD))) {
		if (net_session_queued(s) >= sh->cfg->high_water) {
			s->flags &= (uint16_t)~NS_PARTIAL;
			net_session_pause(s);
			return;
		}
		int rc = pc_frame_peek(s->rx, sh->max_body, &f);
		if (rc == -EMSGSIZE) {
			int g = grow_for_frame(s);
			rc = g ? g : -EINTR;
		}
		if (rc == -EINTR)
			continue;
		if (rc == -EAGAIN) {
			net_session_partial(s, consumed);
			return;
		}
		if (rc == -ENOMEM) {
			net_session_abort(s, PC_CLOSE_NOMEM);
			return;
		}
		if (rc) {
			refuse_frame(s, rc);
			return;
		}
		if (!offer_frame(s, &f, true))
			return;
		pc_frame_consume(s->rx, &f);
		NET_STAT_SUB(sh, buffered_bytes, pc_frame_size(&f));
		consumed = true;
	}
	s->flags &= (uint16_t)~NS_PARTIAL;
}

static void input_raw(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	size_t len, used;

	while (s->rx && pc_ringbuf_used(s->rx) &&
	       !(s->flags & (NS_DEAD | NS_CLOSING | NS_FIN | NS_HELD))) {
		if (net_session_queued(s) >= sh->cfg->high_water) {
			net_session_pause(s);
			return;
		}
		/* Everything buffered, in one piece: a handler that waits for
		 * a whole line or request must not see only the part before
		 * the ring's end (it could never complete there). */
		len = pc_ringbuf_used(s->rx);
		const uint8_t *p = pc_ringbuf_linearize(s->rx, len);
		refs_open(s, p, len);
		used = sh->cfg->on_data(s, p, len, sh->cfg->user);
		sh->ref_owner = NULL;
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
	/* Kept while replies still point into it (until the flush). */
	if (!(s->flags & NS_DEAD) && !s->ref_head)
		net_session_buf_release(s->sh, &s->rx);
}

/* A raw handler that leaves a full ring unconsumed can never progress. A
 * session that is closing (a refusal with its reply queued) is not stuck:
 * it reads no more, and the FIN discards what is buffered. */
static bool rx_stuck(const struct pc_session *s)
{
	return s->rx && !pc_ringbuf_space(s->rx) &&
	       !(s->flags & (NS_PAUSED | NS_CLOSING | NS_HELD | NS_BUDGET));
}

/* n bytes were written into s->rx: account for them and, with decode,
 * decode them (without: the raw handler was just offered them and used
 * none; they wait for what comes next). */
static void took_in(struct pc_session *s, size_t n, bool decode)
{
	struct net_shard *sh = s->sh;
	bool held = net_budget_held(s);

	pc_ringbuf_commit(s->rx, n);
	NET_STAT_ADD(sh, bytes_in, n);
	NET_STAT_ADD(sh, buffered_bytes, n);
	if (sh->idle_ticks || sh->hb_ticks)
		s->last_rx = (uint32_t)net_tick();
	if (decode)
		net_session_input(s);
	/* the input budget looks only where a session held or holds bytes
	 * (in its ring or, for a raw server, aside: pc_session_hold_input) */
	net_budget_settle(sh, held || net_budget_held(s));
	if (!(s->flags & NS_DEAD) && rx_stuck(s))
		net_session_abort(s, PC_CLOSE_NOMEM);
}

/* The client is done sending; what it sent is answered, a partial frame
 * is dropped. */
static void input_ended(struct pc_session *s)
{
	s->flags |= NS_EOF;
	if (s->why == PC_CLOSE_REASONS)
		s->why = PC_CLOSE_PEER;
	if (s->rx) {
		NET_STAT_SUB(s->sh, buffered_bytes, pc_ringbuf_used(s->rx));
		pc_ringbuf_reset(s->rx);
	}
}

/* A read that brought no bytes: err 0 at the client's EOF, else the
 * read's errno (EAGAIN and EINTR: nothing yet). */
static void read_nothing(struct pc_session *s, int err)
{
	if (!err)
		input_ended(s);
	else if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR)
		net_session_abort(s, PC_CLOSE_RESET);
	if (!(s->flags & NS_DEAD) && !s->ref_head)
		net_session_buf_release(s->sh, &s->rx);
}

static void read_in(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	struct iovec iov[2];
	ssize_t n;

	if (!s->rx && !(s->rx = net_session_buf_get(sh, sh->cfg->rx_buffer))) {
		net_session_abort(s, PC_CLOSE_NOMEM);
		return;
	}
	/* The free space in one call, both parts where it wraps: a plain
	 * ring's first part ends at the buffer's end. */
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)pc_ringbuf_write_iov(s->rx, iov) };
	if (!m.msg_iovlen)
		return; /* full: frames wait for the output to drain */
	n = m.msg_iovlen == 1 ? recv(s->fd, iov[0].iov_base, iov[0].iov_len, MSG_DONTWAIT)
			      : recvmsg(s->fd, &m, MSG_DONTWAIT);
	if (n > 0)
		took_in(s, (size_t)n, true);
	else
		read_nothing(s, n ? errno : 0);
}

/* Free bytes of the input ring that no reply still points at. Referenced
 * bytes were consumed, so they lie just behind the read position, at the
 * far end of the free space: a copy stops short of the oldest of them. */
static size_t rx_room(const struct pc_session *s)
{
	size_t space = pc_ringbuf_space(s->rx), cap = pc_ringbuf_capacity(s->rx), len;
	const uint8_t *rp;
	ptrdiff_t back;

	if (!s->ref_head)
		return space;
	rp = pc_ringbuf_read_span(s->rx, &len);
	back = (rp - s->sh->refs[s->ref_head - 1].p) % (ptrdiff_t)cap;
	if (back <= 0)
		back += (ptrdiff_t)cap;
	return (size_t)back < space ? space - (size_t)back : 0;
}

/* A read brings at most one ring per turn, so output is written before
 * much more input is taken; bytes completing in bulk must not pile up
 * replies beyond what the socket refused. Returns true when it wrote. */
static bool flush_early(struct pc_session *s)
{
	if (net_session_queued(s) < s->sh->cfg->high_water / 2 || (s->flags & NS_WBLOCKED))
		return false;
	net_session_flush(s);
	return true;
}

/* Copy n bytes into the input ring and decode them there (see took_in),
 * while none of the `stop` flags is set. Returns the bytes taken. */
static size_t copy_in(struct pc_session *s, const uint8_t *p, size_t n, unsigned stop,
		      bool decode)
{
	size_t took = 0, len;

	while (took < n && !(s->flags & stop)) {
		if (flush_early(s) && (s->flags & stop))
			break;
		if (!s->rx && !(s->rx = net_session_buf_get(s->sh, s->sh->cfg->rx_buffer))) {
			net_session_abort(s, PC_CLOSE_NOMEM);
			break;
		}
		/* Replies pointing at every free byte: give them their own copy. */
		if (s->ref_head && !rx_room(s) && net_session_materialize(s)) {
			net_session_abort(s, PC_CLOSE_NOMEM);
			break;
		}
		uint8_t *dst = pc_ringbuf_write_span(s->rx, &len);
		len = len < rx_room(s) ? len : rx_room(s);
		if (!len)
			break; /* full: the rest waits for the output to drain */
		len = len < n - took ? len : n - took;
		memcpy(dst, p + took, len);
		took += len;
		took_in(s, len, decode);
	}
	return took;
}

/* took bytes of a receive buffer were used where they lie. */
static size_t in_place_took(struct pc_session *s, size_t took)
{
	struct net_shard *sh = s->sh;

	NET_STAT_ADD(sh, bytes_in, took);
	if (took && (sh->idle_ticks || sh->hb_ticks))
		s->last_rx = (uint32_t)net_tick();
	return took;
}

/* Frames the session layer answers itself (dispatch()): they end a burst. */
static bool layer_frame(const struct net_shard *sh, const struct pc_frame *f)
{
	return (f->flags & PC_FRAME_HEARTBEAT) || (f->msg_id == PC_MSG_STATS && sh->cfg->stats_frames);
}

/* Up to PC_SESSION_BURST whole application frames from the start of p
 * into f, one after another; *count says how many. Returns 0, or what
 * decoding the frame after them said (-EAGAIN incomplete, a refusal); a
 * layer frame after them returns 0 with f[*count] decoded. */
static int parse_burst(const struct pc_session *s, const uint8_t *p, size_t n, struct pc_frame *f,
		       unsigned *count)
{
	const struct net_shard *sh = s->sh;
	size_t at = 0;
	unsigned c = 0;
	int rc = 0;

	while (c < PC_SESSION_BURST && at < n) {
		rc = pc_frame_parse(p + at, n - at, sh->max_body, &f[c]);
		if (rc || layer_frame(sh, &f[c]))
			break;
		at += pc_frame_size(&f[c++]);
	}
	*count = c;
	return c == PC_SESSION_BURST ? 0 : rc;
}

/* Hand count frames, the first at p, to on_frames; they may be lent
 * (refs_open) as one span. Returns the bytes of those it took; the rest
 * are left unread, the session paused for them. */
static size_t offer_burst(struct pc_session *s, const uint8_t *p, const struct pc_frame *f,
			  unsigned count)
{
	struct net_shard *sh = s->sh;
	const struct pc_server_cfg *cfg = sh->cfg;
	const struct pc_frame *last;
	struct pc_metric *lat = net_server_latency(sh->srv);
	uint64_t t0 = PC_UNLIKELY(lat) ? pc_now_ns() : 0;
	size_t took;

	refs_open(s, p, (size_t)(f[count - 1].body + f[count - 1].len - p));
	took = cfg->on_frames(s, f, count, cfg->user);
	sh->ref_owner = NULL;
	if (PC_UNLIKELY(lat)) {
		/* A burst's time, shared evenly by its frames. */
		uint64_t each = pc_elapsed(pc_now_ns(), t0) / count;

		for (unsigned i = 0; i < count; i++)
			pc_metric_observe(lat, sh->index, each);
	}
	took = took < count ? took : count;
	NET_STAT_ADD(sh, frames_in, took);
	if (took < count)
		pc_session_pause_read(s);
	if (!took)
		return 0;
	last = &f[took - 1];
	return (size_t)(last->body + last->len - p);
}

/* Whole frames decoded straight from the receive buffer, for a session
 * that holds no input: no copy into the input ring. It stops where
 * input_frames() would, or at an incomplete frame. Returns the bytes
 * consumed; the caller copies the rest into the input ring. bursts: the
 * application frames go to on_frames, PC_SESSION_BURST at a time (each
 * caller below is this loop compiled for one of the two).
 *
 * Replies may point into the buffer, as into the input ring: the feed
 * then asks the reactor to keep it until the turn's flush has written
 * them (pc_reactor_recv_keep). Copying bodies out instead cost 13% of the
 * server's time at 4 KiB (memmove); writing before the buffer returns
 * costs a sendmsg per completion, often one per frame. */
PC_INLINE size_t decode_here(struct pc_session *s, const uint8_t *p, size_t n, bool bursts)
{
	struct net_shard *sh = s->sh;
	struct pc_frame f[bursts ? PC_SESSION_BURST : 1];
	size_t took = 0, k;
	unsigned count = 0;

	/* No input held: no incomplete frame, whatever is left of its mark. */
	s->flags &= (uint16_t)~NS_PARTIAL;
	while (took < n && !(s->flags & (NS_DEAD | NS_CLOSING | NS_FIN | NS_HELD))) {
		if (flush_early(s))
			continue;
		if (net_session_queued(s) >= sh->cfg->high_water) {
			net_session_pause(s);
			break;
		}
		int rc = bursts ? parse_burst(s, p + took, n - took, f, &count)
				: pc_frame_parse(p + took, n - took, sh->max_body, f);
		if (bursts && count) {
			k = offer_burst(s, p + took, f, count);
			took += k;
			if (!k || (s->flags & NS_HELD))
				break; /* the rest into the input ring, for the resume */
			continue; /* a frame the layer answers, or more */
		}
		if (rc == -EAGAIN)
			break;
		if (rc) {
			refuse_frame(s, rc);
			break;
		}
		if (!offer_frame(s, f, true))
			break; /* into the input ring, for the resume */
		took += pc_frame_size(f);
	}
	return in_place_took(s, took);
}

static size_t decode_in_place(struct pc_session *s, const uint8_t *p, size_t n)
{
	return decode_here(s, p, n, false);
}

static size_t decode_in_bursts(struct pc_session *s, const uint8_t *p, size_t n)
{
	return decode_here(s, p, n, true);
}

/* A raw session's bytes offered where they were received, for a session
 * that holds no input, as input_raw() offers the input ring's: a handler
 * that takes every byte (kv's) then never needs a ring, nor the copy into
 * it. It stops where input_raw() would; *starved says the handler used
 * none of what is left, which then waits for more before it is offered
 * again. Returns the bytes used. */
static size_t use_in_place(struct pc_session *s, const uint8_t *p, size_t n, bool *starved)
{
	struct net_shard *sh = s->sh;
	size_t took = 0, used;

	while (took < n && !(s->flags & (NS_DEAD | NS_CLOSING | NS_FIN | NS_HELD))) {
		if (net_session_queued(s) >= sh->cfg->high_water) {
			net_session_pause(s);
			break;
		}
		refs_open(s, p + took, n - took);
		used = sh->cfg->on_data(s, p + took, n - took, sh->cfg->user);
		sh->ref_owner = NULL;
		if (!used) {
			*starved = true;
			break;
		}
		took += used < n - took ? used : n - took;
	}
	return in_place_took(s, took);
}

/* Bytes that complete the frame begun in the input ring (its header
 * first), or 0 when the ring holds more than that or a bad header (then
 * everything is copied, and decoding there reports it). */
static size_t rx_frame_rest(const struct pc_session *s)
{
	uint8_t h[PC_FRAME_HEADER_LEN];
	size_t used = pc_ringbuf_used(s->rx);
	struct pc_frame f;

	if (used < sizeof(h))
		return sizeof(h) - used;
	if (pc_ringbuf_peek(s->rx, h, sizeof(h)) ||
	    pc_frame_header_check(h, sizeof(h), s->sh->max_body, &f))
		return 0;
	return pc_frame_size(&f) > used ? pc_frame_size(&f) - used : 0;
}

/* A frame begun in an earlier buffer: copy only what completes it, so
 * that the frames after it can be decoded in place. */
static size_t complete_frame(struct pc_session *s, const uint8_t *p, size_t n)
{
	size_t took = 0, want, k;

	while (took < n && s->rx && pc_ringbuf_used(s->rx) && !(s->flags & NS_NO_READ) &&
	       (want = rx_frame_rest(s))) {
		want = want < n - took ? want : n - took;
		k = copy_in(s, p + took, want, NS_NO_READ, true);
		took += k;
		if (k < want)
			break;
	}
	return took;
}

/* Write what s queued now rather than at the end of the turn: still one
 * send per session and turn (the turn's flush finds it off its list when
 * it was the last queued, else with nothing left to write), and the
 * client gets its answers while the shard reads the other sessions, as a
 * plain server's would. */
static void answer_now(struct pc_session *s)
{
	struct net_shard *sh = s->sh;

	if ((s->flags & NS_DIRTY) && sh->dirty == s->slot + 1) {
		sh->dirty = s->dirty_next;
		s->flags &= (uint16_t)~NS_DIRTY;
	}
	net_session_flush(s);
}

/* Replies lent from a receive buffer that is about to be reused. The
 * reactor's provided buffer (write_now false) may stay until the turn's
 * flush has written them, as every flush writes or copies them; the
 * shard's scratch buffer (write_now true) is read into again by the next
 * session, so they are written, or copied where the socket is full, now.
 * Without the turn's flush queued (no memory for the task) they are
 * copied now too. */
static void lent_settle(struct pc_session *s, bool write_now)
{
	if (!s->ref_head || (s->flags & NS_DEAD))
		return;
	if (write_now)
		answer_now(s);
	else if ((s->flags & NS_DIRTY) && s->sh->flush_queued)
		pc_reactor_recv_keep(s->sh->r);
	else if (net_session_materialize(s))
		net_session_abort(s, PC_CLOSE_NOMEM);
}

/* Bytes received into a buffer that is not the session's: complete the
 * frame begun in the input ring, decode whole frames where they lie,
 * copy what is left (an incomplete frame, or frames a pause or a hold
 * left) into the input ring. Returns the bytes taken. */
static size_t feed_in(struct pc_session *s, const uint8_t *p, size_t n, bool write_now)
{
	bool raw = s->sh->cfg->raw, starved = false;
	bool held = raw && net_budget_held(s);
	size_t took = 0;

	if (s->flags & NS_NO_READ)
		return copy_in(s, p, n, NS_NO_READ, true);
	if (!raw)
		took = complete_frame(s, p, n);
	if (took < n && !(s->flags & NS_NO_READ) && (!s->rx || !pc_ringbuf_used(s->rx))) {
		if (raw)
			took += use_in_place(s, p + took, n - took, &starved);
		else if (s->sh->cfg->on_frames)
			took += decode_in_bursts(s, p + took, n - took);
		else
			took += decode_in_place(s, p + took, n - took);
		lent_settle(s, write_now);
	}
	if (took < n) {
		took += copy_in(s, p + took, n - took, NS_DEAD | NS_CLOSING | NS_FIN, !starved);
	} else if (!(s->flags & NS_DEAD)) {
		/* Frames used in place leave nothing held. A raw handler may
		 * hold input aside (pc_session_hold_input): the budget looks
		 * at once, as after a read into the ring, not only at the
		 * turn's end, when a turn's receives may have passed it many
		 * times over. */
		net_budget_settle(s->sh, raw && (held || net_budget_held(s)));
		if (!s->ref_head)
			net_session_buf_release(s->sh, &s->rx);
	}
	return took;
}

static size_t feed(struct pc_session *s, const uint8_t *p, size_t n, bool write_now)
{
	struct pc_session *outer = s->sh->feeding;
	size_t took;

	s->sh->feeding = s;
	took = feed_in(s, p, n, write_now);
	s->sh->feeding = outer;
	return took;
}

size_t net_session_feed(struct pc_session *s, const uint8_t *p, ssize_t n)
{
	/* The reactor reports an error once, whatever it is: it ends the
	 * session (a receive does not complete with "nothing yet"). */
	if (n <= 0) {
		read_nothing(s, n ? ECONNRESET : 0);
		return 0;
	}
	return feed(s, p, (size_t)n, false);
}

/* Whether the next read goes into the shard's scratch buffer rather than
 * the input ring: input with nothing buffered, or with the start of a
 * frame whose rest fits there (a larger one is read straight into its
 * ring). Input is then used where it was read and rings hold only
 * incomplete tails: every session reads into one hot buffer, as a plain
 * server's do, instead of into a ring of its own (64 connections of
 * 4 KiB echoes: 4 MiB of rings, 0.70x Peer/epoll_echo). */
static bool reads_scratch(const struct pc_session *s)
{
	size_t rest;

	if (!s->rx || !pc_ringbuf_used(s->rx))
		return true;
	if (s->sh->cfg->raw)
		return false;
	rest = rx_frame_rest(s);
	return rest && rest <= PC_SERVER_RX_BUFFER;
}

static void read_scratch(struct pc_session *s)
{
	/* A raw session's unused rest goes to its empty input ring whole: no
	 * more than the ring holds (frames grow theirs as they need). */
	size_t max = s->sh->cfg->raw && s->sh->cfg->rx_buffer < PC_SERVER_RX_BUFFER
			     ? s->sh->cfg->rx_buffer
			     : PC_SERVER_RX_BUFFER;
	ssize_t n = recv(s->fd, s->sh->scratch, max, MSG_DONTWAIT);

	if (n > 0)
		feed(s, s->sh->scratch, (size_t)n, true);
	else
		read_nothing(s, n ? errno : 0);
}

/* After FIN: read and drop until the client's EOF. */
static void discard_in(struct pc_session *s)
{
	ssize_t n = recv(s->fd, s->sh->scratch, PC_SERVER_RX_BUFFER, MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		net_session_abort(s, (enum pc_close_reason)s->why);
}

void net_session_discard(struct pc_session *s)
{
	for (int i = 0; i < NET_DISCARD_READS; i++)
		if (recv(s->fd, s->sh->scratch, PC_SERVER_RX_BUFFER, MSG_DONTWAIT) <= 0)
			return;
}

void net_session_read_once(struct pc_session *s)
{
	/* Replies still in the input ring: reading now could overwrite them;
	 * the flush at the end of this turn frees them, and the readiness,
	 * level-triggered, comes back next turn. */
	if ((s->flags & (NS_NO_READ | NS_RECV)) || s->ref_head)
		return;
	if (reads_scratch(s))
		read_scratch(s);
	else
		read_in(s);
}

/* Read, and answer what the read brought at once (answer_now). */
static void read_and_answer(struct pc_session *s)
{
	net_session_read_once(s);
	if (!(s->flags & NS_DEAD) && (s->flags & NS_DIRTY) && s->sh->dirty == s->slot + 1)
		answer_now(s); /* else nothing queued, or queued before the read: the flush task's */
}

void net_session_io(struct pc_reactor *r, int fd, unsigned events, void *arg)
{
	struct pc_session *s = arg;

	(void)r;
	(void)fd;
	s->busy++;
	if (events & PC_EV_OUT)
		net_session_flush(s);
	if (!(s->flags & NS_DEAD) && (events & (PC_EV_IN | PC_EV_ERR | PC_EV_HUP))) {
		if (s->flags & NS_FIN)
			discard_in(s);
		else if (events & PC_EV_IN)
			read_and_answer(s);
		else if (!(events & PC_EV_OUT) || !net_session_queued(s))
			/* Error or hang-up with nothing to write that would
			 * reveal it: level-triggered, it would fire forever. */
			net_session_abort(s, PC_CLOSE_RESET);
	}
	if (!(s->flags & NS_DEAD))
		net_session_settle(s);
	net_session_unwind(s);
}
