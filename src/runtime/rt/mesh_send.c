/* SPDX-License-Identifier: MIT */
/* percore rt: the producer side of the mesh (mesh_send.h): publishing,
 * doorbells, mails, and the flush at the end of each turn. */
#include "rt/mesh_send.h"
#include "rt/reactor_impl.h"

/* Whether ring `bit` into ib is polled every turn ("hot") and so needs
 * no doorbell. The full fence comes between the slot words just stored
 * and the load of `hot`: against the consumer's "hot = 0; fence; load
 * the next slot's word" when it stops polling this ring, either it sees
 * our words or we see hot == 0 and ring the doorbell (store-buffering,
 * forbidden across seq_cst fences). A hot ring costs no RMW on the line
 * the consumer reads. */
static bool polled(struct rt_inbox *ib, unsigned bit)
{
	atomic_thread_fence(memory_order_seq_cst);
	return atomic_load_explicit(&ib->hot[bit], memory_order_relaxed);
}

/* The doorbell itself, for a ring that is not polled. from: the
 * sending shard's reactor (NULL off a shard), which carries the wake-up
 * to r when both run on io_uring (rt_reactor_wake_from). */
static int bell(struct rt_inbox *ib, struct pc_reactor *from, struct pc_reactor *r, unsigned bit)
{
	/* seq_cst read-modify-write: the release half makes the slots just
	 * published visible to the consumer's exchange that takes this bit;
	 * being seq_cst, it and the load of `sleeping` below, against the
	 * consumer's seq_cst store of `sleeping` and load of the doorbell,
	 * cannot both miss each other. */
	atomic_fetch_or_explicit(&ib->bell[bit / 64], 1ull << (bit % 64), memory_order_seq_cst);
	rt_store_load_fence();
	if (!atomic_load_explicit(&ib->sleeping, memory_order_seq_cst))
		return 0;
	/* Several producers may see the flag; one wake-up is enough. */
	if (!atomic_exchange_explicit(&ib->sleeping, 0, memory_order_relaxed))
		return 0;
	rt_reactor_wake_from(from, r);
	return 1;
}

int rt_mesh_ring_bell(struct rt_inbox *ib, struct pc_reactor *from, struct pc_reactor *r,
		      unsigned bit)
{
	return polled(ib, bit) ? 0 : bell(ib, from, r, bit);
}

/* Publish and ring. now: a wake-up it queues goes to the kernel at once
 * (inside the turn: the receiver starts on them while we go on), else
 * with the turn's end. */
static void publish(struct rt_shard *s, unsigned to, bool now)
{
	struct rt_out *o = &s->out[to];

	/* release: contents before words */
	size_t n = rt_ring_publish(o->ring);

	o->published += n;
	o->pack = NULL; /* published: the consumer may be reading it */
	n += o->packed; /* messages, not slots */
	o->packed = 0;
	RT_STAT_ADD(s, msgs_out, n);
	__atomic_store_n(&o->sent, o->sent + n, __ATOMIC_RELAXED);
	rt_mesh_limit(s, to);
	RT_STAT_ADD(s, publishes, 1);
	if (to == s->id) {
		/* Our own ring: no atomics, we are the consumer. */
		s->pending[to / 64] |= 1ull << (to % 64);
		return;
	}
	/* Once a publish has found the ring polled, the later ones until the
	 * flush leave the doorbell check to the flush, whose fence comes
	 * after all their words (polled()): a stream pays one fence per
	 * turn, not one per publish_batch. A ring that is not polled gets
	 * the doorbell at every publish, so a receiver that went to sleep
	 * wakes at once. */
	if (o->polled_seen) {
		o->bell_due = true;
		return;
	}
	if (polled(o->inbox, s->id)) {
		o->polled_seen = true;
		return;
	}
	if (bell(o->inbox, s->reactor, o->reactor, s->id)) {
		RT_STAT_ADD(s, wakeups_sent, 1);
		if (now)
			rt_reactor_push_wakes(s->reactor);
	}
}

void rt_mesh_publish(struct rt_shard *s, unsigned to)
{
	publish(s, to, true);
}

struct rt_head *rt_mesh_open_slow(struct rt_shard *s, unsigned to, bool small, bool reply,
				  bool *mail)
{
	return rt_mesh_open_any(s, to, small, reply, mail);
}

int rt_mesh_staged_sent(struct rt_shard *s, unsigned to)
{
	rt_mesh_staged(s, to);
	return 0;
}

int rt_mesh_pack_mixed(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg)
{
	struct rt_out *o = &s->out[to];

	rt_msg_mix(o->pack, fn, arg); /* rt_mesh_packs() found room */
	o->pack_fn = NULL;
	o->packed++;
	/* A full slot publishes once the batch holds publish_batch messages
	 * (not slots, as a stream to one function counts): mixed streams are
	 * a server's requests, answers and unlocks, which the receiver should
	 * start on while the sender goes on, not three times later. */
	if (o->pack->h.len == RT_MIX_MAX && rt_mesh_nstaged(o) + o->packed >= o->batch)
		rt_mesh_publish(s, to);
	return 0;
}

int rt_mesh_mail_sent(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];

	rt_mail_post(o->mail, pc_spsc_seq_produced(&o->ring->ring));
	s->mailed = true;
	RT_STAT_ADD(s, msgs_out, 1);
	RT_STAT_ADD(s, mail_out, 1);
	__atomic_store_n(&o->sent, o->sent + 1, __ATOMIC_RELAXED);
	int woke = rt_mesh_ring_bell(o->inbox, s->reactor, o->reactor, s->id);

	RT_STAT_ADD(s, wakeups_sent, (uint64_t)woke);
	if (woke)
		rt_reactor_push_wakes(s->reactor);
	return 0;
}

void rt_mesh_flush(struct rt_shard *s)
{
	if (s->nfrees)
		rt_mesh_send_returns(s);
	for (unsigned i = 0; i < s->ndirty; i++) {
		unsigned to = s->dirty[i];
		struct rt_out *o = &s->out[to];

		o->dirty = false;
		if (rt_mesh_nstaged(o))
			publish(s, to, false);
		/* the next turn's first message may take the mailbox */
		o->limit = 0;
		if (o->bell_due)
			RT_STAT_ADD(s, wakeups_sent, (uint64_t)rt_mesh_ring_bell(o->inbox, s->reactor,
										o->reactor, s->id));
		o->polled_seen = o->bell_due = false;
	}
	s->ndirty = 0;
}
