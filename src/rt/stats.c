/* SPDX-License-Identifier: MIT */
/* percore rt: per-shard statistics, read after the run or collected live
 * through the mesh. Each shard writes its own figures with plain stores;
 * a live collection asks every shard to copy them itself, so no figure is
 * ever read while its writer runs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/clock.h"
#include "percore/service.h"
#include "rt/rt.h"

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
