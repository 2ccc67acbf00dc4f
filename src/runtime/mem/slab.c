/* SPDX-License-Identifier: MIT */
/* percore: slab pool, everything but the owner's alloc/free fast path
 * (inline in include/percore/slab.h): chunks, carving, the free stack's
 * growth, the return list, statistics and the validator. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "percore/slab.h"
#include "mem/pages.h"
#include "sys/errmsg.h"

#define SLAB_DEFAULT_ALIGN 16
#define SLAB_MAX_ALIGN     4096
#define SLAB_DEFAULT_CHUNK ((size_t)256 << 10)

/* At the start of every chunk; objects follow at the first aligned offset. */
struct pc_slab_chunk {
	struct pc_slab_chunk *next;     /* older chunk */
	size_t bytes;                   /* as taken from the page source */
	char *first;                    /* first object */
	size_t nobj;                    /* objects the chunk holds */
};

static size_t round_up(size_t n, size_t align)
{
	return (n + align - 1) & ~(align - 1);
}

/* Read or write the link of a free object: under ASan only the link word is
 * opened, and only for the access. */
static struct pc_slab_obj *link_get(const struct pc_slab_obj *o)
{
	struct pc_slab_obj *next;

	PC_ASAN_UNPOISON(o, sizeof(*o));
	next = o->next;
	PC_ASAN_POISON(o, sizeof(*o));
	return next;
}

static void link_set(struct pc_slab_obj *o, struct pc_slab_obj *next)
{
	PC_ASAN_UNPOISON(o, sizeof(*o));
	o->next = next;
	PC_ASAN_POISON(o, sizeof(*o));
}

static int opts_check(const struct pc_slab_opts *o, size_t *align, size_t *stride)
{
	size_t size;

	if (!o || o->size == 0 || o->size > ((size_t)1 << 40) || o->node < -1)
		return -EINVAL;
	*align = o->align ? o->align : SLAB_DEFAULT_ALIGN;
	if (!PC_IS_POW2(*align) || *align > SLAB_MAX_ALIGN)
		return -EINVAL;
	if (*align < sizeof(struct pc_slab_obj))
		*align = sizeof(struct pc_slab_obj);
	size = o->size < sizeof(struct pc_slab_obj) ? sizeof(struct pc_slab_obj) : o->size;
	*stride = round_up(size, *align);
	return 0;
}

struct pc_slab *pc_slab_create(const struct pc_slab_opts *o)
{
	struct pc_slab *s;
	size_t align, stride;

	if (opts_check(o, &align, &stride))
		return NULL;
	s = aligned_alloc(PC_CACHE_PAD, sizeof(*s));
	if (!s)
		return NULL;
	*s = (struct pc_slab){
		._size = o->size < sizeof(struct pc_slab_obj) ? sizeof(struct pc_slab_obj) : o->size,
		._stride = stride,
		._align = align,
		._max = o->max_objects,
		._chunk_bytes = o->chunk_bytes ? o->chunk_bytes : SLAB_DEFAULT_CHUNK,
		._node = o->node,
		._rstride = stride,
	};
	atomic_init(&s->_remote, NULL);
	return s;
}

void pc_slab_destroy(struct pc_slab *s)
{
	struct pc_slab_chunk *c, *next;

	if (!s)
		return;
	for (c = s->_chunks; c; c = next) {
		next = c->next;
		/* the shadow outlives the mapping: clear it for whoever maps
		 * these addresses next */
		PC_ASAN_UNPOISON(c, c->bytes);
		mem_pages_free(c, c->bytes);
	}
	free(s->_stack);
	free(s);
}

/* Make the free stack hold n objects (grown geometrically, or to the bound
 * at once). 0 or -ENOMEM. */
