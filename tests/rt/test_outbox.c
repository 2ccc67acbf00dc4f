/* SPDX-License-Identifier: MIT */
/* The outbox: messages that find the ring full wait on the sender, in
 * order, within a budget.
 *
 *  - Randomized stress: 4 shards on rings of 16 send each other a random
 *    mix of queueing sends (pointer, short and long copies, calls) and
 *    plain submits (which may be refused); every receiver checks that
 *    each sender's messages arrive exactly once and in the order sent,
 *    across ring, mailbox and outbox; every call is answered once.
 *  - Budget: with the receiver held, the sender queues until -ENOBUFS
 *    (exactly the budget waits), the pressure callback fires once at the
 *    high mark; a plain submit is refused while messages wait; once the
 *    receiver runs, the low mark fires once, everything arrives in order
 *    and sending works again.
 *  - Packing: a stream of pointer messages to one function, or to two in
 *    turn, that waits in the outbox reaches the receiver several to a
 *    ring slot, as the ring's own fast path packs them: from a ring of
 *    64, more than 64 arrive in one turn once the ring has been full, all
 *    in order.
 *  - Bad input: configurations with marks out of order are refused. */
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
#include "percore/outbox.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "engine_util.h"

/* ---- randomized order ---------------------------------------------------- */

enum { SHARDS = 4, PER_PAIR = 4000 };

struct pair_state {
	uint32_t sent[SHARDS];        /* sender side: next seq per destination */
	uint32_t seen[SHARDS];        /* receiver side: next seq per source */
	uint64_t rng;
	uint32_t replies_due;
} __attribute__((aligned(128)));

static struct pair_state ps[SHARDS];
static _Atomic uint64_t received, answered, calls_sent;
static uint64_t want_received;

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void maybe_done(void)
{
	if (atomic_load(&received) == want_received && atomic_load(&answered) == atomic_load(&calls_sent))
		pc_engine_stop(pc_shard_engine());
}

static void arrive(unsigned from, uint32_t seq)
{
	struct pair_state *me = &ps[pc_shard_id()];

	RT_CHECK(from < SHARDS, "bad source %u", from);
	RT_CHECK(seq == me->seen[from], "from %u to %d: seq %u, expected %u", from, pc_shard_id(),
		 seq, me->seen[from]);
	me->seen[from] = seq + 1;
	atomic_fetch_add(&received, 1);
}

static void on_ptr(void *arg)
{
	uintptr_t v = (uintptr_t)arg;

	arrive((unsigned)(v >> 32), (uint32_t)v);
	maybe_done();
}

/* A second pointer function, so that pointer messages mix in slots and
 * entries; it counts its runs, so it is never folded into on_ptr. */
static _Atomic uint64_t ran_other;

static void on_ptr_other(void *arg)
{
	atomic_fetch_add(&ran_other, 1);
	on_ptr(arg);
}

static void on_copy(void *data)
{
	uint32_t w[2];

	memcpy(w, data, sizeof(w));
	arrive(w[0], w[1]);
	maybe_done();
}

static void on_long_copy(void *data)
{
	const uint8_t *b = data;

	for (unsigned i = 8; i < 40; i++)
		RT_CHECK(b[i] == (uint8_t)i, "long copy byte %u is %u", i, b[i]);
	on_copy(data);
}

static intptr_t on_call(void *arg)
{
	uintptr_t v = (uintptr_t)arg;

	arrive((unsigned)(v >> 32), (uint32_t)v);
	return (intptr_t)(v ^ 0x5a5a);
}

static void on_answer(void *ctx, intptr_t result)
{
	RT_CHECK((uintptr_t)result == ((uintptr_t)ctx ^ 0x5a5a), "answer %lx for %lx",
		 (unsigned long)result, (unsigned long)(uintptr_t)ctx);
	atomic_fetch_add(&answered, 1);
	maybe_done();
}

/* One message of a random kind; 0 when it was taken (the seq is used),
 * else the refusal. */
