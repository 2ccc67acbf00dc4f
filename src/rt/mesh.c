/* percore rt: the mesh, N x N SPSC rings with doorbells.
 *
 * Producer side (shard i towards j): stage the message in ring (i, j),
 * publish it once per turn or every publish_batch messages (the ring is in
 * slot-sequence mode: publishing stores each staged slot's sequence word,
 * which is what the consumer polls; spsc_seq.h), and on
 * every publish set bit i of j's doorbell and look whether j sleeps.
 * Consumer side (shard j): exchange each non-zero doorbell word with 0,
 * add its bits to the rings it knows are non-empty, and drain those rings;
 * a ring leaves that set only when a take finds it empty. A turn therefore
 * costs O(active senders), not O(N).
 *
 * Why no message is stranded (the argument in full: docs/ARCHITECTURE.md):
 * every publish is followed by a fetch_or of the doorbell, and the
 * consumer's exchange that clears the bit acquires that fetch_or, so the
 * consumer sees the slots it announces. A publish whose bit was cleared
 * before it was set leaves the bit set for the next turn.
 *
 * Pair mailboxes (mailbox.h): a small message that finds its ring empty
 * goes through the line the two shards share instead, at once; it carries
 * its ring position so that the receiver runs it in order with the ring.
 *
 * Replies: ring (j, i) keeps `reserve` slots free of everything but
 * replies, and i allows itself at most call_limit calls to j awaiting a
 * reply (by default `reserve`), so a reply finds room; one that does not
 * (a larger call_limit, or messages already waiting) goes through the
 * outbox: never refused.
 *
 * Outbox (outbox.c): while messages to j wait in i's outbox, every send
 * to j first moves what it can of them into the ring, and takes neither
 * the ring nor the mailbox while any are left, so nothing overtakes them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/numa.h"
#include "percore/reactor.h"
#include "rt/mailbox.h"
#include "rt/rt.h"

/* Messages one ring may hand over in one turn before the next ring (and
 * the reactor) get their go: fairness between senders. */
#define RT_DRAIN_BUDGET 64

/* A ring that delivered messages is "hot": polled every turn with no
 * doorbell needed, until this many polls in a row found it empty. */
#define RT_HOT_TURNS 1024

/* Align x up to a multiple of a (a power of two). */
static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static unsigned bell_words(const struct pc_engine *e)
{
	return (e->n + 1 + 63) / 64;   /* n shards + the external ring */
}

/* ---- memory ---------------------------------------------------------- */

/* The mailboxes of pairs (id, j) for j > id, on this shard's node: each
 * pair's line is allocated once, by its lower shard. */
static int mailboxes_setup(struct rt_shard *s)
{
	unsigned count = s->e->n - 1 - s->id;

	if (!count)
		return 0;
	s->mailboxes_size = count * sizeof(struct rt_mailbox);
	s->mailboxes = pc_numa_alloc(s->node, s->mailboxes_size);
	if (!s->mailboxes)
		return -ENOMEM;
	memset(s->mailboxes, 0, s->mailboxes_size); /* every half free */
	return 0;
}

int rt_mesh_setup(struct rt_shard *s)
{
	struct pc_engine *e = s->e;
	unsigned nrings = e->n + 1;
	size_t rings_off = align_up(sizeof(struct rt_inbox), PC_CACHE_PAD);
	size_t ring_sz = align_up(sizeof(struct rt_ring), PC_CACHE_PAD);
	size_t slots_off = align_up(rings_off + nrings * ring_sz, PC_CACHE_PAD);
	size_t slot_bytes = (size_t)e->capacity * sizeof(struct rt_msg);
	char *mem;

	s->mem_size = slots_off + nrings * slot_bytes;
	mem = pc_numa_alloc(s->node, s->mem_size);
	if (!mem)
		return -ENOMEM;
	/* First touch from this (pinned) thread: page tables and any page
	 * the node policy could not place come from the consumer's node. */
	memset(mem, 0, s->mem_size);
	s->mem = mem;
	s->inbox = (struct rt_inbox *)mem;
	s->in = calloc(nrings, sizeof(*s->in));
	s->mail_in = calloc(nrings, sizeof(*s->mail_in));
	s->out = calloc(e->n, sizeof(*s->out));
	s->dirty = calloc(e->n, sizeof(*s->dirty));
	s->is_hot = calloc(nrings, sizeof(*s->is_hot));
	s->cold_turns = calloc(nrings, sizeof(*s->cold_turns));
	if (!s->in || !s->mail_in || !s->out || !s->dirty || !s->is_hot || !s->cold_turns)
		return -ENOMEM;
	for (unsigned i = 0; i < nrings; i++) {
		struct rt_ring *r = (struct rt_ring *)(mem + rings_off + i * ring_sz);
		struct rt_msg *buf = (struct rt_msg *)(mem + slots_off + i * slot_bytes);

		if (rt_ring_init(r, buf, e->capacity))
			return -EINVAL;
		s->in[i] = r;
	}
	return mailboxes_setup(s);
}

