/* SPDX-License-Identifier: MIT */
/* percore: multi-producer single-consumer ring, the parts off the hot path
 * (push and pop are inline in include/percore/mpsc.h). */
#include <stdlib.h>

#include "percore/mpsc.h"
#include "conc/block.h"
#include "sys/errmsg.h"

static struct pc_mpsc_slot *slot_at(const struct pc_mpsc *q, size_t pos)
{
	return (struct pc_mpsc_slot *)(q->_cslots + (pos & q->_cmask) * q->_cstride);
}

int pc_mpsc_init(struct pc_mpsc *q, void *buf, size_t cap, size_t esz)
{
	if (!q || !buf || (uintptr_t)buf % 8 || esz == 0 || !PC_IS_POW2(cap) ||
	    pc_mpsc_buf_size(cap, esz) == 0)
		return -EINVAL;
	atomic_init(&q->_tail, 0);
	q->_head = 0;
	q->_pslots = q->_cslots = buf;
	q->_pmask = q->_cmask = cap - 1;
	q->_pstride = q->_cstride = pc_mpsc_stride(esz);
	q->_pesz = q->_cesz = esz;
	q->_owned = false;
	/* slot i is free for the producer that claims position i */
	for (size_t i = 0; i < cap; i++)
		atomic_init(&slot_at(q, i)->seq, i);
	return 0;
}

struct pc_mpsc *pc_mpsc_create(size_t cap, size_t esz)
{
	struct pc_mpsc *q;

	if (cap == 0 || esz == 0 || cap > ((size_t)1 << 62))
		return NULL;
	cap = pc_next_pow2(cap);
	q = conc_block_alloc(sizeof(*q), pc_mpsc_buf_size(cap, esz));
	if (!q)
		return NULL;
	pc_mpsc_init(q, (char *)q + sizeof(*q), cap, esz);
	q->_owned = true;
	return q;
}

void pc_mpsc_destroy(struct pc_mpsc *q)
{
	if (q && q->_owned)
		free(q);
}

static int geometry_check(const struct pc_mpsc *q, char *err, size_t errlen)
{
	if (!q->_pslots || q->_pesz == 0)
		return sys_errmsg(err, errlen, -EINVAL, "not initialised: slots %p, element size %zu",
				 q->_pslots, q->_pesz);
	if (q->_pslots != q->_cslots || q->_pmask != q->_cmask || q->_pstride != q->_cstride ||
	    q->_pesz != q->_cesz)
		return sys_errmsg(err, errlen, -EINVAL,
				 "the sides disagree: producer slots %p mask %zu stride %zu esz %zu, "
				 "consumer slots %p mask %zu stride %zu esz %zu",
				 q->_pslots, q->_pmask, q->_pstride, q->_pesz, q->_cslots,
				 q->_cmask, q->_cstride, q->_cesz);
	if (q->_pstride != pc_mpsc_stride(q->_pesz))
		return sys_errmsg(err, errlen, -EINVAL, "stride %zu, expected %zu for element size %zu",
				 q->_pstride, pc_mpsc_stride(q->_pesz), q->_pesz);
	if (!PC_IS_POW2(q->_cmask + 1))
		return sys_errmsg(err, errlen, -EINVAL, "capacity %zu is not a power of two",
				 q->_cmask + 1);
	return 0;
}

int pc_mpsc_validate(const struct pc_mpsc *q, char *err, size_t errlen)
{
	size_t cap, head, tail;
	int rc;

	if (!q)
		return sys_errmsg(err, errlen, -EINVAL, "no ring");
	if ((rc = geometry_check(q, err, errlen)))
		return rc;
	cap = q->_cmask + 1;
	head = q->_head;
	tail = atomic_load_explicit(&q->_tail, memory_order_acquire);
	if (tail - head > cap)
		return sys_errmsg(err, errlen, -EINVAL, "tail %zu is %zu past head %zu, expected 0..%zu",
				 tail, tail - head, head, cap);
	/* positions head..tail-1 wait filled; tail..head+cap-1 are free for
	 * their producers */
	for (size_t pos = head; pos != head + cap; pos++) {
		size_t seq = atomic_load_explicit(&slot_at(q, pos)->seq, memory_order_acquire);
		bool filled = pos - head < tail - head;

		if (seq != (filled ? pos + 1 : pos))
			return sys_errmsg(err, errlen, -EINVAL,
					 "slot %zu (position %zu, %s): sequence %zu, expected %zu",
					 pos & q->_cmask, pos, filled ? "waiting" : "free", seq,
					 filled ? pos + 1 : pos);
	}
	return 0;
}
