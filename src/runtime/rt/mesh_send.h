/* SPDX-License-Identifier: MIT */
/* percore rt: the producer side of the mesh, shared by the files that
 * send (mesh_api.c, mesh_recv.c for replies, mesh_returns.c).
 *
 * A message is opened (rt_mesh_open: the pair mailbox when it is small and
 * the ring is empty, else a slot staged in ring (s, to)), written, then
 * handed to rt_mesh_done(): a mail is posted at once; a staged slot is
 * published when publish_batch of them wait, or at the end of the turn
 * (rt_mesh_flush). Each mail, the first publish of a turn and the flush
 * ring the receiver's doorbell (rt_mesh_ring_bell in mesh_send.c holds
 * the ordering argument). The helpers are inline: they are the sending
 * path, a few instructions each; a stream under way takes the fast path
 * (rt_mesh_fast). Caller: the sending shard only.
 */
#ifndef PERCORE_SRC_RT_MESH_SEND_H
#define PERCORE_SRC_RT_MESH_SEND_H

#include <stdbool.h>

#include "rt/mailbox.h"
#include "rt/rt.h"

/* Announce a publish on ring `bit` into the shard whose inbox is ib and
 * wake it if it sleeps (r, its reactor). Returns 1 when it was woken.
 * Any thread: producers of the mesh, with their own reactor as from, and
 * of the external ring, with NULL. A shard's wake-up may wait in its
 * reactor's queue until its turn ends (rt_reactor_wake_from). */
int rt_mesh_ring_bell(struct rt_inbox *ib, struct pc_reactor *from, struct pc_reactor *r,
		      unsigned bit);

/* Publish what s staged into ring (s, to) and ring the doorbell: the
 * receiver is woken now, not at the turn's end. */
void rt_mesh_publish(struct rt_shard *s, unsigned to);

/* A mail to `to` is written into s's mailbox half: post it and ring.
 * Returns 0, so that a send can end in it. */
int rt_mesh_mail_sent(struct rt_shard *s, unsigned to);

/* True when ring (s, to) can take a non-reply message now. Only s
 * stages into it, so the answer holds until s itself sends. */
PC_INLINE bool rt_mesh_has_room(struct rt_shard *s, unsigned to)
{
	return pc_spsc_seq_room(&s->out[to].ring->ring, s->e->reserve + 1) > s->e->reserve;
}

/* Slots staged into ring (s, to) since the last publish. */
PC_INLINE size_t rt_mesh_nstaged(const struct rt_out *o)
{
	return pc_spsc_seq_produced(&o->ring->ring) - o->published;
}

/* Whether a message to `to` cannot take the mailbox, whatever the ring
 * holds: there is none (towards s itself), or the ring was found busy
 * this turn (rt_mesh_mail_slot). */
PC_INLINE bool rt_mesh_no_mail(const struct rt_shard *s, const struct rt_out *o)
{
	return !o->mail || o->skip_turn == s->stats.turns;
}

/* Set o->limit for what the ring holds now (rt_out): the end of the
 * free slots as last seen, less the reserve, or of the publish batch,
 * whichever comes first; 0 while the mailbox may still be taken or the
 * outbox is in use, and while the ring is not on the dirty list (the
 * fast path does not put it there). A stream keeps the fast path across
 * publishes, its batch's first message included, until the turn's
 * flush. */
PC_INLINE void rt_mesh_limit(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];
	size_t t = pc_spsc_seq_produced(&o->ring->ring);
	size_t room = pc_spsc_seq_room(&o->ring->ring, 0); /* the cached count */
	size_t lim;

	o->limit = 0;
	if (o->obx.first || !o->dirty || (t == o->published && !rt_mesh_no_mail(s, o)) ||
	    room <= s->e->reserve)
		return;
	lim = t + room - s->e->reserve;
	o->limit = lim < o->published + o->batch ? lim : o->published + o->batch;
}

