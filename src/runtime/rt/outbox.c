/* SPDX-License-Identifier: MIT */
/* percore rt: the outbox, where a shard's messages to one destination
 * wait while the ring to it is full.
 *
 * One FIFO per destination, private to the sending shard: a list of
 * chunks of RT_OBX_CHUNK_MSGS ring-format messages, each chunk one 4 KiB
 * object of the shard's slab. A queueing send writes its message into the
 * ring (or the pair mailbox) when nothing waits in the outbox and the
 * ring has room, else at the outbox's tail. The outbox is drained into
 * the ring, oldest first, at the end of every turn and by every later
 * send to the same destination (mesh.c's stage()), and the mesh refuses a
 * ring slot or the mailbox to anything while messages wait: so nothing
 * overtakes them and the pair's order is the order of sending.
 *
 * A pointer message joins the newest entry when that one holds pointer
 * messages and has room for it (rt_msg_join, as the ring's fast path
 * packs its slots): a stream that waits here then costs one entry, one
 * copy into the ring and one slot for the receiver per PC_MSG_PACK
 * messages to one function, PC_MSG_PACK_MIXED to several. Depth, budget
 * and watermarks count messages.
 *
 * Calls past call_limit (pc_shard_call_q) wait here too, in order: the
 * drain stops at one until an answer from its destination frees a call.
 * Replies go past such a call (into the ring, or, when it is full, out of
 * the middle of the FIFO, leaving an RT_MSG_GONE entry): the answer the
 * call waits for may itself wait for them.
 *
 * Budget: queued messages count against the shard's outbox_budget, all
 * destinations together; replies and the library's own messages are
 * exempt (refusing them would lose them). Watermarks are per destination.
 *
 * Statistics: a send touches none (they cost a stream of messages waiting
 * here a twentieth of its instructions). The depth only grows between
 * drains, so each drain records it first, its peak for the high water,
 * and counts the messages it moves as queued; the figures a reader sees
 * are at most a turn old, every turn ending with a drain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/outbox.h"
#include "percore/slab.h"
#include "rt/mesh_send.h"
#include "rt/outbox_impl.h"
#include "rt/rt.h"

_Static_assert(sizeof(struct rt_obx_chunk) == PC_SHARD_SLAB_MAX, "a chunk is one slab object");

/* ---- configuration ---------------------------------------------------- */

static uint32_t budget_of(const struct pc_engine_cfg *c)
{
	return c->outbox_budget ? c->outbox_budget : PC_ENGINE_DEFAULT_OUTBOX;
}

static uint32_t high_of(const struct pc_engine_cfg *c)
{
	uint32_t h = budget_of(c) / 4;

	return c->outbox_high ? c->outbox_high : (h ? h : 1);
}

static uint32_t low_of(const struct pc_engine_cfg *c)
{
	return c->outbox_low ? c->outbox_low : high_of(c) / 4;
}

int rt_outbox_check_cfg(const struct pc_engine_cfg *c, char *err, size_t len)
{
	const char *why = NULL;

	if (high_of(c) > budget_of(c))
		why = "outbox_high must be at most outbox_budget";
	else if (low_of(c) >= high_of(c))
		why = "outbox_low must be below outbox_high";
	if (!why)
		return 0;
	if (err && len)
		snprintf(err, len, "%s", why);
	return -EINVAL;
}

int rt_outbox_setup(struct rt_shard *s)
{
	const struct pc_engine_cfg *c = &s->e->cfg;
	struct rt_app *a = &s->app;

	a->obx_budget = budget_of(c);
	a->obx_high = high_of(c);
	a->obx_low = low_of(c);
	a->call_limit = c->call_limit ? c->call_limit : s->e->reserve;
	a->obx_dests = calloc(s->e->n, sizeof(*a->obx_dests));
	return a->obx_dests ? 0 : -ENOMEM;
}

void rt_outbox_free(struct rt_shard *s)
{
	free(s->app.obx_dests);
	s->app.obx_dests = NULL;
}

/* ---- the FIFO ------------------------------------------------------------ */

/* The statistics of the depth now: at a drain's start (the most since
 * the last drain) and end. */
static void depth_seen(struct rt_shard *s)
{
	uint32_t d = s->app.obx_total;

	RT_STAT_SET(s, outbox_depth, d);
	if (d > s->stats.outbox_high_water)
		RT_STAT_SET(s, outbox_high_water, d);
}

static void chunk_free(struct rt_shard *s, struct rt_obx_chunk *c)
{
	(void)s;
	pc_slab_free(pc_shard_slab(sizeof(*c)), c);
}

