/* SPDX-License-Identifier: MIT */
/* percore rt: the pair mailbox, the mesh's path for one message at a time.
 *
 * Why: a round trip through two rings moves two lines, one each way, and
 * each move costs two transfers: the sender takes the line from the
 * receiver, who was polling it, then the receiver reads it back. Two
 * threads that answer each other in one shared line pay half that (the
 * reader of a freshly written line gets it to write in:
 * Peer/core2core/RTT), so shards i and j share one line, half each way,
 * and a message that finds the ring empty goes there instead. Streams
 * (the ring holds messages) stay on the ring, batched.
 *
 * A half's tag (rt_head.word): 0 while free; else the sender's ring
 * position when it wrote the half, as rt_mail_tag(pos): the mail comes
 * after the ring messages below pos and before the one at pos.
 *  - Send: the sender sees the tag 0 (acquire: the receiver has finished
 *    copying the last mail out), writes the half, stores the tag with
 *    release, then rings the doorbell as a ring publish does (mesh.c).
 *  - Receive: the receiver loads the next ring slot's word, then the tag
 *    (both acquire). The sender stored the tag before any later ring
 *    slot's word, so when the slot at pos is visible, so is a mail due
 *    before it: the mail runs first. The receiver copies the half out,
 *    stores the tag 0 with release, and runs its copy.
 * Positions travel modulo 2^31: the mail and the receiver's position are
 * never a ring capacity apart, and capacities stay below 2^31.
 */
#ifndef PERCORE_SRC_RT_MAILBOX_H
#define PERCORE_SRC_RT_MAILBOX_H

#include "rt/rt.h"

/* The tag of a mail sent at ring position pos (odd, so never 0). */
PC_INLINE uint32_t rt_mail_tag(size_t pos)
{
	return (uint32_t)pos << 1 | 1u;
}

/* The mail from ring (from, me) that is due before the ring message at
 * the consumer's position, or NULL. Call after peeking that ring slot. */
PC_INLINE struct rt_head *rt_mail_due(struct rt_head *half, struct rt_ring *r)
{
	uint32_t tag;

	if (!half)
		return NULL;
	tag = atomic_load_explicit(&half->word, memory_order_acquire);
	return tag == rt_mail_tag(pc_spsc_seq_consumed(&r->ring)) ? half : NULL;
}

/* Copy the mail in half into *out and hand the half back to its sender. */
PC_INLINE void rt_mail_take(struct rt_head *half, struct rt_msg *out)
{
	out->h.fn = half->fn;
	out->h.kind = half->kind;
	out->h.len = half->len;
	out->h.u = half->u;
	/* release: the copy is complete before the sender may write again */
	atomic_store_explicit(&half->word, 0, memory_order_release);
}

/* The sender's half towards a receiver, when it is free now. */
PC_INLINE bool rt_mail_free(const struct rt_head *half)
{
	return half && !atomic_load_explicit(&half->word, memory_order_acquire);
}

/* Publish the half just written: it follows ring position pos. */
PC_INLINE void rt_mail_post(struct rt_head *half, size_t pos)
{
	atomic_store_explicit(&half->word, rt_mail_tag(pos), memory_order_release);
}

#endif
