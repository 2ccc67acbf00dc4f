/* SPDX-License-Identifier: MIT */
/* percore net: a session's life: creation, ids, timers, close, and the
 * public calls that queue output. Bytes in and out: session_io.c. */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net.h"
#include "percore/clock.h"
#include "percore/fb_error.h"
#include "percore/outbox.h"
#include "percore/shard.h"
#include "percore/shared_buf.h"

#define SLOT_BITS 24
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define NO_SLOT UINT32_MAX

_Static_assert(sizeof(struct pc_session) <= 128, "an idle session fits two cache lines");

static const char *const reason_names[PC_CLOSE_REASONS] = {
	[PC_CLOSE_PEER] = "peer",           [PC_CLOSE_LOCAL] = "local",
	[PC_CLOSE_RESET] = "reset",         [PC_CLOSE_IDLE] = "idle",
	[PC_CLOSE_MALFORMED] = "malformed", [PC_CLOSE_OVERSIZE] = "oversize",
	[PC_CLOSE_NOMEM] = "nomem",         [PC_CLOSE_SHUTDOWN] = "shutdown",
	[PC_CLOSE_FRAME_TIMEOUT] = "frame_timeout",
};

const char *pc_close_reason_name(enum pc_close_reason why)
{
	if (why == PC_CLOSE_MOVED)
		return "moved";
	return (unsigned)why < PC_CLOSE_REASONS ? reason_names[why] : "?";
}

/* ---- ids ------------------------------------------------------------------- */

