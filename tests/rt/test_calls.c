/* SPDX-License-Identifier: MIT */
/* Calls through the outbox: deadlines, cancellation, the limit.
 *
 *  - A call to a shard that sleeps past the deadline: the reply runs
 *    once, with -ETIMEDOUT; the late answer (a shared buffer made on the
 *    callee) goes to drop, which sends it home; counted once each. Under
 *    ASan any leak or use after free of it fails the test.
 *  - An answer within the deadline runs the reply with the result, and
 *    the deadline never fires afterwards.
 *  - A call still unanswered when the engine stops is answered with
 *    -ECANCELED; a call made while stopping is refused with -ECANCELED.
 *  - calls past call_limit to one shard wait for answers to free calls,
 *    never more than call_limit of them unanswered, and are answered in
 *    order; past the outbox budget the next gets -ENOBUFS; bad arguments
 *    are refused. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/engine.h"
#include "percore/outbox.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "percore/shared_buf.h"
#include "engine_util.h"

/* ---- the deadline passes ------------------------------------------------- */

static int late_replies_seen, late_rc;
static _Atomic int dropped;

/* On shard 1: longer than the deadline, then an answer that owns memory
 * of this shard. */
static intptr_t slow(void *arg)
{
	struct pc_shared_buf *b = pc_shared_buf_new(100);

	(void)arg;
	usleep(1000 * 1000); /* the deadline is 20 ms: far past it, even loaded */
	if (b)
		memset(b->data, 7, 100);
	return (intptr_t)b;
}

static void dropped_result(intptr_t result)
{
	struct pc_shared_buf *b = (struct pc_shared_buf *)result;

	RT_CHECK(pc_shard_id() == 0, "drop ran on shard %d", pc_shard_id());
	RT_CHECK(b && b->data[99] == 7, "late answer damaged");
	pc_shared_buf_put(b);
	atomic_fetch_add(&dropped, 1);
}

static void stop_when_dropped(void *arg)
{
	(void)arg;
	if (!atomic_load(&dropped)) {
		pc_reactor_defer(pc_shard_reactor(), stop_when_dropped, NULL);
		return;
	}
	pc_engine_stop(pc_shard_engine());
}

static void late_reply(void *ctx, intptr_t result)
{
	RT_CHECK(ctx == &late_replies_seen, "ctx lost");
	late_replies_seen++;
	late_rc = (int)result;
	/* Stop only once the answer has come and been dropped: a few turns
	 * later, polled, since nothing else tells this shard. */
	pc_reactor_defer(pc_shard_reactor(), stop_when_dropped, NULL);
}

static void late_start(void *arg)
{
	struct pc_call_opts o = { .timeout_ms = 20, .drop = dropped_result };

	(void)arg;
	if (pc_shard_id() == 0)
		RT_CHECK(pc_shard_call_q(1, slow, NULL, late_reply, &late_replies_seen, &o) == 0,
			 "call refused");
}

static void deadline_passes_late_answer_dropped(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.on_start = late_start;
	start(&c);
	finish();
	assert_int_equal(late_replies_seen, 1);
	assert_int_equal(late_rc, -ETIMEDOUT);
	assert_int_equal(atomic_load(&dropped), 1);
	assert_int_equal(RT_SUM(engine, calls_timed_out), 1);
	assert_int_equal(RT_SUM(engine, late_replies), 1);
	assert_int_equal(RT_SUM(engine, calls_canceled), 0);
	pc_engine_destroy(engine);
}

/* ---- the answer comes first --------------------------------------------- */

/* Generous: the answer must come first even on a loaded machine. */
enum { QUICK_DEADLINE_MS = 2000 };
static int quick_replies;
static intptr_t quick_result;
static uint64_t quick_called;

static intptr_t quick(void *arg)
{
	return (intptr_t)arg * 3;
}

static void stop_later(void *arg)
{
	(void)arg;
	/* Outlive the deadline: a timer left armed would fire meanwhile. */
	if (pc_now_ns() - quick_called < (QUICK_DEADLINE_MS + 300) * 1000000ull) {
		usleep(1000);
		pc_reactor_defer(pc_shard_reactor(), stop_later, NULL);
		return;
	}
	pc_engine_stop(pc_shard_engine());
}

