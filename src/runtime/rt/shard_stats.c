/* SPDX-License-Identifier: MIT */
/* percore rt: per-shard statistics, read after the run or collected live
 * through the mesh. Each shard writes its own figures with plain stores;
 * a live collection asks every shard to copy them itself, so no figure is
 * ever read while its writer runs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/arena.h"
#include "percore/clock.h"
#include "percore/slab.h"
#include "percore/service.h"
#include "rt/reactor_impl.h"
#include "rt/rt.h"

/* The reactor's counts. The reactor lives as long as the engine. */
static void reactor_figures(const struct rt_shard *s, struct pc_shard_stats *out)
{
	const struct pc_reactor *r = s->reactor;

	out->fd_events = __atomic_load_n(&r->fd_events, __ATOMIC_RELAXED);
	out->timers_fired = __atomic_load_n(&r->timers_fired, __ATOMIC_RELAXED);
	out->tasks_run = __atomic_load_n(&r->tasks_run, __ATOMIC_RELAXED);
}

/* On shard s: measure its pools and publish the figures. */
static void measure_mem(void *arg)
{
	struct rt_shard *s = rt_self;
	struct pc_shard_mem m = { 0 };

	(void)arg;
	for (unsigned c = 0; c < RT_SLAB_CLASSES; c++) {
		struct pc_slab_stats st;

		if (!s->slabs[c])
			continue;
		pc_slab_stats(s->slabs[c], &st);
		m.slab_bytes += st.reserved * st.stride;
		m.slab_used_bytes += st.live * st.stride;
	}
	if (s->arena) {
		struct pc_arena_stats st;

		pc_arena_stats(s->arena, &st);
		m.arena_bytes = st.bytes + st.spare_bytes;
	}
	__atomic_store_n(&s->mem_figs.slab_bytes, m.slab_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&s->mem_figs.slab_used_bytes, m.slab_used_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&s->mem_figs.arena_bytes, m.arena_bytes, __ATOMIC_RELAXED);
}

int pc_engine_mem_refresh(struct pc_engine *e)
{
	int first = 0;

	for (unsigned i = 0; i < e->n; i++) {
		int rc = pc_engine_submit(e, i, measure_mem, NULL);

		if (rc && !first)
			first = rc;
	}
	return first;
}

int pc_engine_mem_read(const struct pc_engine *e, unsigned i, struct pc_shard_mem *out)
{
	const struct pc_shard_mem *m;

	if (i >= e->n)
		return -EINVAL;
	m = &e->shards[i].mem_figs;
	out->slab_bytes = __atomic_load_n(&m->slab_bytes, __ATOMIC_RELAXED);
	out->slab_used_bytes = __atomic_load_n(&m->slab_used_bytes, __ATOMIC_RELAXED);
	out->arena_bytes = __atomic_load_n(&m->arena_bytes, __ATOMIC_RELAXED);
	return 0;
}

int pc_engine_sent_to(const struct pc_engine *e, unsigned from, uint64_t *out)
{
	const struct rt_out *o;

	if (from >= e->n)
		return -EINVAL;
	/* out[] was allocated before the start-up gate and never moves. */
	o = e->shards[from].out;
	for (unsigned k = 0; k < e->n; k++)
		out[k] = __atomic_load_n(&o[k].sent, __ATOMIC_RELAXED);
	return 0;
}

/* While the shard runs, busy and idle time up to now: the idle span it is
 * in counts as idle. The span's start and the idle sum are two stores, so
 * a reader between them may see the span twice or not at all; the clamps
 * keep busy from going below what it was (0 at most for that moment). */
static void live_times(const struct rt_shard *s, struct pc_shard_stats *out)
{
	uint64_t start = __atomic_load_n(&s->start_ns, __ATOMIC_RELAXED);
	uint64_t from = __atomic_load_n(&s->idle_from, __ATOMIC_RELAXED);
	uint64_t now = pc_now_ns();

	if (out->busy_ns || !start)
		return; /* ended (busy_ns final), or not started yet */
	if (from)
		out->idle_ns += pc_elapsed(now, from);
	out->busy_ns = pc_elapsed(pc_elapsed(now, start), out->idle_ns);
}

int pc_engine_stats_read(const struct pc_engine *e, unsigned i, struct pc_shard_stats *out)
{
	const struct pc_shard_stats *st;

	if (i >= e->n)
		return -EINVAL;
	st = &e->shards[i].stats;
	/* shard, cpu and node were written before the start-up gate. */
	out->shard = st->shard;
	out->cpu = st->cpu;
	out->node = st->node;
#define RT_READ(f) out->f = __atomic_load_n(&st->f, __ATOMIC_RELAXED)
	RT_READ(turns);
	RT_READ(busy_ns);
	RT_READ(idle_ns);
	live_times(&e->shards[i], out);
	RT_READ(msgs_in);
	RT_READ(msgs_out);
	RT_READ(mail_out);
	RT_READ(publishes);
	RT_READ(wakeups_sent);
	RT_READ(sleeps);
	RT_READ(ring_full);
	RT_READ(unrun_at_stop);
	RT_READ(outbox_queued);
	RT_READ(outbox_depth);
	RT_READ(outbox_high_water);
	RT_READ(outbox_refused);
	RT_READ(outbox_unsent);
	RT_READ(calls_timed_out);
	RT_READ(late_replies);
	RT_READ(calls_canceled);
	RT_READ(log_dropped);
#undef RT_READ
	reactor_figures(&e->shards[i], out);
	out->stalls = atomic_load_explicit(&e->shards[i].stalls, memory_order_relaxed);
	return 0;
}

struct collect {
	void (*done)(const struct pc_shard_stats *stats, unsigned n, void *arg);
	void *arg;
	struct pc_shard_stats stats[];
};

uint64_t rt_busy_ns(const struct rt_shard *s)
{
	/* Both clamped: the idle figure is summed from spans measured with
	 * their own clock readings. */
	return pc_elapsed(pc_elapsed(pc_now_ns(), s->start_ns), s->stats.idle_ns);
}

/* On every shard: copy its own figures into its entry. The answer's
 * publish (release) orders the copy before the collector reads. */
static intptr_t snapshot(void *all)
{
	struct rt_shard *s = rt_self;
	struct pc_shard_stats *out = (struct pc_shard_stats *)all + s->id;

	*out = s->stats;
	reactor_figures(s, out);
	out->busy_ns = rt_busy_ns(s);
	out->stalls = atomic_load_explicit(&s->stalls, memory_order_relaxed);
	return 0;
}

/* results NULL: the engine stopped first, nothing to report. */
static void collected(const intptr_t *results, unsigned n, void *ctx)
{
	struct collect *c = ctx;

	if (results)
		c->done(c->stats, n, c->arg);
	free(c);
}

int pc_engine_stats(void (*done)(const struct pc_shard_stats *stats, unsigned n, void *arg), void *arg)
{
	struct rt_shard *s = rt_self;
	struct collect *c;
	int rc;

	if (!s)
		return -EPERM;
	if (!done)
		return -EINVAL;
	c = calloc(1, sizeof(*c) + s->e->n * sizeof(c->stats[0]));
	if (!c)
		return -ENOMEM;
	c->done = done;
	c->arg = arg;
	/* A map over the shards: through the outbox, so a full ring delays
	 * the collection and never refuses it. */
	rc = pc_shard_map(snapshot, c->stats, collected, c);
	if (rc)
		free(c);
	return rc;
}
