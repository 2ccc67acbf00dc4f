/* SPDX-License-Identifier: MIT */
/* percore: arena (bump) allocator for request-lifetime scratch.
 *
 * Allocation moves a pointer through the current block; when a block is
 * full the arena chains a new one. Nothing is freed one by one: a shard
 * takes a mark when a request starts and rewinds to it when the request
 * ends, or resets the whole arena, or destroys it. One emptied block is
 * kept for reuse so a request that crosses a block boundary does not map
 * and unmap memory every time. Blocks come from the mem layer's page
 * source (the shard's NUMA node).
 *
 * With PC_ASAN, memory past the bump pointer is poisoned, so reading
 * memory released by a rewind or writing past an allocation into the free
 * room is reported.
 *
 * Threads: an arena belongs to one thread; every function is for it only.
 */
#ifndef PERCORE_ARENA_H
#define PERCORE_ARENA_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct pc_arena_block;

/* An arena. Callers keep it opaque: the fields are public only so that
 * pc_arena_alloc() can be inline. */
struct pc_arena {
	char *_cur, *_end;              /* free room of the current block */
	struct pc_arena_block *_block;  /* current block; older ones chained */
	struct pc_arena_block *_spare;  /* an emptied standard block, or NULL */
	size_t _block_bytes;            /* standard block size */
	int _node;
};

/* A point to rewind to. Valid until the arena is rewound to an earlier
 * point, reset or destroyed. */
struct pc_arena_mark {
	struct pc_arena_block *_block;
	char *_cur;
};

/* An arena whose standard blocks are block_bytes (0: 64 KiB; rounded up to
 * whole pages) on NUMA node node (-1: first touch). The first block is
 * taken now. Returns NULL when memory runs out or block_bytes is absurd. */
PC_API struct pc_arena *pc_arena_create(size_t block_bytes, int node);

/* Free every block and the arena (NULL ignored). */
PC_API void pc_arena_destroy(struct pc_arena *a);

/* Refill path of pc_arena_alloc. Internal. */
PC_API void *pc_arena__alloc_slow(struct pc_arena *a, size_t size, size_t align);

/* size bytes aligned to align (any power of two), uninitialised; size 0
 * gives a valid pointer to no bytes. Larger than a block is fine (it gets a
 * block of its own). Returns NULL when align is not a power of two, the
 * size overflows, or memory runs out. */
PC_INLINE void *pc_arena_alloc(struct pc_arena *a, size_t size, size_t align)
{
	uintptr_t cur = (uintptr_t)a->_cur, end = (uintptr_t)a->_end;
	uintptr_t p = (cur + align - 1) & ~(uintptr_t)(align - 1);

	/* p < cur: the rounding wrapped around (a huge align) */
	if (PC_LIKELY(PC_IS_POW2(align) && p >= cur && p <= end && size <= end - p)) {
		a->_cur = (char *)p + size;
		PC_ASAN_UNPOISON((void *)p, size);
		return (void *)p;
	}
	return pc_arena__alloc_slow(a, size, align);
}

/* The current point, for pc_arena_rewind. */
static inline struct pc_arena_mark pc_arena_mark(const struct pc_arena *a)
{
	struct pc_arena_mark m; /* no designated initializer: C++17 reads this */

	m._block = a->_block;
	m._cur = a->_cur;
	return m;
}

/* Release everything allocated since m was taken: blocks chained since go
 * back (one kept as the spare). Returns 0, or -EINVAL when m does not
 * belong to this arena's current chain or lies ahead of the current point
 * (nothing is changed then). */
PC_API int pc_arena_rewind(struct pc_arena *a, struct pc_arena_mark m);

/* Release everything: back to an empty first block (plus the spare). */
PC_API void pc_arena_reset(struct pc_arena *a);

/* What pc_arena_stats() reports. */
struct pc_arena_stats {
	size_t blocks;          /* in the chain, the current one included */
	size_t bytes;           /* mapped for the chain */
	size_t used;            /* bytes handed out in the current block */
	size_t spare_bytes;     /* the kept spare block, 0 when none */
};

/* Fill st with the arena's block count, mapped bytes, bytes used in the
 * current block and the spare's size. The arena's thread only. */
PC_API void pc_arena_stats(const struct pc_arena *a, struct pc_arena_stats *st);

/* Check the invariants: the bump pointer inside the current block, the
 * chain acyclic and every block sized sanely. Returns 0, or -EINVAL and,
 * when err is not NULL, what broke in err (errlen bytes): which block, the
 * value found, the range expected. */
PC_API int pc_arena_validate(const struct pc_arena *a, char *err, size_t errlen);

PC_END_DECLS

#endif
