/* SPDX-License-Identifier: MIT */
/* The engine: configuration errors, placement, start and stop in every
 * state (asleep, busy, by destroy, from a signal, with the caller as shard
 * 0), external submits, live statistics, and timers and fds waking a
 * sleeping shard. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/clock.h"
#include "percore/engine.h"
#include "percore/place.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "percore/shared_buf.h"
#include "engine_util.h"

/* ---- configuration and placement -------------------------------------- */

static void too_many_shards(struct pc_engine_cfg *c) { c->shards = PC_ENGINE_MAX_SHARDS + 1; }
static void odd_capacity(struct pc_engine_cfg *c) { c->ring_capacity = 100; }
static void tiny_capacity(struct pc_engine_cfg *c) { c->ring_capacity = 8; }
static void huge_capacity(struct pc_engine_cfg *c) { c->ring_capacity = 1u << 31; }
static void bad_idle(struct pc_engine_cfg *c) { c->idle = (enum pc_idle)7; }
static void bad_backend(struct pc_engine_cfg *c) { c->backend = (enum pc_backend)9; }
static void bad_policy(struct pc_engine_cfg *c) { c->placement = "bogus"; }
static void missing_cpu(struct pc_engine_cfg *c) { c->placement = "4000"; }

static void crowded(struct pc_engine_cfg *c)
{
	c->placement = "0";
	c->shards = 2;
	c->oversubscribe = false;
}

static void bad_configurations_are_refused(void **state)
{
	void (*edits[])(struct pc_engine_cfg *) = {
		too_many_shards, odd_capacity, tiny_capacity, huge_capacity, bad_idle,
		bad_backend, bad_policy, missing_cpu, crowded,
	};
	struct pc_engine_cfg c;
	char err[200];
	(void)state;

	for (size_t i = 0; i < PC_ARRAY_LEN(edits); i++) {
		struct pc_engine *e = (struct pc_engine *)&c;

		c = base_cfg(1, PC_IDLE_SLEEP);
		edits[i](&c);
		err[0] = 0;
		assert_int_equal(pc_engine_start(&c, &e, err, sizeof(err)), -EINVAL);
		assert_null(e);
		assert_true(strlen(err) > 0); /* a reason, for the user */
	}
	/* More shards than CPUs has its own code, so a program can say how
	 * its user allows oversubscription (no machine here has 1024 CPUs). */
	struct pc_engine *e = (struct pc_engine *)&c;
	c = base_cfg(PC_ENGINE_MAX_SHARDS, PC_IDLE_SLEEP);
	c.placement = "off";
	c.oversubscribe = false;
	assert_int_equal(pc_engine_start(&c, &e, err, sizeof(err)), -E2BIG);
	assert_null(e);
	assert_non_null(strstr(err, "usable CPUs"));
}

static void off_shard_calls_say_so(void **state)
{
	char byte = 0;
	(void)state;

	assert_int_equal(pc_shard_id(), -1);
	assert_int_equal(pc_shard_count(), 0);
	assert_null(pc_shard_reactor());
	assert_null(pc_shard_engine());
	assert_int_equal(pc_shard_submit(0, (pc_msg_fn)free, NULL), -EPERM);
	assert_int_equal(pc_shard_submit_copy(0, (pc_msg_fn)free, &byte, 1), -EPERM);
	assert_int_equal(pc_shard_broadcast((pc_msg_fn)free, NULL), -EPERM);
	assert_int_equal(pc_shard_flush(), -EPERM);
	assert_int_equal(pc_shard_call_limit(), 0);
	assert_null(pc_shared_buf_new(10));
	pc_shared_buf_put(NULL);
}

static void idle_names_round_trip(void **state)
{
	enum pc_idle x;
	(void)state;

	for (int i = PC_IDLE_ADAPTIVE; i <= PC_IDLE_AWAIT; i++) {
		assert_int_equal(pc_idle_parse(pc_idle_name((enum pc_idle)i), &x), 0);
		assert_int_equal(x, i);
	}
	assert_int_equal(pc_idle_parse("busy", &x), -EINVAL);
	assert_int_equal(pc_idle_parse(NULL, &x), -EINVAL);
}

static _Atomic int seen_cpu[4];

