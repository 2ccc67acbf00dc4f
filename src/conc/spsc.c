/* percore: single-producer single-consumer ring, the parts off the hot path
 * (the hot path is inline in include/percore/spsc.h). */
#include <stdlib.h>

#include "percore/spsc.h"
#include "conc/block.h"

static void side_init(struct pc_spsc_side *s, void *buf, size_t cap, size_t esz)
{
	atomic_init(&s->_pos, 0);
	s->_next = 0;
	s->_other = 0;
	s->_buf = buf;
	s->_mask = cap - 1;
	s->_esz = esz;
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

struct pc_spsc *pc_spsc_create(size_t cap, size_t esz)
{
	struct pc_spsc *r;

	if (cap == 0 || esz == 0 || cap > ((size_t)1 << 62))
		return NULL;
	cap = pc_next_pow2(cap);
	/* one block: the ring, then its buffer on the next padded line */
	r = pc_conc_block_alloc(sizeof(*r), pc_spsc_buf_size(cap, esz));
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

static bool side_same(const struct pc_spsc_side *a, const struct pc_spsc_side *b)
{
	return a->_buf == b->_buf && a->_mask == b->_mask && a->_esz == b->_esz;
}

int pc_spsc_validate(const struct pc_spsc *r)
{
	size_t cap, head, tail;

	if (!r || !r->_p._buf || r->_p._esz == 0 || !side_same(&r->_p, &r->_c))
		return -EINVAL;
	cap = r->_p._mask + 1;
	if (!PC_IS_POW2(cap))
		return -EINVAL;
	head = atomic_load_explicit(&r->_c._pos, memory_order_acquire);
	tail = atomic_load_explicit(&r->_p._pos, memory_order_acquire);
	/* Every distance is taken modulo 2^64, as the indices run freely:
	 * head <= take <= tail <= stage <= head + cap; the producer's copy of
	 * head lies at or below head and within cap of stage; the consumer's
	 * copy of tail lies between take and tail. */
	if (r->_c._next - head > tail - head || tail - head > cap)
		return -EINVAL;
	if (r->_p._next - tail > cap - (tail - head))
		return -EINVAL;
	if (head - r->_p._other > r->_p._next - r->_p._other ||
	    r->_p._next - r->_p._other > cap)
		return -EINVAL;
	if (r->_c._other - r->_c._next > tail - r->_c._next)
		return -EINVAL;
	return 0;
}
