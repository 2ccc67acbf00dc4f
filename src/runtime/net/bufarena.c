/* SPDX-License-Identifier: MIT */
/* percore net: the ring buffers' buddy allocator (see bufarena.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "net/bufarena.h"
#include "sys/errmsg.h"

#define ST_FREE 0x80u
#define ST_ORDER 0x7fu
/* Blocks at least this large give their pages back when freed; smaller
 * ones are reused soon enough that the system call would cost more. */
#define NET_ARENA_RELEASE_SHIFT 16
#define NET_ARENA_PAGE 4096u

/* A free block's first bytes: its neighbours on the free list. */
struct free_link {
	struct free_link *next, *prev;
};

void net_arena_init(struct net_arena *a)
{
	memset(a, 0, sizeof(*a));
}

static void chunk_unmap(struct net_arena_chunk *c)
{
	munmap(c->base, (size_t)1 << c->shift);
	free(c->state);
}

void net_arena_fini(struct net_arena *a)
{
	for (unsigned i = 0; i < a->nchunks; i++)
		chunk_unmap(&a->chunks[i]);
	free(a->chunks);
	net_arena_init(a);
}

static size_t order_bytes(unsigned order)
{
	return (size_t)1 << (NET_ARENA_MIN_SHIFT + order);
}

static void list_push(struct net_arena *a, unsigned order, void *p)
{
	struct free_link *l = p, *h = a->free[order];

	l->prev = NULL;
	l->next = h;
	if (h)
		h->prev = l;
	a->free[order] = l;
}

static void list_remove(struct net_arena *a, unsigned order, void *p)
{
	struct free_link *l = p;

	if (l->prev)
		l->prev->next = l->next;
	else
		a->free[order] = l->next;
	if (l->next)
		l->next->prev = l->prev;
}

static struct net_arena_chunk *chunk_of(const struct net_arena *a, const void *p)
{
	for (unsigned i = 0; i < a->nchunks; i++) {
		struct net_arena_chunk *c = &a->chunks[i];

		if ((const uint8_t *)p >= c->base &&
		    (const uint8_t *)p < c->base + ((size_t)1 << c->shift))
			return c;
	}
	return NULL;
}

static uint8_t *state_at(const struct net_arena_chunk *c, const void *p)
{
	return &c->state[((size_t)((const uint8_t *)p - c->base)) >> NET_ARENA_MIN_SHIFT];
}

/* Reserve a chunk: 1 GiB of address space, or less where the system
 * refuses that much (strict overcommit accounting), never less than the
 * block asked for. Returns 0 or -ENOMEM. */
