/* SPDX-License-Identifier: MIT */
/* percore rt: immutable reference-counted buffers, freed on their owner. */
#include <stdlib.h>

#include "percore/slab.h"
#include "rt/rt.h"

struct pc_shared_buf *pc_shared_buf_new(size_t len)
{
	struct rt_shard *s = rt_self;
	struct pc_shared_buf *b;
	size_t size;

	if (!s || __builtin_add_overflow(sizeof(*b), len, &size))
		return NULL;
	/* aligned_alloc wants a multiple of the alignment. */
	size = (size + PC_CACHE_LINE - 1) & ~(size_t)(PC_CACHE_LINE - 1);
	if (size < len)
		return NULL;
	struct pc_slab *pool = pc_shard_slab(size);

	b = pool ? pc_slab_alloc(pool) : aligned_alloc(PC_CACHE_LINE, size);
	if (!b)
		return NULL;
	b->_pool = pool;
	atomic_init(&b->_refs, 1);
	b->_home = s;
	b->_len = len;
	b->_next = NULL;
	return b;
}

/* Free b: into its owner's pool on the owner, from anywhere else through
 * the pool's return list. */
static void buf_free(struct pc_shared_buf *b)
{
	if (!b->_pool)
		free(b);
	else if (rt_self == b->_home)
		pc_slab_free(b->_pool, b);
	else
		pc_slab_free_remote(b->_pool, b);
}

void rt_shared_buf_free_list(struct pc_shared_buf *list)
{
	while (list) {
		struct pc_shared_buf *next = list->_next;

		buf_free(list);
		list = next;
	}
}

void pc_shared_buf_put(struct pc_shared_buf *b)
{
	struct rt_shard *s = rt_self;

	if (!b)
		return;
	/* acq_rel: every holder's reads of the bytes happen before the
	 * last holder frees them (release by each, acquire by the last). */
	if (atomic_fetch_sub_explicit(&b->_refs, 1, memory_order_acq_rel) != 1)
		return;
	b->_next = NULL;
	/* On another shard of the same engine: home over the mesh, so the
	 * owner's pool stays the owner's alone on the busy path. Anywhere
	 * else (the owner itself, a thread outside the engine, the engine
	 * stopped) free it here: pools take remote frees and malloc is
	 * thread-safe. */
	if (s && s != b->_home && s->e == ((struct rt_shard *)b->_home)->e)
		rt_mesh_return_buf(s, b);
	else
		buf_free(b);
}