/* The mailbox line of shards a != b (allocated by the lower one). */
static struct rt_mailbox *pair_box(struct pc_engine *e, unsigned a, unsigned b)
{
	unsigned lo = a < b ? a : b, hi = a < b ? b : a;

	return &e->shards[lo].mailboxes[hi - lo - 1];
}

void rt_mesh_connect(struct rt_shard *s)
{
	struct pc_engine *e = s->e;
	struct rt_mailbox *box;

	for (unsigned k = 0; k < e->n; k++) {
		s->out[k].ring = e->shards[k].in[s->id];
		s->out[k].inbox = e->shards[k].inbox;
		s->out[k].reactor = e->shards[k].reactor;
		s->out[k].skip_turn = UINT64_MAX;
		if (k == s->id)
			continue;
		/* half[0] carries the lower shard's messages, half[1] the
		 * higher's */
		box = pair_box(e, s->id, k);
		s->out[k].mail = &box->half[s->id > k];
		s->mail_in[k] = &box->half[k > s->id];
	}
}

void rt_mesh_free(struct rt_shard *s)
{
	pc_numa_free(s->mem, s->mem_size);
	if (s->mailboxes)
		pc_numa_free(s->mailboxes, s->mailboxes_size);
	free(s->in);
	free(s->mail_in);
	free(s->out);
	free(s->dirty);
	free(s->is_hot);
	free(s->cold_turns);
	s->is_hot = NULL;
	s->cold_turns = NULL;
	s->mem = NULL;
	s->mailboxes = NULL;
	s->mail_in = NULL;
	s->in = NULL;
	s->out = NULL;
	s->dirty = NULL;
}

/* ---- producer ---------------------------------------------------------- */

/* Announce a publish on ring `bit` into the shard whose inbox is ib and
 * wake it if it sleeps. Returns 1 when an eventfd was written. */
static int ring_bell(struct rt_inbox *ib, struct pc_reactor *r, unsigned bit)
{
	/* Full fence between the slot words just stored and the load of
	 * `hot`: against the consumer's "hot = 0; fence; load the next slot's
	 * word" when it stops polling this ring, either it sees our words or
	 * we see hot == 0 and ring the doorbell (store-buffering, forbidden
	 * across seq_cst fences). A hot ring is polled every turn: no doorbell, no RMW on
	 * the line the consumer reads. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&ib->hot[bit], memory_order_relaxed))
		return 0;
	/* seq_cst read-modify-write: the release half makes the slots just
	 * published visible to the consumer's exchange that takes this bit;
	 * being seq_cst, it and the load of `sleeping` below, against the
	 * consumer's seq_cst store of `sleeping` and load of the doorbell,
	 * cannot both miss each other. */
	atomic_fetch_or_explicit(&ib->bell[bit / 64], 1ull << (bit % 64), memory_order_seq_cst);
	if (!atomic_load_explicit(&ib->sleeping, memory_order_seq_cst))
		return 0;
	/* Several producers may see the flag; one eventfd write is enough. */
	if (!atomic_exchange_explicit(&ib->sleeping, 0, memory_order_relaxed))
		return 0;
	pc_reactor_wake(r);
	return 1;
}

static void publish(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];

	rt_ring_publish(o->ring);    /* release: contents before words */
	o->staged = 0;
	RT_STAT_ADD(s, publishes, 1);
	if (to == s->id) {
		/* Our own ring: no atomics, we are the consumer. */
		s->pending[to / 64] |= 1ull << (to % 64);
		return;
	}
	RT_STAT_ADD(s, wakeups_sent, (uint64_t)ring_bell(o->inbox, o->reactor, s->id));
}

