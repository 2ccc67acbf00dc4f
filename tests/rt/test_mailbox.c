/* SPDX-License-Identifier: MIT */
/* The pair mailbox: which messages take it, and that the order of
 * submission holds across it and the ring.
 *
 *  - A mail waiting while the ring messages sent after it are already
 *    published runs first (the receiver is held until both are there).
 *  - A ping-pong whose answers leave from a deferred task (so the
 *    receiver has freed its ring slots by then) goes by mail every time,
 *    both ways, with no ring publish at all.
 *  - Calls and copies over 16 bytes take the ring even when it is empty
 *    and the half is free. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "percore/engine.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "engine_util.h"

static struct pc_shard_stats stats_of(unsigned shard)
{
	struct pc_shard_stats st;

	assert_int_equal(pc_engine_stats_read(engine, shard, &st), 0);
	return st;
}

/* Read on a shard: its own figures, which only it writes. */
static uint64_t my_mail_out(void)
{
	struct pc_shard_stats st;

	pc_engine_stats_read(pc_shard_engine(), (unsigned)pc_shard_id(), &st);
	return st.mail_out;
}

/* ---- a waiting mail runs before the ring messages after it ------------ */

enum { BURST = 6 };
static _Atomic int burst_published;
static unsigned burst_seen;

static void arrived(unsigned seq)
{
	RT_CHECK(pc_shard_id() == 1, "ran on shard %d", pc_shard_id());
	RT_CHECK(seq == burst_seen, "message %u arrived, expected %u", seq, burst_seen);
	burst_seen = seq + 1;
}

static void on_ptr(void *arg)
{
	arrived((unsigned)(uintptr_t)arg);
}

static void on_copy(void *data)
{
	unsigned char first = *(unsigned char *)data;

	arrived(first);
}

static intptr_t on_call(void *arg)
{
	arrived((unsigned)(uintptr_t)arg);
	return 7;
}

static void on_reply(void *ctx, intptr_t result)
{
	(void)ctx;
	RT_CHECK(result == 7, "reply %ld", (long)result);
	RT_CHECK(burst_seen == BURST, "reply before every message ran: %u", burst_seen);
	pc_engine_stop(pc_shard_engine());
}

static void send_burst(void)
{
	unsigned char big[40] = { 1 }, small[8] = { 3 };

	/* 0: the ring is empty and the half free: mail. */
	RT_CHECK(pc_shard_submit(1, on_ptr, (void *)0) == 0, "0 refused");
	RT_CHECK(my_mail_out() == 1, "the first message did not go by mail");
	/* 1: too big for a half, so the ring. From then on ring messages are
	 * staged and a mail may not overtake them: 2, 3 and 4 fit a half and
	 * still take the ring; 5 is a call, which always does. */
	RT_CHECK(pc_shard_submit_copy(1, on_copy, big, sizeof(big)) == 0, "1 refused");
	RT_CHECK(pc_shard_submit(1, on_ptr, (void *)2) == 0, "2 refused");
	RT_CHECK(pc_shard_submit_copy(1, on_copy, small, sizeof(small)) == 0, "3 refused");
	small[0] = 4;
	RT_CHECK(pc_shard_submit_copy(1, on_copy, small, sizeof(small)) == 0, "4 refused");
	/* Last: its reply comes back after everything ran. */
	RT_CHECK(pc_shard_call(1, on_call, (void *)5, on_reply, NULL) == 0, "5 refused");
	RT_CHECK(my_mail_out() == 1, "a message after the first went by mail");
	RT_CHECK(pc_shard_flush() == 1, "one ring to publish");
	atomic_store(&burst_published, 1);
}

static void burst_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 0) {
		send_burst();
		return;
	}
	/* Shard 1 looks at nothing before everything is there: its first
	 * drain finds the mail and the ring's first slot both due. */
	while (!atomic_load(&burst_published))
		sched_yield();
}

static void mail_runs_before_later_ring_messages(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.on_start = burst_start;
	start(&c);
	finish();
	assert_int_equal(burst_seen, BURST);
	assert_int_equal(stats_of(0).mail_out, 1);
	assert_int_equal(stats_of(0).msgs_out, BURST);
	assert_int_equal(stats_of(1).msgs_in, BURST);
	pc_engine_destroy(engine);
}

