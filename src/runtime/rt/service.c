/* SPDX-License-Identifier: MIT */
/* percore rt: the service helpers (percore/service.h): the shard's user
 * pointer, periodic timers and map-reduce over shards. */
#include <errno.h>
#include <stdlib.h>

#include "percore/clock.h"
#include "percore/service.h"
#include "rt/outbox_impl.h"
#include "rt/rt.h"

/* ---- the shard's own pointer ------------------------------------------------ */

int pc_shard_set_user(void *p)
{
	if (!rt_self)
		return -EPERM;
	rt_self->app.user = p;
	return 0;
}

void *pc_shard_user(void)
{
	return rt_self ? rt_self->app.user : NULL;
}

/* ---- periodic timers ---------------------------------------------------------- */

/* The wheel's tick at or after a deadline: never early. */
static uint64_t tick_of(uint64_t ns)
{
	return (ns + PC_REACTOR_TICK_NS - 1) / PC_REACTOR_TICK_NS;
}

static void periodic_fired(struct pc_wheel *w, struct pc_timer *t)
{
	struct pc_periodic *p = pc_container_of(t, struct pc_periodic, _timer);
	uint64_t now = pc_now_ns();

	/* The next deadline from the schedule, not from now; periods this
	 * run overran entirely are skipped. Armed before fn runs, so that fn
	 * may stop (and free) p. */
	p->_next_ns += p->_period_ns;
	if (p->_next_ns <= now) {
		uint64_t behind = (now - p->_next_ns) / p->_period_ns + 1;

		p->missed += behind;
		p->_next_ns += behind * p->_period_ns;
	}
	pc_wheel_schedule(w, t, tick_of(p->_next_ns));
	p->runs++;
	p->_fn(p, p->_arg);
}

int pc_periodic_start(struct pc_periodic *p, struct pc_reactor *r, uint32_t period_ms,
		      pc_periodic_fn fn, void *arg)
{
	if (!p || !r || !fn || !period_ms)
		return -EINVAL;
	if (p->_r && pc_timer_active(&p->_timer))
		pc_wheel_cancel(pc_reactor_wheel(p->_r), &p->_timer);
	pc_timer_init(&p->_timer, periodic_fired);
	p->_r = r;
	p->_period_ns = (uint64_t)period_ms * 1000000;
	p->_next_ns = pc_now_ns() + p->_period_ns;
	p->_fn = fn;
	p->_arg = arg;
	p->runs = p->missed = 0;
	pc_wheel_schedule(pc_reactor_wheel(r), &p->_timer, tick_of(p->_next_ns));
	return 0;
}

void pc_periodic_stop(struct pc_periodic *p)
{
	if (!p->_r)
		return;
	pc_wheel_cancel(pc_reactor_wheel(p->_r), &p->_timer);
	p->_next_ns = 0;
}

uint64_t pc_periodic_next(const struct pc_periodic *p)
{
	return p->_r && pc_timer_active(&p->_timer) ? p->_next_ns : 0;
}

/* ---- map-reduce ------------------------------------------------------------------ */

struct map_slot {
	struct rt_map *run;
	unsigned k;
};

/* On the shard's list until done has run, so that a run the engine's
 * stop cut short is freed with the shard. */
struct rt_map {
	struct rt_map *next, **pprev;
	pc_shard_map_done done;
	void *ctx;
	unsigned n, left;
	struct map_slot *slots;
	intptr_t results[];
};

static void map_free(struct rt_map *m)
{
	*m->pprev = m->next;
	if (m->next)
		m->next->pprev = m->pprev;
	free(m->slots);
	free(m);
}

static void map_answer(void *ctx, intptr_t result)
{
	struct map_slot *sl = ctx;
	struct rt_map *m = sl->run;

	m->results[sl->k] = result;
	if (--m->left)
		return;
	m->done(m->results, m->n, m->ctx);
	map_free(m);
}

/* After the shard's last drain: no answer can come any more. */
void rt_maps_free(struct rt_shard *s)
{
	struct rt_map *m;

	while ((m = s->app.maps)) {
		m->done(NULL, 0, m->ctx);
		map_free(m);
	}
}

int pc_shard_map(pc_shard_call_fn fn, void *arg, pc_shard_map_done done, void *ctx)
{
	struct rt_shard *s = rt_self;
	struct rt_map *m;
	unsigned n;

	if (!s)
		return -EPERM;
	if (!fn || !done)
		return -EINVAL;
	if (atomic_load_explicit(&s->e->stop, memory_order_relaxed))
		return -ECANCELED;
	n = s->e->n;
	m = calloc(1, sizeof(*m) + n * sizeof(m->results[0]));
	if (!m || !(m->slots = calloc(n, sizeof(m->slots[0])))) {
		free(m);
		return -ENOMEM;
	}
	*m = (struct rt_map){ s->app.maps, &s->app.maps, done, ctx, n, n, m->slots };
	if (m->next)
		m->next->pprev = &m->next;
	s->app.maps = m;
	for (unsigned k = 0; k < n; k++) {
		int rc;

		m->slots[k] = (struct map_slot){ m, k };
		/* Exempt from the budget, so only memory can refuse: then at
		 * the first call (nothing sent) or, in practice, never. A later
		 * failure leaves that shard's result 0. */
		rc = rt_call_send(s, k, fn, arg, map_answer, &m->slots[k], true);
		if (rc && k == 0) {
			map_free(m);
			return rc;
		}
		if (rc) {
			m->left -= n - k;
			break;
		}
	}
	return 0;
}
