/* SPDX-License-Identifier: MIT */
/* Streams on the mesh's fast path, towards a receiver that sleeps.
 *
 * The sender rings the doorbell at the first publish of a turn and at the
 * turn's end, not at every publish_batch publish in between. Here shard 0
 * sends a burst of many batches in one turn to shard 1, whose idle policy
 * is sleep, then waits for shard 1's acknowledgement before the next
 * burst, so that shard 1 falls asleep between bursts (and may between
 * batches). Checks: every message of every burst arrives exactly once and
 * in order (a publish left without a doorbell would leave shard 1 asleep
 * and the run would time out), the bursts were published in several
 * batches, and the statistics add up.
 *
 * Then a stream that fills a ring while its receiver is held in a
 * handler: past the first publish the mailbox is out of the question
 * (the ring was found busy), so the send's fast path runs across
 * publishes, and it must still stop exactly at the reply reserve: with
 * PC_MSG_PACK messages to a slot when they go to one function,
 * PC_MSG_PACK_MIXED to a slot when two functions alternate. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>
#include <cmocka.h>

#include "percore/engine.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "engine_util.h"
#include "testmain.h"

enum { ROUNDS = 200, BURST = 150, BATCH = 8, RING = 256 };

static unsigned rounds_done; /* shard 0 */
static uint64_t next_seq;    /* shard 1: the number the next message carries */

static void send_burst(void);

static void on_ack(void *arg)
{
	(void)arg;
	if (++rounds_done == ROUNDS) {
		pc_engine_stop(pc_shard_engine());
		return;
	}
	send_burst();
}

static void on_msg(void *arg)
{
	uint64_t seq = (uint64_t)(uintptr_t)arg;

	RT_CHECK(pc_shard_id() == 1, "ran on shard %d", pc_shard_id());
	RT_CHECK(seq == next_seq, "message %llu arrived, expected %llu",
		 (unsigned long long)seq, (unsigned long long)next_seq);
	next_seq = seq + 1;
	if (next_seq % BURST == 0)
		RT_CHECK(pc_shard_submit(0, on_ack, NULL) == 0, "ack refused");
}

/* Shard 0, in one turn: BURST messages, published every BATCH. The ring
 * holds them all beside its reserve, so none is refused. */
static void send_burst(void)
{
	uint64_t first = (uint64_t)rounds_done * BURST;

	for (uint64_t k = 0; k < BURST; k++)
		RT_CHECK(pc_shard_submit(1, on_msg, (void *)(uintptr_t)(first + k)) == 0,
			 "message %llu refused", (unsigned long long)(first + k));
}

static void stream_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 0)
		send_burst();
}

static void bursts_reach_a_sleeping_receiver(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);
	struct pc_shard_stats st;
	(void)state;

	c.ring_capacity = RING;
	c.publish_batch = BATCH;
	c.on_start = stream_start;
	start(&c);
	finish();
	assert_int_equal(rounds_done, ROUNDS);
	assert_int_equal(next_seq, (uint64_t)ROUNDS * BURST);
	assert_int_equal(pc_engine_stats_read(engine, 0, &st), 0);
	assert_int_equal(st.msgs_out, (uint64_t)ROUNDS * BURST);
	/* Several publishes per burst (PC_MSG_PACK messages to a slot): the
	 * ones between doorbells happened. */
	assert_true(st.publishes >= (uint64_t)ROUNDS * (BURST / PC_MSG_PACK / BATCH));
	assert_int_equal(pc_engine_stats_read(engine, 1, &st), 0);
	assert_int_equal(st.msgs_in, (uint64_t)ROUNDS * BURST);
	pc_engine_destroy(engine);
}

/* ---- a stream fills its ring up to the reserve -------------------------- */

/* A batch that does not divide the ring's share (48): the room, not a
 * publish, ends the fast path. */
enum { FILL_RING = 64, FILL_BATCH = 5, FILL_RESERVE = FILL_RING / 4 };

static _Atomic int held, released;
static unsigned fill_accepted;    /* shard 0, read by 1 after `released` */
static int fill_rc;               /* shard 0 */
static uint64_t fill_next;        /* shard 1: the number due next */
static uint64_t mail_before;      /* shard 0 */
static const char opener[24] = "over a mailbox's bytes"; /* takes a ring slot */