static int slot_alloc(struct net_shard *sh, struct pc_session *s)
{
	uint32_t i = sh->free_slot;

	if (i != NO_SLOT) {
		sh->free_slot = sh->slots[i].next_free;
	} else {
		if (sh->nslots == sh->slot_cap) {
			uint32_t cap = sh->slot_cap ? sh->slot_cap * 2 : 64;
			struct net_slot *n;

			if (cap > SLOT_MASK + 1u)
				return -ENOMEM;
			n = realloc(sh->slots, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			sh->slots = n;
			sh->slot_cap = cap;
		}
		i = sh->nslots++;
		sh->slots[i].gen = 0;
	}
	/* A fresh generation each use: an old id never finds the new
	 * occupant (0 is skipped so that no id is 0). */
	uint32_t gen = (sh->slots[i].gen + 1) & SLOT_MASK;
	sh->slots[i].gen = gen ? gen : 1;
	sh->slots[i].s = s;
	sh->slots[i].held_app = 0;
	s->slot = i;
	return 0;
}

static void slot_free(struct net_shard *sh, uint32_t i)
{
	sh->slots[i].s = NULL;
	sh->slots[i].next_free = sh->free_slot;
	sh->free_slot = i;
}

void net_each_session(struct net_shard *sh, void (*fn)(struct pc_session *s))
{
	for (uint32_t i = 0; i < sh->nslots; i++)
		if (sh->slots[i].s)
			fn(sh->slots[i].s);
}

struct pc_session *net_slot_find(struct net_shard *sh, uint64_t id)
{
	uint32_t i = (uint32_t)id & SLOT_MASK;
	const struct net_slot *sl;

	if (pc_session_id_shard(id) != sh->index || i >= sh->nslots)
		return NULL;
	sl = &sh->slots[i];
	return sl->s && sl->gen == ((id >> SLOT_BITS) & SLOT_MASK) ? sl->s : NULL;
}

/* What one session costs the shard, without buffers: its slab object and
 * its id slot. */
static void session_mem_update(struct net_shard *sh)
{
	uint64_t b = (uint64_t)sh->nsessions * sh->slab->_stride +
		     (uint64_t)sh->slot_cap * sizeof(struct net_slot);

	__atomic_store_n(&sh->stats.session_bytes, b, __ATOMIC_RELAXED);
}

/* ---- timers -------------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Ticks left until span has passed since stamp; 0 once it has. now is the
 * tick the wheel is processing, which lags the clock that took the stamp:
 * a stamp newer than now has no age (pc_elapsed32), never a wrapped one,
 * so a session that received bytes within the span is never found quiet.
 * A stamp is the tick its clock reading fell in, up to a tick before the
 * bytes came: one tick more keeps every deadline from being early. */
static uint64_t ticks_left(uint64_t now, uint32_t stamp, uint64_t span)
{
	uint64_t age = pc_elapsed32((uint32_t)now, stamp);

	return age <= span ? span + 1 - age : 0;
}

/* Whether the frame deadline runs: an incomplete frame is buffered and
 * the session still reads. Paused (its output is not drained), draining or
 * closing, the missing bytes are not the client's to send. */
static bool frame_timed(const struct pc_session *s)
{
	return s->sh->frame_ticks && (s->flags & NS_PARTIAL) &&
	       !(s->flags & (NS_PAUSED | NS_EOF | NS_CLOSING | NS_DRAIN));
}

/* The next tick a check is due, UINT64_MAX for none. A session quiet for
 * a heartbeat interval or more is probed every interval (from now: the
 * probe due now has just been sent), so no "last probe" is kept. */
static uint64_t next_check(const struct pc_session *s, uint64_t now)
{
	const struct net_shard *sh = s->sh;
	uint64_t at = UINT64_MAX;

	if (sh->idle_ticks)
		at = now + ticks_left(now, s->last_rx, sh->idle_ticks);
	if (sh->hb_ticks) {
		uint64_t left = ticks_left(now, s->last_rx, sh->hb_ticks);

		at = min_u64(at, now + (left ? left : sh->hb_ticks));
	}
	if (frame_timed(s))
		at = min_u64(at, now + ticks_left(now, s->frame_t0, sh->frame_ticks));
	return at;
}

/* Why the frame deadline closes a session, in the error reply. */
static const char frame_late[] = "frame incomplete at the frame timeout";

/* Reads only record the time of the last byte (and of a frame's first);
 * this timer, one per session, fires at the earliest deadline and re-arms
 * itself from those records, so the data path never touches the wheel but
 * when a frame is left incomplete. */
static void session_timer(struct pc_wheel *w, struct pc_timer *t)
{
	struct pc_session *s = (struct pc_session *)((char *)t - offsetof(struct pc_session, timer));
	struct net_shard *sh = s->sh;
	uint64_t now = pc_wheel_now(w), at;

	s->busy++;
	if (s->flags & NS_FIN) {
		net_session_discard(s); /* linger over: what came, so close() sends no reset */
		net_session_abort(s, (enum pc_close_reason)s->why);
	} else if (sh->idle_ticks && !ticks_left(now, s->last_rx, sh->idle_ticks)) {
		net_session_abort(s, PC_CLOSE_IDLE);
	} else if (frame_timed(s) && !ticks_left(now, s->frame_t0, sh->frame_ticks)) {
		net_session_refuse(s, PC_CLOSE_FRAME_TIMEOUT, 0, frame_late, sizeof(frame_late) - 1);
	} else {
		if (sh->hb_ticks && !ticks_left(now, s->last_rx, sh->hb_ticks) &&
		    !(s->flags & NS_CLOSING))
			net_session_ping(s);
		at = next_check(s, now);
		if (at != UINT64_MAX)
			pc_wheel_schedule(w, t, at);
	}
	net_session_unwind(s);
}

void net_session_partial(struct pc_session *s, bool fresh)
{
	struct net_shard *sh = s->sh;
	uint64_t now, at;

	/* The stamp serves the frame deadline and the input budget (which
	 * drops the oldest incomplete frames first); without either, this
	 * costs nothing. */
	if ((!sh->frame_ticks && sh->max_input == UINT64_MAX) ||
	    ((s->flags & NS_PARTIAL) && !fresh))
		return;
	now = net_tick();
	s->flags |= NS_PARTIAL;
	s->frame_t0 = (uint32_t)now;
	if (!sh->frame_ticks)
		return;
	/* The timer may be set for a later check (or none): bring it forward. */
	at = now + ticks_left(now, s->frame_t0, sh->frame_ticks);
	if (!pc_timer_active(&s->timer) || pc_timer_expiry(&s->timer) > at)
		pc_wheel_schedule(sh->w, &s->timer, at);
}

/* ---- life ------------------------------------------------------------------ */

size_t net_session_bytes(void)
{
	return sizeof(struct pc_session);
}

struct pc_session *net_session_new(struct net_shard *sh, int fd, const struct sockaddr *peer)
{
	struct pc_session *s = pc_slab_alloc(sh->slab);

	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->sh = sh;
	s->fd = fd;
	s->why = PC_CLOSE_REASONS; /* not known yet */
	s->family = (uint8_t)peer->sa_family;
	s->port = peer->sa_family == AF_INET ? ((const struct sockaddr_in *)peer)->sin_port :
					      ((const struct sockaddr_in6 *)peer)->sin6_port;
	net_addr_key(peer, s->addr);
	pc_timer_init(&s->timer, session_timer);
	if (slot_alloc(sh, s)) {
		pc_slab_free(sh->slab, s);
		return NULL;
	}
	if (net_session_watch(s)) {
		slot_free(sh, s->slot);
		pc_slab_free(sh->slab, s);
		return NULL;
	}
	s->events = PC_EV_IN;
	sh->nsessions++;
	session_mem_update(sh);
	NET_STAT_ADD(sh, sessions, 1);
	if (sh->idle_ticks || sh->hb_ticks) {
		uint64_t now = net_tick();

		s->last_rx = (uint32_t)now;
		pc_wheel_schedule(sh->w, &s->timer, next_check(s, now));
	}
	return s;
}

static void unlink_dirty(struct net_shard *sh, struct pc_session *s)
{
	for (uint32_t *p = &sh->dirty; *p; p = &net_dirty_at(sh, *p)->dirty_next)
		if (*p == s->slot + 1) {
			*p = s->dirty_next;
			return;
		}
}

static void session_free(struct pc_session *s)
{
	struct net_shard *sh = s->sh;
	enum pc_close_reason why = (enum pc_close_reason)s->why;
	/* moved: the connection lives on, on another shard (session_move.c) */
	bool moved = why == PC_CLOSE_MOVED;

	if (PC_UNLIKELY(sh->moves))
		net_move_forget(s);
	if ((s->flags & NS_OPEN) && sh->cfg->on_close)
		sh->cfg->on_close(s, why, sh->cfg->user);
	if (!moved)
		close(s->fd);
	pc_wheel_cancel(sh->w, &s->timer);
	if (s->flags & NS_DIRTY)
		unlink_dirty(sh, s);
	if (s->flags & NS_PAUSED)
		NET_STAT_SUB(sh, paused, 1);
	/* References die with it (the shard's list forgets them at the end
	 * of the flush); their bytes were queued all the same. */
	NET_STAT_SUB(sh, queued_bytes, net_session_queued(s));
	if (s->tx)
		net_buf_put(&sh->pool, s->tx);
	bool held = net_budget_held(s);

	net_budget_forget(s);
	NET_STAT_SUB(sh, buffered_bytes, net_budget_held(s));
	*net_held_app(s) = 0;
	if (s->rx)
		net_buf_put(&sh->pool, s->rx);
	if (sh->srv->addrs && !moved)
		net_addrtab_release(sh->srv->addrs, s->addr);
	net_reply_forget(s);
	slot_free(sh, s->slot);
	pc_slab_free(sh->slab, s);
	sh->nsessions--;
	session_mem_update(sh);
	NET_STAT_SUB(sh, sessions, 1);
	if (moved) {
		NET_STAT_ADD(sh, moved_out, 1);
	} else {
		NET_STAT_ADD(sh, closed, 1);
		NET_STAT_ADD(sh, closed_reason[why], 1);
	}
	__atomic_store_n(&sh->stats.buffer_bytes, sh->pool.busy_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->stats.pool_bytes, sh->pool.idle_bytes, __ATOMIC_RELAXED);
	net_budget_settle(sh, held);
	if (sh->draining && !sh->nsessions)
		net_shard_drained(sh);
}

void net_session_abort(struct pc_session *s, enum pc_close_reason why)
{
	if (s->flags & NS_DEAD)
		return;
	if (s->why == PC_CLOSE_REASONS)
		s->why = (uint8_t)why;
	s->flags |= NS_DEAD;
	/* No callback may run for it any more, even one collected this turn. */
	pc_reactor_del(s->sh->r, s->fd);
	s->events = 0;
	if (!s->busy)
		session_free(s);
}

void net_session_unwind(struct pc_session *s)
{
	if (--s->busy == 0 && (s->flags & NS_DEAD))
		session_free(s);
}

void net_session_opened(struct pc_session *s)
{
	const struct pc_server_cfg *cfg = s->sh->cfg;

	s->flags |= NS_OPEN;
	if (!cfg->on_open)
		return;
	s->busy++;
	cfg->on_open(s, cfg->user);
	net_session_unwind(s);
}

/* Server draining: answer what has arrived, then FIN once flushed. */
void net_session_drain(struct pc_session *s)
{
	s->busy++;
	net_session_read_once(s);
	if (!(s->flags & NS_DEAD)) {
		s->flags |= NS_DRAIN;
		if (s->why == PC_CLOSE_REASONS)
			s->why = PC_CLOSE_SHUTDOWN;
		net_session_settle(s);
	}
	net_session_unwind(s);
}

/* ---- the public calls ---------------------------------------------------- */

uint64_t pc_session_id(const struct pc_session *s)
{
	const struct net_shard *sh = s->sh;

	return (uint64_t)sh->index << 48 | (uint64_t)sh->slots[s->slot].gen << SLOT_BITS | s->slot;
}

struct pc_session *pc_session_find(uint64_t id)
{
	struct pc_session *s = net_self ? net_slot_find(net_self, id) : NULL;

	return s && !(s->flags & (NS_CLOSING | NS_FIN | NS_DEAD)) ? s : NULL;
}

void *pc_session_data(const struct pc_session *s)
{
	return s->data;
}

void pc_session_set_data(struct pc_session *s, void *data)
{
	s->data = data;
}

int pc_session_peer(const struct pc_session *s, struct sockaddr_storage *ss, socklen_t *len)
{
	memset(ss, 0, sizeof(*ss));
	if (s->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = s->port;
		memcpy(&a->sin_addr, s->addr + 12, 4);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = s->port;
		memcpy(&a->sin6_addr, s->addr, NET_ADDR_LEN);
		*len = sizeof(*a);
	}
	return 0;
}

int pc_session_local(const struct pc_session *s, struct sockaddr_storage *ss, socklen_t *len)
{
	*len = sizeof(*ss);
	if (getsockname(s->fd, (struct sockaddr *)ss, len))
		return -errno;
	return 0;
}

int pc_session_fd(const struct pc_session *s)
{
	return s->fd;
}

size_t pc_session_queued(const struct pc_session *s)
{
	return net_session_queued(s);
}

void pc_session_buffers(const struct pc_session *s, struct pc_session_buffers *b)
{
	b->in_used = s->rx ? pc_ringbuf_used(s->rx) : 0;
	b->in_size = s->rx ? pc_ringbuf_capacity(s->rx) : 0;
	b->out_used = net_session_queued(s);
	b->out_size = s->tx ? pc_ringbuf_capacity(s->tx) : 0;
}

/* A frame through net_session_queue: its pieces may stay where they are
 * (references), or the ring must be made or grown first. Out of line, so
 * that the usual copy does not pay for this frame's arrays. */
static __attribute__((noinline)) int send_queued(struct pc_session *s, uint32_t msg_id,
						 uint8_t flags, const struct iovec *iov,
						 int iovcnt, size_t len)
{
	struct iovec all[17];
	uint8_t h[PC_FRAME_HEADER_LEN];
	int rc = pc_frame_header_encode(h, msg_id, flags, len);

	if (rc)
		return rc;
	all[0].iov_base = h;
	all[0].iov_len = sizeof(h);
	for (int i = 0; i < iovcnt; i++)
		all[i + 1] = iov[i];
	return net_session_queue(s, all, iovcnt + 1, sizeof(h) + len);
}

int pc_session_sendv(struct pc_session *s, uint32_t msg_id, uint8_t flags,
		     const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	uint8_t *p;
	int rc = 0;

	if (iovcnt < 0 || iovcnt > 16 || (iovcnt && !iov))
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	p = net_session_tail(s, PC_FRAME_HEADER_LEN + len);
	if (p && !pc_frame_header_encode(p, msg_id, flags, len)) {
		p += PC_FRAME_HEADER_LEN;
		for (int i = 0; i < iovcnt; i++) {
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
		net_session_tail_commit(s, PC_FRAME_HEADER_LEN + len);
	} else {
		rc = send_queued(s, msg_id, flags, iov, iovcnt, len);
	}
	if (!rc)
		NET_STAT_ADD(s->sh, frames_out, 1);
	return rc;
}

int pc_session_send_flags(struct pc_session *s, uint32_t msg_id, uint8_t flags,
			  const void *body, size_t len)
{
	struct iovec iov = { .iov_base = (void *)body, .iov_len = len };

	return pc_session_sendv(s, msg_id, flags, &iov, len ? 1 : 0);
}

int pc_session_send(struct pc_session *s, uint32_t msg_id, const void *body, size_t len)
{
	return pc_session_send_flags(s, msg_id, 0, body, len);
}

int pc_session_send_frames(struct pc_session *s, const struct pc_frame *f, size_t n)
{
	size_t i = 0, first;
	int rc = 0;

	while (i < n && !rc) {
		const uint8_t *start = f[i].body - PC_FRAME_HEADER_LEN, *end = f[i].body + f[i].len;

		for (first = i++; i < n && f[i].body - PC_FRAME_HEADER_LEN == end; i++)
			end = f[i].body + f[i].len;
		rc = pc_session_write(s, start, (size_t)(end - start));
		if (!rc)
			NET_STAT_ADD(s->sh, frames_out, i - first);
	}
	return rc;
}

int pc_session_write(struct pc_session *s, const void *data, size_t len)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };

	if (!len)
		return 0;
	uint8_t *p = net_session_tail(s, len);
	if (p) {
		memcpy(p, data, len);
		net_session_tail_commit(s, len);
		return 0;
	}
	return net_session_queue(s, &iov, 1, len);
}

