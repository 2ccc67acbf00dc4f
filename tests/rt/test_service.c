/* SPDX-License-Identifier: MIT */
/* The service helpers.
 *
 *  - Each shard's user pointer is its own, set in on_start and read in
 *    later messages on that shard.
 *  - Map-reduce: every shard starts one over all shards at once; each
 *    done runs once, on its starter, with every shard's result at its
 *    index, even on rings of 16 (the calls wait in the outbox); one the
 *    engine's stop cuts short runs done once with no results.
 *  - Periodic timers: deadlines advance by whole periods from the start,
 *    whatever the lateness of the run (no drift), never early; a slow
 *    run skips and counts the periods it overran; stop from inside fn.
 *  - pc_engine_cfg_shards: the count an engine then starts, and the
 *    reason for a configuration it refuses.
 *  - pc_container_of finds the owner of an embedded member. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/clock.h"
#include "percore/engine.h"
#include "percore/reactor.h"
#include "percore/service.h"
#include "percore/shard.h"
#include "engine_util.h"

enum { SHARDS = 4 };

/* ---- user pointer and map-reduce --------------------------------------------- */

struct mine {
	unsigned id;
	unsigned asked;
} __attribute__((aligned(128)));

static struct mine mine[SHARDS];
static _Atomic unsigned maps_done;

static intptr_t whoami(void *arg)
{
	struct mine *m = pc_shard_user();

	RT_CHECK(m == &mine[pc_shard_id()], "shard %d sees another's pointer", pc_shard_id());
	RT_CHECK(arg == (void *)0x51, "arg lost");
	m->asked++;
	return (intptr_t)m->id * 10 + 1;
}

static void map_done(const intptr_t *results, unsigned n, void *ctx)
{
	struct mine *m = ctx;

	RT_CHECK(m == pc_shard_user(), "done ran on shard %d, not the starter", pc_shard_id());
	RT_CHECK(n == SHARDS, "n %u", n);
	for (unsigned k = 0; k < n; k++)
		RT_CHECK(results[k] == (intptr_t)k * 10 + 1, "result %u is %ld", k, (long)results[k]);
	if (atomic_fetch_add(&maps_done, 1) + 1 == SHARDS)
		pc_engine_stop(pc_shard_engine());
}

static void map_start(void *arg)
{
	unsigned me = (unsigned)pc_shard_id();

	(void)arg;
	RT_CHECK(pc_shard_user() == NULL, "user pointer set before start");
	mine[me].id = me;
	RT_CHECK(pc_shard_set_user(&mine[me]) == 0, "set refused");
	RT_CHECK(pc_shard_map(NULL, NULL, map_done, NULL) == -EINVAL, "NULL fn taken");
	RT_CHECK(pc_shard_map(whoami, (void *)0x51, map_done, &mine[me]) == 0, "map refused");
}

static void map_over_all_shards(void **state)
{
	struct pc_engine_cfg c = base_cfg(SHARDS, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 16;
	c.on_start = map_start;
	start(&c);
	finish();
	assert_int_equal(atomic_load(&maps_done), SHARDS);
	for (unsigned k = 0; k < SHARDS; k++)
		assert_int_equal(mine[k].asked, SHARDS);
	pc_engine_destroy(engine);
	assert_int_equal(pc_shard_set_user(NULL), -EPERM);
	assert_null(pc_shard_user());
	assert_int_equal(pc_shard_map(whoami, NULL, map_done, NULL), -EPERM);
}

/* ---- a map the engine's stop cuts short --------------------------------------- */

static _Atomic int slow_in;
static int cut_done_calls, cut_rc_while_stopping;
static bool cut_results_null;

static intptr_t slow_part(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 1) {
		atomic_store(&slow_in, 1);
		usleep(1000 * 1000); /* the stop comes long before the answer */
	}
	return 1;
}

static void cut_done(const intptr_t *results, unsigned n, void *ctx)
{
	cut_done_calls++;
	cut_results_null = results == NULL && n == 0;
	cut_rc_while_stopping = pc_shard_map(slow_part, NULL, cut_done, NULL);
	free(ctx); /* the caller's state: freed once, here */
}

static void stop_when_slow(void *arg)
{
	(void)arg;
	if (!atomic_load(&slow_in)) {
		pc_reactor_defer(pc_shard_reactor(), stop_when_slow, NULL);
		return;
	}
	pc_engine_stop(pc_shard_engine());
}

