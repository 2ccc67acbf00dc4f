/* SPDX-License-Identifier: MIT */
/* percore rt: the outbox's entries and its sending steps, for the files
 * that send through it (outbox.c, calls.c, service.c). */
#ifndef PERCORE_SRC_RT_OUTBOX_H
#define PERCORE_SRC_RT_OUTBOX_H

#include "rt/rt.h"

/* Messages per chunk: a 4 KiB slab object, its first line the links. */
#define RT_OBX_CHUNK_MSGS (PC_SHARD_SLAB_MAX / sizeof(struct rt_msg) - 1)

struct rt_obx_chunk {
	struct rt_obx_chunk *next;
	uint32_t head, tail;         /* msgs[head..tail) wait, oldest first */
	struct rt_msg msgs[RT_OBX_CHUNK_MSGS];
};

/* Where rt_obx_open() put a message. */
enum rt_obx_where { RT_OBX_RING, RT_OBX_MAIL, RT_OBX_QUEUED };

/* Open a message to `to`: a ring slot or mailbox half when nothing waits
 * and there is room (small: it fits a mailbox half), else an outbox entry
 * (exempt: past the budget if need be). NULL with *rc (-ENOBUFS,
 * -ENOMEM) when refused. A message that is not small is a whole rt_msg.
 * Write it, then rt_obx_sent(). */
struct rt_head *rt_obx_open(struct rt_shard *s, unsigned to, bool small, bool exempt,
			    enum rt_obx_where *where, int *rc);
void rt_obx_sent(struct rt_shard *s, unsigned to, enum rt_obx_where where);

/* A call that waits in the outbox is counted against the pair's
 * outstanding calls when it moves into the ring; its h.len says whether
 * it waits there for one of call_limit to free (pc_shard_call_q) or only
 * for ring room (the library's own calls). */
enum { RT_CALL_UNLIMITED = 0, RT_CALL_LIMITED = 1 };

/* A new entry at the tail of the outbox to `to` (exempt: past the
 * budget), or NULL: *rc (-ENOBUFS, -ENOMEM) says why. Write it, then
 * rt_obx_sent() with RT_OBX_QUEUED. */
struct rt_msg *rt_obx_push(struct rt_shard *s, unsigned to, bool exempt, int *rc);

/* calls.c: a call message to `to` through the outbox. exempt: past the
 * budget and the call limit, for the library's own calls (counted against
 * the pair's outstanding calls all the same); else past call_limit it
 * waits in the outbox, in order, until an answer frees a call. */
int rt_call_send(struct rt_shard *s, unsigned to, pc_shard_call_fn fn, void *arg,
		 pc_shard_reply_fn reply, void *ctx, bool exempt);

#endif
