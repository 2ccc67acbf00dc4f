/* SPDX-License-Identifier: MIT */
/* percore: slab pool of fixed-size objects, owned by one shard.
 *
 * The owning shard allocates and frees in O(1) with no lock and no atomic
 * instruction: free objects are kept as pointers on a stack (an array the
 * pool owns), so alloc pops the top and free pushes onto it. The allocator
 * never reads or writes a free object's memory on this path: no pointer
 * chasing through cold objects, and the most recently freed (cache-warm)
 * object is the next one handed out. Memory comes in chunks from the mem
 * layer's page source (the shard's NUMA node) and is carved into objects
 * as they are first needed; it returns to the system only when the pool is
 * destroyed. An optional bound caps how many objects the pool ever holds:
 * alloc returns NULL at the bound.
 *
 * An object freed by another thread goes on the pool's return list, a
 * lock-free stack linked through the objects' first word that any thread
 * pushes to with compare-and-swap. The owner takes the whole list at once
 * with an atomic exchange (when its stack runs dry, or in pc_slab_drain),
 * so it never pops single nodes and the ABA problem of lock-free stacks
 * cannot arise. Ordering: a remote free publishes the object with release;
 * the owner's exchange acquires, so the freeing thread's last writes to the
 * object happen before its reuse.
 *
 * With PC_ASAN (make test), objects in the pool are poisoned while free:
 * a use after free, a double free (free writes into the object, which is
 * poisoned if already free) and a write past the object's size are
 * reported by ASan at the access.
 *
 * Threads: every function is for the owning shard only, except
 * pc_slab_free_remote (any thread).
 */
#ifndef PERCORE_SLAB_H
#define PERCORE_SLAB_H

#include <errno.h>
#include <stddef.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* How an object on the return list is linked: its first word. */
struct pc_slab_obj {
	struct pc_slab_obj *next;
};

struct pc_slab_chunk;

/* A slab pool's options. */
struct pc_slab_opts {
	size_t size;            /* object size in bytes (> 0) */
	size_t align;           /* a power of two up to 4096; 0: 16 (as malloc).
	                         * At least 8: a returned object holds a link. */
	size_t max_objects;     /* most objects the pool holds; 0: no bound */
	size_t chunk_bytes;     /* bytes per chunk; 0: 256 KiB. Always room for
	                         * at least one object. */
	int node;               /* NUMA node of the owning shard (0 is node 0);
	                         * -1: the node of the thread that first touches
	                         * the memory. A node that does not exist makes
	                         * every chunk, so alloc, fail. */
};

/* A slab pool. Opaque to callers; public so that alloc and free can be
 * inline. */
struct pc_slab {
	/* Owner block: written by the owning shard only. The first four
	 * fields are the alloc/free fast path. */
	PC_CACHE_ALIGNED void **_stack; /* free objects; the top is last */
	size_t _nfree;          /* objects on the stack */
	size_t _cap;            /* stack slots: one per object the chunks hold */
	size_t _stride;         /* bytes between objects */
	size_t _size;           /* usable size: max(size, sizeof(void *)) */
	size_t _bad_frees;      /* frees refused: more than objects exist */
	size_t _align;
	char *_bump, *_bump_end; /* the newest chunk's uncarved rest */
	struct pc_slab_chunk *_chunks; /* newest first */
	size_t _carved;         /* objects carved so far */
	size_t _reserved;       /* objects the chunks can hold */
	size_t _max;            /* bound on _reserved; 0: none */
	size_t _chunk_bytes;
	int _node;
	/* Return block: pushed to by any thread, emptied by the owner. */
	PC_CACHE_ALIGNED PC_ATOMIC(struct pc_slab_obj *) _remote;
	size_t _rstride;        /* copy of _stride for remote freers (init only),
	                         * so they never read the owner's line */
};

/* Create a pool. Returns NULL when o is NULL, size is 0 or above 2^40,
 * align is not a power of two up to 4096, node is below -1, or memory runs
 * out. Call on the owning shard's thread (after it is pinned) so the pool's
 * first touch lands on its node. */
PC_API struct pc_slab *pc_slab_create(const struct pc_slab_opts *o);

/* Free the pool and every chunk (NULL ignored). Objects still handed out
 * become invalid. Owner only, once no other thread frees into it. */
PC_API void pc_slab_destroy(struct pc_slab *s);

/* Refill path of pc_slab_alloc: take back remote frees, else carve from
 * the newest chunk, else add a chunk. Internal. */
PC_API void *pc_slab__alloc_slow(struct pc_slab *s);

/* An object of at least the pool's size, aligned as asked, uninitialised.
 * Returns NULL at the bound (every object in use) or when no memory is
 * left. Owner only. */
PC_INLINE void *pc_slab_alloc(struct pc_slab *s)
{
	size_t n = s->_nfree;
	void *o;

	if (PC_UNLIKELY(n == 0))
		return pc_slab__alloc_slow(s);
	o = s->_stack[n - 1];
	s->_nfree = n - 1;
	PC_ASAN_UNPOISON(o, s->_size);
	return o;
}

/* Give back an object of this pool (NULL ignored). Owner only; another
 * thread uses pc_slab_free_remote. Freeing twice, or an object of another
 * pool, corrupts the pool: pc_slab_validate finds it, ASan builds report
 * it at once, and a free that would overfill the stack is refused and
 * counted rather than written out of bounds. */
PC_INLINE void pc_slab_free(struct pc_slab *s, void *p)
{
	size_t n = s->_nfree;

	if (PC_UNLIKELY(!p))
		return;
#ifdef PC_ASAN
	/* a write into an object that is already free (poisoned) is ASan's
	 * report of the double free */
	((struct pc_slab_obj *)p)->next = NULL;
#endif
	if (PC_UNLIKELY(n == s->_cap)) {
		s->_bad_frees++;
		return;
	}
	s->_stack[n] = p;
	s->_nfree = n + 1;
	PC_ASAN_POISON(p, s->_stride);
}

/* Give back an object from any thread (NULL ignored): it waits on the
 * return list until the owner drains it. Lock-free. */
PC_API void pc_slab_free_remote(struct pc_slab *s, void *p);

/* Move every object on the return list to the owner's stack now.
 * Returns how many. Owner only (pc_slab_alloc also does it when its list
 * runs dry). */
PC_API size_t pc_slab_drain(struct pc_slab *s);

/* What pc_slab_stats() reports. */
struct pc_slab_stats {
	size_t size, stride;    /* usable object size, bytes between objects */
	size_t live;            /* handed out and not freed by anyone */
	size_t free;            /* on the owner's stack */
	size_t remote;          /* waiting on the return list */
	size_t carved;          /* live + free + remote */
	size_t reserved;        /* objects the chunks can hold */
	size_t chunks;
	size_t max_objects;     /* 0: no bound */
	size_t bad_frees;       /* frees refused because the stack was full */
};

/* Fill st (walks the return list). Owner only. */
PC_API void pc_slab_stats(const struct pc_slab *s, struct pc_slab_stats *st);

/* Check every invariant: each object on the stack or the return list lies
 * in a chunk, on an object boundary, within the carved part, and appears
 * once; free + remote is at most the objects carved, within the bound; no
 * free was refused. Returns 0, -ENOMEM when it cannot allocate its
 * bitmap, or -EINVAL and, when err is not NULL, what broke in err (errlen
 * bytes): which object or chunk, the value found, the range expected.
 * Owner only; other threads may keep freeing. */
PC_API int pc_slab_validate(const struct pc_slab *s, char *err, size_t errlen);

PC_END_DECLS

#endif
