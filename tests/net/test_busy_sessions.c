/* SPDX-License-Identifier: MIT */
/* Busy sessions are never timed out: 64 connections with 4 frames in
 * flight each, for several seconds, against a server whose idle timeout
 * (or heartbeat interval) is one second. A session that received bytes
 * within the timeout is not idle, however far the shard's timer tick lags
 * the clock that stamped its last read; a session that keeps talking is
 * never sent a heartbeat request (the load generator would see it as a
 * frame it did not ask for).
 *
 * The clients run in this process: when the machine does not run it for
 * a good part of a second (every CPU busy with other suites), they send
 * nothing meanwhile, and the server rightly finds them quiet. A thread
 * here measures the longest such stall; a run that failed with one of
 * STALL_MS or more says so and runs again, up to ATTEMPTS runs. A run
 * without one is judged as it is, so the test still fails on a server
 * that times out a busy session. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"
#include "percore/load.h"

enum { CONNS = 64, DEPTH = 4, RUN_MS = 4500, TIMEOUT_MS = 1000, STALL_MS = TIMEOUT_MS / 4,
       ATTEMPTS = 3 };

/* The longest time the watching thread, asking to run every millisecond,
 * went without running. */
struct stall_watch {
	pthread_t thread;
	atomic_bool stop;
	uint64_t longest_ns; /* read after the join */
};

static void *watch_stalls(void *arg)
{
	struct stall_watch *w = arg;
	uint64_t last = pc_now_ns();

	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
		uint64_t now = pc_now_ns();
		uint64_t gap = pc_elapsed(now, last);

		if (gap > w->longest_ns)
			w->longest_ns = gap;
		last = now;
	}
	return NULL;
}

static void watch_start(struct stall_watch *w)
{
	w->longest_ns = 0;
	atomic_init(&w->stop, false);
	assert_int_equal(pthread_create(&w->thread, NULL, watch_stalls, w), 0);
}

static uint64_t watch_end(struct stall_watch *w)
{
	atomic_store_explicit(&w->stop, true, memory_order_relaxed);
	assert_int_equal(pthread_join(w->thread, NULL), 0);
	return w->longest_ns;
}

/* Whether the run's figures show a session taken for quiet. */
static bool found_quiet(const struct pc_load_result *r, const struct pc_server_stats *st)
{
	return st->closed_reason[PC_CLOSE_IDLE] || st->heartbeats_out || r->errors || r->lost;
}

/* One run. Returns false, having said why, when it found a session
 * quiet while this process was stalled for STALL_MS or more: not a
 * verdict on the server. */
static bool drive(struct pc_server_cfg *c)
{
	struct pc_server *srv = TU_SERVE(c);
	struct pc_load_cfg l;
	struct pc_load_result r;
	struct stall_watch w;
	char err[200];

	pc_load_cfg_init(&l);
	l.port = pc_server_port(srv);
	l.engine.placement = "off";
	l.engine.idle = PC_IDLE_SLEEP;
	l.engine.shards = 2;
	l.engine.oversubscribe = true;
	l.conns = CONNS;
	l.depth = DEPTH;
	l.size_min = 1;
	l.size_max = 512;
	l.duration_ns = (uint64_t)RUN_MS * 1000000;
	watch_start(&w);
	int rc = pc_load_run(&l, &r, err, sizeof(err));
	uint64_t stall_ms = watch_end(&w) / 1000000;
	if (rc)
		fprintf(stderr, "load: %s\n", err);
	assert_int_equal(rc, 0);
	if (r.errors)
		fprintf(stderr, "load errors %llu: %s\n", (unsigned long long)r.errors, r.first_error);
	/* Idle closes, seen now, while every session was busy until the end. */
	struct pc_server_stats st = tu_stats(srv);
	fprintf(stderr, "%llu messages; closed idle %llu; heartbeats sent %llu; longest stall %llu ms\n",
		(unsigned long long)r.messages, (unsigned long long)st.closed_reason[PC_CLOSE_IDLE],
		(unsigned long long)st.heartbeats_out, (unsigned long long)stall_ms);
	if (found_quiet(&r, &st) && stall_ms >= STALL_MS) {
		fprintf(stderr, "this process was not run for %llu ms: its clients were quiet; "
			"running again\n", (unsigned long long)stall_ms);
		pc_load_result_fini(&r);
		tu_stop(srv);
		return false;
	}
	assert_int_equal(st.closed_reason[PC_CLOSE_IDLE], 0);
	assert_int_equal(st.heartbeats_out, 0);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.lost, 0);
	assert_true(r.messages >= CONNS * DEPTH);
	/* The clients' EOF is handled before any timer of the same turn: all
	 * end as closed by the peer. */
	assert_true(TU_WAIT_STAT(srv, closed, CONNS));
	st = tu_stats(srv);
	assert_int_equal(st.closed_reason[PC_CLOSE_PEER], CONNS);
	assert_int_equal(st.frames_in, r.messages);
	pc_load_result_fini(&r);
	tu_stop(srv);
	return true;
}

/* Runs until one run is judged, at most ATTEMPTS. */
static void drive_judged(struct pc_server_cfg *c)
{
	for (int i = 0; i < ATTEMPTS; i++)
		if (drive(c))
			return;
	fail_msg("every one of %d runs found sessions quiet while this process was stalled "
		 "for %d ms or more: the machine is too busy to judge", ATTEMPTS, STALL_MS);
}

static void test_busy_never_idle(void **state)
{
	struct pc_server_cfg c;

	(void)state;
	tu_cfg(&c, 2);
	c.idle_timeout_ms = TIMEOUT_MS;
	drive_judged(&c);
}

static void test_busy_never_pinged(void **state)
{
	struct pc_server_cfg c;

	(void)state;
	tu_cfg(&c, 2);
	c.heartbeat_ms = TIMEOUT_MS;
	drive_judged(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_never_idle),
		cmocka_unit_test(test_busy_never_pinged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
