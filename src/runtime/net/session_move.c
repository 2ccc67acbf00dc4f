/* SPDX-License-Identifier: MIT */
/* percore net: a session moving to another shard (pc_session_move).
 *
 * The connection stays; its session is rebuilt on the other shard. Here:
 *  1. the session stops reading (NS_HELD: on io_uring its multishot
 *     receive is cancelled, and what completes before the cancellation is
 *     kept back by the reactor);
 *  2. once its output is written and the kernel's receive has stopped,
 *     the bytes it did not consume (its input ring, then what the reactor
 *     kept back, then the client's EOF if one came) go into the move's
 *     record; the session leaves the reactor and is freed without closing
 *     its socket (on_close with PC_CLOSE_MOVED);
 *  3. the record goes to the other shard through the mesh.
 * There: a session on the same socket, on_moved with the application's
 * state, then those bytes, before anything the socket brings next. A
 * record the mesh refuses is taken in here instead, so the connection
 * and the application's state are never lost on the way.
 *
 * Step 2 runs at the end of the turn of the call; a session whose output
 * the client has not taken yet is looked at again by the flush that
 * empties it (net_move_written), one whose receive the kernel has not
 * finished cancelling at the next turn's end, with the shard's timer as
 * a fallback for both. Moves are rare: the shard keeps them in a list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/net.h"
#include "percore/listener.h"
#include "percore/outbox.h"

/* How often a move that could not queue its next look, or waits for its
 * output (whose last write looks again at once: net_move_written), looks
 * again all the same. */
#define MOVE_RETRY_NS 1000000ull
#define MOVE_OUTPUT_NS 100000000ull

struct net_move {
	struct net_move *next;
	struct pc_session *s;         /* NULL once it left */
	const struct pc_server_cfg *cfg;
	unsigned to;
	int fd;
	struct sockaddr_storage peer;
	uint8_t *in;                  /* input not consumed, in order */
	size_t in_len, in_cap;
	int end;                      /* after it: 0 nothing, 1 the client's EOF,
	                               * < 0 the receive's -errno */
	bool task;                    /* a look at the turn's end is queued */
	size_t state_len;
	uint8_t state[];
};

static void move_free(struct net_move *m)
{
	free(m->in);
	free(m);
}

static struct net_move **move_link(struct net_shard *sh, const struct pc_session *s)
{
	struct net_move **p = &sh->moves;

	while (*p && (*p)->s != s)
		p = &(*p)->next;
	return p;
}

bool net_moving(const struct pc_session *s)
{
	return s->sh->moves && *move_link(s->sh, s);
}

void net_move_forget(struct pc_session *s)
{
	struct net_move **p = move_link(s->sh, s), *m = *p;

	if (!m)
		return;
	*p = m->next;
	if (m->task)
		m->s = NULL; /* the queued look frees it */
	else
		move_free(m);
}

/* ---- the source shard -------------------------------------------------------- */

static int carry(struct net_move *m, const void *p, size_t n)
{
	if (m->in_cap - m->in_len < n) {
		size_t cap = m->in_cap ? m->in_cap : 4096;
		uint8_t *b;

		while (cap - m->in_len < n)
			cap *= 2;
		if (!(b = realloc(m->in, cap)))
			return -ENOMEM;
		m->in = b;
		m->in_cap = cap;
	}
	memcpy(m->in + m->in_len, p, n);
	m->in_len += n;
	return 0;
}

/* The reactor's kept-back bytes (pc_reactor_recv_take). */
static size_t carry_kept(struct pc_reactor *r, int fd, const void *p, ssize_t n, void *arg)
{
	struct net_move *m = arg;

	(void)r;
	(void)fd;
	if (m->end)
		return 0; /* nothing follows an end */
	if (n <= 0)
		m->end = n ? (int)n : 1;
	else if (carry(m, p, (size_t)n))
		m->end = -ENOMEM;
	return n > 0 ? (size_t)n : 0;
}

