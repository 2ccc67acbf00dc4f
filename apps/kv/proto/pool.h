/* SPDX-License-Identifier: MIT */
/* One shard's memory for keyspace entries: size classes of 8 to 32 bytes'
 * spacing up to 512 bytes, each a percore slab (no per-object header, so
 * a 64-byte entry costs 64 bytes, where malloc adds 8 and rounds to 16),
 * and malloc above that. A class's slab is made on its first use, on the
 * calling thread: the shard's, so its memory is the shard's NUMA node's.
 *
 * The caller keeps each object's class (what kv_pool_alloc returned in
 * *cls) and hands it back to the other calls. One shard's thread only. */
#ifndef KV_POOL_H
#define KV_POOL_H

#include <stddef.h>
#include <stdint.h>

#define KV_POOL_CLASSES 32      /* class 0 is malloc */
#define KV_POOL_MAX     512     /* largest object a class holds */

struct pc_slab;

struct kv_pool {
	struct pc_slab *slab[KV_POOL_CLASSES];
};

/* An empty pool: no memory until the first allocation. */
void kv_pool_init(struct kv_pool *p);

/* Frees every slab and so every pooled object still out; objects from
 * malloc (class 0) are the caller's to free first. The pool may be used
 * again. */
void kv_pool_destroy(struct kv_pool *p);

/* n bytes (n > 0), aligned to 8, uninitialised; *cls is the class to pass
 * back. A size above KV_POOL_MAX, or a slab that cannot be made, comes
 * from malloc. NULL when out of memory. */
void *kv_pool_alloc(struct kv_pool *p, size_t n, uint8_t *cls);

/* Gives o (of class cls) back. */
void kv_pool_free(struct kv_pool *p, void *o, uint8_t cls);

/* Bytes o may use. */
size_t kv_pool_usable(const void *o, uint8_t cls);

/* Bytes o costs the process: its class's size, or malloc's usable size
 * and its header word. */
size_t kv_pool_cost(const void *o, uint8_t cls);

#endif
