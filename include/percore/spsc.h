/* SPDX-License-Identifier: MIT */
/* percore: bounded single-producer single-consumer ring.
 *
 * The ring between two shards: one thread pushes, one thread pops, and
 * neither ever waits for the other (wait-free). Capacity is a power of two
 * and the ring holds exactly that many items.
 *
 * Elements have a fixed size chosen at init (a pointer, or a 64-byte message
 * holding a function pointer and its payload); they are copied in and out
 * with memcpy. PC_SPSC_TYPED() declares a typed wrapper whose functions pass
 * sizeof(type) as a constant, so the compiler turns each copy into a few
 * moves instead of a call to memcpy. Both share one implementation.
 *
 * Layout: the producer's fields and the consumer's fields each sit on their
 * own padded cache line. Each side keeps a private copy of the other side's
 * index and reads the other side's line only when that copy says the ring
 * is full (producer) or empty (consumer); in steady state a push touches the
 * producer line and one slot, a pop the consumer line and one slot.
 *
 * Memory ordering (the whole argument; see also docs/ARCHITECTURE.md):
 *  - The producer writes a slot, then stores _tail with release. The consumer
 *    loads _tail with acquire before reading any slot below it, so it sees
 *    the slot's contents.
 *  - The consumer reads a slot, then stores _head with release. The producer
 *    loads _head with acquire before overwriting any slot below it, so the
 *    consumer's read is complete before the slot is reused.
 *  - Each index is written by one thread only, so plain loads of one's own
 *    index and plain arithmetic suffice; indices run freely (size_t) and are
 *    masked on use, so tail - head is the fill level even across overflow.
 *
 * Producer-side batching: pc_spsc_stage() hands out the next free slot to be
 * written in place; nothing is visible to the consumer until
 * pc_spsc_publish(), which makes every staged slot visible with one release
 * store. The consumer side mirrors it: pc_spsc_take() hands out the next
 * item in place and pc_spsc_release() frees every taken slot at once.
 *
 * Unless said otherwise, the functions below are for the producer thread
 * (push, stage, publish) or the consumer thread (pop, take, release, peek)
 * only. Init, create and destroy run while no other thread uses the ring.
 * C and C++ alike: the atomics come through defs.h.
 */
#ifndef PERCORE_SPSC_H
#define PERCORE_SPSC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* One side's block. Each side's copy of _buf/_mask/_cap/_esz is written at
 * init only; keeping one per side means a push or pop reads no line the
 * other side owns. */
struct pc_spsc_side {
	PC_ATOMIC(size_t) _pos;    /* producer: _tail; consumer: _head (published) */
	size_t _next;           /* producer: next slot to stage; consumer: next
	                         * slot to take (private, runs ahead of _pos) */
	size_t _other;          /* private cache of the other side's _pos */
	char *_buf;
	size_t _mask;           /* capacity - 1 */
	size_t _esz;            /* element size in bytes */
	size_t _seq;            /* slot-sequence mode (spsc_seq.h): offset of
	                         * the sequence word in a slot; PC_SPSC_NO_SEQ
	                         * for an ordinary ring */
};

#define PC_SPSC_NO_SEQ ((size_t)-1)

/* A bounded single-producer, single-consumer ring. Opaque to callers;
 * public so that its functions can be inline. */
struct pc_spsc {
	/* Producer block: written by the producer thread only; the consumer
	 * reads _p._pos (the tail) when its cached copy runs out. */
	PC_CACHE_ALIGNED struct pc_spsc_side _p;
	/* Consumer block: written by the consumer thread only; the producer
	 * reads _c._pos (the head) when its cached copy says full. */
	PC_CACHE_ALIGNED struct pc_spsc_side _c;
	/* Written at init only; shares the consumer's line but is read only
	 * by pc_spsc_destroy. */
	bool _owned;                    /* created by pc_spsc_create */
};

