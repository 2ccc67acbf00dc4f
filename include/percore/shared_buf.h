/* SPDX-License-Identifier: MIT */
/* percore: an immutable reference-counted buffer that many shards may read.
 *
 * The one place percore expects shards to share a writable word: the
 * reference count. A shard creates the buffer, fills it, and from then on
 * nobody writes its bytes; it hands references to other shards inside
 * messages (pc_shared_buf_get() once per reference sent). When the last
 * reference is dropped the memory goes back on its owner shard: a holder on
 * another shard collects such buffers and returns them to the owner over
 * the mesh, one message per owner and batch, so the owner's slab pool is
 * only ever used by the owner's thread, without atomics.
 */
#ifndef PERCORE_SHARED_BUF_H
#define PERCORE_SHARED_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* A reference-counted buffer one shard fills and any shard may read. */
struct pc_shared_buf {
	/* Written by every holder (get/put): the buffer's only shared
	 * writable word, alone on the header's line with the read-only
	 * fields below. */
	PC_ATOMIC(uint32_t) _refs;
	void *_home;                     /* the shard that allocated it */
	size_t _len;
	struct pc_shared_buf *_next;     /* return list, after refs hit 0 */
	struct pc_slab *_pool;           /* owner's slab, or NULL: malloc */
	/* The bytes start on the next cache line: readers never touch the
	 * line the count lives on while they read the data. */
	__extension__ unsigned char data[] __attribute__((aligned(PC_CACHE_LINE)));
};

/* A new buffer of len bytes (len may be 0) owned by this shard, with one
 * reference held by the caller: from the shard's slab pools when it fits
 * one (pc_shard_slab), else from malloc. Fill data before sharing it;
 * afterwards it is read-only for everyone. Every reference must be dropped
 * before the engine is destroyed. Shard threads only. Returns NULL off a
 * shard or when memory runs out. */
PC_API struct pc_shared_buf *pc_shared_buf_new(size_t len);

/* The buffer's bytes. Read-only once shared; any thread holding a
 * reference. */
static inline const void *pc_shared_buf_data(const struct pc_shared_buf *b)
{
	return b->data;
}

/* The buffer's length in bytes. Any thread holding a reference. */
static inline size_t pc_shared_buf_len(const struct pc_shared_buf *b)
{
	return b->_len;
}

/* Take one more reference (for a message that will carry b). Any thread
 * holding a reference. Returns b. */
static inline struct pc_shared_buf *pc_shared_buf_get(struct pc_shared_buf *b)
{
	/* relaxed: the caller's own reference keeps b alive; publishing b
	 * to another shard goes through the mesh, which orders it */
	PC_ATOMIC_FETCH_ADD(&b->_refs, 1, PC_MO_RELAXED);
	return b;
}

/* Drop a reference. The last one frees b: at once on its owner shard;
 * from another shard, by a message to the owner sent on a later turn;
 * from a thread that is not a running shard (after the engine stopped),
 * directly. NULL is ignored. */
PC_API void pc_shared_buf_put(struct pc_shared_buf *b);

/* References held now (a snapshot, for tests and assertions). */
static inline uint32_t pc_shared_buf_refs(const struct pc_shared_buf *b)
{
	return PC_ATOMIC_LOAD(&b->_refs, PC_MO_RELAXED);
}

PC_END_DECLS

#endif