/* ---- what never goes by mail ---------------------------------------------- */

static _Atomic int ring_only_seen;

static void ring_only_done(void)
{
	if (atomic_fetch_add(&ring_only_seen, 1) + 1 == 2)
		pc_engine_stop(pc_shard_engine());
}

static void on_big(void *data)
{
	RT_CHECK(((unsigned char *)data)[39] == 39, "copy's last byte lost");
	ring_only_done();
}

static intptr_t on_ring_call(void *arg)
{
	return (intptr_t)arg + 1;
}

static void on_ring_reply(void *ctx, intptr_t result)
{
	(void)ctx;
	RT_CHECK(result == 42, "reply %ld", (long)result);
	ring_only_done();
}

/* Shard 0 sends each as the first message towards its shard: the ring
 * is empty and the half free, yet neither fits a half. */
static void ring_only_start(void *arg)
{
	unsigned char big[40];
	(void)arg;

	if (pc_shard_id() != 0)
		return;
	for (unsigned i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)i;
	RT_CHECK(pc_shard_submit_copy(1, on_big, big, sizeof(big)) == 0, "copy refused");
	RT_CHECK(pc_shard_call(2, on_ring_call, (void *)41, on_ring_reply, NULL) == 0,
		 "call refused");
	RT_CHECK(my_mail_out() == 0, "a call or a 40-byte copy went by mail");
}

static void calls_and_big_copies_take_the_ring(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_ADAPTIVE);
	(void)state;

	c.on_start = ring_only_start;
	start(&c);
	finish();
	assert_int_equal(atomic_load(&ring_only_seen), 2);
	assert_int_equal(stats_of(0).mail_out, 0);
	assert_int_equal(stats_of(0).publishes, 2);
	pc_engine_destroy(engine);
}

/* ---- one at a time: mail every time ------------------------------------ */

enum { ROUNDS = 1000 };
static unsigned pings, pongs;

static void pong(void *arg);

static void answer(void *arg)
{
	RT_CHECK(pc_shard_submit(0, pong, arg) == 0, "pong refused");
}

/* Shard 1: answer from a task, which runs after this turn's drain has
 * freed the ring slots; the sender then sees an empty ring. */
static void ping(void *arg)
{
	pings++;
	pc_reactor_defer(pc_shard_reactor(), answer, arg);
}

static void pong(void *arg)
{
	RT_CHECK((uintptr_t)arg == pongs, "pong %lu, expected %u", (unsigned long)(uintptr_t)arg,
		 pongs);
	if (++pongs == ROUNDS) {
		pc_engine_stop(pc_shard_engine());
		return;
	}
	RT_CHECK(pc_shard_submit(1, ping, (void *)(uintptr_t)pongs) == 0, "ping refused");
}

static void pingpong_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 0)
		RT_CHECK(pc_shard_submit(1, ping, (void *)0) == 0, "first ping refused");
}

static void one_at_a_time_goes_by_mail(void **state, enum pc_idle idle)
{
	struct pc_engine_cfg c = base_cfg(2, idle);
	(void)state;

	pings = pongs = 0;
	c.on_start = pingpong_start;
	start(&c);
	finish();
	assert_int_equal(pings, ROUNDS);
	assert_int_equal(pongs, ROUNDS);
	for (unsigned k = 0; k < 2; k++) {
		struct pc_shard_stats st = stats_of(k);

		assert_int_equal(st.msgs_out, ROUNDS);
		assert_int_equal(st.mail_out, ROUNDS);
		assert_int_equal(st.publishes, 0);
	}
	pc_engine_destroy(engine);
}

static void one_at_a_time_spin(void **state)
{
	one_at_a_time_goes_by_mail(state, PC_IDLE_SPIN);
}

static void one_at_a_time_sleep(void **state)
{
	one_at_a_time_goes_by_mail(state, PC_IDLE_SLEEP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mail_runs_before_later_ring_messages),
		cmocka_unit_test(calls_and_big_copies_take_the_ring),
		cmocka_unit_test(one_at_a_time_spin),
		cmocka_unit_test(one_at_a_time_sleep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
