/* SPDX-License-Identifier: MIT */
/* Busy sessions are never timed out: 64 connections with 4 frames in
 * flight each, for several seconds, against a server whose idle timeout
 * (or heartbeat interval) is one second. A session that received bytes
 * within the timeout is not idle, however far the shard's timer tick lags
 * the clock that stamped its last read; a session that keeps talking is
 * never sent a heartbeat request (the load generator would see it as a
 * frame it did not ask for). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"
#include "percore/load.h"

enum { CONNS = 64, DEPTH = 4, RUN_MS = 4500, TIMEOUT_MS = 1000 };

static void drive(struct pc_server_cfg *c)
{
	struct pc_server *srv = TU_SERVE(c);
	struct pc_load_cfg l;
	struct pc_load_result r;
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
	int rc = pc_load_run(&l, &r, err, sizeof(err));
	if (rc)
		fprintf(stderr, "load: %s\n", err);
	assert_int_equal(rc, 0);
	if (r.errors)
		fprintf(stderr, "load errors %llu: %s\n", (unsigned long long)r.errors, r.first_error);
	/* Idle closes, seen now, while every session was busy until the end. */
	struct pc_server_stats st = tu_stats(srv);
	fprintf(stderr, "%llu messages; closed idle %llu; heartbeats sent %llu\n",
		(unsigned long long)r.messages, (unsigned long long)st.closed_reason[PC_CLOSE_IDLE],
		(unsigned long long)st.heartbeats_out);
	assert_int_equal(st.closed_reason[PC_CLOSE_IDLE], 0);
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
}

static void test_busy_never_idle(void **state)
{
	struct pc_server_cfg c;

	(void)state;
	tu_cfg(&c, 2);
	c.idle_timeout_ms = TIMEOUT_MS;
	drive(&c);
}

static void test_busy_never_pinged(void **state)
{
	struct pc_server_cfg c;

	(void)state;
	tu_cfg(&c, 2);
	c.heartbeat_ms = TIMEOUT_MS;
	drive(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_never_idle),
		cmocka_unit_test(test_busy_never_pinged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
