/* SPDX-License-Identifier: MIT */
/* percore: arena allocator, everything but the bump fast path (inline in
 * include/percore/arena.h). */
#include <errno.h>
#include <stdlib.h>

#include "percore/arena.h"
#include "mem/pages.h"
#include "sys/errmsg.h"

#define ARENA_DEFAULT_BLOCK ((size_t)64 << 10)
#define ARENA_MAX_CHAIN     ((size_t)1 << 30) /* validator's cycle guard */

struct pc_arena_block {
	struct pc_arena_block *prev;    /* older block */
	size_t bytes;                   /* as mapped, header included */
	char data[] __attribute__((aligned(16)));
};

static char *block_end(const struct pc_arena_block *b)
{
	return (char *)b + b->bytes;
}

static struct pc_arena_block *block_new(size_t bytes, int node)
{
	struct pc_arena_block *b = mem_pages_alloc(bytes, node);

	if (!b)
		return NULL;
	b->prev = NULL;
	b->bytes = bytes;
	PC_ASAN_POISON(b->data, bytes - sizeof(*b));
	return b;
}

static void block_free(struct pc_arena_block *b)
{
	PC_ASAN_UNPOISON(b, b->bytes); /* the shadow outlives the mapping */
	mem_pages_free(b, b->bytes);
}

/* A block no longer in the chain: keep it as the spare if it is a standard
 * one and there is none, else give it back. */
static void block_retire(struct pc_arena *a, struct pc_arena_block *b)
{
	if (!a->_spare && b->bytes == a->_block_bytes) {
		PC_ASAN_POISON(b->data, b->bytes - sizeof(*b));
		b->prev = NULL;
		a->_spare = b;
	} else {
		block_free(b);
	}
}

static void block_push(struct pc_arena *a, struct pc_arena_block *b)
{
	b->prev = a->_block;
	a->_block = b;
	a->_cur = b->data;
	a->_end = block_end(b);
}

struct pc_arena *pc_arena_create(size_t block_bytes, int node)
{
	struct pc_arena *a;
	struct pc_arena_block *b;

	if (block_bytes == 0)
		block_bytes = ARENA_DEFAULT_BLOCK;
	block_bytes = mem_pages_round(block_bytes);
	if (block_bytes == 0 || block_bytes > ((size_t)1 << 40))
		return NULL;
	a = malloc(sizeof(*a));
	b = a ? block_new(block_bytes, node) : NULL;
	if (!b) {
		free(a);
		return NULL;
	}
	*a = (struct pc_arena){._block_bytes = block_bytes, ._node = node};
	block_push(a, b);
	return a;
}

void pc_arena_destroy(struct pc_arena *a)
{
	struct pc_arena_block *b, *prev;

	if (!a)
		return;
	for (b = a->_block; b; b = prev) {
		prev = b->prev;
		block_free(b);
	}
	if (a->_spare)
		block_free(a->_spare);
	free(a);
}

void *pc_arena__alloc_slow(struct pc_arena *a, size_t size, size_t align)
{
	size_t need, bytes;
	struct pc_arena_block *b;

	if (!PC_IS_POW2(align) || __builtin_add_overflow(size, align - 1, &need) ||
	    __builtin_add_overflow(need, sizeof(struct pc_arena_block), &need))
		return NULL;
	if (need <= a->_block_bytes) {
		b = a->_spare ? a->_spare : block_new(a->_block_bytes, a->_node);
		if (b == a->_spare)
			a->_spare = NULL;
	} else {
		bytes = mem_pages_round(need);
		b = bytes ? block_new(bytes, a->_node) : NULL;
	}
	if (!b)
		return NULL;
	block_push(a, b);
	return pc_arena_alloc(a, size, align); /* fits now */
}

int pc_arena_rewind(struct pc_arena *a, struct pc_arena_mark m)
{
	struct pc_arena_block *b;

	for (b = a->_block; b && b != m._block; b = b->prev)
		;
	if (!b || m._cur < b->data || m._cur > block_end(b) ||
	    (b == a->_block && m._cur > a->_cur))
		return -EINVAL;
	while (a->_block != b) {
		struct pc_arena_block *newer = a->_block;

		a->_block = newer->prev;
		block_retire(a, newer);
	}
	a->_cur = m._cur;
	a->_end = block_end(b);
	PC_ASAN_POISON(a->_cur, (size_t)(a->_end - a->_cur));
	return 0;
}

void pc_arena_reset(struct pc_arena *a)
{
	struct pc_arena_block *first = a->_block;

	while (first->prev)
		first = first->prev;
	pc_arena_rewind(a, (struct pc_arena_mark){._block = first, ._cur = first->data});
}

void pc_arena_stats(const struct pc_arena *a, struct pc_arena_stats *st)
{
	*st = (struct pc_arena_stats){
		.used = (size_t)(a->_cur - a->_block->data),
		.spare_bytes = a->_spare ? a->_spare->bytes : 0,
	};
	for (const struct pc_arena_block *b = a->_block; b; b = b->prev) {
		st->blocks++;
		st->bytes += b->bytes;
	}
}

int pc_arena_validate(const struct pc_arena *a, char *err, size_t errlen)
{
	size_t n = 0;

	if (!a || !a->_block)
		return sys_errmsg(err, errlen, -EINVAL, "no arena or no current block");
	if (a->_cur < a->_block->data || a->_cur > a->_end || a->_end != block_end(a->_block))
		return sys_errmsg(err, errlen, -EINVAL,
				 "bump pointer %p, end %p; expected within %p..%p, end %p",
				 (void *)a->_cur, (void *)a->_end, (void *)a->_block->data,
				 (void *)block_end(a->_block), (void *)block_end(a->_block));
	for (const struct pc_arena_block *b = a->_block; b; b = b->prev, n++) {
		if (n >= ARENA_MAX_CHAIN)
			return sys_errmsg(err, errlen, -EINVAL, "chain longer than %zu blocks: a cycle",
					 ARENA_MAX_CHAIN);
		if (b->bytes <= sizeof(*b))
			return sys_errmsg(err, errlen, -EINVAL,
					 "block %zu (current 0): %zu bytes, expected over %zu", n,
					 b->bytes, sizeof(*b));
		if (b == a->_spare)
			return sys_errmsg(err, errlen, -EINVAL, "block %zu is also the spare", n);
	}
	if (a->_spare && (a->_spare->bytes != a->_block_bytes || a->_spare->prev))
		return sys_errmsg(err, errlen, -EINVAL,
				 "spare block: %zu bytes and %s link, expected %zu bytes and none",
				 a->_spare->bytes, a->_spare->prev ? "a" : "no", a->_block_bytes);
	return 0;
}