static void record_cpu(void *arg)
{
	(void)arg;
	atomic_store(&seen_cpu[pc_shard_id()], sched_getcpu());
	if (pc_shard_id() == 0)
		pc_engine_stop(pc_shard_engine());
}

static void placement_pins_or_not(void **state)
{
	struct pc_engine_cfg c = base_cfg(1, PC_IDLE_SLEEP);
	cpu_set_t set;
	int cpu = -1;
	char list[16];
	(void)state;

	sched_getaffinity(0, sizeof(set), &set);
	for (int i = CPU_SETSIZE - 1; i >= 0 && cpu < 0; i--)
		if (CPU_ISSET(i, &set))
			cpu = i;
	snprintf(list, sizeof(list), "%d", cpu);
	c.placement = list;
	c.on_start = record_cpu;
	start(&c);
	assert_int_equal(pc_engine_shard_cpu(engine, 0), cpu);
	assert_int_equal(pc_engine_shard_cpu(engine, 1), -1);
	assert_true(pc_engine_placement(engine)->pinned);
	assert_int_equal(pc_engine_placement(engine)->n, 1);
	finish();
	assert_int_equal(atomic_load(&seen_cpu[0]), cpu);
	pc_engine_destroy(engine);

	c.placement = "off";
	start(&c);
	assert_int_equal(pc_engine_shard_cpu(engine, 0), -1);
	assert_false(pc_engine_placement(engine)->pinned);
	finish();
	pc_engine_destroy(engine);
}

static _Atomic int seen_policy[2];

static void record_policy(void *arg)
{
	(void)arg;
	atomic_store(&seen_policy[pc_shard_id()], sched_getscheduler(0));
	if (pc_shard_id() == 0)
		pc_engine_stop(pc_shard_engine());
}

/* sched_batch puts every shard's thread under SCHED_BATCH; without it the
 * threads keep the policy they were created with (the starter's: threads
 * inherit it), which this test makes SCHED_OTHER so that the two cases
 * differ even when the tests themselves run under SCHED_BATCH. */
static void sched_batch_applies_to_every_shard(void **state)
{
	struct sched_param none = { .sched_priority = 0 };
	int was = sched_getscheduler(0), mine = SCHED_OTHER;
	(void)state;

	assert_int_equal(pthread_setschedparam(pthread_self(), SCHED_OTHER, &none), 0);
	for (int batch = 1; batch >= 0; batch--) {
		struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);

		c.sched_batch = batch;
		c.on_start = record_policy;
		for (unsigned i = 0; i < 2; i++)
			atomic_store(&seen_policy[i], -1);
		start(&c);
		finish();
		pc_engine_destroy(engine);
		for (unsigned i = 0; i < 2; i++)
			assert_int_equal(atomic_load(&seen_policy[i]), batch ? SCHED_BATCH : mine);
	}
	/* the starting thread is not a shard here and keeps its own */
	assert_int_equal(sched_getscheduler(0), mine);
	if (was == SCHED_BATCH)
		pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
}

static cpu_set_t seen_cpus[4];
static _Atomic unsigned started;

/* Each shard records the CPUs it may run on; shard 0 stops the engine once
 * every shard has. */
static void record_cpus(void *arg)
{
	(void)arg;
	sched_getaffinity(0, sizeof(cpu_set_t), &seen_cpus[pc_shard_id()]);
	atomic_fetch_add(&started, 1);
	if (pc_shard_id() != 0)
		return;
	for (int i = 0; i < 10000 && atomic_load(&started) < pc_shard_count(); i++)
		usleep(1000);
	pc_engine_stop(pc_shard_engine());
}

/* auto on every CPU this process may use: each shard may run on any CPU of
 * its node's shards, one CPU each otherwise (place.h). */