/* Bytes of buffer a ring of cap elements of esz bytes needs; 0 when the
 * product overflows. Any thread. */
static inline size_t pc_spsc_buf_size(size_t cap, size_t esz)
{
	size_t n;

	return __builtin_mul_overflow(cap, esz, &n) ? 0 : n;
}

/* Prepare r over a caller-owned buffer of cap * esz bytes (allocate it on the
 * NUMA node of the consumer, aligned for the element type; 64-byte elements
 * on 64-byte boundaries each fill exactly one cache line). cap must be a
 * power of two (the caller sized buf, so nothing is rounded here).
 * Returns 0, or -EINVAL when r or buf is NULL, esz is 0, cap is not a power
 * of two or cap * esz overflows. Before either thread uses the ring. */
PC_API int pc_spsc_init(struct pc_spsc *r, void *buf, size_t cap, size_t esz);

/* Allocate a ring and its buffer together (cache-line aligned, touched by
 * the calling thread); cap is rounded up to a power of two. Returns NULL
 * when cap or esz is 0, the size overflows, or memory runs out. */
PC_API struct pc_spsc *pc_spsc_create(size_t cap, size_t esz);

/* Free a ring made by pc_spsc_create (NULL is ignored; a ring made with
 * pc_spsc_init is left alone: its memory is the caller's). Neither thread
 * may use the ring any more. */
PC_API void pc_spsc_destroy(struct pc_spsc *r);

/* Check every invariant (indices in order, fill level within capacity, both
 * sides agree on the geometry). Returns 0, or -EINVAL when the ring is
 * corrupt or was never initialised, and then, when err is not NULL, writes
 * into err (errlen bytes, NUL-terminated) which index or slot broke, the
 * value found and the range expected. Call while neither side runs. */
PC_API int pc_spsc_validate(const struct pc_spsc *r, char *err, size_t errlen);

/* Capacity in elements. Any thread. */
static inline size_t pc_spsc_capacity(const struct pc_spsc *r)
{
	return r->_p._mask + 1;
}

/* Element size in bytes. Any thread. */
static inline size_t pc_spsc_elem_size(const struct pc_spsc *r)
{
	return r->_p._esz;
}

/* Items the producer has staged or pushed so far, published or not
 * (modulo 2^64): the position the next one takes. Producer only. */
static inline size_t pc_spsc_produced(const struct pc_spsc *r)
{
	return r->_p._next;
}

/* Items the consumer has taken or popped so far, released or not (modulo
 * 2^64): the position of the next one. Consumer only. */
static inline size_t pc_spsc_consumed(const struct pc_spsc *r)
{
	return r->_c._next;
}

/* How many published items are waiting: exact when neither side moves,
 * otherwise an estimate between what was true at the start and at the end
 * of the call. Any thread. */
static inline size_t pc_spsc_size(const struct pc_spsc *r)
{
	/* head first: both only grow and tail >= head, so the difference
	 * cannot go negative; it can exceed the capacity if the producer
	 * moved on between the two loads, hence the clamp. */
	size_t h = PC_ATOMIC_LOAD(&r->_c._pos, PC_MO_ACQUIRE);
	size_t t = PC_ATOMIC_LOAD(&r->_p._pos, PC_MO_ACQUIRE);
	size_t n = t - h;

	return n > r->_p._mask + 1 ? r->_p._mask + 1 : n;
}

/* ---- the implementation, by element size ------------------------------
 * pc_spsc__* take the element size as an argument so the typed wrappers
 * can pass a constant; callers use the generic or typed functions. */

/* Free slots the producer may stage without overwriting unread items,
 * re-reading the consumer's head only when the cache says fewer than want. */