void pc_session_close(struct pc_session *s)
{
	if (s->flags & (NS_CLOSING | NS_FIN | NS_DEAD))
		return;
	s->flags |= NS_CLOSING;
	if (s->why == PC_CLOSE_REASONS)
		s->why = PC_CLOSE_LOCAL;
	/* Settle (FIN, interest) once this turn's output is written: the
	 * flush task visits every dirty session. */
	net_session_mark_dirty(s);
}

int net_session_refuse(struct pc_session *s, enum pc_close_reason why, uint32_t msg_id,
		       const void *body, size_t len)
{
	int rc;

	if (s->flags & (NS_CLOSING | NS_FIN | NS_DEAD))
		return -EPIPE;
	/* The refusal is why it ends, even after the client's EOF. */
	s->why = (uint8_t)why;
	rc = pc_session_send_flags(s, msg_id, PC_FRAME_ERROR, body, len);
	/* Nothing can be queued after it: the reply is written once the
	 * whole queue is (session_out.c counts it then). */
	if (!rc)
		s->flags |= NS_REPLY_OWED;
	pc_session_close(s);
	return rc;
}

int pc_session_refuse(struct pc_session *s, enum pc_close_reason why, uint32_t msg_id,
		      const void *body, size_t len)
{
	if (why != PC_CLOSE_MALFORMED && why != PC_CLOSE_OVERSIZE)
		return -EINVAL;
	if (s->flags & (NS_CLOSING | NS_FIN | NS_DEAD))
		return -EPIPE;
	if (why == PC_CLOSE_OVERSIZE)
		NET_STAT_ADD(s->sh, oversize, 1);
	else
		NET_STAT_ADD(s->sh, malformed, 1);
	return net_session_refuse(s, why, msg_id, body, len);
}