/* A slot in ring (s, to), or NULL when full, without looking at the
 * outbox (the outbox's own drain uses it). Anything but a reply must
 * leave e->reserve slots free for the replies s may owe `to`. The slot
 * is then written and handed to rt_mesh_staged(), which sets the limit
 * again. */
PC_INLINE struct rt_msg *rt_mesh_ring_slot(struct rt_shard *s, unsigned to, bool reply)
{
	if (!reply && !rt_mesh_has_room(s, to))
		return NULL;
	return rt_ring_stage(s->out[to].ring);
}

/* rt_mesh_ring_slot(), after whatever waits in the outbox to `to`
 * (outbox.c): that goes first, so while any of it is left, NULL. But a
 * reply goes past a call waiting for an answer from `to`: that answer may
 * wait for this reply (`to` may be stuck behind a call of its own). */
PC_INLINE struct rt_msg *rt_mesh_stage(struct rt_shard *s, unsigned to, bool reply)
{
	if (PC_UNLIKELY(s->out[to].obx.first != NULL) && rt_outbox_drain_send(s, to) &&
	    !(reply && rt_outbox_call_blocked(s, to)))
		return NULL;
	return rt_mesh_ring_slot(s, to, reply);
}

/* The sender's mailbox half towards `to` when this message may go there:
 * the half is free and ring (s, to) is empty, staged and published
 * messages alike (a look at the ring's head; after a busy answer, no
 * second look until the next turn, so a stream pays one per turn). */
PC_INLINE struct rt_head *rt_mesh_mail_slot(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];
	uint32_t cap = s->e->capacity;

	if (rt_mesh_nstaged(o) || o->obx.first || o->skip_turn == s->stats.turns ||
	    !rt_mail_free(o->mail))
		return NULL;
	if (pc_spsc_seq_room(&o->ring->ring, cap) != cap) {
		o->skip_turn = s->stats.turns;
		return NULL;
	}
	return o->mail;
}

/* rt_mesh_open() past its fast path: the mailbox when `small` and
 * rt_mesh_mail_slot() allows, else a ring slot (after the outbox). Inline
 * for the public sends' own slow paths; rt_mesh_open_slow() (mesh_send.c)
 * is the same out of line. */
PC_INLINE struct rt_head *rt_mesh_open_any(struct rt_shard *s, unsigned to, bool small,
					   bool reply, bool *mail)
{
	struct rt_head *h = small ? rt_mesh_mail_slot(s, to) : NULL;
	struct rt_msg *m;

	*mail = h != NULL;
	if (h)
		return h;
	m = rt_mesh_stage(s, to, reply);
	return m ? &m->h : NULL;
}

struct rt_head *rt_mesh_open_slow(struct rt_shard *s, unsigned to, bool small, bool reply,
				  bool *mail);

/* The fast path of a send, a stream under way: the ring's next position
 * is below the limit (rt_out: no mailbox; room beyond the reserve; the
 * outbox empty; the batch not complete). One comparison, no look at
 * shared state. When true, take
 * the slot with rt_mesh_fast_slot(), write it, then rt_mesh_staged()
 * (rt_mesh_fast_ptr() has a shorter ending); else rt_mesh_open(). */
PC_INLINE bool rt_mesh_fast(const struct rt_out *o)
{
	return PC_LIKELY(pc_spsc_seq_produced(&o->ring->ring) < o->limit);
}

PC_INLINE struct rt_msg *rt_mesh_fast_slot(struct rt_out *o)
{
	return rt_ring_stage_free(o->ring);
}

/* Where the next message to `to` goes: the mailbox when `small` (it fits
 * in a head) and rt_mesh_mail_slot() allows, else a ring slot; NULL when
 * the ring is full. *mail tells which, for rt_mesh_done(). */
PC_INLINE struct rt_head *rt_mesh_open(struct rt_shard *s, unsigned to, bool small,
				       bool reply, bool *mail)
{
	if (rt_mesh_fast(&s->out[to])) {
		*mail = false;
		return &rt_mesh_fast_slot(&s->out[to])->h;
	}
	return rt_mesh_open_slow(s, to, small, reply, mail);
}