PC_INLINE size_t pc_spsc__room(struct pc_spsc *r, size_t want)
{
	size_t cap = r->_p._mask + 1;
	size_t room = cap - (r->_p._next - r->_p._other);

	if (room < want) {
		/* acquire: the consumer finished reading every slot below
		 * head before it released head; only now may they be reused */
		r->_p._other = PC_ATOMIC_LOAD(&r->_c._pos, PC_MO_ACQUIRE);
		room = cap - (r->_p._next - r->_p._other);
	}
	return room;
}

/* Items the consumer may take, re-reading the producer's tail only when the
 * cache says fewer than want. */
PC_INLINE size_t pc_spsc__avail(struct pc_spsc *r, size_t want)
{
	size_t avail = r->_c._other - r->_c._next;

	if (avail < want) {
		/* acquire: pairs with the producer's release of tail, so the
		 * contents of every slot below it are visible */
		r->_c._other = PC_ATOMIC_LOAD(&r->_p._pos, PC_MO_ACQUIRE);
		avail = r->_c._other - r->_c._next;
	}
	return avail;
}

/* Copy n elements between items and the ring starting at index pos, in at
 * most two pieces when the run crosses the end of the buffer. */
PC_INLINE void pc_spsc__copy_in(const struct pc_spsc_side *s, size_t pos,
				const void *items, size_t n, size_t esz)
{
	size_t i = pos & s->_mask, first = s->_mask + 1 - i;

	if (PC_LIKELY(n <= first)) {
		memcpy(s->_buf + i * esz, items, n * esz);
	} else {
		memcpy(s->_buf + i * esz, items, first * esz);
		memcpy(s->_buf, (const char *)items + first * esz, (n - first) * esz);
	}
}

PC_INLINE void pc_spsc__copy_out(const struct pc_spsc_side *s, size_t pos,
				 void *items, size_t n, size_t esz)
{
	size_t i = pos & s->_mask, first = s->_mask + 1 - i;

	if (PC_LIKELY(n <= first)) {
		memcpy(items, s->_buf + i * esz, n * esz);
	} else {
		memcpy(items, s->_buf + i * esz, first * esz);
		memcpy((char *)items + first * esz, s->_buf, (n - first) * esz);
	}
}

/* Make staged slots visible: release, so every slot written before is
 * visible to a consumer that acquires the new tail. */
PC_INLINE void pc_spsc__publish_to(struct pc_spsc *r, size_t next)
{
	r->_p._next = next;
	PC_ATOMIC_STORE(&r->_p._pos, next, PC_MO_RELEASE);
}

/* Free taken slots: release, so the consumer's reads of them complete
 * before a producer that acquires the new head overwrites them. */
PC_INLINE void pc_spsc__release_to(struct pc_spsc *r, size_t next)
{
	r->_c._next = next;
	PC_ATOMIC_STORE(&r->_c._pos, next, PC_MO_RELEASE);
}

PC_INLINE int pc_spsc__push(struct pc_spsc *r, const void *item, size_t esz)
{
	size_t t = r->_p._next;

	if (PC_UNLIKELY(pc_spsc__room(r, 1) == 0))
		return -EAGAIN; /* full: nothing written, caller retries */
	memcpy(r->_p._buf + (t & r->_p._mask) * esz, item, esz);
	pc_spsc__publish_to(r, t + 1);
	return 0;
}

PC_INLINE int pc_spsc__pop(struct pc_spsc *r, void *item, size_t esz)
{
	size_t h = r->_c._next;

	if (PC_UNLIKELY(pc_spsc__avail(r, 1) == 0))
		return -EAGAIN; /* empty */
	memcpy(item, r->_c._buf + (h & r->_c._mask) * esz, esz);
	pc_spsc__release_to(r, h + 1);
	return 0;
}

PC_INLINE unsigned pc_spsc__push_n(struct pc_spsc *r, const void *items,
				   unsigned n, bool all, size_t esz)
{
	size_t room = pc_spsc__room(r, n);

	if (room < n) {
		if (all)
			return 0;
		n = (unsigned)room;
	}
	if (n == 0)
		return 0;
	pc_spsc__copy_in(&r->_p, r->_p._next, items, n, esz);
	pc_spsc__publish_to(r, r->_p._next + n);
	return n;
}

