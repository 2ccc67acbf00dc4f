/* SPDX-License-Identifier: MIT */
/* percore rt: the consumer side of the mesh. Each turn the shard takes
 * its doorbell words, drains the rings they name and the hot rings, and
 * runs each message in the order its sender sent it (ring and mailbox
 * merged by ring position, mailbox.h). Owner shard only. */
#include "rt/mesh_send.h"

/* Slots one ring may hand over in one turn before the next ring (and
 * the reactor) get their go: fairness between senders. A slot holds one
 * message, or up to PC_MSG_PACK pointer messages to one function. */
#define RT_DRAIN_BUDGET 64

/* A ring that delivered messages is "hot": polled every turn with no
 * doorbell needed, until this many polls in a row found it empty. */
#define RT_HOT_TURNS 1024

static unsigned bell_words(const struct pc_engine *e)
{
	return (e->n + 1 + 63) / 64;   /* n shards + the external ring */
}

static void send_reply(struct rt_shard *s, unsigned to, pc_shard_reply_fn fn, void *ctx, intptr_t result)
{
	bool mail;
	/* NULL only behind an outbox, or with more calls allowed than the
	 * reserve holds (mesh.c): then the reply waits in the outbox, never
	 * refused. */
	struct rt_head *h = rt_mesh_open(s, to, true, true, &mail);

	if (!h) {
		rt_outbox_reply(s, to, fn, ctx, result);
		return;
	}
	h->fn = (void (*)(void))fn;
	h->kind = RT_MSG_REPLY;
	h->u.reply.ctx = ctx;
	h->u.reply.result = result;
	rt_mesh_done(s, to, mail);
}

/* Every kind but a pointer message, out of line: a call's reply path
 * needs registers that the pointer message, the common kind, would
 * otherwise save and restore around each run (run_msg). */
static PC_NOINLINE void run_other(struct rt_shard *s, unsigned from, struct rt_msg *m)
{
	struct rt_head *h = &m->h;

	switch (h->kind) {
	case RT_MSG_COPY:
		((pc_msg_fn)h->fn)(rt_mesh_copy_bytes(h));
		break;
	case RT_MSG_CALL: {
		intptr_t r = ((pc_shard_call_fn)h->fn)(h->u.arg);

		send_reply(s, from, m->x.call.reply, m->x.call.ctx, r);
		break;
	}
	case RT_MSG_REPLY:
		s->out[from].calls--;
		((pc_shard_reply_fn)h->fn)(h->u.reply.ctx, h->u.reply.result);
		break;
	case RT_MSG_FREE:
		rt_shared_buf_free_list(h->u.free_list);
		break;
	}
}

/* A slot of pointer messages to one function (rt_mesh_pack), in the
 * order they were sent; the drain counted the slot as one. */
PC_INLINE void run_ptrs(struct rt_shard *s, const struct rt_msg *m)
{
	pc_msg_fn fn = (pc_msg_fn)m->h.fn;
	unsigned n = m->h.len;

	fn(m->h.u.arg);
	for (unsigned i = 0; i < n; i++)
		fn(m->x.args[i]);
	RT_STAT_ADD(s, msgs_in, n);
}

/* A slot of pointer messages to several functions (rt_msg_join), in
 * the order they were sent. */
static void run_mix(struct rt_shard *s, const struct rt_msg *m)
{
	unsigned n = m->h.len;

	((pc_msg_fn)m->h.fn)(m->h.u.arg);
	for (unsigned i = 0; i < n; i++)
		((pc_msg_fn)m->x.mix[i].fn)(m->x.mix[i].arg);
	RT_STAT_ADD(s, msgs_in, n);
}