/* Everything the session received and did not consume, into m. */
static int collect(struct net_move *m)
{
	struct pc_session *s = m->s;
	struct net_shard *sh = s->sh;
	size_t used = s->rx ? pc_ringbuf_used(s->rx) : 0;

	if (used) {
		if (carry(m, pc_ringbuf_linearize(s->rx, used), used))
			return -ENOMEM;
		pc_ringbuf_consume(s->rx, used);
		NET_STAT_SUB(sh, buffered_bytes, used);
	}
	pc_reactor_recv_take(sh->r, s->fd, carry_kept, m);
	return m->end == -ENOMEM ? -ENOMEM : 0;
}

static void move_in(void *arg);

/* The session leaves: its record goes to the other shard (or, refused,
 * to this one). */
static void depart(struct net_move *m)
{
	struct pc_session *s = m->s;
	socklen_t len = sizeof(m->peer);

	if (collect(m) || pc_session_peer(s, &m->peer, &len)) {
		*move_link(s->sh, s) = m->next;
		move_free(m);
		net_session_abort(s, PC_CLOSE_NOMEM);
		return;
	}
	*move_link(s->sh, s) = m->next;
	m->fd = s->fd;
	m->s = NULL;
	s->why = PC_CLOSE_MOVED;
	net_session_abort(s, PC_CLOSE_MOVED);
	if (pc_shard_send_reply(m->to, move_in, m))
		move_in(m);
}

static void move_look(void *arg);

/* Look again at m: at the turn's end (waiting for the kernel), or when
 * the client has taken its output (net_move_written), with the shard's
 * timer as a fallback for both. */
static void look_later(struct net_move *m, bool output)
{
	struct net_shard *sh = m->s->sh;
	uint64_t after = output ? MOVE_OUTPUT_NS : MOVE_RETRY_NS;

	if (!output && !m->task && !pc_reactor_defer_end(sh->r, move_look, m)) {
		m->task = true;
		return;
	}
	if (m->task)
		return;
	if (pc_timer_active(&sh->move_timer) && pc_timer_expiry(&sh->move_timer) <=
	    pc_wheel_now(sh->w) + after / PC_REACTOR_TICK_NS)
		return;
	pc_reactor_timer_after(sh->r, &sh->move_timer, after);
}

void net_move_written(struct pc_session *s)
{
	struct net_move *m = *move_link(s->sh, s);

	if (m && !m->task && !pc_reactor_defer_end(s->sh->r, move_look, m))
		m->task = true;
}

/* The session is ending here after all (closed, killed, the server
 * draining): it stays, reading again as its state allows. */
static void move_cancel(struct net_move *m)
{
	struct pc_session *s = m->s;

	*move_link(s->sh, s) = m->next;
	move_free(m);
	s->flags &= (uint16_t)~NS_HELD;
	net_session_set_interest(s);
}

/* Go when nothing is left to write and nothing more can arrive. */
static void move_try(struct net_move *m)
{
	struct pc_session *s = m->s;

	if (s->flags & (NS_CLOSING | NS_FIN | NS_DRAIN | NS_EOF))
		return move_cancel(m);
	if (s->busy)
		return look_later(m, false);
	if (net_session_queued(s)) {
		bool dead;

		s->busy++;
		net_session_flush(s);
		dead = s->flags & NS_DEAD;
		net_session_unwind(s);
		if (dead)
			return; /* the write failed: closed, its move forgotten */
		if (m->task)
			return; /* written: the look it queued goes on */
		if (net_session_queued(s))
			return look_later(m, true);
	}
	if (!pc_reactor_recv_stopped(s->sh->r, s->fd))
		return look_later(m, false);
	depart(m);
}

static void move_look(void *arg)
{
	struct net_move *m = arg;

	m->task = false;
	if (!m->s) {
		move_free(m); /* the session closed meanwhile */
		return;
	}
	move_try(m);
}