static void quick_reply(void *ctx, intptr_t result)
{
	(void)ctx;
	quick_replies++;
	quick_result = result;
	if (quick_replies == 1)
		stop_later(NULL);
}

static void quick_start(void *arg)
{
	struct pc_call_opts o = { .timeout_ms = QUICK_DEADLINE_MS };

	(void)arg;
	if (pc_shard_id() != 0)
		return;
	quick_called = pc_now_ns();
	RT_CHECK(pc_shard_call_q(1, quick, (void *)14, quick_reply, NULL, &o) == 0, "call refused");
}

static void answer_before_deadline(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.on_start = quick_start;
	start(&c);
	finish();
	assert_int_equal(quick_replies, 1);
	assert_int_equal(quick_result, 42);
	assert_int_equal(RT_SUM(engine, calls_timed_out), 0);
	assert_int_equal(RT_SUM(engine, late_replies), 0);
	pc_engine_destroy(engine);
}

/* ---- the engine stops first ------------------------------------------------ */

static int cancel_replies, cancel_rc, call_while_stopping;
static _Atomic int callee_in;

static intptr_t never_soon(void *arg)
{
	(void)arg;
	atomic_store(&callee_in, 1);
	usleep(200 * 1000);
	return 1;
}

static void canceled_reply(void *ctx, intptr_t result)
{
	(void)ctx;
	cancel_replies++;
	cancel_rc = (int)result;
	call_while_stopping = pc_shard_call_q(1, quick, NULL, canceled_reply, NULL, NULL);
}

static void stop_when_callee_runs(void *arg)
{
	(void)arg;
	if (!atomic_load(&callee_in)) {
		pc_reactor_defer(pc_shard_reactor(), stop_when_callee_runs, NULL);
		return;
	}
	pc_engine_stop(pc_shard_engine());
}

static void cancel_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	RT_CHECK(pc_shard_call_q(1, never_soon, NULL, canceled_reply, NULL, NULL) == 0,
		 "call refused");
	stop_when_callee_runs(NULL);
}

static void stop_cancels_calls(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.on_start = cancel_start;
	start(&c);
	finish();
	assert_int_equal(cancel_replies, 1);
	assert_int_equal(cancel_rc, -ECANCELED);
	assert_int_equal(call_while_stopping, -ECANCELED);
	assert_int_equal(RT_SUM(engine, calls_canceled), 1);
	pc_engine_destroy(engine);
}

/* ---- the limit and bad arguments ---------------------------------------- */

enum { LIMIT = 5, BUDGET = 32 };
static int taken, limit_rc, limit_answers, bad_rc[3];
static atomic_int limit_ran, limit_answered, limit_most;

/* On shard 1: how many calls it has seen that shard 0 has no answer to. */
static intptr_t count_open(void *arg)
{
	int open = atomic_fetch_add(&limit_ran, 1) + 1 - atomic_load(&limit_answered);

	if (open > atomic_load(&limit_most))
		atomic_store(&limit_most, open);
	return (intptr_t)arg;
}

static void limit_reply(void *ctx, intptr_t result)
{
	RT_CHECK((intptr_t)ctx == result, "answer %ld for call %ld", (long)result,
		 (long)(intptr_t)ctx);
	RT_CHECK(result == limit_answers, "answer %ld out of order, expected %d", (long)result,
		 limit_answers);
	atomic_fetch_add(&limit_answered, 1);
	if (++limit_answers == taken)
		pc_engine_stop(pc_shard_engine());
}

static void limit_start(void *arg)
{
	int rc;

	(void)arg;
	if (pc_shard_id() != 0)
		return;
	while ((rc = pc_shard_call_q(1, count_open, (void *)(intptr_t)taken, limit_reply,
				     (void *)(intptr_t)taken, NULL)) == 0)
		taken++;
	limit_rc = rc;
	bad_rc[0] = pc_shard_call_q(2, quick, NULL, limit_reply, NULL, NULL);
	bad_rc[1] = pc_shard_call_q(1, NULL, NULL, limit_reply, NULL, NULL);
	bad_rc[2] = pc_shard_call_q(1, quick, NULL, NULL, NULL, NULL);
}