/* rt_obx_push(), inline for the sends. */
PC_INLINE struct rt_msg *obx_push(struct rt_shard *s, unsigned to, bool exempt, int *rc)
{
	struct rt_app *a = &s->app;
	struct rt_outbox *ob = &s->out[to].obx;
	struct rt_obx_chunk *c = ob->last;

	if (!exempt && a->obx_total >= a->obx_budget) {
		RT_STAT_ADD(s, outbox_refused, 1);
		*rc = -ENOBUFS;
		return NULL;
	}
	if (!c || c->tail == RT_OBX_CHUNK_MSGS) {
		struct pc_slab *pool = pc_shard_slab(sizeof(*c));

		c = pool ? pc_slab_alloc(pool) : NULL;
		if (!c) {
			*rc = -ENOMEM;
			return NULL;
		}
		c->next = NULL;
		c->head = c->tail = 0;
		if (ob->last)
			ob->last->next = c;
		else
			ob->first = c;
		ob->last = c;
	}
	s->out[to].limit = 0; /* the fast path stops: nothing overtakes this */
	if (!ob->listed) {
		ob->listed = true;
		ob->full_turn = UINT64_MAX;
		a->obx_dests[a->nobx++] = to;
	}
	ob->depth++;
	a->obx_total++;
	return &c->msgs[c->tail++];
}

struct rt_msg *rt_obx_push(struct rt_shard *s, unsigned to, bool exempt, int *rc)
{
	return obx_push(s, to, exempt, rc);
}

/* The entry rt_obx_push() gave is written: say so if the destination has
 * just come under pressure (now, so a handler stops reading at once). */
PC_INLINE void rt_obx_commit(struct rt_shard *s, unsigned to)
{
	struct rt_outbox *ob = &s->out[to].obx;
	struct rt_app *a = &s->app;

	if (ob->pressured || ob->depth < a->obx_high)
		return;
	ob->pressured = true;
	if (a->on_pressure)
		a->on_pressure(to, true, a->pressure_arg);
}

/* Copy a queued message into a ring slot: all but the slot's sequence
 * word, which belongs to the ring. */
static void copy_msg(struct rt_msg *dst, const struct rt_msg *src)
{
	dst->h.fn = src->h.fn;
	memcpy(&dst->h.kind, &src->h.kind, sizeof(*dst) - offsetof(struct rt_msg, h.kind));
}

/* Whether ring (s, to) takes m: a reply may use the reserve, anything
 * else must leave it. *room: the free slots known, counted down by the
 * caller; the consumer's head is read again only when they run short. */
static bool ring_takes(struct rt_shard *s, unsigned to, const struct rt_msg *m, size_t *room)
{
	size_t need = m->h.kind == RT_MSG_REPLY ? 1 : (size_t)s->e->reserve + 1;

	if (*room < need)
		*room = pc_spsc_seq_room(&s->out[to].ring->ring, need);
	return *room >= need;
}

/* A queued call past the pair's call limit: it waits for an answer. */
static bool call_waits(const struct rt_shard *s, unsigned to, const struct rt_msg *m)
{
	return m->h.kind == RT_MSG_CALL && m->h.len == RT_CALL_LIMITED &&
	       s->out[to].calls >= s->app.call_limit;
}

bool rt_outbox_call_blocked(const struct rt_shard *s, unsigned to)
{
	const struct rt_obx_chunk *c = s->out[to].obx.first;

	return c && c->head < c->tail && call_waits(s, to, &c->msgs[c->head]);
}

/* Stage queued entry m into the ring (ring_takes() said yes). Returns
 * the messages it carries: a packed entry carries several. */
static uint32_t move_msg(struct rt_shard *s, unsigned to, struct rt_msg *m)
{
	struct rt_out *o = &s->out[to];
	uint32_t n = 1;

	if (m->h.kind == RT_MSG_CALL)
		o->calls++; /* counted from here: it awaits its answer now */
	else if (m->h.kind == RT_MSG_REPLY)
		o->obx.replies--;
	else if (m->h.kind == RT_MSG_PTRS || m->h.kind == RT_MSG_MIX) {
		n += m->h.len;
		o->packed += m->h.len; /* the publish counts messages, not slots */
	}
	copy_msg(rt_ring_stage_free(o->ring), m);
	/* the limit stays 0: the outbox holds m until its drain moves on,
	 * and rt_outbox_drain_to() sets it once the outbox is empty */
	rt_mesh_staged_held(s, to);
	return n;
}

/* The outbox's head waits for an answer: move the replies queued behind
 * it that the ring takes, leaving RT_MSG_GONE in their place. Returns
 * how many moved. */