static void moves_retry(struct pc_wheel *w, struct pc_timer *t)
{
	struct net_shard *sh = (struct net_shard *)((char *)t - offsetof(struct net_shard, move_timer));
	struct net_move *m = sh->moves, *next;

	(void)w;
	for (; m; m = next) {
		next = m->next;
		if (!m->task)
			move_try(m);
	}
}

void net_move_init(struct net_shard *sh)
{
	pc_timer_init(&sh->move_timer, moves_retry);
}

int pc_session_move(struct pc_session *s, unsigned to, const void *state, size_t len)
{
	struct net_shard *sh = s->sh;
	struct net_move *m, **tail;

	if (net_self != sh)
		return -EPERM;
	if (to >= sh->nshards || to == sh->index)
		return -EINVAL;
	if (!sh->cfg->on_moved)
		return -EOPNOTSUPP;
	if (len > PC_SESSION_MOVE_STATE_MAX)
		return -EMSGSIZE;
	if ((s->flags & (NS_DEAD | NS_CLOSING | NS_FIN | NS_EOF | NS_DRAIN | NS_HELD)) ||
	    sh->draining || net_reply_owed(s) || net_moving(s))
		return -EBUSY;
	if (!(m = calloc(1, sizeof(*m) + len)))
		return -ENOMEM;
	m->s = s;
	m->cfg = sh->cfg;
	m->to = to;
	m->fd = -1;
	m->state_len = len;
	if (len)
		memcpy(m->state, state, len);
	/* oldest first: the timer looks in the order they were asked */
	for (tail = &sh->moves; *tail; tail = &(*tail)->next)
		;
	*tail = m;
	s->flags |= NS_HELD;
	net_session_set_interest(s);
	if (pc_reactor_defer_end(sh->r, move_look, m) == 0)
		m->task = true;
	else
		look_later(m, true);
	return 0;
}

/* ---- the destination shard ------------------------------------------------ */

/* The connection could not be taken in: closed, and the application
 * told so it can free its state. */
static void move_lost(struct net_shard *sh, struct net_move *m)
{
	pc_socket_reset_on_close(m->fd);
	close(m->fd);
	if (sh)
		NET_STAT_ADD(sh, accept_errors, 1);
	m->cfg->on_moved(NULL, m->state, m->state_len, m->cfg->user);
	move_free(m);
}

/* What the old shard had not handed over yet, before anything newer. */
static void offer_carried(struct pc_session *s, const struct net_move *m)
{
	size_t off = 0;

	while (off < m->in_len && !(s->flags & NS_DEAD)) {
		size_t took = net_session_feed(s, m->in + off, (ssize_t)(m->in_len - off));

		if (!took)
			break;
		off += took;
	}
	if ((s->flags & NS_DEAD))
		return;
	if (off < m->in_len)
		/* Not taken (the application stopped reading at once): the
		 * bytes would be lost, so the session ends, saying why. */
		net_session_abort(s, PC_CLOSE_NOMEM);
	else if (m->end)
		net_session_feed(s, NULL, m->end > 0 ? 0 : m->end);
}

static void move_in(void *arg)
{
	struct net_move *m = arg;
	struct net_shard *sh = net_self;
	struct pc_session *s;

	if (!sh || sh->drained ||
	    (sh->cfg->max_sessions && sh->nsessions >= sh->cfg->max_sessions) ||
	    !(s = net_session_new(sh, m->fd, (const struct sockaddr *)&m->peer))) {
		move_lost(sh, m);
		return;
	}
	NET_STAT_ADD(sh, moved_in, 1);
	s->flags |= NS_OPEN;
	s->busy++;
	sh->cfg->on_moved(s, m->state, m->state_len, sh->cfg->user);
	offer_carried(s, m);
	if (!(s->flags & NS_DEAD)) {
		if (sh->draining)
			net_session_drain(s);
		else
			net_session_settle(s);
	}
	net_session_unwind(s);
	move_free(m);
}