/* A ring slot was written: remember the ring for the flush and publish
 * once publish_batch slots wait (msgs_out counts them then). Returns
 * whether it published (which sets the fast path's limit). For the
 * outbox's drain, which leaves the limit 0 while messages wait there;
 * any other sender calls rt_mesh_staged(). */
PC_INLINE bool rt_mesh_staged_held(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];

	if (!o->dirty) {
		o->dirty = true;
		s->dirty[s->ndirty++] = to;
	}
	if (rt_mesh_nstaged(o) < o->batch)
		return false;
	rt_mesh_publish(s, to);
	return true;
}

/* rt_mesh_staged_held(), and the fast path's limit set again. */
PC_INLINE void rt_mesh_staged(struct rt_shard *s, unsigned to)
{
	if (!rt_mesh_staged_held(s, to))
		rt_mesh_limit(s, to);
}

/* rt_mesh_staged(), out of line, then 0: the end of a send. */
int rt_mesh_staged_sent(struct rt_shard *s, unsigned to);

/* Write a pointer message into h. */
PC_INLINE void rt_mesh_fill_ptr(struct rt_head *h, pc_msg_fn fn, void *arg)
{
	h->fn = (void (*)(void))fn;
	h->kind = RT_MSG_PTR;
	h->u.arg = arg;
}

/* m, a pointer message just staged into ring o (not yet handed to
 * rt_mesh_staged), may take the next ones (rt_mesh_pack). */
PC_INLINE void rt_mesh_pack_open(struct rt_out *o, struct rt_msg *m)
{
	m->h.kind = RT_MSG_PTRS;
	m->h.len = 0;
	o->pack = m;
	o->pack_fn = m->h.fn;
	o->pack_end = pc_spsc_seq_produced(&o->ring->ring);
}

/* Join fn(arg) to m, a ring slot or outbox entry of pointer messages,
 * when it has room: to m's function while m carries only that one
 * (RT_MSG_PTRS, PC_MSG_PACK in all), else as a function and argument
 * pair (RT_MSG_MIX, PC_MSG_PACK_MIXED in all; a slot of one message
 * becomes one when the next goes elsewhere). Returns false, m
 * unchanged, when it has no room (rt_msg_join; rt_msg_mix for the
 * pair alone). */

/* Whether pointer slot m may take a function and argument pair: a
 * one-function slot while it holds one message, a mixed one while it
 * has room. */
PC_INLINE bool rt_msg_mix_room(const struct rt_msg *m)
{
	return m->h.kind == RT_MSG_PTRS ? m->h.len == 0 : m->h.len < RT_MIX_MAX;
}

PC_INLINE bool rt_msg_mix(struct rt_msg *m, pc_msg_fn fn, void *arg)
{
	if (!rt_msg_mix_room(m))
		return false;
	m->h.kind = RT_MSG_MIX;
	m->x.mix[m->h.len].fn = (void (*)(void))fn;
	m->x.mix[m->h.len].arg = arg;
	m->h.len++;
	return true;
}

PC_INLINE bool rt_msg_join(struct rt_msg *m, pc_msg_fn fn, void *arg)
{
	if (m->h.kind == RT_MSG_PTRS && m->h.fn == (void (*)(void))fn) {
		if (m->h.len >= RT_PACK_MAX)
			return false;
		m->x.args[m->h.len++] = arg;
		return true;
	}
	return (m->h.kind == RT_MSG_PTRS || m->h.kind == RT_MSG_MIX) && rt_msg_mix(m, fn, arg);
}

/* A pointer message joins the last pointer slot staged while it is
 * still the ring's last slot staged (nothing staged since: the position
 * after it is the ring's), it is not published (the consumer cannot be
 * reading it), it has room for fn (rt_msg_join), and no message waits in
 * the outbox (which goes first). Order holds: the message runs right
 * after the slot's others, and nothing was sent to `to` between them. A
 * stream to one function then moves PC_MSG_PACK messages per cache line,
 * a stream to several PC_MSG_PACK_MIXED, not one. The slot that
 * completes a publish batch is published once full (rt_mesh_fast_ptr).
 * rt_mesh_packs() says whether a message to fn may join; rt_mesh_pack()
 * joins it (0). A stream to one function, the common case, is told by
 * o->pack_fn without a look at the slot's kind. */