/* Wait (bounded) on a shard for another shard's flag. */
static void await_flag(_Atomic int *flag, const char *what)
{
	uint64_t t0 = pc_now_ns();

	while (!atomic_load(flag)) {
		if (pc_elapsed(pc_now_ns(), t0) > 60000000000ull) {
			rt_fail("timed out waiting for %s", what);
			return;
		}
		sched_yield();
	}
}

/* Shard 1: runs (its mail already handed back) until the stream is in. */
static void hold(void *arg)
{
	(void)arg;
	atomic_store(&held, 1);
	await_flag(&released, "the stream");
}

static void fill_seen(uint64_t seq)
{
	RT_CHECK(seq == fill_next, "message %llu arrived, expected %llu",
		 (unsigned long long)seq, (unsigned long long)fill_next);
	fill_next = seq + 1;
	if (fill_next == fill_accepted)
		pc_engine_stop(pc_shard_engine());
}

static void on_opener(void *data)
{
	RT_CHECK(memcmp(data, opener, sizeof(opener)) == 0, "the opener's bytes changed");
	fill_seen(0);
}

static void on_fill(void *arg)
{
	fill_seen((uint64_t)(uintptr_t)arg);
}

static void on_fill_other(void *arg)
{
	fill_seen((uint64_t)(uintptr_t)arg);
}

static bool fill_alternate; /* two functions in turn: no slot is shared */

/* Shard 0, in one turn: hold shard 1, then a copy too large for the
 * mailbox (a ring slot), then pointer messages until the ring refuses. */
static void fill_start(void *arg)
{
	struct pc_shard_stats st;
	unsigned n = 1;
	int rc;

	(void)arg;
	if (pc_shard_id() != 0)
		return;
	RT_CHECK(pc_shard_submit(1, hold, NULL) == 0, "hold refused");
	await_flag(&held, "shard 1 to be held");
	pc_engine_stats_read(pc_shard_engine(), 0, &st);
	mail_before = st.mail_out;
	RT_CHECK(pc_shard_submit_copy(1, on_opener, opener, sizeof(opener)) == 0, "opener refused");
	while ((rc = pc_shard_submit(1, fill_alternate && n % 2 ? on_fill_other : on_fill,
				     (void *)(uintptr_t)n)) == 0)
		n++;
	fill_rc = rc;
	fill_accepted = n;
	pc_engine_stats_read(pc_shard_engine(), 0, &st);
	RT_CHECK(st.mail_out == mail_before, "%llu of the stream went by mail",
		 (unsigned long long)(st.mail_out - mail_before));
	atomic_store(&released, 1);
}

/* The opener takes a slot; the stream the other share - 1 slots. */
static void fill_to_the_reserve(bool alternate, unsigned per_slot)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SPIN);
	struct pc_shard_stats st;

	fill_alternate = alternate;
	atomic_store(&held, 0);
	atomic_store(&released, 0);
	fill_next = 0;
	c.ring_capacity = FILL_RING;
	c.publish_batch = FILL_BATCH;
	c.on_start = fill_start;
	start(&c);
	finish();
	/* Every slot but the reserve, none of it refused early, then a
	 * refusal; all of it ran once, in order. */
	assert_int_equal(fill_rc, -EAGAIN);
	assert_int_equal(fill_accepted, 1 + (FILL_RING - FILL_RESERVE - 1) * per_slot);
	assert_int_equal(fill_next, fill_accepted);
	assert_int_equal(pc_engine_stats_read(engine, 0, &st), 0);
	/* A batch goes once its last slot is full or the next is staged. */
	assert_true(st.publishes >= (FILL_RING - FILL_RESERVE) / (FILL_BATCH + 1));
	/* Messages, not slots, and the hold with them. */
	assert_int_equal(st.msgs_out, 1 + fill_accepted);
	assert_int_equal(pc_engine_stats_read(engine, 1, &st), 0);
	assert_int_equal(st.msgs_in, 1 + fill_accepted);
	pc_engine_destroy(engine);
}

static void a_stream_fills_its_ring_to_the_reserve(void **state)
{
	(void)state;
	fill_to_the_reserve(false, PC_MSG_PACK);
}

static void alternating_functions_share_slots(void **state)
{
	(void)state;
	fill_to_the_reserve(true, PC_MSG_PACK_MIXED);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bursts_reach_a_sleeping_receiver),
		cmocka_unit_test(a_stream_fills_its_ring_to_the_reserve),
		cmocka_unit_test(alternating_functions_share_slots),
	};

	return pc_test_main(tests, argc, argv);
}