/* True when ring (s, to) can take a non-reply message now. Only s
 * stages into it, so the answer holds until s itself sends. */
PC_INLINE bool has_room(struct rt_shard *s, unsigned to)
{
	return pc_spsc_room(&s->out[to].ring->ring, s->e->reserve + 1) > s->e->reserve;
}

/* A slot in ring (s, to), or NULL when full. Anything but a reply must
 * leave e->reserve slots free for the replies s may owe `to`. Inline, as
 * staged() below: they are the sending path, a few instructions each. */
PC_INLINE struct rt_msg *ring_slot(struct rt_shard *s, unsigned to, bool reply)
{
	if (!reply && !has_room(s, to))
		return NULL;
	return rt_ring_stage(s->out[to].ring);
}

/* ring_slot(), after whatever waits in the outbox to `to` (outbox.c):
 * that goes first, so while any of it is left, NULL. */
PC_INLINE struct rt_msg *stage(struct rt_shard *s, unsigned to, bool reply)
{
	if (PC_UNLIKELY(s->out[to].obx.first != NULL) && rt_outbox_drain_send(s, to))
		return NULL;
	return ring_slot(s, to, reply);
}

/* The sender's mailbox half towards `to` when this message may go there:
 * the half is free and ring (s, to) is empty, staged and published
 * messages alike (a look at the ring's head; after a busy answer, no
 * second look until the next turn, so a stream pays one per turn). */
PC_INLINE struct rt_head *mail_slot(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];
	uint32_t cap = s->e->capacity;

	if (o->staged || o->obx.first || o->skip_turn == s->stats.turns || !rt_mail_free(o->mail))
		return NULL;
	if (pc_spsc_room(&o->ring->ring, cap) != cap) {
		o->skip_turn = s->stats.turns;
		return NULL;
	}
	return o->mail;
}

/* Where the next message to `to` goes: the mailbox when `small` (it fits
 * in a head) and mail_slot() allows, else a ring slot; NULL when the ring
 * is full. *mail tells which, for done(). */
PC_INLINE struct rt_head *open_msg(struct rt_shard *s, unsigned to, bool small, bool reply,
				   bool *mail)
{
	struct rt_head *h = small ? mail_slot(s, to) : NULL;
	struct rt_msg *m;

	*mail = h != NULL;
	if (h)
		return h;
	m = stage(s, to, reply);
	return m ? &m->h : NULL;
}

static void mail_sent(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];

	rt_mail_post(o->mail, pc_spsc_produced(&o->ring->ring));
	s->mailed = true;
	RT_STAT_ADD(s, msgs_out, 1);
	RT_STAT_ADD(s, mail_out, 1);
	RT_STAT_ADD(s, wakeups_sent, (uint64_t)ring_bell(o->inbox, o->reactor, s->id));
}

PC_INLINE void staged(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];

	RT_STAT_ADD(s, msgs_out, 1);
	if (!o->dirty) {
		o->dirty = true;
		s->dirty[s->ndirty++] = to;
	}
	if (++o->staged >= s->e->cfg.publish_batch)
		publish(s, to);
}

/* The message open_msg() gave is written: send it. */
PC_INLINE void done(struct rt_shard *s, unsigned to, bool mail)
{
	if (mail)
		mail_sent(s, to);
	else
		staged(s, to);
}

void rt_mesh_flush(struct rt_shard *s)
{
	if (s->nfrees)
		rt_mesh_send_returns(s);
	for (unsigned i = 0; i < s->ndirty; i++) {
		unsigned to = s->dirty[i];

		s->out[to].dirty = false;
		if (s->out[to].staged)
			publish(s, to);
	}
	s->ndirty = 0;
}

/* ---- consumer ---------------------------------------------------------- */

/* A copy's bytes: from the head's payload on, through the rest of a ring
 * slot for copies over RT_HEAD_INLINE (rt_msg). */
PC_INLINE unsigned char *inline_bytes(struct rt_head *h)
{
	return (unsigned char *)h + offsetof(struct rt_head, u);
}