PC_INLINE unsigned pc_spsc__pop_n(struct pc_spsc *r, void *items, unsigned n,
				  bool all, size_t esz)
{
	size_t avail = pc_spsc__avail(r, n);

	if (avail < n) {
		if (all)
			return 0;
		n = (unsigned)avail;
	}
	if (n == 0)
		return 0;
	pc_spsc__copy_out(&r->_c, r->_c._next, items, n, esz);
	pc_spsc__release_to(r, r->_c._next + n);
	return n;
}

PC_INLINE int pc_spsc__bulk_result(const struct pc_spsc *r, unsigned n, unsigned moved)
{
	if (moved == n)
		return 0;
	/* more than the capacity can never succeed: say so rather than
	 * have the caller retry forever */
	return n > r->_p._mask + 1 ? -EMSGSIZE : -EAGAIN;
}

/* Stage the next slot, which the caller knows is free (a count of free
 * slots it keeps from an earlier pc_spsc_room()). */
PC_INLINE void *pc_spsc__stage_free(struct pc_spsc *r, size_t esz)
{
	size_t t = r->_p._next;

	r->_p._next = t + 1; /* private: the consumer cannot see it yet */
	return r->_p._buf + (t & r->_p._mask) * esz;
}

PC_INLINE void *pc_spsc__stage(struct pc_spsc *r, size_t esz)
{
	if (PC_UNLIKELY(pc_spsc__room(r, 1) == 0))
		return NULL;
	return pc_spsc__stage_free(r, esz);
}

PC_INLINE void *pc_spsc__take(struct pc_spsc *r, size_t esz)
{
	size_t h = r->_c._next;

	if (PC_UNLIKELY(pc_spsc__avail(r, 1) == 0))
		return NULL;
	r->_c._next = h + 1; /* private: the producer cannot reuse it yet */
	return r->_c._buf + (h & r->_c._mask) * esz;
}

PC_INLINE void *pc_spsc__peek(struct pc_spsc *r, size_t esz)
{
	if (pc_spsc__avail(r, 1) == 0)
		return NULL;
	return r->_c._buf + (r->_c._next & r->_c._mask) * esz;
}

/* ---- the generic API: elements of the size given at init -------------- */

/* Copy one element in and publish it (and anything staged before).
 * Returns 0, or -EAGAIN when full (nothing written). Producer only. */
PC_INLINE int pc_spsc_push(struct pc_spsc *r, const void *item)
{
	return pc_spsc__push(r, item, r->_p._esz);
}

/* Copy the oldest element out and free its slot. Returns 0, or -EAGAIN
 * when empty. Consumer only. */
PC_INLINE int pc_spsc_pop(struct pc_spsc *r, void *item)
{
	return pc_spsc__pop(r, item, r->_c._esz);
}

/* Push up to n consecutive elements from items with one publish. Returns
 * how many went in (0 when full). Producer only. */
PC_INLINE unsigned pc_spsc_push_burst(struct pc_spsc *r, const void *items, unsigned n)
{
	return pc_spsc__push_n(r, items, n, false, r->_p._esz);
}

/* Push all n elements or none. Returns 0, -EAGAIN when fewer than n slots
 * are free, or -EMSGSIZE when n exceeds the capacity. Producer only. */
PC_INLINE int pc_spsc_push_bulk(struct pc_spsc *r, const void *items, unsigned n)
{
	return pc_spsc__bulk_result(r, n, pc_spsc__push_n(r, items, n, true, r->_p._esz));
}

/* Pop up to n elements into items. Returns how many (0 when empty).
 * Consumer only. */
PC_INLINE unsigned pc_spsc_pop_burst(struct pc_spsc *r, void *items, unsigned n)
{
	return pc_spsc__pop_n(r, items, n, false, r->_c._esz);
}