static uint32_t pass_replies(struct rt_shard *s, unsigned to, size_t *room)
{
	struct rt_outbox *ob = &s->out[to].obx;
	uint32_t moved = 0;

	for (struct rt_obx_chunk *c = ob->first; c && ob->replies; c = c->next)
		for (uint32_t i = c->head; i < c->tail && ob->replies; i++) {
			struct rt_msg *m = &c->msgs[i];

			if (m->h.kind != RT_MSG_REPLY)
				continue;
			if (!ring_takes(s, to, m, room))
				return moved;
			(*room)--;
			moved += move_msg(s, to, m);
			m->h.kind = RT_MSG_GONE;
		}
	return moved;
}

/* Move what fits from the outbox to `to` into the ring, oldest first.
 * Returns the messages left. The fast path's limit stays 0 throughout (the
 * outbox is not empty) and is set again once it is. */
uint32_t rt_outbox_drain_to(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];
	struct rt_outbox *ob = &o->obx;
	uint32_t moved = 0;
	size_t room = 0;
	struct rt_obx_chunk *c;

	depth_seen(s);
	while ((c = ob->first)) {
		for (; c->head < c->tail; c->head++) {
			struct rt_msg *m = &c->msgs[c->head];

			if (m->h.kind == RT_MSG_GONE)
				continue; /* went ahead, counted then */
			if (call_waits(s, to, m)) {
				moved += pass_replies(s, to, &room);
				goto out;
			}
			if (!ring_takes(s, to, m, &room)) {
				/* Full: what was staged is a whole ring's worth,
				 * a batch; let the receiver start on it now
				 * rather than at the end of the turn. */
				if (rt_mesh_nstaged(o))
					rt_mesh_publish(s, to);
				ob->full_turn = s->stats.turns;
				goto out;
			}
			room--;
			moved += move_msg(s, to, m);
		}
		ob->first = c->next;
		if (!ob->first)
			ob->last = NULL;
		chunk_free(s, c);
	}
	rt_mesh_limit(s, to);
out:
	ob->depth -= moved;
	s->app.obx_total -= moved;
	if (moved) {
		RT_STAT_ADD(s, outbox_queued, moved);
		depth_seen(s);
	}
	return ob->depth;
}

/* rt_outbox_drain_to() for a send: once the ring was found full this
 * turn, queue behind it without looking again. Each look at a full ring
 * reads the line its consumer writes; a stream of sends would pay that
 * miss per message, and the turn's own drain looks anyway. */
uint32_t rt_outbox_drain_send(struct rt_shard *s, unsigned to)
{
	struct rt_outbox *ob = &s->out[to].obx;

	if (ob->full_turn == s->stats.turns)
		return ob->depth;
	return rt_outbox_drain_to(s, to);
}

/* The low-watermark crossing, looked for at the end of a turn only, so
 * the callback never runs inside a send. */
static void check_low(struct rt_shard *s, unsigned to)
{
	struct rt_outbox *ob = &s->out[to].obx;
	struct rt_app *a = &s->app;

	if (!ob->pressured || ob->depth > a->obx_low)
		return;
	ob->pressured = false;
	if (a->on_pressure)
		a->on_pressure(to, false, a->pressure_arg);
}

unsigned rt_outbox_drain(struct rt_shard *s)
{
	struct rt_app *a = &s->app;
	unsigned moved = 0;

	for (unsigned i = 0; i < a->nobx;) {
		unsigned to = a->obx_dests[i];
		struct rt_outbox *ob = &s->out[to].obx;
		uint32_t before = ob->depth;

		rt_outbox_drain_to(s, to);
		moved += before - ob->depth;
		check_low(s, to);
		/* a->nobx may have grown in the callback: look again */
		if (ob->depth || ob->pressured) {
			i++;
			continue;
		}
		ob->listed = false;
		a->obx_dests[i] = a->obx_dests[--a->nobx];
	}
	return moved;
}

bool rt_outbox_waiting(const struct rt_shard *s)
{
	return s->app.nobx != 0;
}

/* Going to sleep with messages waiting: ask each receiver to ring when
 * it frees slots, then look once more (a receiver that freed them just
 * before reading the request rings nobody). The sleep's 1 ms limit
 * (idle.c) covers a request read too early all the same. */
bool rt_outbox_before_sleep(struct rt_shard *s)
{
	struct rt_app *a = &s->app;
	bool room = false;

	for (unsigned i = 0; i < a->nobx; i++) {
		unsigned to = a->obx_dests[i];

		/* Waiting for an answer, not for room: the answer wakes us. */
		if (!s->out[to].obx.depth || to == s->id ||
		    (rt_outbox_call_blocked(s, to) && !s->out[to].obx.replies))
			continue;
		atomic_store_explicit(&s->out[to].inbox->want_room[s->id], 1, memory_order_seq_cst);
		room |= rt_mesh_has_room(s, to);
	}
	return room;
}

