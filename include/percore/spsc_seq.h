/* SPDX-License-Identifier: MIT */
/* percore: the SPSC ring in slot-sequence mode.
 *
 * The same ring as spsc.h (same layout, capacity, producer side and head),
 * but the consumer learns that a slot is filled from a sequence word inside
 * the slot instead of from the producer's published tail. Why: an ordinary
 * index ring moves two cache lines from producer to consumer per message
 * when the consumer waits for it (the tail, then the slot the tail points
 * at, one dependent miss after the other); here the consumer polls the slot
 * it will read next and one line moves, as when two threads bounce a single
 * line. The runtime's mesh uses it: its latency is one message at a time.
 *
 * The sequence word of the slot for position p holds (uint32_t)(p + 1) once
 * p is published. Init writes (uint32_t)(i + 1 - cap) into slot i, the value
 * "published one lap ago", so no slot reads as filled before it is.
 *
 * Memory ordering (the whole argument; see also docs/ARCHITECTURE.md):
 *  - Publish: the producer has written the slots' contents (plain stores),
 *    then stores each staged slot's sequence word with release, in order.
 *    Take: the consumer loads the next slot's word with acquire and uses
 *    the slot only when it reads p + 1, so it sees the contents.
 *  - Reuse: exactly as in spsc.h. The consumer stores head with release
 *    after it is done with the slots below it; the producer loads head with
 *    acquire before it stages (and so overwrites, sequence word included)
 *    a slot below head + capacity. The consumer never writes a slot.
 *  - No slot can show a later lap's word too early: the producer cannot
 *    write position p + cap before the consumer released p. An earlier
 *    lap's word differs from p + 1 modulo 2^32 because cap <= 2^31.
 *  - The consumer may load a word while the producer writes that slot's
 *    other bytes: the word is atomic, and the contents are read only after
 *    the word matched.
 *  - The producer still stores its tail (release) at each publish, on its
 *    own line: only pc_spsc_size() and the validator read it, so it costs
 *    the producer an L1 store and moves nothing.
 *
 * Such a ring is a struct pc_spsc_seq, its own type: the copying forms of
 * spsc.h (push, pop and their batch forms) do not write sequence words, so
 * they do not accept it. Only the functions here apply. Callers fill a
 * staged slot in place and never write its sequence word.
 */
#ifndef PERCORE_SPSC_SEQ_H
#define PERCORE_SPSC_SEQ_H

#include "percore/defs.h"
#include "percore/spsc.h"

PC_BEGIN_DECLS

/* The sequence word each element reserves for the ring. */
typedef PC_ATOMIC(uint32_t) pc_spsc_seq_t;

/* A ring in slot-sequence mode. The ring inside is the caller's to read
 * through the functions below only. */
struct pc_spsc_seq {
	struct pc_spsc _ring;
};

/* Prepare r in slot-sequence mode over a caller-owned buffer of cap * esz
 * bytes; seq_off is the offset in each element of its pc_spsc_seq_t.
 * Writes every slot's sequence word (call it on the thread whose node
 * should hold the buffer: it is the first touch). Returns 0, or -EINVAL for
 * anything pc_spsc_init() refuses, cap above 2^31, or a seq_off that is
 * misaligned or does not fit in the element. Before either thread uses it. */
PC_API int pc_spsc_seq_init(struct pc_spsc_seq *r, void *buf, size_t cap, size_t esz,
			    size_t seq_off);

/* Check every invariant as pc_spsc_validate() does, sequence words
 * included: the cap positions below the tail read as published, the cap
 * from the tail on as not yet. Returns 0, or -EINVAL (also for a ring not
 * in slot-sequence mode) and, when err is not NULL, what broke in err
 * (errlen bytes). Call while neither side runs. */
PC_API int pc_spsc_seq_validate(const struct pc_spsc_seq *r, char *err, size_t errlen);