static int send_one(unsigned me, unsigned to, uint32_t seq, uint64_t r)
{
	uintptr_t v = (uintptr_t)me << 32 | seq;
	uint8_t bytes[40];

	memcpy(bytes, &(uint32_t[2]){ me, seq }, 8);
	switch (r % 6) {
	case 0:
		return pc_shard_send(to, r >> 8 & 1 ? on_ptr_other : on_ptr, (void *)v);
	case 1:
		return pc_shard_send_copy(to, on_copy, bytes, 8);
	case 2:
		for (unsigned i = 8; i < 40; i++)
			bytes[i] = (uint8_t)i;
		return pc_shard_send_copy(to, on_long_copy, bytes, 40);
	case 3: {
		int rc = pc_shard_call_q(to, on_call, (void *)v, on_answer, (void *)v, NULL);

		if (rc == 0)
			atomic_fetch_add(&calls_sent, 1);
		return rc;
	}
	case 4:
		return pc_shard_submit(to, r >> 8 & 1 ? on_ptr_other : on_ptr, (void *)v);
	default:
		return pc_shard_submit_copy(to, on_copy, bytes, 8);
	}
}

static void pump(void *arg)
{
	unsigned me = (unsigned)pc_shard_id();
	struct pair_state *st = &ps[me];
	bool more = false;

	(void)arg;
	/* A random burst per destination each turn: long enough to fill a
	 * ring of 16 and queue behind it. */
	for (unsigned to = 0; to < SHARDS; to++) {
		unsigned burst = (unsigned)(next_rand(&st->rng) % 64);

		for (unsigned k = 0; k < burst && st->sent[to] < PER_PAIR; k++) {
			uint64_t r = next_rand(&st->rng);
			int rc = send_one(me, to, st->sent[to], r);

			if (rc == 0) {
				st->sent[to]++;
				continue;
			}
			RT_CHECK(rc == -EAGAIN || rc == -ENOBUFS, "send: %d", rc);
			break; /* try again next turn */
		}
		more |= st->sent[to] < PER_PAIR;
	}
	if (more)
		pc_reactor_defer(pc_shard_reactor(), pump, NULL);
}

static void stress_start(void *arg)
{
	(void)arg;
	ps[pc_shard_id()].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(pc_shard_id() + 1);
	pump(NULL);
}