static void shards_on_every_cpu_float(void **state)
{
	cpu_set_t mine, want;
	unsigned n;
	(void)state;

	sched_getaffinity(0, sizeof(mine), &mine);
	n = (unsigned)CPU_COUNT(&mine);
	if (n > PC_ARRAY_LEN(seen_cpus))
		n = PC_ARRAY_LEN(seen_cpus);
	for (unsigned want_n = 1; want_n <= n; want_n += n > 1 ? n - 1 : 1) {
		struct pc_engine_cfg c = base_cfg(want_n, PC_IDLE_SLEEP);
		const struct pc_placement *pl;

		c.on_start = record_cpus;
		atomic_store(&started, 0);
		start(&c);
		pl = pc_engine_placement(engine);
		finish();
		assert_int_equal(pl->n, want_n);
		/* floating exactly when the shards took every usable CPU */
		assert_int_equal(pl->floating, want_n == (unsigned)CPU_COUNT(&mine) && want_n > 1);
		for (unsigned s = 0; s < want_n; s++) {
			pc_placement_cpus(pl, s, &want);
			assert_true(CPU_EQUAL(&seen_cpus[s], &want));
			assert_true(CPU_ISSET(pl->shards[s].cpu, &seen_cpus[s]));
			if (!pl->floating)
				assert_int_equal(CPU_COUNT(&seen_cpus[s]), 1);
		}
		pc_engine_destroy(engine);
	}
}

/* ---- stopping --------------------------------------------------------- */

static bool all_asleep(void)
{
	for (unsigned i = 0; i < pc_engine_shards(engine); i++) {
		struct pc_shard_stats st;

		pc_engine_stats_read(engine, i, &st);
		if (!st.sleeps)
			return false;
	}
	return true;
}

static void stop_while_asleep(void **state)
{
	(void)state;
	for (int idle = PC_IDLE_ADAPTIVE; idle <= PC_IDLE_SLEEP; idle += 2) {
		struct pc_engine_cfg c = base_cfg(3, (enum pc_idle)idle);

		start(&c);
		wait_for(all_asleep, "every shard to sleep");
		pc_engine_stop(engine);
		pc_engine_stop(engine); /* twice is harmless */
		finish();
		assert_int_equal(RT_SUM(engine, msgs_in), 0);
		assert_true(RT_SUM(engine, idle_ns) > 0);
		pc_engine_destroy(engine);
	}
}

/* The mesh policy: a shard that has exchanged no message sleeps at
 * once; one that just got a message polls for its budget first, and
 * then sleeps. */
#define MESH_BUDGET_NS 3000000000ull

static _Atomic uint64_t noted_at;

static void note(void *arg)
{
	(void)arg;
	atomic_store(&noted_at, pc_now_ns());
}

static void relay(void *arg)
{
	assert_int_equal(pc_shard_submit(1, note, arg), 0);
}

static bool noted(void)
{
	return atomic_load(&noted_at) != 0;
}

static uint64_t sleeps_of(unsigned shard)
{
	struct pc_shard_stats st;

	pc_engine_stats_read(engine, shard, &st);
	return st.sleeps;
}

static uint64_t mesh_sleeps_before;

static bool slept_again(void)
{
	return sleeps_of(1) > mesh_sleeps_before;
}

static void mesh_policy_polls_after_messages(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_MESH);
	uint64_t t0;

	(void)state;
	c.poll_budget_us = MESH_BUDGET_NS / 1000;
	start(&c);
	t0 = pc_now_ns();
	wait_for(all_asleep, "both shards to sleep");
	/* no message yet: at once, not after the budget */
	assert_true(pc_elapsed(pc_now_ns(), t0) < MESH_BUDGET_NS);
	mesh_sleeps_before = sleeps_of(1);
	assert_int_equal(pc_engine_submit(engine, 0, relay, NULL), 0);
	wait_for(noted, "shard 1 to get shard 0's message");
	/* within its budget shard 1 polls: no sleep yet (checked only while
	 * this thread got here well inside the budget) */
	if (pc_elapsed(pc_now_ns(), atomic_load(&noted_at)) < MESH_BUDGET_NS / 2)
		assert_int_equal(sleeps_of(1), mesh_sleeps_before);
	wait_for(slept_again, "shard 1 to sleep once its budget is spent");
	assert_true(pc_elapsed(pc_now_ns(), atomic_load(&noted_at)) >= MESH_BUDGET_NS);
	pc_engine_stop(engine);
	finish();
	pc_engine_destroy(engine);
}

/* The await policy: a shard awaiting an answer (pc_shard_expect) polls
 * instead of sleeping, within its budget; once nothing is awaited, it
 * sleeps at the first empty turn, message or not. */
static void expect_one(void *arg)
{
	pc_shard_expect(1);
	note(arg);
}

static void expect_none(void *arg)
{
	(void)arg;
	pc_shard_expect(-1);
}