static void cut_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	RT_CHECK(pc_shard_map(slow_part, NULL, cut_done, malloc(32)) == 0, "map refused");
	stop_when_slow(NULL);
}

static void map_cut_short_by_stop(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.on_start = cut_start;
	start(&c);
	finish();
	pc_engine_destroy(engine);
	assert_int_equal(cut_done_calls, 1);
	assert_true(cut_results_null);
	assert_int_equal(cut_rc_while_stopping, -ECANCELED);
}

/* ---- periodic timers ---------------------------------------------------------- */

enum { PERIOD_MS = 4, RUNS = 25 };

struct ticker {
	struct pc_periodic p;
	uint64_t start;
	unsigned bad_deadline, early;
	uint64_t slow_missed;
};

static struct ticker tk;

static void tick(struct pc_periodic *p, void *arg)
{
	struct ticker *t = pc_container_of(p, struct ticker, p);
	uint64_t now = pc_now_ns(), k = p->runs + p->missed;
	uint64_t period = (uint64_t)PERIOD_MS * 1000000;

	RT_CHECK(arg == &tk, "arg lost");
	/* Deadlines are start + j periods: the next is the one after every
	 * run and every skipped period so far, and no further: the one
	 * before it had passed when the timer fired, before now. (That it
	 * lies ahead of the firing cannot be checked here, after an unknown
	 * delay on a busy machine; slow_missed shows the skipping.) */
	if (pc_periodic_next(p) != t->start + (k + 1) * period ||
	    pc_periodic_next(p) - period > now)
		t->bad_deadline++;
	/* This run was due at start + (k - skipped now) periods, at least
	 * start + runs periods: never early. */
	if (now < t->start + p->runs * period)
		t->early++;
	if (p->runs == 3)
		usleep(3 * PERIOD_MS * 1000); /* one slow run: later periods are skipped */
	if (p->runs == 4)
		t->slow_missed = p->missed;
	if (p->runs == RUNS) {
		pc_periodic_stop(p);
		RT_CHECK(pc_periodic_next(p) == 0, "stopped timer has a deadline");
		pc_engine_stop(pc_shard_engine());
	}
}

static void periodic_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	RT_CHECK(pc_periodic_start(&tk.p, pc_shard_reactor(), 0, tick, &tk) == -EINVAL,
		 "period 0 taken");
	RT_CHECK(pc_periodic_start(&tk.p, pc_shard_reactor(), PERIOD_MS, tick, &tk) == 0,
		 "start refused");
	tk.start = pc_periodic_next(&tk.p) - (uint64_t)PERIOD_MS * 1000000;
}

static void periodic_runs_without_drift(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	(void)state;

	c.on_start = periodic_start;
	start(&c);
	finish();
	assert_int_equal(tk.p.runs, RUNS);
	assert_int_equal(tk.early, 0);
	assert_int_equal(tk.bad_deadline, 0);
	/* The 3rd run slept 3 periods: at least 2 whole ones were overrun. */
	assert_true(tk.slow_missed >= 2);
	pc_engine_destroy(engine);
}

/* ---- the shard count before start ----------------------------------------------- */

static void count_before_start(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_ADAPTIVE);
	char err[200] = "";
	int n;
	(void)state;

	assert_int_equal(pc_engine_cfg_shards(&c, err, sizeof(err)), 3);
	c.shards = 0;
	n = pc_engine_cfg_shards(&c, err, sizeof(err));
	assert_true(n >= 1);
	start(&c);
	assert_int_equal(pc_engine_shards(engine), (unsigned)n);
	pc_engine_destroy(engine);
	c.ring_capacity = 17;
	assert_int_equal(pc_engine_cfg_shards(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "ring capacity"));
}

/* ---- pc_container_of ---------------------------------------------------------- */

struct outer {
	int a;
	double b;
	struct pc_timer t;
};

static void container_of_finds_owner(void **state)
{
	struct outer o;
	(void)state;

	assert_ptr_equal(pc_container_of(&o.t, struct outer, t), &o);
	assert_ptr_equal(pc_container_of(&o.b, struct outer, b), &o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(container_of_finds_owner),
		cmocka_unit_test(count_before_start),
		cmocka_unit_test(map_over_all_shards),
		cmocka_unit_test(map_cut_short_by_stop),
		cmocka_unit_test(periodic_runs_without_drift),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