static void random_mix_keeps_pair_order(void **state)
{
	struct pc_engine_cfg c = base_cfg(SHARDS, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 16;
	c.outbox_budget = 512; /* small: some sends meet -ENOBUFS */
	c.call_limit = 64;
	c.on_start = stress_start;
	want_received = (uint64_t)SHARDS * SHARDS * PER_PAIR;
	start(&c);
	/* Once every message has arrived, every call has been sent: the
	 * stop then waits for as many answers. */
	finish();
	assert_int_equal(atomic_load(&answered), atomic_load(&calls_sent));
	assert_true(atomic_load(&calls_sent) > 0);
	assert_int_equal(atomic_load(&received), want_received);
	assert_true(atomic_load(&ran_other) > 0);
	for (unsigned i = 0; i < SHARDS; i++)
		for (unsigned j = 0; j < SHARDS; j++)
			assert_int_equal(ps[i].seen[j], PER_PAIR);
	assert_true(RT_SUM(engine, outbox_queued) > 0);
	assert_true(RT_SUM(engine, outbox_high_water) > 0);
	assert_int_equal(RT_SUM(engine, outbox_depth), 0);
	assert_int_equal(RT_SUM(engine, outbox_unsent), 0);
	pc_engine_destroy(engine);
}

/* ---- budget, watermarks, recovery ---------------------------------------- */

enum { BUDGET = 64, HIGH = 32, LOW = 8 };
static _Atomic int held, release;
static unsigned highs, lows, accepted, seen1;
static int refused_rc, submit_rc;
static uint32_t depth_at_refusal;
static bool pressured_at_refusal;

static void on_pressure(unsigned to, bool high, void *arg)
{
	(void)arg;
	RT_CHECK(to == 1, "pressure towards %u", to);
	if (high)
		highs++;
	else
		lows++;
}

static void hold(void *arg)
{
	(void)arg;
	atomic_store(&held, 1);
	while (!atomic_load(&release))
		sched_yield();
}

static void counted(void *arg)
{
	RT_CHECK((uintptr_t)arg == seen1, "message %lu, expected %u", (unsigned long)(uintptr_t)arg,
		 seen1);
	seen1++;
}

static void last(void *arg)
{
	counted(arg);
	RT_CHECK(seen1 == accepted + 1, "%u arrived of %u", seen1, accepted + 1);
	pc_engine_stop(pc_shard_engine());
}

static void after_drain(void *arg)
{
	(void)arg;
	if (pc_shard_outbox_depth(1) || lows == 0) {
		pc_reactor_defer(pc_shard_reactor(), after_drain, NULL);
		return;
	}
	RT_CHECK(!pc_shard_outbox_pressured(1), "still under pressure");
	RT_CHECK(pc_shard_send(1, last, (void *)(uintptr_t)accepted) == 0, "send after recovery");
}

static void fill(void *arg)
{
	int rc;

	(void)arg;
	if (!atomic_load(&held)) {
		pc_reactor_defer(pc_shard_reactor(), fill, NULL);
		return;
	}
	while ((rc = pc_shard_send(1, counted, (void *)(uintptr_t)accepted)) == 0)
		accepted++;
	refused_rc = rc;
	depth_at_refusal = pc_shard_outbox_depth(1);
	pressured_at_refusal = pc_shard_outbox_pressured(1);
	/* Waiting messages go first: a plain submit may not pass them. */
	submit_rc = pc_shard_submit(1, counted, NULL);
	atomic_store(&release, 1);
	pc_reactor_defer(pc_shard_reactor(), after_drain, NULL);
}

static void budget_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	pc_shard_on_pressure(on_pressure, NULL);
	RT_CHECK(pc_shard_send(1, hold, NULL) == 0, "hold refused");
	pc_reactor_defer(pc_shard_reactor(), fill, NULL);
}

static void budget_refuses_then_recovers(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 16;
	c.outbox_budget = BUDGET;
	c.outbox_high = HIGH;
	c.outbox_low = LOW;
	c.on_start = budget_start;
	start(&c);
	finish();
	assert_int_equal(refused_rc, -ENOBUFS);
	assert_int_equal(submit_rc, -EAGAIN);
	assert_int_equal(depth_at_refusal, BUDGET);
	assert_true(pressured_at_refusal);
	/* the ring's share (capacity less the reply reserve) and the budget */
	assert_true(accepted >= BUDGET + 12);
	assert_int_equal(highs, 1);
	assert_int_equal(lows, 1);
	assert_int_equal(seen1, accepted + 1);
	assert_true(RT_SUM(engine, outbox_refused) >= 1);
	assert_int_equal(RT_SUM(engine, outbox_high_water), BUDGET);
	pc_engine_destroy(engine);
}

/* ---- packing in the outbox ----------------------------------------------- */

enum { PACK_RING = 64, PACK_MSGS = 3000 };
static uint64_t pack_turn;      /* turns of shard 0 since the stream began */
static uint64_t pack_seen, pack_in_turn, pack_turn_of_last, pack_first_turn;
static uint64_t pack_most_later; /* the most run in one turn after the first */

/* Counts shard 0's turns: a deferred task runs once a turn. */
static void pack_tick(void *arg)
{
	(void)arg;
	pack_turn++;
	if (pack_seen < PACK_MSGS)
		pc_reactor_defer(pc_shard_reactor(), pack_tick, NULL);
}

static bool pack_mixed;         /* alternate pack_got and pack_got_other */
static uint64_t pack_other;     /* messages pack_got_other ran */

