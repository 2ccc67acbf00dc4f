/* SPDX-License-Identifier: MIT */
/* percore rt: what a shard does with a turn that found nothing to do.
 *
 * spin      keep polling (pause between turns);
 * adaptive  keep polling for the budget, then sleep;
 * sleep     sleep at once;
 * mesh      sleep at once, but poll like adaptive first when the shard
 *           sent or received mesh messages since it last looked;
 * await     sleep at once, but poll like adaptive first while the shard
 *           awaits answers (pc_shard_expect).
 *
 * Sleeping is announce-then-recheck (the argument: docs/ARCHITECTURE.md,
 * "No lost wake-up"):
 *   1. store sleeping = 1                          (seq_cst)
 *   2. load every doorbell word, the stop flag     (seq_cst)
 *      and look at local work; any news: sleeping = 0, go back to work
 *   3. wait in the reactor (fds, timers, the eventfd)
 *   4. sleeping = 0
 * A producer publishes, sets its doorbell bit (seq_cst RMW), then loads
 * sleeping (seq_cst) and writes the eventfd only when it reads 1. Among
 * seq_cst operations the store-buffering outcome is impossible: either the
 * sleeper's step 2 sees the doorbell bit, or the producer sees sleeping = 1
 * and its eventfd write makes step 3 return (an eventfd stays readable
 * until read, so a write before the wait is not lost).
 *
 * Idle time is measured from the RT_IDLE_TIMED-th empty turn on (or from
 * the first with the sleep policy), so short gaps between messages cost no
 * clock read and count as busy.
 */
#include <stdatomic.h>

#include "percore/clock.h"
#include "percore/reactor.h"
#include "rt/reactor_impl.h"
#include "rt/rt.h"

#define RT_IDLE_TIMED 64
/* A shard holding shared buffers it could not send home yet, or
 * messages in an outbox, sleeps at most this long before it tries
 * again. */
#define RT_RETRY_NS 1000000

/* Between two empty turns. Two pauses, not one: a waiting shard polls
 * the line its peer is about to write, and every poll that lands between
 * the peer's read of that line and its write takes the line back, so the
 * write has to fetch it again. Polling half as often cut the spin round
 * trip by about a tenth here (CrossCore/RTT/idle:spin, 210 ns with one
 * pause, 190 ns with two; three were no better); a pause is about 14 ns.
 * Two more on the first empty turn after posting a mail: the receiver is
 * reading and answering in that line just then. Measured as the medians
 * of six alternating runs of 5 interleaved repetitions each, no extra /
 * one / two: CrossCore/RTT/idle:spin 212 / 192 / 189 ns and
 * CrossCore/OneWay/idle:spin 248 / 218 / 186 ns, beside a 122 ns line
 * bounce; three cost the round trip (about 211 ns). */
static void spin_pause(bool mailed)
{
	pc_cpu_relax();
	pc_cpu_relax();
	if (mailed) {
		pc_cpu_relax();
		pc_cpu_relax();
	}
}

/* An idle span starts: readers of the statistics count it from now. */
static void idle_begin(struct rt_shard *s, struct rt_idle *st)
{
	st->t0 = pc_now_ns();
	__atomic_store_n(&s->idle_from, st->t0, __ATOMIC_RELAXED);
}

void rt_idle_busy(struct rt_shard *s, struct rt_idle *st)
{
	if (st->t0) {
		RT_STAT_ADD(s, idle_ns, pc_elapsed(pc_now_ns(), st->t0));
		__atomic_store_n(&s->idle_from, 0, __ATOMIC_RELAXED);
		st->t0 = 0;
	}
	st->empty = 0;
}

static void idle_sleep(struct rt_shard *s, struct rt_idle *st)
{
	struct rt_inbox *ib = s->inbox;
	struct pc_engine *e = s->e;
	/* Outboxes wait for room the receiver makes without telling us. */
	int64_t timeout = s->nfrees || rt_outbox_waiting(s) ? RT_RETRY_NS : -1;
	int n;

	/* A sleeper polls nothing: hot rings go back to doorbells first. They
	 * stay pending, so this turn does not sleep; the next one looks at
	 * them once more (after the fence in cooling) and then may. */
	if (rt_mesh_cool_all(s))
		return;
	if (rt_outbox_waiting(s) && rt_outbox_before_sleep(s))
		return;
	atomic_store_explicit(&ib->sleeping, 1, memory_order_seq_cst);
	rt_store_load_fence();
	if (rt_mesh_may_have_work(s) || atomic_load_explicit(&e->stop, memory_order_seq_cst) ||
	    pc_reactor_has_tasks(s->reactor)) {
		atomic_store_explicit(&ib->sleeping, 0, memory_order_relaxed);
		return;
	}
	RT_STAT_ADD(s, sleeps, 1);
	n = s->io_sleep ? s->io_sleep(s->io, timeout) : pc_reactor_poll(s->reactor, timeout);
	s->woke = !s->io_sleep && n >= 0;
	/* relaxed: only this shard reads its own flag as a decision; a
	 * producer that still sees 1 merely sends one spare wake-up. */
	atomic_store_explicit(&ib->sleeping, 0, memory_order_relaxed);
	if (n > 0)
		rt_idle_busy(s, st);
}

/* The mesh policy, at the first empty turn of a streak: whether messages
 * went in or out since the last streak began. A shard talking to others
 * is usually about to get an answer: polling for it costs less than the
 * wake-up a sleep would need, while a shard that only serves its own
 * sockets sleeps at once, as with the sleep policy. */
static bool mesh_recent(struct rt_shard *s, struct rt_idle *st)
{
	uint64_t m = s->stats.msgs_in + s->stats.msgs_out;
	bool moved = m != st->msgs_seen;

	st->msgs_seen = m;
	return moved;
}

/* Polls until the budget is spent, timing the streak from its
 * RT_IDLE_TIMED-th empty turn, then sleeps (adaptive). */
static void poll_then_sleep(struct rt_shard *s, struct rt_idle *st, uint32_t k, bool mailed)
{
	if (k < RT_IDLE_TIMED || k % RT_IDLE_TIMED) {
		spin_pause(mailed);
		return;
	}
	if (k == RT_IDLE_TIMED)
		idle_begin(s, st);
	if (pc_elapsed(pc_now_ns(), st->t0) >= s->e->budget_ns)
		idle_sleep(s, st);
}

/* The sleep policy's turn: sleep, timing the idle span from the first. */
static void sleep_now(struct rt_shard *s, struct rt_idle *st)
{
	if (!st->t0)
		idle_begin(s, st);
	idle_sleep(s, st);
}

void rt_idle_step(struct rt_shard *s, struct rt_idle *st)
{
	struct pc_engine *e = s->e;
	uint32_t k = ++st->empty;
	bool mailed = s->mailed;

	s->mailed = false;
	switch (e->cfg.idle) {
	case PC_IDLE_SPIN:
		if (k == RT_IDLE_TIMED)
			idle_begin(s, st);
		spin_pause(mailed);
		return;
	case PC_IDLE_ADAPTIVE:
		poll_then_sleep(s, st, k, mailed);
		return;
	case PC_IDLE_MESH:
		if (k == 1)
			st->polling = mesh_recent(s, st);
		if (st->polling) {
			poll_then_sleep(s, st, k, mailed);
			return;
		}
		sleep_now(s, st);
		return;
	case PC_IDLE_AWAIT:
		if (s->awaiting > 0) {
			poll_then_sleep(s, st, k, mailed);
			return;
		}
		sleep_now(s, st);
		return;
	case PC_IDLE_SLEEP:
		sleep_now(s, st);
		return;
	}
}
