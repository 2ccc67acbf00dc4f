/* percore: multi-producer single-consumer ring, the parts off the hot path
 * (push and pop are inline in include/percore/mpsc.h). */
#include <stdlib.h>

#include "percore/mpsc.h"
#include "conc/block.h"

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

int pc_mpsc_validate(const struct pc_mpsc *q)
{
	size_t cap, head, tail;

	if (!q || !q->_pslots || q->_pslots != q->_cslots || q->_pmask != q->_cmask ||
	    q->_pstride != q->_cstride || q->_pesz != q->_cesz || q->_pesz == 0 ||
	    q->_pstride != pc_mpsc_stride(q->_pesz))
		return -EINVAL;
	cap = q->_cmask + 1;
	if (!PC_IS_POW2(cap))
		return -EINVAL;
	head = q->_head;
	tail = atomic_load_explicit(&q->_tail, memory_order_acquire);
	if (tail - head > cap)
		return -EINVAL;
	/* positions head..tail-1 wait filled; tail..head+cap-1 are free for
	 * their producers */
	for (size_t pos = head; pos != head + cap; pos++) {
		size_t seq = atomic_load_explicit(&slot_at(q, pos)->seq, memory_order_acquire);

		if (seq != (pos - head < tail - head ? pos + 1 : pos))
			return -EINVAL;
	}
	return 0;
}