/* On the receiver: a sender asleep on a full ring from `from` may go on. */
void rt_outbox_room_made(struct rt_shard *s, unsigned from)
{
	atomic_store_explicit(&s->inbox->want_room[from], 0, memory_order_relaxed);
	RT_STAT_ADD(s, wakeups_sent,
		    (uint64_t)rt_mesh_ring_bell(s->out[from].inbox, s->reactor, s->out[from].reactor,
						s->id));
}

/* After the shard's last drain: what is left will never be sent. */
void rt_outbox_end(struct rt_shard *s)
{
	struct rt_app *a = &s->app;

	for (unsigned i = 0; i < a->nobx; i++) {
		struct rt_outbox *ob = &s->out[a->obx_dests[i]].obx;
		struct rt_obx_chunk *c;

		RT_STAT_ADD(s, outbox_unsent, ob->depth);
		RT_STAT_ADD(s, outbox_queued, ob->depth); /* they waited here too */
		while ((c = ob->first)) {
			ob->first = c->next;
			chunk_free(s, c);
		}
		*ob = (struct rt_outbox){ 0 };
	}
	depth_seen(s); /* the peak since the last drain */
	a->nobx = 0;
	a->obx_total = 0;
	depth_seen(s);
}

/* ---- sending ------------------------------------------------------------- */

/* Whether a message to `to` goes to the outbox's tail at once: behind
 * messages that found the ring full this turn (rt_mesh_open() would
 * refuse it, after a longer look). */
PC_INLINE bool obx_behind(const struct rt_shard *s, unsigned to)
{
	const struct rt_outbox *ob = &s->out[to].obx;

	return ob->first && ob->full_turn == s->stats.turns;
}

/* Where a new message to `to` goes: the ring or the mailbox when nothing
 * waits and there is room, else the outbox. *where says which, for
 * rt_obx_sent(). NULL with *rc set when the outbox refuses. */
struct rt_head *rt_obx_open(struct rt_shard *s, unsigned to, bool small, bool exempt,
			    enum rt_obx_where *where, int *rc)
{
	struct rt_head *h;
	struct rt_msg *m;
	bool mail;

	if (!obx_behind(s, to)) {
		h = rt_mesh_open(s, to, small, false, &mail);
		if (h) {
			*where = mail ? RT_OBX_MAIL : RT_OBX_RING;
			return h;
		}
	}
	m = obx_push(s, to, exempt, rc);
	*where = RT_OBX_QUEUED;
	return m ? &m->h : NULL;
}

void rt_obx_sent(struct rt_shard *s, unsigned to, enum rt_obx_where where)
{
	if (where == RT_OBX_QUEUED)
		rt_obx_commit(s, to);
	else
		rt_mesh_done(s, to, where == RT_OBX_MAIL);
}

/* A reply that found no ring slot (mesh.c's send_reply): queued, past
 * the budget if need be. Dropped only when no chunk can be allocated,
 * and then counted (the caller's deadline, if any, still answers it). */
void rt_outbox_reply(struct rt_shard *s, unsigned to, pc_shard_reply_fn fn, void *ctx,
		     intptr_t result)
{
	int rc;
	struct rt_msg *m = obx_push(s, to, true, &rc);

	if (!m) {
		RT_STAT_ADD(s, outbox_refused, 1);
		return;
	}
	m->h.fn = (void (*)(void))fn;
	m->h.kind = RT_MSG_REPLY;
	m->h.u.reply.ctx = ctx;
	m->h.u.reply.result = result;
	s->out[to].obx.replies++;
	rt_obx_commit(s, to);
}

static struct rt_shard *sender(unsigned to)
{
	struct rt_shard *s = rt_self;

	return s && to < s->e->n ? s : NULL;
}

/* The outbox's newest entry, not yet moved, or NULL. */
PC_INLINE struct rt_msg *obx_tail(struct rt_shard *s, unsigned to)
{
	struct rt_obx_chunk *c = s->out[to].obx.last;

	return c && c->tail != c->head ? &c->msgs[c->tail - 1] : NULL;
}

/* A pointer message into a new outbox entry, which later ones to the
 * same function may join. */
static PC_NOINLINE int obx_push_ptr(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg,
				    bool exempt)
{
	int rc = 0;
	struct rt_msg *m = obx_push(s, to, exempt, &rc);

	if (!m)
		return rc;
	rt_mesh_fill_ptr(&m->h, fn, arg);
	m->h.kind = RT_MSG_PTRS;
	m->h.len = 0;
	rt_obx_commit(s, to);
	return 0;
}