/* The getters of spsc.h, for a ring in this mode: capacity and element
 * size (any thread), items waiting (either side), items produced so far
 * (producer) and consumed so far (consumer). */
static inline size_t pc_spsc_seq_capacity(const struct pc_spsc_seq *r)
{
	return pc_spsc_capacity(&r->_ring);
}

/* The element size. As pc_spsc_elem_size(). */
static inline size_t pc_spsc_seq_elem_size(const struct pc_spsc_seq *r)
{
	return pc_spsc_elem_size(&r->_ring);
}

/* Items in the ring now. As pc_spsc_size(). */
static inline size_t pc_spsc_seq_size(const struct pc_spsc_seq *r)
{
	return pc_spsc_size(&r->_ring);
}

/* Items pushed so far. As pc_spsc_produced(). */
static inline size_t pc_spsc_seq_produced(const struct pc_spsc_seq *r)
{
	return pc_spsc_produced(&r->_ring);
}

/* Items popped so far. As pc_spsc_consumed(). */
static inline size_t pc_spsc_seq_consumed(const struct pc_spsc_seq *r)
{
	return pc_spsc_consumed(&r->_ring);
}

PC_INLINE pc_spsc_seq_t *pc_spsc__seq_word(const struct pc_spsc_side *s, size_t pos,
					   size_t esz, size_t off)
{
	return (pc_spsc_seq_t *)(s->_buf + (pos & s->_mask) * esz + off);
}

PC_INLINE size_t pc_spsc__seq_publish(struct pc_spsc *r, size_t esz, size_t off)
{
	/* the producer is the only writer of its tail: relaxed is exact */
	size_t t = PC_ATOMIC_LOAD(&r->_p._pos, PC_MO_RELAXED);
	size_t end = r->_p._next, mask = r->_p._mask;
	char *buf = r->_p._buf + off;

	/* The words up to the buffer's end, then from its start: a pointer
	 * walk, with the ring's fields in registers (a store through an
	 * atomic pointer would otherwise make the compiler load them again
	 * for every slot). */
	for (size_t p = t; p != end;) {
		size_t at = p & mask, to_wrap = mask + 1 - at;
		size_t n = end - p < to_wrap ? end - p : to_wrap;
		char *w = buf + at * esz, *stop = w + n * esz;
		uint32_t seq = (uint32_t)p;

		/* release: the slot's contents, written before, are visible to
		 * a consumer whose acquire load reads this value */
		for (; w != stop; w += esz)
			PC_ATOMIC_STORE((pc_spsc_seq_t *)(void *)w, ++seq, PC_MO_RELEASE);
		p += n;
	}
	PC_ATOMIC_STORE(&r->_p._pos, end, PC_MO_RELEASE);
	return end - t;
}

PC_INLINE void *pc_spsc__seq_peek(struct pc_spsc *r, size_t esz, size_t off)
{
	size_t h = r->_c._next;
	pc_spsc_seq_t *w = pc_spsc__seq_word(&r->_c, h, esz, off);

	/* acquire: pairs with the release in publish; the slot's contents
	 * are visible once its word reads h + 1 */
	if (PC_ATOMIC_LOAD(w, PC_MO_ACQUIRE) != (uint32_t)(h + 1))
		return NULL;
	return (char *)w - off;
}

PC_INLINE void *pc_spsc__seq_take(struct pc_spsc *r, size_t esz, size_t off)
{
	void *slot = pc_spsc__seq_peek(r, esz, off);

	if (slot)
		r->_c._next++; /* private: the producer cannot reuse it yet */
	return slot;
}

/* The next free slot, to be filled in place and published with
 * pc_spsc_seq_publish(), or NULL when the ring is full. Producer only. */
PC_INLINE void *pc_spsc_seq_stage(struct pc_spsc_seq *r)
{
	return pc_spsc_stage(&r->_ring);
}

/* As pc_spsc_room(): free slots, at least want of them when there are
 * (reads the consumer's head only when the cached copy says fewer).
 * Producer only. */