int pc_session_error(struct pc_session *s, int32_t code, const char *message, bool refuse)
{
	/* The Error's fixed part (offsets, vtable, padding) is under 64 bytes. */
	uint64_t space[(PC_SESSION_ERROR_MAX + 64) / 8];
	size_t n = message ? strlen(message) : 0, len = 0;
	struct pc_fb_builder b;
	const void *body;

	if (n > PC_SESSION_ERROR_MAX)
		return -EMSGSIZE;
	pc_fb_builder_init(&b, space, sizeof(space));
	pc_fb_error_build(&b, code, message, n);
	body = pc_fb_builder_data(&b, &len);
	if (!body)
		return -EMSGSIZE;
	if (refuse)
		return pc_session_refuse(s, PC_CLOSE_MALFORMED, PC_MSG_ERROR, body, len);
	return pc_session_send_flags(s, PC_MSG_ERROR, PC_FRAME_ERROR, body, len);
}

/* ---- across shards ---------------------------------------------------------- */

/* What travels in a shared buffer to the session's shard: its id, then
 * the encoded frame. */
struct send_to_msg {
	uint64_t id;
	uint32_t len;           /* frame bytes that follow */
	uint8_t frame[];
};

static void send_to_run(void *arg)
{
	struct pc_shared_buf *b = arg;
	const struct send_to_msg *m = pc_shared_buf_data(b);
	struct net_shard *sh = net_self;
	struct pc_session *s = sh ? net_slot_find(sh, m->id) : NULL;

	if (sh && (!s || pc_session_write(s, m->frame, m->len)))
		NET_STAT_ADD(sh, send_to_gone, 1);
	pc_shared_buf_put(b);
}