static void limit_queues_calls(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 16;
	c.call_limit = LIMIT;
	c.outbox_budget = BUDGET;
	c.on_start = limit_start;
	start(&c);
	finish();
	/* LIMIT sent, BUDGET waiting, then the budget refuses. */
	assert_int_equal(taken, LIMIT + BUDGET);
	assert_int_equal(limit_rc, -ENOBUFS);
	assert_int_equal(limit_answers, LIMIT + BUDGET);
	assert_in_range(atomic_load(&limit_most), 1, LIMIT);
	assert_int_equal(bad_rc[0], -EINVAL);
	assert_int_equal(bad_rc[1], -EINVAL);
	assert_int_equal(bad_rc[2], -EINVAL);
	pc_engine_destroy(engine);
}

/* ---- many calls beyond the ring's reply room ------------------------------ */

enum { MANY = 2000 };
static int many_answers;
static intptr_t many_sum;

static intptr_t ident(void *arg)
{
	return (intptr_t)arg;
}

static void many_reply(void *ctx, intptr_t result)
{
	RT_CHECK((intptr_t)ctx == result, "answer %ld for %ld", (long)result, (long)(intptr_t)ctx);
	RT_CHECK(result == many_answers, "answer %ld out of order, expected %d", (long)result,
		 many_answers);
	many_sum += result;
	if (++many_answers == MANY)
		pc_engine_stop(pc_shard_engine());
}

static void many_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	for (intptr_t i = 0; i < MANY; i++)
		RT_CHECK(pc_shard_call_q(1, ident, (void *)i, many_reply, (void *)i, NULL) == 0,
			 "call %ld refused", (long)i);
}

/* Rings of 16 keep 4 slots for replies; 2000 calls outstanding at once
 * have their answers wait in the callee's outbox, in order. */
static void calls_beyond_reply_room(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 16;
	c.call_limit = MANY;
	c.on_start = many_start;
	start(&c);
	finish();
	assert_int_equal(many_answers, MANY);
	assert_int_equal(many_sum, (intptr_t)MANY * (MANY - 1) / 2);
	assert_true(RT_SUM(engine, outbox_queued) > 0);
	pc_engine_destroy(engine);
}

/* ---- two shards calling each other past the limit --------------------------- */

/* Each shard's calls to the other wait for answers, and each owes the
 * other answers queued behind those waiting calls: the answers must go
 * ahead, or neither shard ever frees a call. */
enum { MUTUAL = 500, MUTUAL_LIMIT = 2 };
static atomic_int mutual_answers;
static int mutual_next[2];

static void mutual_reply(void *ctx, intptr_t result)
{
	int me = pc_shard_id();

	RT_CHECK(result == (intptr_t)ctx, "answer %ld for %ld", (long)result, (long)(intptr_t)ctx);
	RT_CHECK(result == mutual_next[me], "shard %d: answer %ld, expected %d", me, (long)result,
		 mutual_next[me]);
	mutual_next[me]++;
	if (atomic_fetch_add(&mutual_answers, 1) + 1 == 2 * MUTUAL)
		pc_engine_stop(pc_shard_engine());
}

static void mutual_start(void *arg)
{
	unsigned other = (unsigned)(1 - pc_shard_id());

	(void)arg;
	for (intptr_t i = 0; i < MUTUAL; i++)
		RT_CHECK(pc_shard_call_q(other, ident, (void *)i, mutual_reply, (void *)i, NULL) == 0,
			 "call %ld refused", (long)i);
}

static void mutual_calls_past_limit(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 16;
	c.call_limit = MUTUAL_LIMIT;
	c.on_start = mutual_start;
	start(&c);
	finish();
	assert_int_equal(atomic_load(&mutual_answers), 2 * MUTUAL);
	pc_engine_destroy(engine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(deadline_passes_late_answer_dropped),
		cmocka_unit_test(answer_before_deadline),
		cmocka_unit_test(stop_cancels_calls),
		cmocka_unit_test(limit_queues_calls),
		cmocka_unit_test(calls_beyond_reply_room),
		cmocka_unit_test(mutual_calls_past_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