PC_INLINE size_t pc_spsc_seq_room(struct pc_spsc_seq *r, size_t want)
{
	return pc_spsc_room(&r->_ring, want);
}

/* Make every staged slot visible: one release store of each staged slot's
 * sequence word. Returns how many (0: nothing was staged). Producer only. */
PC_INLINE size_t pc_spsc_seq_publish(struct pc_spsc_seq *r)
{
	return pc_spsc__seq_publish(&r->_ring, r->_ring._p._esz, r->_ring._p._seq);
}

/* The oldest published slot not yet taken, in place, or NULL: valid until
 * pc_spsc_seq_release() frees it. Consumer only. */
PC_INLINE void *pc_spsc_seq_take(struct pc_spsc_seq *r)
{
	return pc_spsc__seq_take(&r->_ring, r->_ring._c._esz, r->_ring._c._seq);
}

/* As pc_spsc_seq_take() without taking it. Consumer only. */
PC_INLINE void *pc_spsc_seq_peek(struct pc_spsc_seq *r)
{
	return pc_spsc__seq_peek(&r->_ring, r->_ring._c._esz, r->_ring._c._seq);
}

/* Free every taken slot for the producer; returns how many. Consumer
 * only. */
PC_INLINE size_t pc_spsc_seq_release(struct pc_spsc_seq *r)
{
	return pc_spsc_release(&r->_ring);
}

/* PC_SPSC_SEQ_TYPED(name, type, field) declares struct name, a ring of type
 * in slot-sequence mode whose sequence word is type's member field (a
 * pc_spsc_seq_t), and name_init/stage/publish/take/peek/release/size/
 * validate with the contracts above and the element size and offset as
 * constants. name_init also refuses a buffer misaligned for type. The ring
 * inside is q->ring, a struct pc_spsc_seq. */
#define PC_SPSC_SEQ_TYPED(name, type, field)                                       \
	PC_SPSC__TYPED_COMMON(name, type, struct pc_spsc_seq, ring._ring)          \
	PC_UNUSED static inline int name##_init(struct name *q, type *buf, size_t cap)       \
	{                                                                          \
		if ((uintptr_t)buf % __alignof__(type))                            \
			return -EINVAL;                                            \
		return pc_spsc_seq_init(&q->ring, buf, cap, sizeof(type),          \
					offsetof(type, field));                    \
	}                                                                          \
	PC_UNUSED PC_INLINE size_t name##_publish(struct name *q)                            \
	{                                                                          \
		return pc_spsc__seq_publish(&q->ring._ring, sizeof(type),          \
					    offsetof(type, field));                \
	}                                                                          \
	PC_UNUSED PC_INLINE type *name##_take(struct name *q)                                \
	{                                                                          \
		return (type *)pc_spsc__seq_take(&q->ring._ring, sizeof(type),    \
						 offsetof(type, field));           \
	}                                                                          \
	PC_UNUSED PC_INLINE type *name##_peek(struct name *q)                                \
	{                                                                          \
		return (type *)pc_spsc__seq_peek(&q->ring._ring, sizeof(type),    \
						 offsetof(type, field));           \
	}                                                                          \
	PC_UNUSED static inline int name##_validate(const struct name *q, char *err,         \
						    size_t errlen)                         \
	{                                                                          \
		if (q->ring._ring._p._esz == sizeof(type) &&                       \
		    q->ring._ring._p._seq == offsetof(type, field))                \
			return pc_spsc_seq_validate(&q->ring, err, errlen);        \
		if (err && errlen)                                                 \
			snprintf(err, errlen,                                      \
				 "element size %zu, sequence offset %zu; expected %zu, %zu", \
				 q->ring._ring._p._esz, q->ring._ring._p._seq,     \
				 sizeof(type), offsetof(type, field));             \
		return -EINVAL;                                                    \
	}

PC_END_DECLS

#endif
