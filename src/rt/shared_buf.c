/* percore rt: immutable reference-counted buffers, freed on their owner. */
#include <stdlib.h>

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
	b = aligned_alloc(PC_CACHE_LINE, size);
	if (!b)
		return NULL;
	atomic_init(&b->_refs, 1);
	b->_owner = s->id;
	b->_len = len;
	b->_next = NULL;
	return b;
}

void rt_shared_buf_free_list(struct pc_shared_buf *list)
{
	while (list) {
		struct pc_shared_buf *next = list->_next;

		free(list);
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
	if (s && s->id == b->_owner) {
		free(b);
		return;
	}
	/* Off a shard (after the engine stopped, or outside it) there is no
	 * mesh to send it home on; the allocator is thread-safe, so free it
	 * here. On another shard: back to its owner over the mesh, so the
	 * owner's allocator stays the owner's alone on the busy path. */
	if (!s) {
		free(b);
		return;
	}
	rt_mesh_return_buf(s, b);
}
