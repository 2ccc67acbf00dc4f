/* SPDX-License-Identifier: MIT */
/* percore rt: calls through the outbox, with a deadline.
 *
 * Each pc_shard_call_q() keeps a record on the calling shard (from its
 * slab): the caller's reply and ctx, the deadline's timer, and whether
 * the reply has run. The call message carries the record as its reply
 * context, so the answer always comes back to it:
 *  - answer first: the timer is cancelled, the reply runs with the
 *    result, the record is freed;
 *  - deadline first: the reply runs with -ETIMEDOUT and the record stays,
 *    settled, until the answer arrives; then drop(result) frees what the
 *    result holds (here, on the caller: a pc_shared_buf goes home from
 *    there) and the record goes. Nothing of the caller's is touched;
 *  - the engine stops first: the reply runs with -ECANCELED after the
 *    shard's last turn; records are freed after the last drain, when no
 *    answer can come any more.
 * Records are on a list per shard, so none outlives the engine.
 *
 * A call past call_limit to its destination waits in the outbox, in
 * order with everything sent there after it, until an answer frees a
 * call (outbox.c); it counts against the outbox budget meanwhile.
 */
#include <errno.h>
#include <stddef.h>

#include "percore/clock.h"
#include "percore/outbox.h"
#include "percore/reactor.h"
#include "percore/slab.h"
#include "rt/mesh_send.h"
#include "rt/outbox_impl.h"
#include "rt/rt.h"

struct rt_call {
	struct pc_timer timer;       /* the deadline, when there is one */
	struct rt_call *next, **pprev; /* the shard's list */
	pc_shard_reply_fn reply;
	void *ctx;
	void (*drop)(intptr_t result);
	bool settled;                /* reply ran (-ETIMEDOUT, -ECANCELED) */
};

static struct pc_slab *call_pool(void)
{
	return pc_shard_slab(sizeof(struct rt_call));
}

static void call_unlink(struct rt_call *c)
{
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
}

static void call_link(struct rt_shard *s, struct rt_call *c)
{
	c->next = s->app.calls;
	c->pprev = &s->app.calls;
	if (c->next)
		c->next->pprev = &c->next;
	s->app.calls = c;
}

/* The answer, on the caller's shard. */
static void call_answered(void *ctx, intptr_t result)
{
	struct rt_shard *s = rt_self;
	struct rt_call *c = ctx;
	pc_shard_reply_fn reply = c->reply;
	void *rctx = c->ctx;
	bool late = c->settled;
	void (*drop)(intptr_t) = c->drop;

	if (pc_timer_active(&c->timer))
		pc_wheel_cancel(pc_reactor_wheel(s->reactor), &c->timer);
	call_unlink(c);
	pc_slab_free(call_pool(), c);
	/* Freed first: the reply may call again and reuse it. */
	if (!late) {
		reply(rctx, result);
		return;
	}
	RT_STAT_ADD(s, late_replies, 1);
	if (drop)
		drop(result);
}

static void call_expired(struct pc_wheel *w, struct pc_timer *t)
{
	struct rt_call *c = (struct rt_call *)((char *)t - offsetof(struct rt_call, timer));

	(void)w;
	c->settled = true;
	RT_STAT_ADD(rt_self, calls_timed_out, 1);
	c->reply(c->ctx, -ETIMEDOUT);
}

/* A call message to `to` through the outbox. ctx is the reply's context;
 * exempt: past the budget (the library's own calls). */
int rt_call_send(struct rt_shard *s, unsigned to, pc_shard_call_fn fn, void *arg,
		 pc_shard_reply_fn reply, void *ctx, bool exempt)
{
	enum rt_obx_where where = RT_OBX_QUEUED;
	struct rt_msg *m;
	int rc = 0;

	/* Past the limit: in the outbox, whatever room the ring has. */
	if (!exempt && s->out[to].calls >= s->app.call_limit)
		m = rt_obx_push(s, to, false, &rc);
	else
		m = (struct rt_msg *)rt_obx_open(s, to, false, exempt, &where, &rc);
	if (!m)
		return rc;
	rt_mesh_fill_call(s, to, m, fn, arg, reply, ctx);
	if (where == RT_OBX_QUEUED) {
		s->out[to].calls--; /* counted when it moves into the ring */
		m->h.len = exempt ? RT_CALL_UNLIMITED : RT_CALL_LIMITED;
	}
	rt_obx_sent(s, to, where);
	return 0;
}

int pc_shard_call_q(unsigned to, pc_shard_call_fn fn, void *arg, pc_shard_reply_fn reply,
		    void *ctx, const struct pc_call_opts *opts)
{
	struct rt_shard *s = rt_self;
	struct pc_slab *pool;
	struct rt_call *c;
	int rc;

	if (!s)
		return -EPERM;
	if (to >= s->e->n || !fn || !reply)
		return -EINVAL;
	if (atomic_load_explicit(&s->e->stop, memory_order_relaxed))
		return -ECANCELED;
	pool = call_pool();
	c = pool ? pc_slab_alloc(pool) : NULL;
	if (!c)
		return -ENOMEM;
	pc_timer_init(&c->timer, call_expired);
	c->reply = reply;
	c->ctx = ctx;
	c->drop = opts ? opts->drop : NULL;
	c->settled = false;
	rc = rt_call_send(s, to, fn, arg, call_answered, c, false);
	if (rc) {
		pc_slab_free(pool, c);
		return rc;
	}
	call_link(s, c);
	if (opts && opts->timeout_ms)
		pc_reactor_timer_after(s->reactor, &c->timer, (uint64_t)opts->timeout_ms * 1000000);
	return 0;
}

void rt_calls_cancel(struct rt_shard *s)
{
	struct pc_wheel *w = pc_reactor_wheel(s->reactor);

	for (struct rt_call *c = s->app.calls; c; c = c->next) {
		if (c->settled)
			continue;
		pc_wheel_cancel(w, &c->timer);
		c->settled = true;
		RT_STAT_ADD(s, calls_canceled, 1);
		c->reply(c->ctx, -ECANCELED);
	}
}

void rt_calls_free(struct rt_shard *s)
{
	struct rt_call *c;

	while ((c = s->app.calls)) {
		call_unlink(c);
		pc_slab_free(call_pool(), c);
	}
}