static void await_policy_polls_while_answers_are_due(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_AWAIT);
	uint64_t t0;

	(void)state;
	c.poll_budget_us = MESH_BUDGET_NS / 1000;
	atomic_store(&noted_at, 0);
	start(&c);
	wait_for(all_asleep, "both shards to sleep");
	mesh_sleeps_before = sleeps_of(1);
	assert_int_equal(pc_engine_submit(engine, 1, expect_one, NULL), 0);
	wait_for(noted, "shard 1 to expect an answer");
	usleep(100000);
	/* awaiting, within its budget: polling, no sleep (checked only while
	 * this thread got here well inside the budget) */
	if (pc_elapsed(pc_now_ns(), atomic_load(&noted_at)) < MESH_BUDGET_NS / 2)
		assert_int_equal(sleeps_of(1), mesh_sleeps_before);
	t0 = pc_now_ns();
	assert_int_equal(pc_engine_submit(engine, 1, expect_none, NULL), 0);
	wait_for(slept_again, "shard 1 to sleep once nothing is awaited");
	/* at once, not after the budget */
	assert_true(pc_elapsed(pc_now_ns(), t0) < MESH_BUDGET_NS);
	pc_engine_stop(engine);
	finish();
	pc_engine_destroy(engine);
}

/* Every message sends two more to the next shard: the rings stay full and
 * every shard stays busy until told to stop. */
static void flood(void *arg)
{
	unsigned next = ((unsigned)pc_shard_id() + 1) % pc_shard_count();

	for (int i = 0; i < 2; i++)
		if (pc_shard_submit(next, flood, arg) && pc_shard_submit(pc_shard_id(), flood, arg))
			break;
}

static void start_flood(void *arg)
{
	for (int i = 0; i < 8; i++)
		pc_shard_submit((unsigned)pc_shard_id(), flood, arg);
}

static bool busy_enough(void)
{
	return RT_SUM(engine, msgs_in) > 100000;
}

static void stop_while_busy(void **state)
{
	(void)state;
	for (int idle = PC_IDLE_ADAPTIVE; idle <= PC_IDLE_AWAIT; idle++) {
		struct pc_engine_cfg c = base_cfg(4, (enum pc_idle)idle);

		c.on_start = start_flood;
		start(&c);
		wait_for(busy_enough, "the flood to get going");
		pc_engine_stop(engine);
		finish();
		/* Every message staged either ran or is counted as left. */
		assert_int_equal(RT_SUM(engine, msgs_out),
				 RT_SUM(engine, msgs_in) + RT_SUM(engine, unrun_at_stop));
		assert_true(RT_SUM(engine, ring_full) > 0);
		pc_engine_destroy(engine);
	}
}

static void destroy_stops_and_joins(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SPIN);
	(void)state;

	c.on_start = start_flood;
	start(&c);
	wait_for(busy_enough, "the flood to get going");
	pc_engine_destroy(engine); /* running: stopped and joined first */

	c = base_cfg(2, PC_IDLE_SLEEP);
	c.caller_is_shard0 = true;
	start(&c);
	pc_engine_stop(engine);
	/* join runs shard 0 (which stops at once), and is idempotent */
	assert_int_equal(pc_engine_join(engine), 0);
	assert_int_equal(pc_engine_join(engine), 0);
	pc_engine_destroy(engine);
}

static void stop_from_a_signal(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);
	struct pc_engine *other;
	struct sigaction now;
	(void)state;

	start(&c);
	assert_int_equal(pc_engine_stop_on_signals(engine), 0);
	assert_int_equal(pc_engine_stop_on_signals(engine), 0);
	assert_int_equal(pc_engine_start(&c, &other, NULL, 0), 0);
	assert_int_equal(pc_engine_stop_on_signals(other), -EBUSY);
	pc_engine_stop(other);
	pc_engine_join(other);
	pc_engine_destroy(other);

	assert_int_equal(raise(SIGTERM), 0);
	finish();
	pc_engine_destroy(engine);
	/* The previous (default) handler is back. */
	assert_int_equal(sigaction(SIGTERM, NULL, &now), 0);
	assert_true(now.sa_handler == SIG_DFL);
}

static _Atomic int shard1_ran;