PC_INLINE void run_msg(struct rt_shard *s, unsigned from, struct rt_msg *m)
{
	/* Ring slots of pointer messages are RT_MSG_PTRS or RT_MSG_MIX,
	 * mails RT_MSG_PTR. */
	if (PC_LIKELY(m->h.kind == RT_MSG_PTRS))
		run_ptrs(s, m);
	else if (PC_LIKELY(m->h.kind == RT_MSG_PTR))
		((pc_msg_fn)m->h.fn)(m->h.u.arg);
	else if (m->h.kind == RT_MSG_MIX)
		run_mix(s, m);
	else
		run_other(s, from, m);
}

/* The next message from source i in the order it was sent, or NULL: a
 * ring slot (taken; free it with rt_ring_release) or the mail due before
 * it, copied into *mail and its half handed back (mailbox.h: the slot's
 * word first, then the tag). */
PC_INLINE struct rt_msg *next_msg(struct rt_shard *s, unsigned i, struct rt_msg *mail)
{
	struct rt_ring *r = s->in[i];
	struct rt_msg *m = rt_ring_peek(r);
	struct rt_head *half = rt_mail_due(s->mail_in[i], r);

	if (half) {
		rt_mail_take(half, mail);
		return mail;
	}
	if (m)
		rt_ring_take(r);
	return m;
}

/* Ring slots from ring i's next one on, up to RT_DRAIN_BUDGET slots
 * in all (k already ran), with no look at the mailbox. None can be due
 * among them: a mail goes only to a ring its sender sees empty
 * (mailbox.h), and the sender sees this batch's first slot taken only
 * once we release it, after the batch. The ring's consumer fields are
 * read once and the position is kept in registers, walking the slots up
 * to the buffer's end, then from its start: a handler is opaque code,
 * after which the compiler would load them again, and nothing a handler
 * can reach reads the consumer's position (this file does, before and
 * after a batch). Each slot's successor is fetched while it runs (past
 * the buffer's end the fetch is merely wasted). Returns the count k has
 * reached; *empty when the ring ran dry. */
static unsigned drain_ring(struct rt_shard *s, unsigned i, unsigned k, bool *empty)
{
	struct pc_spsc_side *c = &s->in[i]->ring._ring._c;
	struct rt_msg *slots = (struct rt_msg *)(void *)c->_buf;
	size_t mask = c->_mask, first = c->_next, pos = first;
	size_t end = first + (RT_DRAIN_BUDGET - k);

	while (pos != end) {
		size_t at = pos & mask, to_wrap = mask + 1 - at;
		struct rt_msg *m = &slots[at], *start = m;
		struct rt_msg *stop = m + (end - pos < to_wrap ? end - pos : to_wrap);
		uint32_t seq = (uint32_t)pos + 1; /* the word of a published slot */

		/* acquire: pairs with the publish's release (spsc_seq.h) */
		while (m != stop && atomic_load_explicit(&m->h.word, memory_order_acquire) == seq) {
			__builtin_prefetch(m + 1);
			run_msg(s, i, m);
			m++;
			seq++;
		}
		pos += (size_t)(m - start);
		if (m != stop) {
			*empty = true;
			break;
		}
	}
	c->_next = pos; /* private: released after the batch */
	return k + (unsigned)(pos - first);
}

/* Run up to RT_DRAIN_BUDGET slots and mails from source i; *empty tells
 * whether it ran dry. First the mails due before the ring's next slot (the
 * slot's word first, then the tag: mailbox.h), then that slot and the
 * rest of the batch (drain_ring). Ring slots are freed for the producer
 * once, after the batch. */
static unsigned drain_source(struct rt_shard *s, unsigned i, bool *empty)
{
	struct rt_ring *r = s->in[i];
	struct rt_head *half;
	struct rt_msg mail, *m;
	unsigned k = 0;

	*empty = false;
	for (;;) {
		m = rt_ring_peek(r);
		half = rt_mail_due(s->mail_in[i], r);
		if (!half)
			break;
		rt_mail_take(half, &mail);
		run_msg(s, i, &mail);
		if (++k == RT_DRAIN_BUDGET)
			goto out;
	}
	if (!m) {
		*empty = true;
		goto out;
	}
	k = drain_ring(s, i, k, empty);
out:
	if (k) {
		RT_STAT_ADD(s, msgs_in, k);
		rt_ring_release(r);
		/* A sender asleep with messages for us in its outbox */
		if (PC_UNLIKELY(i < s->e->n &&
				atomic_load_explicit(&s->inbox->want_room[i], memory_order_relaxed)))
			rt_outbox_room_made(s, i);
	}
	return k;
}