static int chunk_add(struct net_arena *a, unsigned need_shift)
{
	struct net_arena_chunk *c;
	unsigned shift = NET_ARENA_CHUNK_SHIFT;
	uint8_t *base = MAP_FAILED;
	unsigned floor = need_shift > NET_ARENA_FLOOR_SHIFT ? need_shift : NET_ARENA_FLOOR_SHIFT;

	if (a->nchunks == a->chunks_cap) {
		unsigned cap = a->chunks_cap ? 2 * a->chunks_cap : 4;
		void *n = realloc(a->chunks, cap * sizeof(*a->chunks));
		if (!n)
			return -ENOMEM;
		a->chunks = n;
		a->chunks_cap = cap;
	}
	for (; shift >= floor && base == MAP_FAILED; shift--)
		base = mmap(NULL, (size_t)1 << shift, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		return -ENOMEM;
	shift++;
	c = &a->chunks[a->nchunks];
	c->state = calloc((size_t)1 << (shift - NET_ARENA_MIN_SHIFT), 1);
	if (!c->state) {
		munmap(base, (size_t)1 << shift);
		return -ENOMEM;
	}
	/* Advice only: without it the chunk still works, maybe fatter. */
	madvise(base, (size_t)1 << shift, MADV_NOHUGEPAGE);
	c->base = base;
	c->shift = shift;
	c->used = 0;
	a->nchunks++;
	a->maps++;
	a->mapped_bytes += (size_t)1 << shift;
	unsigned top = shift - NET_ARENA_MIN_SHIFT;
	c->state[0] = (uint8_t)(ST_FREE | (top + 1));
	list_push(a, top, base);
	return 0;
}

static unsigned order_for(size_t bytes)
{
	unsigned order = 0;

	while (order_bytes(order) < bytes)
		order++;
	return order;
}

void *net_arena_alloc(struct net_arena *a, size_t bytes)
{
	unsigned order, o;

	if (bytes > ((size_t)1 << NET_ARENA_CHUNK_SHIFT))
		return NULL;
	order = order_for(bytes);
	for (o = order; o < NET_ARENA_ORDERS && !a->free[o]; o++)
		;
	if (o == NET_ARENA_ORDERS) {
		if (chunk_add(a, order + NET_ARENA_MIN_SHIFT))
			return NULL;
		return net_arena_alloc(a, bytes);
	}
	uint8_t *p = a->free[o];
	struct net_arena_chunk *c = chunk_of(a, p);

	list_remove(a, o, p);
	/* Split: the upper halves go back free, one per order. */
	while (o > order) {
		uint8_t *half = p + order_bytes(--o);

		*state_at(c, half) = (uint8_t)(ST_FREE | (o + 1));
		list_push(a, o, half);
	}
	*state_at(c, p) = (uint8_t)(order + 1);
	c->used += order_bytes(order);
	a->used_bytes += order_bytes(order);
	return p;
}

static void chunk_drop(struct net_arena *a, struct net_arena_chunk *c)
{
	list_remove(a, c->shift - NET_ARENA_MIN_SHIFT, c->base);
	a->mapped_bytes -= (size_t)1 << c->shift;
	chunk_unmap(c);
	*c = a->chunks[--a->nchunks];
}

void net_arena_free(struct net_arena *a, void *ptr, size_t bytes)
{
	struct net_arena_chunk *c;
	unsigned order, top;
	uint8_t *p = ptr;

	if (!p)
		return;
	c = chunk_of(a, p);
	order = order_for(bytes);
	top = c->shift - NET_ARENA_MIN_SHIFT;
	c->used -= order_bytes(order);
	a->used_bytes -= order_bytes(order);
	/* The first page keeps the free-list link; the rest goes back. */
	if (order + NET_ARENA_MIN_SHIFT >= NET_ARENA_RELEASE_SHIFT)
		madvise(p + NET_ARENA_PAGE, order_bytes(order) - NET_ARENA_PAGE, MADV_DONTNEED);
	*state_at(c, p) = 0;
	/* Merge with the buddy while it is free and whole. */
	while (order < top) {
		size_t off = (size_t)(p - c->base);
		uint8_t *buddy = c->base + (off ^ order_bytes(order));
		uint8_t *bs = state_at(c, buddy);

		if (*bs != (uint8_t)(ST_FREE | (order + 1)))
			break;
		list_remove(a, order, buddy);
		*bs = 0;
		p = buddy < p ? buddy : p;
		order++;
	}
	*state_at(c, p) = (uint8_t)(ST_FREE | (order + 1));
	list_push(a, order, p);
	if (!c->used && a->nchunks > 1)
		chunk_drop(a, c);
}

/* Walk one chunk's blocks in address order: each must be a block head of
 * a size that fits; free ones counted. */
static int chunk_check(const struct net_arena_chunk *c, unsigned ci, size_t *free_blocks,
		       size_t *used, char *err, size_t errlen)
{
	size_t n = (size_t)1 << (c->shift - NET_ARENA_MIN_SHIFT);

	for (size_t i = 0; i < n;) {
		unsigned st = c->state[i], order = (st & ST_ORDER) - 1u;

		if (!(st & ST_ORDER) || i + ((size_t)1 << order) > n || (i & (((size_t)1 << order) - 1)))
			return sys_errmsg(err, errlen, -EINVAL,
					 "chunk %u block %zu: state 0x%02x, expected the head of "
					 "an aligned block within %zu", ci, i, st, n);
		for (size_t k = 1; k < ((size_t)1 << order); k++)
			if (c->state[i + k])
				return sys_errmsg(err, errlen, -EINVAL,
						 "chunk %u block %zu: state 0x%02x inside block "
						 "%zu, expected 0", ci, i + k, c->state[i + k], i);
		if (st & ST_FREE)
			(*free_blocks)++;
		else
			*used += order_bytes(order);
		i += (size_t)1 << order;
	}
	return 0;
}

int net_arena_validate(const struct net_arena *a, char *err, size_t errlen)
{
	size_t free_blocks = 0, listed = 0, used = 0, mapped = 0;
	int rc;

	for (unsigned i = 0; i < a->nchunks; i++) {
		size_t cu = 0;

		if ((rc = chunk_check(&a->chunks[i], i, &free_blocks, &cu, err, errlen)))
			return rc;
		if (cu != a->chunks[i].used)
			return sys_errmsg(err, errlen, -EINVAL, "chunk %u: %zu bytes in use, "
					 "count says %zu", i, cu, a->chunks[i].used);
		used += cu;
		mapped += (size_t)1 << a->chunks[i].shift;
	}
	for (unsigned o = 0; o < NET_ARENA_ORDERS; o++)
		for (const struct free_link *l = a->free[o]; l; l = l->next, listed++) {
			const struct net_arena_chunk *c = chunk_of(a, l);

			if (!c || *state_at(c, l) != (uint8_t)(ST_FREE | (o + 1)))
				return sys_errmsg(err, errlen, -EINVAL,
						 "free list %u: block %p is not a free block of "
						 "that order", o, (const void *)l);
		}
	if (listed != free_blocks || used != a->used_bytes || mapped != a->mapped_bytes)
		return sys_errmsg(err, errlen, -EINVAL,
				 "%zu blocks listed free, %zu marked; %zu bytes used, count says "
				 "%zu; %zu mapped, count says %zu", listed, free_blocks, used,
				 a->used_bytes, mapped, a->mapped_bytes);
	return 0;
}
