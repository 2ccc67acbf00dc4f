/* SPDX-License-Identifier: MIT */
/* percore net: the shard's budget of buffered input bytes.
 *
 * Input waits in a session's ring while it is an incomplete frame, so a
 * crowd of clients that each send part of a frame and stop could make a
 * shard hold any amount of memory. The budget (pc_server_cfg
 * max_input_bytes) bounds it:
 *   - Above the budget the shard stops reading the sessions holding the
 *     most: every one holding at least half of what the largest
 *     unpaused one holds (NS_BUDGET; counted in input_pauses). Sessions
 *     holding nothing are still read, so a client sending whole frames is
 *     served throughout.
 *   - When every session holding bytes is paused, nothing can complete a
 *     frame and bring the total down: then the oldest incomplete frames
 *     are dropped, each session getting an error reply and a graceful
 *     close (PC_CLOSE_NOMEM; counted in input_shed), until the total is
 *     under the low watermark.
 *   - Under the low watermark (three quarters of the budget) every paused
 *     session is read again.
 * The shard looks again whenever, over the budget, a session holding
 * bytes reads (it added, or finished a frame) or leaves. A paused
 * session's frame deadline (frame_timeout_ms) still runs: while small
 * holders that never finish keep the shard between the watermarks, the
 * deadline is what ends the paused ones' wait.
 * Each pass walks the shard's sessions once; a pass pauses at least the
 * largest unpaused holder, and halving sizes leave a few dozen passes at
 * most before everything is paused.
 *
 * A raw server's application may hold input it consumed outside the ring
 * (pc_session_hold_input): those bytes count as the ring's do.
 *
 * Shard thread only, like everything of a session. */
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

static const char shed_msg[] = "server input budget exhausted: incomplete frame dropped";

size_t net_budget_held(const struct pc_session *s)
{
	return (s->rx ? pc_ringbuf_used(s->rx) : 0) + *net_held_app(s);
}

/* What a session holds that the budget may still act on. */
static size_t held(const struct pc_session *s)
{
	if (s->flags & (NS_DEAD | NS_FIN | NS_CLOSING))
		return 0;
	return net_budget_held(s);
}

/* Pause the largest holders; returns whether some holder is still read. */
static bool pause_largest(struct net_shard *sh)
{
	size_t largest = 0;
	bool others = false;

	for (uint32_t i = 0; i < sh->nslots; i++) {
		const struct pc_session *s = sh->slots[i].s;

		if (s && !(s->flags & NS_BUDGET) && held(s) > largest)
			largest = held(s);
	}
	for (uint32_t i = 0; i < sh->nslots; i++) {
		struct pc_session *s = sh->slots[i].s;

		if (!s || (s->flags & NS_BUDGET) || !held(s))
			continue;
		if (held(s) * 2 < largest) {
			others = true;
			continue;
		}
		s->flags |= NS_BUDGET;
		sh->budget_paused++;
		NET_STAT_ADD(sh, input_pauses, 1);
		NET_STAT_ADD(sh, input_paused, 1);
		net_session_set_interest(s);
	}
	return others;
}

/* The clock for one sort (qsort passes no context). */
static __thread uint32_t sort_now;

static int older_first(const void *a, const void *b)
{
	const struct pc_session *x = *(struct pc_session *const *)a;
	const struct pc_session *y = *(struct pc_session *const *)b;
	uint32_t now = sort_now;
	uint32_t ax = pc_elapsed32(now, x->frame_t0), ay = pc_elapsed32(now, y->frame_t0);

	return ax == ay ? (x->slot > y->slot) - (x->slot < y->slot) : (ax < ay) - (ax > ay);
}

/* Drop the bytes of s and refuse it. Its ring stays attached (replies of
 * this turn may still point into it) until the FIN gives it back. */