static void send_reply(struct rt_shard *s, unsigned to, pc_shard_reply_fn fn, void *ctx, intptr_t result)
{
	bool mail;
	/* NULL only behind an outbox, or with more calls allowed than the
	 * reserve holds: then the reply waits in the outbox, never refused. */
	struct rt_head *h = open_msg(s, to, true, true, &mail);

	if (!h) {
		rt_outbox_reply(s, to, fn, ctx, result);
		return;
	}
	h->fn = (void (*)(void))fn;
	h->kind = RT_MSG_REPLY;
	h->u.reply.ctx = ctx;
	h->u.reply.result = result;
	done(s, to, mail);
}

static void run_msg(struct rt_shard *s, unsigned from, struct rt_msg *m)
{
	struct rt_head *h = &m->h;

	RT_STAT_ADD(s, msgs_in, 1);
	switch (h->kind) {
	case RT_MSG_PTR:
		((pc_msg_fn)h->fn)(h->u.arg);
		break;
	case RT_MSG_COPY:
		((pc_msg_fn)h->fn)(inline_bytes(h));
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

/* Run up to RT_DRAIN_BUDGET messages from source i; *empty tells whether
 * it ran dry. Ring slots are freed for the producer once, after the batch. */
static unsigned drain_source(struct rt_shard *s, unsigned i, bool *empty)
{
	struct rt_msg mail, *m;
	unsigned k = 0;

	*empty = false;
	while (k < RT_DRAIN_BUDGET) {
		m = next_msg(s, i, &mail);
		if (!m) {
			*empty = true;
			break;
		}
		k++;
		run_msg(s, i, m);
	}
	if (k) {
		rt_ring_release(s->in[i]);
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
		 * producers' fetch_or (see ring_bell). */
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
				run_msg(s, i, m);
				continue;
			}
			RT_STAT_ADD(s, unrun_at_stop, 1);
		}
		rt_ring_release(s->in[i]);
	}
}

/* ---- the public sending functions ------------------------------------ */

static struct rt_shard *sender(unsigned to)
{
	struct rt_shard *s = rt_self;

	if (!s || to >= s->e->n)
		return NULL;
	return s;
}

static int refuse(struct rt_shard *s)
{
	RT_STAT_ADD(s, ring_full, 1);
	return -EAGAIN; /* full: nothing staged, the caller retries later */
}

int pc_shard_submit(unsigned to, pc_msg_fn fn, void *arg)
{
	struct rt_shard *s = sender(to);
	struct rt_head *h;
	bool mail;

	if (!s || !fn)
		return rt_self ? -EINVAL : -EPERM;
	h = open_msg(s, to, true, false, &mail);
	if (!h)
		return refuse(s);
	h->fn = (void (*)(void))fn;
	h->kind = RT_MSG_PTR;
	h->u.arg = arg;
	done(s, to, mail);
	return 0;
}

int pc_shard_submit_copy(unsigned to, pc_msg_fn fn, const void *data, size_t len)
{
	struct rt_shard *s = sender(to);
	struct rt_head *h;
	bool mail;

	if (!s || !fn || (len && !data))
		return rt_self ? -EINVAL : -EPERM;
	if (len > PC_MSG_INLINE)
		return -EMSGSIZE;
	h = open_msg(s, to, len <= RT_HEAD_INLINE, false, &mail);
	if (!h)
		return refuse(s);
	h->fn = (void (*)(void))fn;
	h->kind = RT_MSG_COPY;
	h->len = (uint16_t)len;
	if (len)
		memcpy(inline_bytes(h), data, len);
	done(s, to, mail);
	return 0;
}

int pc_shard_call(unsigned to, pc_shard_call_fn fn, void *arg, pc_shard_reply_fn reply, void *ctx)
{
	struct rt_shard *s = sender(to);
	struct rt_msg *m;

	if (!s || !fn || !reply)
		return rt_self ? -EINVAL : -EPERM;
	if (s->out[to].calls >= s->app.call_limit)
		return refuse(s);
	m = stage(s, to, false);
	if (!m)
		return refuse(s);
	m->h.fn = (void (*)(void))fn;
	m->h.kind = RT_MSG_CALL;
	m->h.u.arg = arg;
	m->x.call.reply = reply;
	m->x.call.ctx = ctx;
	s->out[to].calls++;
	staged(s, to);
	return 0;
}

unsigned pc_shard_call_limit(void)
{
	return rt_self ? rt_self->app.call_limit : 0;
}

