/* SPDX-License-Identifier: MIT */
/* percore: single-producer single-consumer ring, the parts off the hot path
 * (the hot path is inline in include/percore/spsc.h). */
#include <stdlib.h>

#include "percore/spsc.h"
#include "percore/spsc_seq.h"
#include "conc/block.h"
#include "sys/errmsg.h"

static void side_init(struct pc_spsc_side *s, void *buf, size_t cap, size_t esz)
{
	atomic_init(&s->_pos, 0);
	s->_next = 0;
	s->_other = 0;
	s->_buf = buf;
	s->_mask = cap - 1;
	s->_esz = esz;
	s->_seq = PC_SPSC_NO_SEQ;
}

int pc_spsc_init(struct pc_spsc *r, void *buf, size_t cap, size_t esz)
{
	if (!r || !buf || esz == 0 || !PC_IS_POW2(cap) || pc_spsc_buf_size(cap, esz) == 0)
		return -EINVAL;
	side_init(&r->_p, buf, cap, esz);
	side_init(&r->_c, buf, cap, esz);
	r->_owned = false;
	return 0;
}

int pc_spsc_seq_init(struct pc_spsc_seq *q, void *buf, size_t cap, size_t esz, size_t seq_off)
{
	struct pc_spsc *r = q ? &q->_ring : NULL;
	int rc;

	if (cap > ((size_t)1 << 31) || seq_off % _Alignof(pc_spsc_seq_t) ||
	    seq_off >= esz || esz - seq_off < sizeof(pc_spsc_seq_t))
		return -EINVAL;
	rc = pc_spsc_init(r, buf, cap, esz);
	if (rc)
		return rc;
	if ((uintptr_t)buf % _Alignof(pc_spsc_seq_t) || esz % _Alignof(pc_spsc_seq_t))
		return -EINVAL;
	r->_p._seq = r->_c._seq = seq_off;
	/* Slot i as if position i - cap had been published: not filled. */
	for (size_t i = 0; i < cap; i++)
		atomic_init(pc_spsc__seq_word(&r->_p, i, esz, seq_off), (uint32_t)(i + 1 - cap));
	return 0;
}

struct pc_spsc *pc_spsc_create(size_t cap, size_t esz)
{
	struct pc_spsc *r;

	if (cap == 0 || esz == 0 || cap > ((size_t)1 << 62))
		return NULL;
	cap = pc_next_pow2(cap);
	/* one block: the ring, then its buffer on the next padded line */
	r = conc_block_alloc(sizeof(*r), pc_spsc_buf_size(cap, esz));
	if (!r)
		return NULL;
	pc_spsc_init(r, (char *)r + sizeof(*r), cap, esz);
	r->_owned = true;
	return r;
}

void pc_spsc_destroy(struct pc_spsc *r)
{
	if (r && r->_owned)
		free(r);
}

static int sides_check(const struct pc_spsc *r, char *err, size_t errlen)
{
	const struct pc_spsc_side *p = &r->_p, *c = &r->_c;

	if (!p->_buf || p->_esz == 0)
		return sys_errmsg(err, errlen, -EINVAL, "not initialised: buffer %p, element size %zu",
				 p->_buf, p->_esz);
	if (p->_buf != c->_buf || p->_mask != c->_mask || p->_esz != c->_esz || p->_seq != c->_seq)
		return sys_errmsg(err, errlen, -EINVAL,
				 "the sides disagree: producer buf %p mask %zu esz %zu seq %zu, "
				 "consumer buf %p mask %zu esz %zu seq %zu",
				 p->_buf, p->_mask, p->_esz, p->_seq, c->_buf, c->_mask, c->_esz,
				 c->_seq);
	if (!PC_IS_POW2(p->_mask + 1))
		return sys_errmsg(err, errlen, -EINVAL, "capacity %zu is not a power of two",
				 p->_mask + 1);
	return 0;
}

/* Slot-sequence mode: the cap positions below the tail carry their
 * published word, the cap from the tail on (staged or free) do not. */