/* Pop exactly n elements or none. Returns 0, -EAGAIN when fewer than n are
 * waiting, or -EMSGSIZE when n exceeds the capacity. Consumer only. */
PC_INLINE int pc_spsc_pop_bulk(struct pc_spsc *r, void *items, unsigned n)
{
	return pc_spsc__bulk_result(r, n, pc_spsc__pop_n(r, items, n, true, r->_c._esz));
}

/* Reserve the next free slot for the producer to fill in place. It stays
 * invisible to the consumer until pc_spsc_publish() (or a push). Returns the
 * slot, or NULL when the ring is full counting staged slots. Producer only. */
PC_INLINE void *pc_spsc_stage(struct pc_spsc *r)
{
	return pc_spsc__stage(r, r->_p._esz);
}

/* Free slots the producer may still stage or push. The consumer's index is
 * re-read only when fewer than want slots are known free, so the answer is
 * at least want whenever want slots are free, and may be less than the
 * true count otherwise (the consumer may have freed more since). Use it to
 * keep room in reserve, e.g. for replies. Producer only. */
PC_INLINE size_t pc_spsc_room(struct pc_spsc *r, size_t want)
{
	return pc_spsc__room(r, want);
}

/* Make every staged slot visible with one release store. Returns how many
 * slots became visible (0: nothing was staged). Producer only. */
PC_INLINE size_t pc_spsc_publish(struct pc_spsc *r)
{
	/* the producer is the only writer of its tail: a relaxed read of
	 * its own value is exact */
	size_t old = PC_ATOMIC_LOAD(&r->_p._pos, PC_MO_RELAXED);

	pc_spsc__publish_to(r, r->_p._next);
	return r->_p._next - old;
}

/* Hand out the oldest unread item in place, without freeing its slot: the
 * pointer stays valid until pc_spsc_release() (or a pop). Returns NULL when
 * nothing more is published. Consumer only. */
PC_INLINE void *pc_spsc_take(struct pc_spsc *r)
{
	return pc_spsc__take(r, r->_c._esz);
}

/* Free every taken slot for the producer with one release store. Returns
 * how many slots were freed. Consumer only. */
PC_INLINE size_t pc_spsc_release(struct pc_spsc *r)
{
	size_t old = PC_ATOMIC_LOAD(&r->_c._pos, PC_MO_RELAXED);

	pc_spsc__release_to(r, r->_c._next);
	return r->_c._next - old;
}

/* The oldest item not yet taken, in place, without consuming it; NULL when
 * none is published. Valid until the consumer takes or pops it and then
 * releases. Consumer only. */
PC_INLINE void *pc_spsc_peek(struct pc_spsc *r)
{
	return pc_spsc__peek(r, r->_c._esz);
}

/* What a typed ring of either mode (this one and spsc_seq.h's) declares
 * alike: struct name holding a ring_type, name_stage, name_release and
 * name_size; raw is the member path to the struct pc_spsc inside. */
#define PC_SPSC__TYPED_COMMON(name, type, ring_type, raw)                         \
	struct name {                                                              \
		ring_type ring;                                                    \
	};                                                                         \
	PC_UNUSED PC_INLINE type *name##_stage(struct name *q)                               \
	{                                                                          \
		return (type *)pc_spsc__stage(&q->raw, sizeof(type));              \
	}                                                                          \
	PC_UNUSED PC_INLINE size_t name##_release(struct name *q)                            \
	{                                                                          \
		return pc_spsc_release(&q->raw);                                   \
	}                                                                          \
	PC_UNUSED static inline size_t name##_size(const struct name *q)                     \
	{                                                                          \
		return pc_spsc_size(&q->raw);                                      \
	}

