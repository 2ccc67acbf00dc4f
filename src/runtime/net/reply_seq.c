/* SPDX-License-Identifier: MIT */
/* percore net: the reply sequencer (percore/reply.h).
 *
 * Per session, on demand: a ring of slots indexed by ticket (a 32-bit
 * count, compared by unsigned difference so it may wrap), head the oldest
 * slot not yet written, next the next ticket. Filling the head writes it
 * and every filled slot behind it; filling another copies the frame into
 * the slot until its turn. The sequencers of a shard's sessions hang off
 * a table indexed like the session id table; a session's is freed with
 * it (net_reply_forget()), so the entry of a slot is its session's. An
 * answer from another shard names the session by id: one that has gone
 * (or whose slot holds a newer session) is not found, and the answer is
 * discarded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"
#include "percore/outbox.h"
#include "percore/reply.h"
#include "percore/shared_buf.h"

enum { SLOT_WAIT = 0, SLOT_FILLED, SLOT_SKIPPED };

struct rslot {
	uint8_t *frame;               /* header and body, when filled early */
	uint32_t len;
	uint8_t state;
};

struct net_rseq {
	uint32_t head, next;          /* tickets: oldest unwritten, next free */
	uint32_t cap;                 /* slots, a power of two */
	struct rslot slot[];
};

static struct net_rseq **seq_ref(struct net_shard *sh, const struct pc_session *s)
{
	return s->slot < sh->rseq_cap ? &sh->rseq[s->slot] : NULL;
}

/* Read on every write of a session that has answers owed (net_reply_owed()):
 * the slot's entry, with no id to compare, since a session's sequencer
 * goes with it. */
static struct net_rseq *seq_of(const struct pc_session *s)
{
	struct net_rseq **p = seq_ref(s->sh, s);

	return p ? *p : NULL;
}

static void seq_free(struct net_rseq *q)
{
	for (uint32_t t = q->head; t != q->next; t++)
		free(q->slot[t & (q->cap - 1)].frame);
	free(q);
}

/* The table reaches the session's id slot. */
static int table_fit(struct net_shard *sh, uint32_t slot)
{
	uint32_t cap = sh->rseq_cap ? sh->rseq_cap : 64;
	struct net_rseq **n;

	if (slot < sh->rseq_cap)
		return 0;
	while (cap <= slot)
		cap *= 2;
	n = realloc(sh->rseq, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + sh->rseq_cap, 0, (cap - sh->rseq_cap) * sizeof(*n));
	sh->rseq = n;
	sh->rseq_cap = cap;
	return 0;
}

/* A sequencer of cap slots holding q's (q may be NULL: a new one). */
static struct net_rseq *seq_grow(struct net_rseq *q, uint32_t cap)
{
	struct net_rseq *n = calloc(1, sizeof(*n) + cap * sizeof(n->slot[0]));

	if (!n)
		return NULL;
	n->cap = cap;
	if (q) {
		n->head = q->head;
		n->next = q->next;
		for (uint32_t t = q->head; t != q->next; t++)
			n->slot[t & (cap - 1)] = q->slot[t & (q->cap - 1)];
		free(q);
	}
	return n;
}

int pc_reply_reserve(struct pc_session *s, uint32_t *ticket)
{
	struct net_shard *sh = s->sh;
	struct net_rseq **p, *q;

	if (s->flags & (NS_CLOSING | NS_FIN | NS_DEAD))
		return -EPIPE;
	if (table_fit(sh, s->slot))
		return -ENOMEM;
	p = seq_ref(sh, s);
	q = seq_of(s);
	if (!q || q->next - q->head == q->cap) {
		uint32_t cap = q ? q->cap * 2 : 16;

		if (q && q->cap >= PC_REPLY_MAX_PENDING)
			return -ENOBUFS;
		q = seq_grow(q, cap);
		if (!q)
			return -ENOMEM;
		*p = q;
	}
	q->slot[q->next & (q->cap - 1)] = (struct rslot){ 0 };
	*ticket = q->next++;
	return 0;
}

/* Write the head's frame and every filled slot behind it. */
static int flush_ready(struct pc_session *s, struct net_rseq *q)
{
	int first = 0;

	while (q->head != q->next) {
		struct rslot *r = &q->slot[q->head & (q->cap - 1)];
		int rc = 0;

		if (r->state == SLOT_WAIT)
			break;
		if (r->state == SLOT_FILLED) {
			rc = pc_session_write(s, r->frame, r->len);
			if (!rc) /* a whole frame, sent as bytes */
				NET_STAT_ADD(s->sh, frames_out, 1);
		}
		if (rc)
			NET_STAT_ADD(s->sh, replies_discarded, 1);
		if (rc && !first)
			first = rc;
		free(r->frame);
		*r = (struct rslot){ 0 };
		q->head++;
	}
	return first;
}

/* The slot of `ticket` when it is reserved and still waiting. */
static struct rslot *waiting(struct net_rseq *q, uint32_t ticket)
{
	struct rslot *r;

	if (!q || ticket - q->head >= q->next - q->head)
		return NULL;
	r = &q->slot[ticket & (q->cap - 1)];
	return r->state == SLOT_WAIT ? r : NULL;
}