static void shed(struct pc_session *s)
{
	struct net_shard *sh = s->sh;

	NET_STAT_SUB(sh, buffered_bytes, net_budget_held(s));
	*net_held_app(s) = 0;
	if (s->rx)
		pc_ringbuf_reset(s->rx);
	s->flags &= (uint16_t)~NS_PARTIAL;
	NET_STAT_ADD(sh, input_shed, 1);
	/* A raw session has no frame to carry the reason. */
	if (sh->cfg->raw)
		net_session_abort(s, PC_CLOSE_NOMEM);
	else
		net_session_refuse(s, PC_CLOSE_NOMEM, 0, shed_msg, sizeof(shed_msg) - 1);
}

/* Every holder is paused: drop the oldest incomplete frames until the
 * total is under the low watermark. */
static void shed_oldest(struct net_shard *sh)
{
	struct pc_session **v = NULL;
	uint32_t n = 0;

	if (sh->nsessions)
		v = malloc(sh->nsessions * sizeof(*v));
	for (uint32_t i = 0; v && i < sh->nslots; i++) {
		struct pc_session *s = sh->slots[i].s;

		if (s && held(s) && n < sh->nsessions)
			v[n++] = s;
	}
	if (!v) {
		/* Out of memory for the order: shed in slot order instead. */
		for (uint32_t i = 0; i < sh->nslots && sh->stats.buffered_bytes > sh->input_low; i++)
			if (sh->slots[i].s && held(sh->slots[i].s))
				shed(sh->slots[i].s);
		return;
	}
	sort_now = (uint32_t)net_tick();
	qsort(v, n, sizeof(*v), older_first);
	for (uint32_t i = 0; i < n && sh->stats.buffered_bytes > sh->input_low; i++)
		shed(v[i]);
	free(v);
}

static void resume_all(struct net_shard *sh)
{
	for (uint32_t i = 0; i < sh->nslots && sh->budget_paused; i++) {
		struct pc_session *s = sh->slots[i].s;

		if (!s || !(s->flags & NS_BUDGET))
			continue;
		s->flags &= (uint16_t)~NS_BUDGET;
		sh->budget_paused--;
		NET_STAT_SUB(sh, input_paused, 1);
		if (!(s->flags & NS_DEAD))
			net_session_set_interest(s);
	}
}

void net_budget_act(struct net_shard *sh)
{
	if (sh->budget_acting)
		return; /* a session freed by this pass comes back here */
	sh->budget_acting = true;
	if (sh->stats.buffered_bytes > sh->max_input && !pause_largest(sh))
		shed_oldest(sh);
	if (sh->budget_paused && sh->stats.buffered_bytes <= sh->input_low)
		resume_all(sh);
	sh->budget_acting = false;
}

static void budget_task(void *arg)
{
	struct net_shard *sh = arg;

	sh->budget_queued = false;
	net_budget_settle(sh, true);
}

void pc_session_hold_input(struct pc_session *s, size_t bytes)
{
	struct net_shard *sh = s->sh;
	uint32_t n = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;

	if (n == *net_held_app(s))
		return;
	/* The shed order drops the oldest holders first. */
	if (!*net_held_app(s) && !(s->rx && pc_ringbuf_used(s->rx)))
		s->frame_t0 = (uint32_t)net_tick();
	NET_STAT_SUB(sh, buffered_bytes, *net_held_app(s));
	NET_STAT_ADD(sh, buffered_bytes, n);
	*net_held_app(s) = n;
	/* From a task: the caller may be inside a handler of s, whose state
	 * a shed must not change under it. */
	if ((sh->max_input != UINT64_MAX || sh->budget_paused) && !sh->budget_queued &&
	    !pc_reactor_defer(sh->r, budget_task, sh))
		sh->budget_queued = true;
}

void net_budget_forget(struct pc_session *s)
{
	if (!(s->flags & NS_BUDGET))
		return;
	s->flags &= (uint16_t)~NS_BUDGET;
	s->sh->budget_paused--;
	NET_STAT_SUB(s->sh, input_paused, 1);
}