/* ---- typed rings --------------------------------------------------------
 * PC_SPSC_TYPED(name, type) declares struct name (a ring of type) and
 * name_init/create/destroy/push/pop/push_burst/pop_burst/push_bulk/
 * pop_bulk/stage/publish/take/release/peek/size/validate with the same
 * contracts as the generic functions, the element size a constant.
 * name_init also refuses a buffer misaligned for type (-EINVAL). The ring
 * inside is q->ring, usable with every generic function. */
#define PC_SPSC_TYPED(name, type)                                                  \
	PC_SPSC__TYPED_COMMON(name, type, struct pc_spsc, ring)                    \
	PC_UNUSED static inline int name##_init(struct name *q, type *buf, size_t cap)       \
	{                                                                          \
		if ((uintptr_t)buf % __alignof__(type))                               \
			return -EINVAL;                                            \
		return pc_spsc_init(&q->ring, buf, cap, sizeof(type));             \
	}                                                                          \
	PC_UNUSED static inline struct name *name##_create(size_t cap)                       \
	{                                                                          \
		return (struct name *)pc_spsc_create(cap, sizeof(type));           \
	}                                                                          \
	PC_UNUSED static inline void name##_destroy(struct name *q)                          \
	{                                                                          \
		pc_spsc_destroy(q ? &q->ring : NULL);                              \
	}                                                                          \
	PC_UNUSED PC_INLINE int name##_push(struct name *q, type const *item)                \
	{                                                                          \
		return pc_spsc__push(&q->ring, item, sizeof(type));                \
	}                                                                          \
	PC_UNUSED PC_INLINE int name##_pop(struct name *q, type *item)                       \
	{                                                                          \
		return pc_spsc__pop(&q->ring, item, sizeof(type));                 \
	}                                                                          \
	PC_UNUSED PC_INLINE unsigned name##_push_burst(struct name *q, type const *items,     \
					     unsigned n)                           \
	{                                                                          \
		return pc_spsc__push_n(&q->ring, items, n, false, sizeof(type));   \
	}                                                                          \
	PC_UNUSED PC_INLINE unsigned name##_pop_burst(struct name *q, type *items, unsigned n) \
	{                                                                          \
		return pc_spsc__pop_n(&q->ring, items, n, false, sizeof(type));    \
	}                                                                          \
	PC_UNUSED PC_INLINE int name##_push_bulk(struct name *q, type const *items, unsigned n) \
	{                                                                          \
		return pc_spsc__bulk_result(&q->ring, n,                           \
			pc_spsc__push_n(&q->ring, items, n, true, sizeof(type)));  \
	}                                                                          \
	PC_UNUSED PC_INLINE int name##_pop_bulk(struct name *q, type *items, unsigned n)     \
	{                                                                          \
		return pc_spsc__bulk_result(&q->ring, n,                           \
			pc_spsc__pop_n(&q->ring, items, n, true, sizeof(type)));   \
	}                                                                          \
	PC_UNUSED PC_INLINE size_t name##_publish(struct name *q)                            \
	{                                                                          \
		return pc_spsc_publish(&q->ring);                                  \
	}                                                                          \
	PC_UNUSED PC_INLINE type *name##_take(struct name *q)                                \
	{                                                                          \
		return (type *)pc_spsc__take(&q->ring, sizeof(type));              \
	}                                                                          \
	PC_UNUSED PC_INLINE type *name##_peek(struct name *q)                                \
	{                                                                          \
		return (type *)pc_spsc__peek(&q->ring, sizeof(type));              \
	}                                                                          \
	PC_UNUSED static inline int name##_validate(const struct name *q, char *err,         \
						    size_t errlen)                         \
	{                                                                          \
		if (q->ring._p._esz == sizeof(type))                               \
			return pc_spsc_validate(&q->ring, err, errlen);            \
		if (err && errlen)                                                 \
			snprintf(err, errlen, "element size %zu, expected %zu",    \
				 q->ring._p._esz, sizeof(type));                   \
		return -EINVAL;                                                    \
	}

PC_END_DECLS

#endif