static int stack_reserve(struct pc_slab *s, size_t n)
{
	size_t cap = s->_cap ? s->_cap : 64;
	void **stack;

	if (n <= s->_cap)
		return 0;
	while (cap < n)
		cap *= 2;
	if (s->_max && cap > s->_max)
		cap = s->_max;
	stack = realloc(s->_stack, cap * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	s->_stack = stack;
	s->_cap = cap;
	return 0;
}

/* Add a chunk sized for what the bound still allows. 0, -ENOSPC at the
 * bound, -ENOMEM. */
static int add_chunk(struct pc_slab *s)
{
	size_t head = round_up(sizeof(struct pc_slab_chunk), s->_align);
	size_t bytes = s->_chunk_bytes, nobj;
	struct pc_slab_chunk *c;

	if (s->_max && s->_reserved >= s->_max)
		return -ENOSPC;
	if (bytes < head + s->_stride)
		bytes = head + s->_stride;
	nobj = (bytes - head) / s->_stride;
	if (s->_max && nobj > s->_max - s->_reserved)
		nobj = s->_max - s->_reserved;
	/* room on the stack first: every object may come back at once */
	if (stack_reserve(s, s->_reserved + nobj))
		return -ENOMEM;
	bytes = mem_pages_round(head + nobj * s->_stride);
	c = bytes ? mem_pages_alloc(bytes, s->_node) : NULL;
	if (!c)
		return -ENOMEM;
	c->next = s->_chunks;
	c->bytes = bytes;
	c->first = (char *)c + head;
	c->nobj = nobj;
	PC_ASAN_POISON(c->first, bytes - head);
	s->_chunks = c;
	s->_bump = c->first;
	s->_bump_end = c->first + nobj * s->_stride;
	s->_reserved += nobj;
	return 0;
}

void *pc_slab__alloc_slow(struct pc_slab *s)
{
	char *o;

	if (pc_slab_drain(s))
		return pc_slab_alloc(s);
	if (s->_bump == s->_bump_end && add_chunk(s) != 0)
		return NULL;
	o = s->_bump;
	s->_bump += s->_stride;
	s->_carved++;
	PC_ASAN_UNPOISON(o, s->_size);
	return o;
}

void pc_slab_free_remote(struct pc_slab *s, void *p)
{
	struct pc_slab_obj *o = p, *head;

	if (!o)
		return;
	head = atomic_load_explicit(&s->_remote, memory_order_relaxed);
	/* Under ASan, this store into an object already free is the report
	 * of a double free. The object is poisoned before it is published:
	 * once on the list the owner may hand it out again at any time. */
	o->next = head;
	PC_ASAN_POISON(o, s->_rstride);
	/* release: the link and the caller's last writes to the object are
	 * visible to the owner, whose exchange acquires the list */
	while (!atomic_compare_exchange_weak_explicit(&s->_remote, &head, o,
						      memory_order_release,
						      memory_order_relaxed))
		link_set(o, head);
}

size_t pc_slab_drain(struct pc_slab *s)
{
	struct pc_slab_obj *o;
	size_t n = 0;

	if (!atomic_load_explicit(&s->_remote, memory_order_relaxed))
		return 0; /* nothing to take: leave the shared line alone */
	/* acquire: pairs with each remote free's release, so every link and
	 * every write made to these objects before their free is visible */
	o = atomic_exchange_explicit(&s->_remote, NULL, memory_order_acquire);
	for (; o; o = link_get(o), n++) {
		if (s->_nfree == s->_cap) { /* only after double frees */
			s->_bad_frees++;
			break;
		}
		s->_stack[s->_nfree++] = o;
	}
	return n;
}

/* Length of a list, stopping past limit (a corrupt list may loop). */
static size_t list_len(const struct pc_slab_obj *o, size_t limit)
{
	size_t n = 0;

	for (; o && n <= limit; o = link_get(o))
		n++;
	return n;
}

void pc_slab_stats(const struct pc_slab *s, struct pc_slab_stats *st)
{
	size_t remote = list_len(atomic_load_explicit(&s->_remote, memory_order_acquire), s->_carved);
	size_t chunks = 0;

	for (const struct pc_slab_chunk *c = s->_chunks; c; c = c->next)
		chunks++;
	*st = (struct pc_slab_stats){
		.size = s->_size,
		.stride = s->_stride,
		.live = s->_carved - s->_nfree - remote,
		.free = s->_nfree,
		.remote = remote,
		.carved = s->_carved,
		.reserved = s->_reserved,
		.chunks = chunks,
		.max_objects = s->_max,
		.bad_frees = s->_bad_frees,
	};
}

/* Index of object o among all carved objects (chunks numbered newest
 * first), or SIZE_MAX when o is not a carved object boundary. */
static size_t obj_index(const struct pc_slab *s, const void *o)
{
	size_t base = 0;

	for (const struct pc_slab_chunk *c = s->_chunks; c; c = c->next) {
		size_t carved = c == s->_chunks ? (size_t)(s->_bump - c->first) / s->_stride : c->nobj;
		uintptr_t off = (uintptr_t)o - (uintptr_t)c->first;

		if ((uintptr_t)o >= (uintptr_t)c->first && off < carved * s->_stride)
			return off % s->_stride ? SIZE_MAX : base + off / s->_stride;
		base += carved;
	}
	return SIZE_MAX;
}

/* Mark o (entry `at` of list `where`) in seen; -EINVAL when it is a
 * stranger or seen before. */
static int mark(const struct pc_slab *s, const void *o, unsigned char *seen, const char *where,
		size_t at, char *err, size_t errlen)
{
	size_t i = obj_index(s, o);

	if (i == SIZE_MAX)
		return sys_errmsg(err, errlen, -EINVAL,
				 "%s entry %zu: %p is not an object of this pool (off a boundary, "
				 "outside the %zu carved)", where, at, o, s->_carved);
	if (seen[i / 8] & (1u << (i % 8)))
		return sys_errmsg(err, errlen, -EINVAL, "%s entry %zu: object %zu (%p) is free twice",
				 where, at, i, o);
	seen[i / 8] |= (unsigned char)(1u << (i % 8));
	return 0;
}

static int chunks_check(const struct pc_slab *s, char *err, size_t errlen)
{
	size_t reserved = 0, carved = 0, k = 0;

	for (const struct pc_slab_chunk *c = s->_chunks; c; c = c->next, k++) {
		reserved += c->nobj;
		carved += c == s->_chunks ? (size_t)(s->_bump - c->first) / s->_stride : c->nobj;
		if ((uintptr_t)c->first % s->_align ||
		    c->first + c->nobj * s->_stride > (char *)c + c->bytes)
			return sys_errmsg(err, errlen, -EINVAL,
					 "chunk %zu (newest 0): first object %p not aligned to %zu "
					 "or %zu objects past its %zu bytes", k, (void *)c->first,
					 s->_align, c->nobj, c->bytes);
	}
	if (reserved != s->_reserved || carved != s->_carved || (s->_max && reserved > s->_max))
		return sys_errmsg(err, errlen, -EINVAL,
				 "chunks hold %zu objects (%zu carved), counters say %zu (%zu), "
				 "bound %zu (0: none)", reserved, carved, s->_reserved, s->_carved,
				 s->_max);
	if (s->_chunks && (s->_bump < s->_chunks->first || s->_bump > s->_bump_end ||
			   (size_t)(s->_bump - s->_chunks->first) % s->_stride))
		return sys_errmsg(err, errlen, -EINVAL,
				 "bump pointer %p outside %p..%p or off a %zu-byte boundary",
				 (void *)s->_bump, (void *)s->_chunks->first, (void *)s->_bump_end,
				 s->_stride);
	return 0;
}

static int header_check(const struct pc_slab *s, char *err, size_t errlen)
{
	if (s->_stride < s->_size || s->_stride % s->_align)
		return sys_errmsg(err, errlen, -EINVAL,
				 "stride %zu, expected a multiple of %zu at least %zu", s->_stride,
				 s->_align, s->_size);
	if (s->_bad_frees)
		return sys_errmsg(err, errlen, -EINVAL, "%zu frees were refused (stack full)",
				 s->_bad_frees);
	if (s->_nfree > s->_cap || s->_cap < s->_reserved)
		return sys_errmsg(err, errlen, -EINVAL,
				 "%zu free in a stack of %zu for %zu objects, expected "
				 "free <= stack >= objects", s->_nfree, s->_cap, s->_reserved);
	return chunks_check(s, err, errlen);
}

int pc_slab_validate(const struct pc_slab *s, char *err, size_t errlen)
{
	const struct pc_slab_obj *o;
	unsigned char *seen;
	size_t k = 0;
	int rc = 0;

	if (!s)
		return sys_errmsg(err, errlen, -EINVAL, "no pool");
	if ((rc = header_check(s, err, errlen)))
		return rc;
	seen = calloc(s->_carved / 8 + 1, 1);
	if (!seen)
		return sys_errmsg(err, errlen, -ENOMEM, "no memory for the bitmap");
	for (size_t i = 0; rc == 0 && i < s->_nfree; i++)
		rc = mark(s, s->_stack[i], seen, "free stack", i, err, errlen);
	/* the return list: a stranger is refused before its link is read */
	o = atomic_load_explicit(&s->_remote, memory_order_acquire);
	for (; rc == 0 && o; o = link_get(o))
		rc = mark(s, o, seen, "return list", k++, err, errlen);
	free(seen);
	return rc;
}