int pc_shard_broadcast(pc_msg_fn fn, void *arg)
{
	struct rt_shard *s = rt_self;

	if (!s)
		return -EPERM;
	if (!fn)
		return -EINVAL;
	for (unsigned k = 0; k < s->e->n; k++)
		if (rt_outbox_drain_send(s, k) || !has_room(s, k))
			return refuse(s);
	for (unsigned k = 0; k < s->e->n; k++)
		pc_shard_submit(k, fn, arg);
	return 0;
}

int pc_shard_flush(void)
{
	struct rt_shard *s = rt_self;
	int n;

	if (!s)
		return -EPERM;
	n = (int)s->ndirty;
	rt_mesh_flush(s);
	return n;
}

/* ---- from outside the engine --------------------------------------- */

int rt_mesh_push_external(struct pc_engine *e, unsigned to, void (*fn)(void *), void *arg)
{
	struct rt_shard *d = &e->shards[to];
	struct rt_ring *r = d->in[e->n];
	struct rt_msg *m;

	/* The lock makes the callers one producer after another; each
	 * unlock/lock pair orders one producer's writes before the next's. */
	pthread_mutex_lock(&d->ext_lock);
	m = rt_ring_stage(r);
	if (!m) {
		pthread_mutex_unlock(&d->ext_lock);
		return -EAGAIN;
	}
	m->h.fn = (void (*)(void))fn;
	m->h.kind = RT_MSG_PTR;
	m->h.u.arg = arg;
	rt_ring_publish(r);
	pthread_mutex_unlock(&d->ext_lock);
	ring_bell(d->inbox, d->reactor, e->n);
	return 0;
}

/* ---- shared buffers going home -------------------------------------- */

/* Queue b (refs reached 0 here, on a shard that does not own it) to be
 * sent back to its owner at the end of this turn. */
void rt_mesh_return_buf(struct rt_shard *s, struct pc_shared_buf *b)
{
	struct rt_out *o = &s->out[((struct rt_shard *)b->_home)->id];

	b->_next = o->frees;
	if (!o->frees)
		s->nfrees++;
	o->frees = b;
}

/* Send the queued returns, one message per owner; those whose ring is
 * full wait for a later turn. Returns how many owners still wait. */
unsigned rt_mesh_send_returns(struct rt_shard *s)
{
	if (!s->nfrees)
		return 0;
	for (unsigned k = 0; k < s->e->n; k++) {
		struct rt_out *o = &s->out[k];
		struct rt_head *h;
		bool mail;

		if (!o->frees || !(h = open_msg(s, k, true, false, &mail)))
			continue;
		h->fn = NULL;
		h->kind = RT_MSG_FREE;
		h->u.free_list = o->frees;
		o->frees = NULL;
		s->nfrees--;
		done(s, k, mail);
	}
	return s->nfrees;
}

/* At exit: the engine is stopping and every shard is past its last turn;
 * free what could not be sent home (the allocator is thread-safe). */
void rt_mesh_drop_returns(struct rt_shard *s)
{
	for (unsigned k = 0; k < s->e->n && s->nfrees; k++) {
		if (s->out[k].frees) {
			rt_shared_buf_free_list(s->out[k].frees);
			s->out[k].frees = NULL;
			s->nfrees--;
		}
	}
}

/* ---- for the outbox (outbox.c) ---------------------------------------- */

struct rt_msg *rt_mesh_ring_slot(struct rt_shard *s, unsigned to, bool reply)
{
	return ring_slot(s, to, reply);
}

void rt_mesh_staged(struct rt_shard *s, unsigned to)
{
	staged(s, to);
}

void rt_mesh_ring_bell(struct rt_shard *s, unsigned to)
{
	struct rt_out *o = &s->out[to];

	RT_STAT_ADD(s, wakeups_sent, (uint64_t)ring_bell(o->inbox, o->reactor, s->id));
}

bool rt_mesh_has_room(struct rt_shard *s, unsigned to)
{
	return has_room(s, to);
}

void rt_mesh_publish(struct rt_shard *s, unsigned to)
{
	if (s->out[to].staged)
		publish(s, to);
}

struct rt_head *rt_mesh_open(struct rt_shard *s, unsigned to, bool small, bool *mail)
{
	return open_msg(s, to, small, false, mail);
}

void rt_mesh_done(struct rt_shard *s, unsigned to, bool mail)
{
	done(s, to, mail);
}
