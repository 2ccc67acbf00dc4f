/* SPDX-License-Identifier: MIT */
/* percore rt: each shard's own memory: an arena for request-lifetime
 * scratch and slab pools by size class, all on the shard's NUMA node and
 * first touched by the shard's thread. */
#include <errno.h>
#include <stdlib.h>

#include "percore/arena.h"
#include "percore/slab.h"
#include "rt/rt.h"

static unsigned size_class(size_t size)
{
	unsigned c = 0;

	while (((size_t)RT_SLAB_MIN << c) < size)
		c++;
	return c;
}

int rt_shard_mem_setup(struct rt_shard *s)
{
	s->arena = pc_arena_create(0, s->node);
	return s->arena ? 0 : -ENOMEM;
}

void rt_shard_mem_free(struct rt_shard *s)
{
	for (unsigned c = 0; c < RT_SLAB_CLASSES; c++) {
		pc_slab_destroy(s->slabs[c]);
		s->slabs[c] = NULL;
	}
	pc_arena_destroy(s->arena);
	s->arena = NULL;
}

struct pc_arena *pc_shard_arena(void)
{
	return rt_self ? rt_self->arena : NULL;
}

struct pc_slab *pc_shard_slab(size_t size)
{
	struct rt_shard *s = rt_self;
	unsigned c;

	if (!s || size == 0 || size > PC_SHARD_SLAB_MAX)
		return NULL;
	c = size_class(size);
	if (!s->slabs[c]) {
		struct pc_slab_opts o = {
			.size = (size_t)RT_SLAB_MIN << c,
			.align = PC_CACHE_LINE,
			.node = s->node,
		};

		s->slabs[c] = pc_slab_create(&o);
	}
	return s->slabs[c];
}
