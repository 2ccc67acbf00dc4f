/* SPDX-License-Identifier: MIT */
/* percore rt: shared buffers going home. A buffer whose last reference
 * drops on a shard other than its owner is queued, and the queue is sent
 * to the owner as one RT_MSG_FREE message at the end of the turn. */
#include "rt/mesh_send.h"

/* Queue b (refs reached 0 here, on a shard that does not own it) to be
 * sent back to its owner at the end of this turn. */
void rt_mesh_return_buf(struct rt_shard *s, struct pc_shared_buf *b)
{
	struct rt_out *o = &s->out[((struct rt_shard *)b->_home)->id];

	b->_next = o->frees;
	if (!o->frees)
		s->nfrees++;
	o->frees = b;
}

/* Send the queued returns, one message per owner; those whose ring is
 * full wait for a later turn. Returns how many owners still wait. */
unsigned rt_mesh_send_returns(struct rt_shard *s)
{
	if (!s->nfrees)
		return 0;
	for (unsigned k = 0; k < s->e->n; k++) {
		struct rt_out *o = &s->out[k];
		struct rt_head *h;
		bool mail;

		if (!o->frees || !(h = rt_mesh_open(s, k, true, false, &mail)))
			continue;
		h->fn = NULL;
		h->kind = RT_MSG_FREE;
		h->u.free_list = o->frees;
		o->frees = NULL;
		s->nfrees--;
		rt_mesh_done(s, k, mail);
	}
	return s->nfrees;
}

/* At exit: the engine is stopping and every shard is past its last turn;
 * free what could not be sent home (the allocator is thread-safe). */
void rt_mesh_drop_returns(struct rt_shard *s)
{
	for (unsigned k = 0; k < s->e->n && s->nfrees; k++) {
		if (s->out[k].frees) {
			rt_shared_buf_free_list(s->out[k].frees);
			s->out[k].frees = NULL;
			s->nfrees--;
		}
	}
}