/* rt_obx_commit()'s crossing of the high watermark, out of line: the
 * joining send below stays a leaf. */
static PC_NOINLINE int obx_pressure(struct rt_shard *s, unsigned to)
{
	rt_obx_commit(s, to);
	return 0;
}

/* A pointer message into the outbox: joined to the newest entry when
 * that has room for it, as the ring's fast path packs them
 * (rt_mesh_pack), so that a stream waiting here costs one entry, one
 * copy into the ring and one slot for the receiver per PC_MSG_PACK (or
 * PC_MSG_PACK_MIXED) messages, not per message. Counted, budgeted and
 * watermarked per message all the same. */
static PC_NOINLINE int obx_send_ptr(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg,
				    bool exempt)
{
	struct rt_msg *m = obx_tail(s, to);
	struct rt_outbox *ob = &s->out[to].obx;
	struct rt_app *a = &s->app;

	/* each test's usual outcome first: under the budget, under the
	 * watermark (exempt or pressured matter only past them) */
	if (!m || (a->obx_total >= a->obx_budget && !exempt) || !rt_msg_join(m, fn, arg))
		return obx_push_ptr(s, to, fn, arg, exempt); /* or refused there */
	ob->depth++;
	a->obx_total++;
	if (PC_UNLIKELY(ob->depth >= a->obx_high && !ob->pressured))
		return obx_pressure(s, to);
	return 0;
}

/* A pointer message through the ring's or the mailbox's slower way in,
 * else the outbox. */
static PC_NOINLINE int send_ptr_open(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg,
				     bool exempt)
{
	bool mail;
	struct rt_head *h = rt_mesh_open(s, to, true, false, &mail);

	if (!h)
		return obx_send_ptr(s, to, fn, arg, exempt);
	rt_mesh_fill_ptr(h, fn, arg);
	rt_mesh_done(s, to, mail);
	return 0;
}

PC_INLINE int send_ptr(unsigned to, pc_msg_fn fn, void *arg, bool exempt)
{
	struct rt_shard *s = sender(to);

	if (!s || !fn)
		return rt_self ? -EINVAL : -EPERM;
	if (rt_mesh_packs(&s->out[to], fn))
		return rt_mesh_pack(s, to, fn, arg);
	if (rt_mesh_fast(&s->out[to]))
		return rt_mesh_fast_ptr(s, to, fn, arg);
	/* Past the fast paths, each way out of line and reached by a tail
	 * call, so that none needs a frame for the others' sake: a stream
	 * queueing behind a full ring runs leaf functions. */
	if (obx_behind(s, to))
		return obx_send_ptr(s, to, fn, arg, exempt);
	return send_ptr_open(s, to, fn, arg, exempt);
}

int pc_shard_send(unsigned to, pc_msg_fn fn, void *arg)
{
	return send_ptr(to, fn, arg, false);
}

int pc_shard_send_reply(unsigned to, pc_msg_fn fn, void *arg)
{
	return send_ptr(to, fn, arg, true);
}

int pc_shard_send_copy(unsigned to, pc_msg_fn fn, const void *data, size_t len)
{
	struct rt_shard *s = sender(to);
	enum rt_obx_where where;
	struct rt_head *h;
	int rc = 0;

	if (!s || !fn || (len && !data))
		return rt_self ? -EINVAL : -EPERM;
	if (len > PC_MSG_INLINE)
		return -EMSGSIZE;
	h = rt_obx_open(s, to, len <= RT_HEAD_INLINE, false, &where, &rc);
	if (!h)
		return rc;
	h->fn = (void (*)(void))fn;
	h->kind = RT_MSG_COPY;
	h->len = (uint16_t)len;
	if (len)
		memcpy((unsigned char *)h + offsetof(struct rt_head, u), data, len);
	rt_obx_sent(s, to, where);
	return 0;
}

int pc_shard_on_pressure(void (*fn)(unsigned to, bool high, void *arg), void *arg)
{
	struct rt_shard *s = rt_self;

	if (!s)
		return -EPERM;
	s->app.on_pressure = fn;
	s->app.pressure_arg = arg;
	return 0;
}

uint32_t pc_shard_outbox_depth(unsigned to)
{
	struct rt_shard *s = sender(to);

	return s ? s->out[to].obx.depth : 0;
}

bool pc_shard_outbox_pressured(unsigned to)
{
	struct rt_shard *s = sender(to);

	return s && s->out[to].obx.pressured;
}
