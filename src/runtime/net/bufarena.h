/* SPDX-License-Identifier: MIT */
/* percore net: a shard's memory for ring buffers, carved from a few large
 * mappings.
 *
 * Why: a mirrored ring costs two memory mappings of its own, so a server
 * whose clients each hold half a frame would reach the kernel's limit on
 * mappings per process (vm.max_map_count, 65,530 by default) long before
 * its descriptor limit; every mmap of the process fails after that. A
 * mirrored ring cannot be carved from a shared mapping either: its second
 * half must map the first half's file pages, which is a mapping per ring
 * wherever the memory comes from. So the pool's rings are plain
 * (percore/ringbuf.h: a wrapped frame is copied, only then) and their
 * memory comes from here: power-of-two blocks of a buddy allocator over
 * chunks of address space mapped once each. The number of mappings then
 * follows the bytes held, a chunk at a time, not the number of rings.
 *
 * Chunks are reserved without commitment (MAP_NORESERVE) and only the
 * pages touched become resident. A block given back larger than a few
 * pages returns its pages to the kernel (MADV_DONTNEED, which splits no
 * mapping); a chunk entirely free is unmapped unless it is the last.
 * Huge pages are refused: blocks are touched sparsely, and a 2 MiB page
 * per touched block would make a partial frame cost megabytes.
 *
 * Owned by one shard: only its thread may call these.
 */
#ifndef PERCORE_SRC_NET_BUFARENA_H
#define PERCORE_SRC_NET_BUFARENA_H

#include <stddef.h>
#include <stdint.h>

#define NET_ARENA_MIN_SHIFT 13   /* 8 KiB: a 4 KiB ring and its copy half */
#define NET_ARENA_CHUNK_SHIFT 30 /* 1 GiB of address space per mapping */
#define NET_ARENA_FLOOR_SHIFT 26 /* chunks shrink to 64 MiB where 1 GiB is refused */
#define NET_ARENA_ORDERS (NET_ARENA_CHUNK_SHIFT - NET_ARENA_MIN_SHIFT + 1)

struct net_arena_chunk {
	uint8_t *base;
	unsigned shift;         /* its size: 1 << shift bytes */
	size_t used;            /* bytes in blocks handed out */
	/* One byte per smallest block: at the first of each block, its
	 * order + 1 and whether it is free; 0 inside a block. */
	uint8_t *state;
};

struct net_arena {
	struct net_arena_chunk *chunks;
	unsigned nchunks, chunks_cap;
	/* Free blocks by order, linked through their own first bytes. */
	void *free[NET_ARENA_ORDERS];
	size_t mapped_bytes;    /* address space of the chunks */
	size_t used_bytes;      /* in blocks handed out */
	size_t maps;            /* chunks mapped over the arena's life */
};

/* An empty arena: maps nothing until the first block. */
void net_arena_init(struct net_arena *a);

/* Unmap every chunk. Blocks still handed out become invalid. */
void net_arena_fini(struct net_arena *a);

/* A block of at least `bytes` (rounded up to a power of two, 8 KiB at
 * least), page-aligned (blocks are aligned to their size within their
 * chunk, whose start mmap only aligns to a page). Its bytes are whatever
 * they were. Returns
 * NULL when bytes exceeds a chunk or no memory could be mapped. */
void *net_arena_alloc(struct net_arena *a, size_t bytes);

/* Give back a block from net_arena_alloc with the same bytes. NULL is
 * ignored. */
void net_arena_free(struct net_arena *a, void *p, size_t bytes);

/* Chunks mapped now. */
static inline unsigned net_arena_chunks(const struct net_arena *a)
{
	return a->nchunks;
}

/* Check the free lists against the chunks' block states and the counts.
 * Returns 0, or -EINVAL and, when err is not NULL, the chunk, block and
 * what was expected in err (errlen bytes). For tests. */
int net_arena_validate(const struct net_arena *a, char *err, size_t errlen);

#endif