static void on_shard1(void *arg)
{
	(void)arg;
	RT_CHECK(pc_shard_id() == 1, "ran on %d", pc_shard_id());
	atomic_store(&shard1_ran, 1);
	pc_engine_stop(pc_shard_engine());
}

static void kick_shard1(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 0)
		RT_CHECK(pc_shard_submit(1, on_shard1, NULL) == 0, "submit failed");
}

static void caller_runs_shard0(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	struct pc_engine *plain;
	(void)state;

	c.caller_is_shard0 = true;
	c.on_start = kick_shard1;
	start(&c);
	assert_int_equal(pc_shard_id(), -1);
	assert_int_equal(pc_engine_run(engine), 0);
	assert_int_equal(pc_engine_run(engine), -EINVAL);
	assert_int_equal(pc_shard_id(), -1);
	finish();
	assert_int_equal(atomic_load(&shard1_ran), 1);
	pc_engine_destroy(engine);

	c.caller_is_shard0 = false;
	c.on_start = NULL;
	start(&c);
	plain = engine;
	assert_int_equal(pc_engine_run(plain), -EINVAL);
	pc_engine_stop(plain);
	finish();
	pc_engine_destroy(plain);
}

static _Atomic int ext_ran[3];
static _Atomic int hold;
static int ext_expect;

static void ext_job(void *arg)
{
	unsigned to = (unsigned)(uintptr_t)arg;

	RT_CHECK((unsigned)pc_shard_id() == to, "external job for %u ran on %d", to, pc_shard_id());
	atomic_fetch_add(&ext_ran[to], 1);
}

static void hold_shard(void *arg)
{
	(void)arg;
	while (atomic_load(&hold))
		sched_yield();
}

static bool ext_all_ran(void)
{
	return atomic_load(&ext_ran[0]) == 1 && atomic_load(&ext_ran[1]) == 1 &&
	       atomic_load(&ext_ran[2]) == ext_expect;
}

static void external_submit(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_SLEEP);
	int n = 0, rc;
	(void)state;

	c.ring_capacity = 64;
	start(&c);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(pc_engine_submit(engine, i, ext_job, (void *)(uintptr_t)i), 0);
	assert_int_equal(pc_engine_submit(engine, 3, ext_job, NULL), -EINVAL);
	assert_int_equal(pc_engine_submit(engine, 0, NULL, NULL), -EINVAL);
	/* Hold shard 2 inside a message, then fill its external ring. */
	atomic_store(&hold, 1);
	assert_int_equal(pc_engine_submit(engine, 2, hold_shard, NULL), 0);
	while ((rc = pc_engine_submit(engine, 2, ext_job, (void *)(uintptr_t)2)) == 0)
		n++;
	assert_int_equal(rc, -EAGAIN);
	/* The holder's slot is not free until its batch is done (nor the
	 * earlier job's, when both were taken in one batch). */
	assert_true(n == 63 || n == 62);
	ext_expect = 1 + n;
	assert_int_equal(pc_engine_submit(engine, 2, ext_job, (void *)(uintptr_t)2), -EAGAIN);
	atomic_store(&hold, 0);
	wait_for(ext_all_ran, "every external job to run");
	pc_engine_stop(engine);
	assert_int_equal(pc_engine_submit(engine, 0, ext_job, NULL), -ESHUTDOWN);
	finish();
	pc_engine_destroy(engine);
}

/* ---- live statistics, timers and fds ------------------------------------ */

static _Atomic int stats_ok;

static void stats_done(const struct pc_shard_stats *st, unsigned n, void *arg)
{
	RT_CHECK(arg == &stats_ok, "argument lost");
	RT_CHECK(pc_shard_id() == 1, "done ran on %d", pc_shard_id());
	RT_CHECK(n == 3, "%u stats", n);
	for (unsigned i = 0; i < n; i++) {
		RT_CHECK(st[i].shard == i, "stats %u say shard %u", i, st[i].shard);
		RT_CHECK(st[i].turns > 0, "shard %u never turned", i);
	}
	atomic_store(&stats_ok, 1);
	pc_engine_stop(pc_shard_engine());
}

static void ask_stats(void *arg)
{
	(void)arg;
	RT_CHECK(pc_engine_stats(NULL, NULL) == -EINVAL, "NULL callback taken");
	RT_CHECK(pc_engine_stats(stats_done, &stats_ok) == 0, "stats refused");
}

