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
 * batches, and the statistics add up. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
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
	/* Several publishes per burst: the ones between doorbells happened. */
	assert_true(st.publishes >= (uint64_t)ROUNDS * (BURST / BATCH));
	assert_int_equal(pc_engine_stats_read(engine, 1, &st), 0);
	assert_int_equal(st.msgs_in, (uint64_t)ROUNDS * BURST);
	pc_engine_destroy(engine);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bursts_reach_a_sleeping_receiver),
	};

	return pc_test_main(tests, argc, argv);
}