PC_INLINE bool rt_mesh_packs(const struct rt_out *o, pc_msg_fn fn)
{
	const struct rt_msg *p = o->pack; /* NULL once published (rt_mesh_publish) */

	if (!p || o->pack_end != pc_spsc_seq_produced(&o->ring->ring) || o->obx.first)
		return false;
	if (PC_LIKELY(o->pack_fn == (void (*)(void))fn))
		return p->h.len < RT_PACK_MAX;
	return rt_msg_mix_room(p);
}

/* rt_mesh_pack() past a slot's first function: it becomes mixed, and a
 * full one publishes once publish_batch messages wait (mesh_send.c). */
int rt_mesh_pack_mixed(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg);

PC_INLINE int rt_mesh_pack(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg)
{
	struct rt_out *o = &s->out[to];
	struct rt_msg *p = o->pack;

	if (PC_UNLIKELY(o->pack_fn != (void (*)(void))fn))
		return rt_mesh_pack_mixed(s, to, fn, arg);
	p->x.args[p->h.len++] = arg;
	o->packed++;
	if (PC_UNLIKELY(p->h.len == RT_PACK_MAX) && rt_mesh_nstaged(o) >= o->batch)
		return rt_mesh_staged_sent(s, to); /* publishes the batch */
	return 0;
}

/* Send a pointer message by the fast path when it applies (the public
 * sends try rt_mesh_pack(), then this): 0 when sent, 1 when it does not
 * apply (nothing was sent). The slot may take the next ones
 * (rt_mesh_pack_open). Below limit - 1 nothing but the slot changes: the ring
 * is on the dirty list already, and the limit still holds. At limit - 1,
 * where the room ends, rt_mesh_staged() leaves the limit where the next
 * send takes the slow path's look at the consumer's head; where the
 * publish batch ends, the slot waits to be filled, then goes with the
 * batch (or with the next slot staged, or at the flush). */
PC_INLINE int rt_mesh_fast_ptr(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg)
{
	struct rt_out *o = &s->out[to];
	size_t t = pc_spsc_seq_produced(&o->ring->ring), lim = o->limit;
	struct rt_msg *m;

	if (t >= lim)
		return 1;
	m = rt_mesh_fast_slot(o);
	rt_mesh_fill_ptr(&m->h, fn, arg);
	rt_mesh_pack_open(o, m);
	if (PC_UNLIKELY(t + 1 == lim) && rt_mesh_nstaged(o) < o->batch)
		return rt_mesh_staged_sent(s, to);
	return 0;
}

/* The message rt_mesh_open() gave is written: send it. */
PC_INLINE void rt_mesh_done(struct rt_shard *s, unsigned to, bool mail)
{
	if (mail)
		rt_mesh_mail_sent(s, to);
	else
		rt_mesh_staged(s, to);
}

/* Write a call into the message m to `to` and count it against the
 * destination's call limit (pc_shard_call and the outbox's calls). */
PC_INLINE void rt_mesh_fill_call(struct rt_shard *s, unsigned to, struct rt_msg *m,
				 pc_shard_call_fn fn, void *arg, pc_shard_reply_fn reply,
				 void *ctx)
{
	m->h.fn = (void (*)(void))fn;
	m->h.kind = RT_MSG_CALL;
	m->h.u.arg = arg;
	m->x.call.reply = reply;
	m->x.call.ctx = ctx;
	s->out[to].calls++;
}

/* A copy's bytes: from the head's payload on, through the rest of a ring
 * slot for copies over RT_HEAD_INLINE (rt_msg). */
PC_INLINE unsigned char *rt_mesh_copy_bytes(struct rt_head *h)
{
	return (unsigned char *)h + offsetof(struct rt_head, u);
}

#endif