static void live_statistics(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_SLEEP);
	(void)state;

	assert_int_equal(pc_engine_stats(stats_done, NULL), -EPERM);
	start(&c);
	wait_for(all_asleep, "every shard to sleep once");
	assert_int_equal(pc_engine_submit(engine, 1, ask_stats, NULL), 0);
	finish();
	assert_int_equal(atomic_load(&stats_ok), 1);
	struct pc_shard_stats st;
	assert_int_equal(pc_engine_stats_read(engine, 3, &st), -EINVAL);
	assert_int_equal(pc_engine_stats_read(engine, 1, &st), 0);
	assert_int_equal(st.shard, 1);
	assert_true(st.busy_ns > 0 && st.idle_ns > 0 && st.sleeps > 0);
	pc_engine_destroy(engine);
}

struct timed {
	struct pc_timer t;
	uint64_t armed_ns;
	uint64_t fired_ns;
};
static struct timed timed;

static void timer_fired(struct pc_wheel *w, struct pc_timer *t)
{
	struct timed *x = (struct timed *)((char *)t - offsetof(struct timed, t));
	(void)w;

	x->fired_ns = pc_now_ns();
	pc_engine_stop(pc_shard_engine());
}

static void arm_timer(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	pc_timer_init(&timed.t, timer_fired);
	timed.armed_ns = pc_now_ns();
	pc_reactor_timer_after(pc_shard_reactor(), &timed.t, 5000000);
}

struct piped {
	int p[2];
	_Atomic int got;
};
static struct piped piped;

static void pipe_ready(struct pc_reactor *r, int fd, unsigned ev, void *arg)
{
	char c;
	(void)arg;

	RT_CHECK(ev & PC_EV_IN, "events %x", ev);
	RT_CHECK(read(fd, &c, 1) == 1 && c == 'k', "pipe byte");
	pc_reactor_del(r, fd);
	atomic_store(&piped.got, 1);
	pc_engine_stop(pc_shard_engine());
}

static void watch_pipe(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 1)
		RT_CHECK(pc_reactor_add(pc_shard_reactor(), piped.p[0], PC_EV_IN, pipe_ready, NULL) == 0,
			 "add pipe");
}

static bool shard1_asleep(void)
{
	struct pc_shard_stats st;

	pc_engine_stats_read(engine, 1, &st);
	return st.sleeps > 0;
}

static void timers_and_fds_wake_sleepers(void **state)
{
	(void)state;
	for (int b = PC_BACKEND_EPOLL; b <= PC_BACKEND_URING; b++) {
		struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);

		c.backend = (enum pc_backend)b;
		c.on_start = arm_timer;
		timed.fired_ns = 0;
		start(&c);
		finish();
		assert_true(timed.fired_ns >= timed.armed_ns + 5000000);
		pc_engine_destroy(engine);

		c.on_start = watch_pipe;
		assert_int_equal(pipe2(piped.p, O_NONBLOCK | O_CLOEXEC), 0);
		atomic_store(&piped.got, 0);
		start(&c);
		wait_for(shard1_asleep, "shard 1 to sleep");
		assert_int_equal(write(piped.p[1], "k", 1), 1);
		finish();
		assert_int_equal(atomic_load(&piped.got), 1);
		close(piped.p[0]);
		close(piped.p[1]);
		pc_engine_destroy(engine);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_configurations_are_refused),
		cmocka_unit_test(off_shard_calls_say_so),
		cmocka_unit_test(idle_names_round_trip),
		cmocka_unit_test(placement_pins_or_not),
		cmocka_unit_test(sched_batch_applies_to_every_shard),
		cmocka_unit_test(shards_on_every_cpu_float),
		cmocka_unit_test(stop_while_asleep),
		cmocka_unit_test(mesh_policy_polls_after_messages),
		cmocka_unit_test(await_policy_polls_while_answers_are_due),
		cmocka_unit_test(stop_while_busy),
		cmocka_unit_test(destroy_stops_and_joins),
		cmocka_unit_test(stop_from_a_signal),
		cmocka_unit_test(caller_runs_shard0),
		cmocka_unit_test(external_submit),
		cmocka_unit_test(live_statistics),
		cmocka_unit_test(timers_and_fds_wake_sleepers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
