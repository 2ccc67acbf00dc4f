/* SPDX-License-Identifier: MIT */
/* percore: bounded multi-producer single-consumer ring.
 *
 * Any number of threads push, one thread pops. Each slot carries a sequence
 * number that says whose turn it is (the bounded queue design of per-slot
 * sequence numbers): producers claim a position by compare-and-swap on the
 * shared tail, fill the slot, then hand it to the consumer by storing the
 * slot's sequence; the consumer needs no read-modify-write at all.
 *
 * Progress: producers are lock-free (a failed CAS means another producer
 * advanced). The consumer never blocks, but a producer stalled between
 * claiming and filling its slot holds back the items behind it: pop reports
 * empty until that slot is filled (nothing is lost or reordered).
 *
 * Order: items from one producer arrive in the order it pushed them; items
 * from different producers interleave in the order their claims succeeded.
 *
 * Memory ordering, slot at position pos:
 *  - seq == pos: free for the producer that claims pos. A producer loads
 *    seq with acquire, so the consumer's read of the previous lap's item is
 *    complete before the producer overwrites it.
 *  - The claim is a relaxed CAS on _tail: it orders nothing but which
 *    producer owns pos; the slot's own sequence carries the data.
 *  - seq == pos + 1: filled. The producer stores it with release after
 *    copying the item; the consumer loads it with acquire before copying
 *    the item out.
 *  - The consumer then stores seq = pos + capacity with release, freeing
 *    the slot for the next lap.
 *
 * Elements have a fixed size set at init; PC_MPSC_TYPED() declares typed
 * wrappers that pass sizeof(type) as a constant. C and C++ (see defs.h).
 */
#ifndef PERCORE_MPSC_H
#define PERCORE_MPSC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* A slot: the sequence number, then the element (8-byte aligned). */
struct pc_mpsc_slot {
	PC_ATOMIC(size_t) seq;
	__extension__ char data[]; /* flexible array; __extension__: C++ -Wpedantic */
};

/* A bounded multi-producer, single-consumer queue. Opaque to callers;
 * public so that push and pop can be inline. */
struct pc_mpsc {
	/* Producers' block: every producer reads and CASes _tail; the rest is
	 * written at init only (the producers' copy of the geometry). */
	PC_CACHE_ALIGNED PC_ATOMIC(size_t) _tail;
	char *_pslots;
	size_t _pmask, _pstride, _pesz;
	/* Consumer block: written by the consumer thread only. */
	PC_CACHE_ALIGNED size_t _head;
	char *_cslots;
	size_t _cmask, _cstride, _cesz;
	bool _owned;            /* init only: made by pc_mpsc_create */
};

/* Bytes between consecutive slots for elements of esz bytes. Any thread. */
static inline size_t pc_mpsc_stride(size_t esz)
{
	return (sizeof(struct pc_mpsc_slot) + esz + 7) & ~(size_t)7;
}

/* Bytes of buffer a ring of cap elements of esz bytes needs; 0 on overflow.
 * Any thread. */
static inline size_t pc_mpsc_buf_size(size_t cap, size_t esz)
{
	size_t n;

	if (esz > SIZE_MAX / 2)
		return 0;
	return __builtin_mul_overflow(cap, pc_mpsc_stride(esz), &n) ? 0 : n;
}

/* Prepare q over a caller-owned, 8-byte aligned buffer of
 * pc_mpsc_buf_size(cap, esz) bytes; cap must be a power of two. Returns 0,
 * or -EINVAL when q or buf is NULL or misaligned, esz is 0, cap is not a
 * power of two or the size overflows. Before any thread uses the ring. */
PC_API int pc_mpsc_init(struct pc_mpsc *q, void *buf, size_t cap, size_t esz);

/* Allocate a ring and its buffer together, cap rounded up to a power of
 * two. Returns NULL when cap or esz is 0, the size overflows or memory runs
 * out. */
PC_API struct pc_mpsc *pc_mpsc_create(size_t cap, size_t esz);

/* Free a ring made by pc_mpsc_create (NULL and init'ed rings are left
 * alone). No thread may use the ring any more. */
PC_API void pc_mpsc_destroy(struct pc_mpsc *q);

/* Check every invariant: the fill level is within the capacity, each
 * waiting slot is marked filled and every other slot free for its next lap.
 * Returns 0, or -EINVAL and, when err is not NULL, what broke in err
 * (errlen bytes): the slot, the value found, the value expected. Call while
 * no thread uses the ring. */
PC_API int pc_mpsc_validate(const struct pc_mpsc *q, char *err, size_t errlen);

/* Capacity in elements. Any thread. */
static inline size_t pc_mpsc_capacity(const struct pc_mpsc *q)
{
	return q->_pmask + 1;
}

/* Items claimed by producers and not yet popped (some may still be being
 * filled): an estimate while others run. Any thread. */
static inline size_t pc_mpsc_size(const struct pc_mpsc *q)
{
	size_t t = PC_ATOMIC_LOAD(&q->_tail, PC_MO_ACQUIRE);
	/* the consumer's head is a plain field; read it as a relaxed atomic
	 * so another thread may ask */
	size_t h = __atomic_load_n(&q->_head, __ATOMIC_RELAXED);
	size_t n = t - h;

	return n > q->_pmask + 1 ? 0 : n; /* head read after a newer tail */
}

/* ---- the implementation, by element size ------------------------------ */

