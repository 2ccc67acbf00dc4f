/* SPDX-License-Identifier: MIT */
/* percore net: a shard's pool of byte ring buffers.
 *
 * Sessions hold a ring only while bytes are buffered: one is taken when
 * bytes arrive (or output is queued) and given back once drained, so an
 * idle session holds none. Rings come in power-of-two size classes. A ring
 * given back is reset and kept, up to `keep` per class and `keep_bytes` in
 * all, so a busy shard reuses the same few rings, their pages already
 * resident; beyond those bounds its memory goes back to the arena.
 *
 * The rings are plain, on memory from the shard's arena (bufarena.h):
 * no ring costs a memory mapping of its own, whatever the number of
 * sessions. A frame that wraps around a ring's end is made contiguous by
 * copying its wrapped part (pc_ringbuf_linearize); every other frame is
 * decoded in place.
 *
 * Owned by one shard: only its thread may call these.
 */
#ifndef PERCORE_SRC_NET_BUFPOOL_H
#define PERCORE_SRC_NET_BUFPOOL_H

#include <stdbool.h>
#include <stddef.h>

#include "net/bufarena.h"
#include "percore/ringbuf.h"

#define NET_BUF_MIN_SHIFT 12   /* 4 KiB: one page, the mirrored minimum */
#define NET_BUF_MAX_SHIFT 25   /* 32 MiB: a 16 MiB frame plus header fits */
#define NET_BUF_CLASSES (NET_BUF_MAX_SHIFT - NET_BUF_MIN_SHIFT + 1)

struct net_bufpool {
	struct pc_ringbuf **free[NET_BUF_CLASSES]; /* stacks of idle rings */
	unsigned nfree[NET_BUF_CLASSES];
	unsigned keep;          /* idle rings kept per class */
	size_t keep_bytes;      /* and at most this much idle capacity */
	struct net_arena arena; /* the rings' memory */
	size_t idle_bytes;      /* capacity of the idle rings */
	size_t busy_bytes;      /* capacity of the rings handed out */
	size_t busy;            /* rings handed out */
	size_t maps;            /* rings created over the pool's life */
	/* (the memory mappings are the arena's chunks: arena.nchunks) */
};

/* An empty pool keeping up to keep idle rings per class (0: none) and
 * keep_bytes of idle capacity in all. Returns 0 or -ENOMEM. */
int net_bufpool_init(struct net_bufpool *p, unsigned keep, size_t keep_bytes);

/* Unmap every idle ring. Rings still handed out must have been put back. */
void net_bufpool_fini(struct net_bufpool *p);

/* The capacity a request for at least `bytes` gets: a power of two from
 * 4 KiB to 32 MiB. 0 when bytes exceeds 32 MiB. */
size_t net_buf_class_size(size_t bytes);

/* An empty ring of at least `bytes` (at most 32 MiB). Returns NULL when
 * bytes is too large or memory runs out. */
struct pc_ringbuf *net_buf_get(struct net_bufpool *p, size_t bytes);

/* Give a ring back (its bytes are discarded). NULL is ignored. */
void net_buf_put(struct net_bufpool *p, struct pc_ringbuf *rb);

/* Move rb's readable bytes into a fresh ring of at least `bytes` and give
 * rb back. Returns the new ring, or NULL (rb untouched) when bytes cannot
 * hold rb's contents or memory runs out. */
struct pc_ringbuf *net_buf_grow(struct net_bufpool *p, struct pc_ringbuf *rb, size_t bytes);

/* Check the counts against the idle stacks. Returns 0, or -EINVAL and,
 * when err is not NULL, the class and entry that broke and what was
 * expected in err (errlen bytes). */
int net_bufpool_validate(const struct net_bufpool *p, char *err, size_t errlen);

#endif