int pc_session_send_to(uint64_t id, uint32_t msg_id, uint8_t flags, const void *body, size_t len)
{
	struct net_shard *sh = net_self;
	unsigned to = pc_session_id_shard(id);
	struct pc_shared_buf *b;
	struct send_to_msg *m;
	int rc;

	if (!sh)
		return -EPERM;
	if (to >= sh->nshards)
		return -EINVAL;
	if (to == sh->index) {
		struct pc_session *s = net_slot_find(sh, id);

		return s ? pc_session_send_flags(s, msg_id, flags, body, len) : -ENOENT;
	}
	if (len > PC_FRAME_MAX_BODY_CAP)
		return -EMSGSIZE;
	b = pc_shared_buf_new(sizeof(*m) + PC_FRAME_HEADER_LEN + len);
	if (!b)
		return -ENOMEM;
	m = (struct send_to_msg *)(void *)b->data;
	m->id = id;
	m->len = (uint32_t)(PC_FRAME_HEADER_LEN + len);
	rc = pc_frame_header_encode(m->frame, msg_id, flags, len);
	if (!rc) {
		if (len)
			memcpy(m->frame + PC_FRAME_HEADER_LEN, body, len);
		rc = pc_shard_send(to, send_to_run, b);
	}
	if (rc)
		pc_shared_buf_put(b);
	return rc;
}