static int seq_words_ok(const struct pc_spsc *r, size_t tail, char *err, size_t errlen)
{
	size_t cap = r->_p._mask + 1, esz = r->_p._esz, off = r->_p._seq;

	if (off % _Alignof(pc_spsc_seq_t) || off >= esz || esz - off < sizeof(pc_spsc_seq_t))
		return sys_errmsg(err, errlen, -EINVAL,
				 "sequence word at offset %zu does not fit an aligned %zu-byte "
				 "word in a %zu-byte element", off, sizeof(pc_spsc_seq_t), esz);
	for (size_t p = tail - cap; p != tail; p++) {
		uint32_t w = atomic_load_explicit(pc_spsc__seq_word(&r->_p, p, esz, off),
						  memory_order_relaxed);

		if (w != (uint32_t)(p + 1))
			return sys_errmsg(err, errlen, -EINVAL,
					 "slot %zu (position %zu): sequence word %u, expected %u",
					 p & r->_p._mask, p, w, (uint32_t)(p + 1));
	}
	return 0;
}

/* The invariants both modes share; sets *tail_out to the published tail. */
static int ring_ok(const struct pc_spsc *r, size_t *tail_out, char *err, size_t errlen)
{
	size_t cap, head, tail;
	int rc;

	if (!r)
		return sys_errmsg(err, errlen, -EINVAL, "no ring");
	if ((rc = sides_check(r, err, errlen)))
		return rc;
	cap = r->_p._mask + 1;
	head = atomic_load_explicit(&r->_c._pos, memory_order_acquire);
	tail = atomic_load_explicit(&r->_p._pos, memory_order_acquire);
	/* Every distance is taken modulo 2^64, as the indices run freely:
	 * head <= take <= tail <= stage <= head + cap; the producer's copy of
	 * head lies at or below head and within cap of stage. */
	if (tail - head > cap)
		return sys_errmsg(err, errlen, -EINVAL, "tail %zu is %zu past head %zu, expected 0..%zu",
				  tail, tail - head, head, cap);
	if (r->_c._next - head > tail - head)
		return sys_errmsg(err, errlen, -EINVAL,
				  "consumer's next %zu outside head..tail %zu..%zu", r->_c._next,
				  head, tail);
	if (r->_p._next - tail > cap - (tail - head))
		return sys_errmsg(err, errlen, -EINVAL,
				  "producer's next %zu outside tail..head+cap %zu..%zu",
				  r->_p._next, tail, head + cap);
	if (head - r->_p._other > r->_p._next - r->_p._other ||
	    r->_p._next - r->_p._other > cap)
		return sys_errmsg(err, errlen, -EINVAL,
				  "producer's cached head %zu outside next-cap..head %zu..%zu",
				  r->_p._other, r->_p._next - cap, head);
	*tail_out = tail;
	return 0;
}

int pc_spsc_validate(const struct pc_spsc *r, char *err, size_t errlen)
{
	size_t tail;
	int rc = ring_ok(r, &tail, err, errlen);

	if (rc)
		return rc;
	if (r->_p._seq != PC_SPSC_NO_SEQ)
		return sys_errmsg(err, errlen, -EINVAL,
				  "a slot-sequence ring (sequence word at %zu): use pc_spsc_seq_validate",
				  r->_p._seq);
	/* the consumer's copy of tail lies between take and tail */
	if (r->_c._other - r->_c._next > tail - r->_c._next)
		return sys_errmsg(err, errlen, -EINVAL,
				  "consumer's cached tail %zu outside next..tail %zu..%zu",
				  r->_c._other, r->_c._next, tail);
	return 0;
}

int pc_spsc_seq_validate(const struct pc_spsc_seq *q, char *err, size_t errlen)
{
	size_t tail;
	int rc = ring_ok(q ? &q->_ring : NULL, &tail, err, errlen);

	if (rc)
		return rc;
	if (q->_ring._p._seq == PC_SPSC_NO_SEQ)
		return sys_errmsg(err, errlen, -EINVAL,
				  "a plain ring (no sequence word): use pc_spsc_validate");
	return seq_words_ok(&q->_ring, tail, err, errlen); /* the consumer caches no tail */
}
