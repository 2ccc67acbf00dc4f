/* SPDX-License-Identifier: MIT */
/* percore rt: submission from threads outside the engine (the last ring
 * of each inbox, pc_engine_submit). Several threads may call at once. */
#include <errno.h>
#include <pthread.h>

#include "rt/mesh_send.h"

int rt_mesh_push_external(struct pc_engine *e, unsigned to, void (*fn)(void *), void *arg)
{
	struct rt_shard *d = &e->shards[to];
	struct rt_ring *r = d->in[e->n];
	struct rt_msg *m;

	/* The lock makes the callers one producer after another; each
	 * unlock/lock pair orders one producer's writes before the next's. */
	pthread_mutex_lock(&d->ext_lock);
	m = rt_ring_stage(r);
	if (!m) {
		pthread_mutex_unlock(&d->ext_lock);
		return -EAGAIN;
	}
	m->h.fn = (void (*)(void))fn;
	m->h.kind = RT_MSG_PTR;
	m->h.u.arg = arg;
	rt_ring_publish(r);
	pthread_mutex_unlock(&d->ext_lock);
	rt_mesh_ring_bell(d->inbox, NULL, d->reactor, e->n);
	return 0;
}
