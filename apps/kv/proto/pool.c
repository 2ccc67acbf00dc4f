/* SPDX-License-Identifier: MIT */
/* Size-classed entry memory: see pool.h. */
#include "pool.h"

#include <malloc.h>
#include <stdlib.h>

#include "percore/slab.h"

/* Class sizes: 8 apart to 128, 16 apart to 256, 32 apart to 512, so no
 * object wastes more than an eighth of its class (beyond the smallest). */
static const uint16_t class_size[KV_POOL_CLASSES] = {
	0, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128,
	144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512,
};

/* Slab chunks of 64 KiB: a class with few objects holds little idle
 * memory, a busy one still asks the system once per thousand objects. */
#define CHUNK_BYTES (64u * 1024u)

static uint8_t class_of(size_t n)
{
	if (n <= 128)
		return (uint8_t)(n <= 16 ? 1 : (n - 16 + 7) / 8 + 1);
	if (n <= 256)
		return (uint8_t)(15 + (n - 128 + 15) / 16);
	return (uint8_t)(23 + (n - 256 + 31) / 32);
}

void kv_pool_init(struct kv_pool *p)
{
	*p = (struct kv_pool){ 0 };
}

void kv_pool_destroy(struct kv_pool *p)
{
	for (int i = 0; i < KV_POOL_CLASSES; i++)
		pc_slab_destroy(p->slab[i]);
	kv_pool_init(p);
}

void *kv_pool_alloc(struct kv_pool *p, size_t n, uint8_t *cls)
{
	if (n <= KV_POOL_MAX) {
		uint8_t c = class_of(n);
		if (!p->slab[c]) {
			struct pc_slab_opts o = { .size = class_size[c], .align = 8,
						  .chunk_bytes = CHUNK_BYTES, .node = -1 };
			p->slab[c] = pc_slab_create(&o);
		}
		void *obj = p->slab[c] ? pc_slab_alloc(p->slab[c]) : NULL;
		if (obj) {
			*cls = c;
			return obj;
		}
	}
	*cls = 0;
	return malloc(n);
}

void kv_pool_free(struct kv_pool *p, void *o, uint8_t cls)
{
	if (cls)
		pc_slab_free(p->slab[cls], o);
	else
		free(o);
}

size_t kv_pool_usable(const void *o, uint8_t cls)
{
	return cls ? class_size[cls] : malloc_usable_size((void *)o);
}

size_t kv_pool_cost(const void *o, uint8_t cls)
{
	/* glibc keeps one header word in front of each chunk */
	return cls ? class_size[cls] : malloc_usable_size((void *)o) + sizeof(size_t);
}