PC_INLINE int pc_mpsc__push(struct pc_mpsc *q, const void *item, size_t esz)
{
	size_t pos = PC_ATOMIC_LOAD(&q->_tail, PC_MO_RELAXED);
	struct pc_mpsc_slot *s;

	for (;;) {
		s = (struct pc_mpsc_slot *)(q->_pslots + (pos & q->_pmask) * q->_pstride);
		/* acquire: the consumer's copy-out of the last lap is done */
		size_t seq = PC_ATOMIC_LOAD(&s->seq, PC_MO_ACQUIRE);
		intptr_t dif = (intptr_t)(seq - pos);

		if (dif == 0) {
			/* relaxed: the CAS only decides who owns pos; on
			 * failure pos is reloaded with the current tail */
			if (PC_ATOMIC_CAS_WEAK(&q->_tail, &pos, pos + 1, PC_MO_RELAXED,
					       PC_MO_RELAXED))
				break;
		} else if (dif < 0) {
			return -EAGAIN; /* the slot still holds last lap's item: full */
		} else {
			/* another producer took pos already */
			pos = PC_ATOMIC_LOAD(&q->_tail, PC_MO_RELAXED);
		}
	}
	memcpy(s->data, item, esz);
	/* release: the item is in place before the consumer may see it */
	PC_ATOMIC_STORE(&s->seq, pos + 1, PC_MO_RELEASE);
	return 0;
}

PC_INLINE unsigned pc_mpsc__pop_n(struct pc_mpsc *q, void *items, unsigned n, size_t esz)
{
	size_t pos = q->_head;
	unsigned i;

	for (i = 0; i < n; i++, pos++) {
		struct pc_mpsc_slot *s =
			(struct pc_mpsc_slot *)(q->_cslots + (pos & q->_cmask) * q->_cstride);

		/* acquire: pairs with the producer's release of pos + 1 */
		if (PC_ATOMIC_LOAD(&s->seq, PC_MO_ACQUIRE) != pos + 1)
			break; /* empty, or the producer of pos is still filling it */
		memcpy((char *)items + (size_t)i * esz, s->data, esz);
		/* release: the copy-out is done before the slot's next
		 * producer, who acquires this value, overwrites it */
		PC_ATOMIC_STORE(&s->seq, pos + q->_cmask + 1, PC_MO_RELEASE);
	}
	/* relaxed store: only pc_mpsc_size reads head from other threads */
	__atomic_store_n(&q->_head, pos, __ATOMIC_RELAXED);
	return i;
}

/* ---- the generic API ---------------------------------------------------- */

/* Copy one element in. Returns 0, or -EAGAIN when full (nothing written).
 * Any thread except, if it might wait on its own push, the consumer. */
PC_INLINE int pc_mpsc_push(struct pc_mpsc *q, const void *item)
{
	return pc_mpsc__push(q, item, q->_pesz);
}

/* Copy the oldest ready element out. Returns 0, or -EAGAIN when none is
 * ready. Consumer only. */
PC_INLINE int pc_mpsc_pop(struct pc_mpsc *q, void *item)
{
	return pc_mpsc__pop_n(q, item, 1, q->_cesz) ? 0 : -EAGAIN;
}

/* Pop up to n ready elements into items, stopping at the first slot that is
 * empty or still being filled. Returns how many. Consumer only. */
PC_INLINE unsigned pc_mpsc_pop_burst(struct pc_mpsc *q, void *items, unsigned n)
{
	return pc_mpsc__pop_n(q, items, n, q->_cesz);
}

/* PC_MPSC_TYPED(name, type) declares struct name (q->ring inside) and
 * name_init/create/destroy/push/pop/pop_burst/size/validate with the
 * contracts above and sizeof(type) as a constant. */
#define PC_MPSC_TYPED(name, type)                                                  \
	struct name {                                                              \
		struct pc_mpsc ring;                                               \
	};                                                                         \
	PC_UNUSED static inline int name##_init(struct name *q, void *buf, size_t cap)       \
	{                                                                          \
		return pc_mpsc_init(&q->ring, buf, cap, sizeof(type));             \
	}                                                                          \
	PC_UNUSED static inline struct name *name##_create(size_t cap)                       \
	{                                                                          \
		return (struct name *)pc_mpsc_create(cap, sizeof(type));           \
	}                                                                          \
	PC_UNUSED static inline void name##_destroy(struct name *q)                          \
	{                                                                          \
		pc_mpsc_destroy(q ? &q->ring : NULL);                              \
	}                                                                          \
	PC_UNUSED PC_INLINE int name##_push(struct name *q, type const *item)                \
	{                                                                          \
		return pc_mpsc__push(&q->ring, item, sizeof(type));                \
	}                                                                          \
	PC_UNUSED PC_INLINE int name##_pop(struct name *q, type *item)                       \
	{                                                                          \
		return pc_mpsc__pop_n(&q->ring, item, 1, sizeof(type)) ? 0 : -EAGAIN; \
	}                                                                          \
	PC_UNUSED PC_INLINE unsigned name##_pop_burst(struct name *q, type *items, unsigned n) \
	{                                                                          \
		return pc_mpsc__pop_n(&q->ring, items, n, sizeof(type));           \
	}                                                                          \
	PC_UNUSED static inline size_t name##_size(const struct name *q)                     \
	{                                                                          \
		return pc_mpsc_size(&q->ring);                                     \
	}                                                                          \
	PC_UNUSED static inline int name##_validate(const struct name *q, char *err,         \
						    size_t errlen)                         \
	{                                                                          \
		if (q->ring._pesz == sizeof(type))                                 \
			return pc_mpsc_validate(&q->ring, err, errlen);            \
		if (err && errlen)                                                 \
			snprintf(err, errlen, "element size %zu, expected %zu",    \
				 q->ring._pesz, sizeof(type));                     \
		return -EINVAL;                                                    \
	}

PC_END_DECLS

#endif