static void pack_got(void *arg)
{
	RT_CHECK((uintptr_t)arg == pack_seen, "message %lu, expected %lu",
		 (unsigned long)(uintptr_t)arg, (unsigned long)pack_seen);
	if (pack_seen == 0)
		pack_first_turn = pack_turn;
	if (pack_turn != pack_turn_of_last) {
		pack_turn_of_last = pack_turn;
		pack_in_turn = 0;
	}
	pack_in_turn++;
	if (pack_turn != pack_first_turn && pack_in_turn > pack_most_later)
		pack_most_later = pack_in_turn;
	if (++pack_seen == PACK_MSGS)
		pc_engine_stop(pc_shard_engine());
}

static void pack_got_other(void *arg)
{
	pack_other++;
	pack_got(arg);
}

/* The whole stream in one turn, to the shard itself: the ring takes what
 * fits, the rest waits in the outbox and moves into the ring as the
 * shard's own later turns free it. */
static void pack_start(void *arg)
{
	(void)arg;
	pc_reactor_defer(pc_shard_reactor(), pack_tick, NULL);
	for (uintptr_t i = 0; i < PACK_MSGS; i++)
		RT_CHECK(pc_shard_send(0, pack_mixed && i % 2 ? pack_got_other : pack_got,
				       (void *)i) == 0,
			 "send %lu refused", (unsigned long)i);
	RT_CHECK(pc_shard_outbox_depth(0) > 0, "nothing waits in the outbox");
}

static void outbox_stream_packs(bool mixed)
{
	struct pc_engine_cfg c = base_cfg(1, PC_IDLE_SPIN);

	pack_mixed = mixed;
	pack_turn = pack_seen = pack_in_turn = pack_turn_of_last = pack_first_turn = 0;
	pack_most_later = pack_other = 0;
	c.ring_capacity = PACK_RING;
	c.on_start = pack_start;
	start(&c);
	finish();
	assert_int_equal(pack_seen, PACK_MSGS);
	/* One message a slot would run at most PACK_RING a turn once the
	 * stream comes from the outbox. */
	if (pack_most_later <= PACK_RING)
		fprintf(stderr, "at most %lu messages a turn from a ring of %d\n",
			(unsigned long)pack_most_later, PACK_RING);
	assert_true(pack_most_later > PACK_RING);
	assert_int_equal(pack_other, mixed ? PACK_MSGS / 2 : 0);
	assert_true(RT_SUM(engine, outbox_queued) > 0);
	pc_engine_destroy(engine);
}

static void outbox_stream_is_packed(void **state)
{
	(void)state;
	outbox_stream_packs(false);
}

static void outbox_stream_to_two_functions_is_packed(void **state)
{
	(void)state;
	outbox_stream_packs(true);
}

/* ---- configurations refused ---------------------------------------------- */

static void marks_out_of_order_are_refused(void **state)
{
	struct pc_engine_cfg c = base_cfg(1, PC_IDLE_ADAPTIVE);
	struct pc_engine *e = NULL;
	char err[200] = "";
	(void)state;

	c.outbox_budget = 100;
	c.outbox_high = 200;
	assert_int_equal(pc_engine_start(&c, &e, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "outbox_high"));
	c.outbox_high = 50;
	c.outbox_low = 50;
	assert_int_equal(pc_engine_start(&c, &e, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "outbox_low"));
	assert_null(e);
}

static void off_a_shard_is_refused(void **state)
{
	(void)state;
	assert_int_equal(pc_shard_send(0, on_ptr, NULL), -EPERM);
	assert_int_equal(pc_shard_send_copy(0, on_copy, "x", 1), -EPERM);
	assert_int_equal(pc_shard_call_q(0, on_call, NULL, on_answer, NULL, NULL), -EPERM);
	assert_int_equal(pc_shard_on_pressure(on_pressure, NULL), -EPERM);
	assert_int_equal(pc_shard_outbox_depth(0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(off_a_shard_is_refused),
		cmocka_unit_test(marks_out_of_order_are_refused),
		cmocka_unit_test(budget_refuses_then_recovers),
		cmocka_unit_test(outbox_stream_is_packed),
		cmocka_unit_test(outbox_stream_to_two_functions_is_packed),
		cmocka_unit_test(random_mix_keeps_pair_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
