/* SPDX-License-Identifier: MIT */
/* The outbox under a sender faster than its receiver.
 *
 *   CrossCore/Throughput/outbox   the one-way stream of CrossCore/Throughput
 *                                 (pointer messages, shard 0 to shard 1),
 *                                 sent with pc_shard_send into a ring of 64:
 *                                 the sender queues as fast as it can (up
 *                                 to 1024 waiting), so
 *                                 nearly every message waits in the
 *                                 outbox and is copied into the ring as
 *                                 the receiver frees slots. Compare it per
 *                                 message with CrossCore/Throughput (ring
 *                                 of 1024, plain submits). */
#include <errno.h>
#include <stdint.h>

#include "percore/defs.h"
#include "percore/outbox.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "rt_bench.h"

struct ostream {
	uint64_t sent;                       /* shard 0 */
	PC_CACHE_ALIGNED uint64_t received;  /* shard 1 */
};

static struct ostream ostream;

static void ob_recv(void *arg)
{
	struct rtb *b = arg;
	struct ostream *s = b->user;

	if (++s->received == b->iterations)
		rtb_finish(b);
}

/* Shard 0: until OB_AHEAD messages wait, then again next turn. A sender
 * that ran on to the budget would measure its 4 MiB backlog falling out
 * of the caches rather than the outbox; a server stops reading at its
 * watermark long before. The depth is read once a turn (sends only add
 * to it within the turn, less what they move into the ring) and the
 * count kept in a register, as CrossCore/Throughput's pump does: the
 * loop around the send costs what the ring row's loop costs. */
#define OB_AHEAD 1024

static void ob_pump(void *arg)
{
	struct rtb *b = arg;
	struct ostream *s = b->user;
	uint64_t sent = s->sent, n = b->iterations;
	size_t depth = pc_shard_outbox_depth(1);
	uint64_t end = depth < OB_AHEAD ? sent + (OB_AHEAD - depth) : sent;

	if (end > n)
		end = n;
	while (sent < end && pc_shard_send(1, ob_recv, b) == 0)
		sent++;
	s->sent = sent;
	if (sent < n)
		pc_reactor_defer(pc_shard_reactor(), ob_pump, b);
}

static void ob_job(void *arg)
{
	struct rtb *b = arg;
	struct ostream *s = b->user;

	s->sent = 0;
	s->received = 0;
	b->items = b->iterations;
	rtb_begin(b);
	ob_pump(b);
}

static int ob_setup(struct pc_bench_state *st)
{
	return rtb_setup(st, 2, PC_IDLE_SPIN, 64, &ostream);
}

static void ob_run(struct pc_bench_state *st)
{
	rtb_run(st, 0, ob_job);
}

static const struct pc_bench outbox_tp = {
	.name = "CrossCore/Throughput/outbox", .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,
	.setup = ob_setup, .run = ob_run, .teardown = rtb_teardown,
};
PC_BENCH_REGISTER(outbox_tp)