/* The frame of an answer, encoded into a new buffer. */
static uint8_t *encode(uint32_t msg_id, uint8_t flags, const void *body, size_t len, int *rc)
{
	uint8_t *f;

	if (len > PC_FRAME_MAX_BODY_CAP) {
		*rc = -EMSGSIZE;
		return NULL;
	}
	f = malloc(PC_FRAME_HEADER_LEN + len + 1);
	if (!f) {
		*rc = -ENOMEM;
		return NULL;
	}
	*rc = pc_frame_header_encode(f, msg_id, flags, len);
	if (*rc) {
		free(f);
		return NULL;
	}
	if (len)
		memcpy(f + PC_FRAME_HEADER_LEN, body, len);
	return f;
}

int pc_reply_fill(struct pc_session *s, uint32_t ticket, uint32_t msg_id, uint8_t flags,
		  const void *body, size_t len)
{
	struct net_rseq *q = seq_of(s);
	struct rslot *r = waiting(q, ticket);
	int rc = 0;

	if (!r)
		return -EINVAL;
	if (ticket == q->head) {
		/* Its turn: straight out, then whatever waited behind it. */
		rc = pc_session_send_flags(s, msg_id, flags, body, len);
		if (rc)
			NET_STAT_ADD(s->sh, replies_discarded, 1);
		r->state = SLOT_SKIPPED;
		flush_ready(s, q);
		return rc;
	}
	r->frame = encode(msg_id, flags, body, len, &rc);
	if (!r->frame)
		return rc;
	r->len = (uint32_t)(PC_FRAME_HEADER_LEN + len);
	r->state = SLOT_FILLED;
	return 0;
}

int pc_reply_unreserve(struct pc_session *s, uint32_t ticket)
{
	struct net_rseq *q = seq_of(s);

	if (!waiting(q, ticket) || ticket != q->next - 1)
		return -EINVAL;
	q->next--;
	return 0;
}

int pc_reply_skip(struct pc_session *s, uint32_t ticket)
{
	struct net_rseq *q = seq_of(s);
	struct rslot *r = waiting(q, ticket);

	if (!r)
		return -EINVAL;
	r->state = SLOT_SKIPPED;
	flush_ready(s, q);
	/* Nothing written: a session that waited only for this answer (the
	 * client's EOF, a close, a drain) ends with the turn's flush. */
	if (!net_reply_owed(s) && (s->flags & (NS_EOF | NS_CLOSING | NS_DRAIN)))
		net_session_mark_dirty(s);
	return 0;
}

uint32_t pc_reply_pending(const struct pc_session *s)
{
	const struct net_rseq *q = seq_of(s);

	return q ? q->next - q->head : 0;
}

/* The session is being freed: its slots and waiting frames go with it. */
void net_reply_forget(struct pc_session *s)
{
	struct net_rseq **p = seq_ref(s->sh, s);

	if (p && *p) {
		seq_free(*p);
		*p = NULL;
	}
}

bool net_reply_owed(const struct pc_session *s)
{
	return !(s->flags & (NS_CLOSING | NS_FIN | NS_DEAD)) && pc_reply_pending(s);
}

void net_reply_table_free(struct net_shard *sh)
{
	for (uint32_t i = 0; i < sh->rseq_cap; i++)
		if (sh->rseq[i])
			seq_free(sh->rseq[i]);
	free(sh->rseq);
	sh->rseq = NULL;
	sh->rseq_cap = 0;
}

/* ---- from another shard --------------------------------------------------- */

struct fill_msg {
	uint64_t id;
	uint32_t ticket;
	uint32_t msg_id;
	uint32_t len;
	uint8_t flags;
	uint8_t body[];
};

/* Fill by id on the session's shard; a session gone is counted. */
static int fill_here(struct net_shard *sh, uint64_t id, uint32_t ticket, uint32_t msg_id,
		     uint8_t flags, const void *body, size_t len)
{
	struct pc_session *s = net_slot_find(sh, id);

	if (!s || (s->flags & NS_DEAD)) {
		NET_STAT_ADD(sh, replies_discarded, 1);
		return -ENOENT;
	}
	return pc_reply_fill(s, ticket, msg_id, flags, body, len);
}

static void fill_run(void *arg)
{
	struct pc_shared_buf *b = arg;
	const struct fill_msg *m = pc_shared_buf_data(b);
	struct net_shard *sh = net_self;

	if (sh && fill_here(sh, m->id, m->ticket, m->msg_id, m->flags, m->body, m->len) == -EINVAL)
		NET_STAT_ADD(sh, replies_discarded, 1);
	pc_shared_buf_put(b);
}

int pc_reply_fill_to(uint64_t id, uint32_t ticket, uint32_t msg_id, uint8_t flags,
		     const void *body, size_t len)
{
	struct net_shard *sh = net_self;
	unsigned to = pc_session_id_shard(id);
	struct pc_shared_buf *b;
	struct fill_msg *m;
	int rc;

	if (!sh)
		return -EPERM;
	if (to >= sh->nshards)
		return -EINVAL;
	if (to == sh->index)
		return fill_here(sh, id, ticket, msg_id, flags, body, len);
	if (len > PC_FRAME_MAX_BODY_CAP)
		return -EMSGSIZE;
	b = pc_shared_buf_new(sizeof(*m) + len);
	if (!b)
		return -ENOMEM;
	m = (struct fill_msg *)(void *)b->data;
	*m = (struct fill_msg){ id, ticket, msg_id, (uint32_t)len, flags };
	if (len)
		memcpy(m->body, body, len);
	rc = pc_shard_send_reply(to, fill_run, b); /* an answer: never over budget */
	if (rc)
		pc_shared_buf_put(b);
	return rc;
}