/* Ring i delivered: poll it every turn from now on, no doorbell needed.
 * relaxed: a producer that still reads 0 merely rings the doorbell. */
static void heat(struct rt_shard *s, unsigned i)
{
	s->is_hot[i] = 1;
	s->nhot++;
	atomic_store_explicit(&s->inbox->hot[i], 1, memory_order_relaxed);
}

/* Stop polling ring i every turn. It stays pending: the next drain's look
 * at its next slot comes after the fence, so a producer that read hot == 1
 * (and rang no doorbell) before the fence has its message found then. */
static void cool(struct rt_shard *s, unsigned i)
{
	s->is_hot[i] = 0;
	s->nhot--;
	s->cold_turns[i] = 0;
	atomic_store_explicit(&s->inbox->hot[i], 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

bool rt_mesh_cool_all(struct rt_shard *s)
{
	if (!s->nhot)
		return false;
	for (unsigned i = 0; i <= s->e->n; i++)
		if (s->is_hot[i])
			cool(s, i);
	return true;
}

/* After a look at ring i: ran messages, and whether it ran dry. */
static void after_drain(struct rt_shard *s, unsigned i, unsigned ran, bool empty)
{
	if (ran) {
		s->cold_turns[i] = 0;
		if (!s->is_hot[i] && i != s->id)
			heat(s, i);
	}
	if (!empty)
		return;
	if (!s->is_hot[i])
		s->pending[i / 64] &= ~(1ull << (i % 64));
	else if (++s->cold_turns[i] >= RT_HOT_TURNS)
		cool(s, i);
}

unsigned rt_mesh_drain(struct rt_shard *s)
{
	struct rt_inbox *ib = s->inbox;
	unsigned words = bell_words(s->e), ran = 0;

	for (unsigned w = 0; w < words; w++) {
		/* Read first: a word with no news costs no write to the line
		 * the producers write. acquire on the exchange pairs with the
		 * producers' fetch_or (see rt_mesh_ring_bell). */
		if (atomic_load_explicit(&ib->bell[w], memory_order_relaxed))
			s->pending[w] |= atomic_exchange_explicit(&ib->bell[w], 0, memory_order_acquire);
	}
	for (unsigned w = 0; w < words; w++) {
		uint64_t bits = s->pending[w];

		while (bits) {
			unsigned i = w * 64 + (unsigned)__builtin_ctzll(bits);
			bool empty;
			unsigned k;

			bits &= bits - 1;
			k = drain_source(s, i, &empty);
			after_drain(s, i, k, empty);
			ran += k;
		}
	}
	return ran;
}

bool rt_mesh_may_have_work(struct rt_shard *s)
{
	unsigned words = bell_words(s->e);

	for (unsigned w = 0; w < words; w++)
		if (s->pending[w] || atomic_load_explicit(&s->inbox->bell[w], memory_order_seq_cst))
			return true;
	return false;
}

void rt_mesh_final_drain(struct rt_shard *s)
{
	struct rt_msg mail, *m;

	for (unsigned i = 0; i <= s->e->n; i++) {
		while ((m = next_msg(s, i, &mail))) {
			/* Returned buffers are memory, not work: free them. */
			if (m->h.kind == RT_MSG_FREE) {
				RT_STAT_ADD(s, msgs_in, 1);
				run_msg(s, i, m);
				continue;
			}
			RT_STAT_ADD(s, unrun_at_stop,
				    m->h.kind == RT_MSG_PTRS || m->h.kind == RT_MSG_MIX ?
					    1u + m->h.len : 1u);
		}
		rt_ring_release(s->in[i]);
	}
}
