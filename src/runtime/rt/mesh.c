/* SPDX-License-Identifier: MIT */
/* percore rt: the mesh, N x N SPSC rings with doorbells.
 *
 * Producer side (shard i towards j): stage the message in ring (i, j),
 * publish it once per turn or every publish_batch messages (the ring is in
 * slot-sequence mode: publishing stores each staged slot's sequence word,
 * which is what the consumer polls; spsc_seq.h), then set bit i of j's
 * doorbell and look whether j sleeps: at the turn's first publish to j
 * and once more at its end, not at every publish (mesh_send.c), and not
 * at all while j polls the ring every turn ("hot").
 * Consumer side (shard j): exchange each non-zero doorbell word with 0,
 * add its bits to the rings it knows are non-empty, and drain those rings;
 * a ring leaves that set only when a take finds it empty. A turn therefore
 * costs O(active senders), not O(N).
 *
 * Why no message is stranded (the argument in full: docs/ARCHITECTURE.md):
 * every publish is followed, by the end of its turn, by a doorbell check
 * that either finds the ring hot or does a fetch_or of the doorbell, and
 * the consumer's exchange that clears the bit acquires that fetch_or, so the
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
 *
 * The files: mesh.c lays out the memory (inboxes, rings, mailboxes) and
 * connects the shards; mesh_send.h/.c is the producer side (staging,
 * publishing, doorbells), mesh_recv.c the consumer side (doorbells, hot
 * rings, running messages), mesh_api.c the public pc_shard_* calls,
 * mesh_ext.c submission from threads outside the engine, and
 * mesh_returns.c the shared buffers sent back to their owners.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/numa.h"
#include "rt/rt.h"

/* Align x up to a multiple of a (a power of two). */
static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}


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
		s->out[k].batch = e->cfg.publish_batch;
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
