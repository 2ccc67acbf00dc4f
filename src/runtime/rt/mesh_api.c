/* SPDX-License-Identifier: MIT */
/* percore rt: the public sending calls (shard.h): pc_shard_submit,
 * _copy, _call, _broadcast, _flush. Caller: a shard's own thread. */
#include <errno.h>
#include <string.h>

#include "rt/mesh_send.h"
#include "rt/reactor_impl.h"

static struct rt_shard *sender(unsigned to)
{
	struct rt_shard *s = rt_self;

	if (!s || to >= s->e->n)
		return NULL;
	return s;
}

static int refuse(struct rt_shard *s)
{
	RT_STAT_ADD(s, ring_full, 1);
	return -EAGAIN; /* full: nothing staged, the caller retries later */
}

/* pc_shard_submit() past the fast path and the mailbox: the first slot
 * of a batch, a look at the room, refusals. */
static PC_NOINLINE int submit_ring(struct rt_shard *s, unsigned to, pc_msg_fn fn, void *arg)
{
	struct rt_msg *m = rt_mesh_stage(s, to, false);

	if (!m)
		return refuse(s);
	rt_mesh_fill_ptr(&m->h, fn, arg);
	rt_mesh_pack_open(&s->out[to], m);
	rt_mesh_staged(s, to);
	return 0;
}

/* Each path ends in a tail call, so none saves registers: a stream takes
 * the fast path, a message at a time the mailbox (mesh_send.h). */
int pc_shard_submit(unsigned to, pc_msg_fn fn, void *arg)
{
	struct rt_shard *s = sender(to);
	struct rt_head *h;

	if (PC_UNLIKELY(!s || !fn))
		return rt_self ? -EINVAL : -EPERM;
	if (rt_mesh_packs(&s->out[to], fn))
		return rt_mesh_pack(s, to, fn, arg);
	if (rt_mesh_fast(&s->out[to]))
		return rt_mesh_fast_ptr(s, to, fn, arg);
	h = rt_mesh_mail_slot(s, to);
	if (!h)
		return submit_ring(s, to, fn, arg);
	rt_mesh_fill_ptr(h, fn, arg);
	return rt_mesh_mail_sent(s, to);
}

int pc_shard_submit_copy(unsigned to, pc_msg_fn fn, const void *data, size_t len)
{
	struct rt_shard *s = sender(to);
	struct rt_head *h;
	bool mail;

	if (!s || !fn || (len && !data))
		return rt_self ? -EINVAL : -EPERM;
	if (len > PC_MSG_INLINE)
		return -EMSGSIZE;
	h = rt_mesh_open(s, to, len <= RT_HEAD_INLINE, false, &mail);
	if (!h)
		return refuse(s);
	h->fn = (void (*)(void))fn;
	h->kind = RT_MSG_COPY;
	h->len = (uint16_t)len;
	if (len)
		memcpy(rt_mesh_copy_bytes(h), data, len);
	rt_mesh_done(s, to, mail);
	return 0;
}

int pc_shard_call(unsigned to, pc_shard_call_fn fn, void *arg, pc_shard_reply_fn reply, void *ctx)
{
	struct rt_shard *s = sender(to);
	struct rt_msg *m;

	if (!s || !fn || !reply)
		return rt_self ? -EINVAL : -EPERM;
	if (s->out[to].calls >= s->app.call_limit)
		return refuse(s);
	m = rt_mesh_stage(s, to, false);
	if (!m)
		return refuse(s);
	rt_mesh_fill_call(s, to, m, fn, arg, reply, ctx);
	rt_mesh_staged(s, to);
	return 0;
}

unsigned pc_shard_call_limit(void)
{
	return rt_self ? rt_self->app.call_limit : 0;
}

int pc_shard_broadcast(pc_msg_fn fn, void *arg)
{
	struct rt_shard *s = rt_self;

	if (!s)
		return -EPERM;
	if (!fn)
		return -EINVAL;
	for (unsigned k = 0; k < s->e->n; k++)
		if (rt_outbox_drain_send(s, k) || !rt_mesh_has_room(s, k))
			return refuse(s);
	for (unsigned k = 0; k < s->e->n; k++)
		pc_shard_submit(k, fn, arg);
	return 0;
}

int pc_shard_flush(void)
{
	struct rt_shard *s = rt_self;
	int n;

	if (!s)
		return -EPERM;
	n = (int)s->ndirty;
	rt_mesh_flush(s);
	rt_reactor_push_wakes(s->reactor);
	return n;
}
