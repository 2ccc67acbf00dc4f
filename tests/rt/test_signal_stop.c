/* SPDX-License-Identifier: MIT */
/* SIGINT and SIGTERM from outside stop a program's engine cleanly: a
 * child process runs an engine whose shards are busy, says it is ready,
 * and must exit 0 (joined, statistics intact) soon after the signal. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/clock.h"
#include "percore/engine.h"
#include "percore/shard.h"

static void spin_msg(void *arg)
{
	/* Keep every shard busy: each message sends itself on. */
	pc_shard_submit(((unsigned)pc_shard_id() + 1) % pc_shard_count(), spin_msg, arg);
}

static void kick(void *arg)
{
	spin_msg(arg);
}

static int child(int ready_fd)
{
	struct pc_engine_cfg c;
	struct pc_engine *e;
	struct pc_shard_stats st = { 0 };

	pc_engine_cfg_init(&c);
	c.shards = 2;
	c.oversubscribe = true;
	c.on_start = kick;
	if (pc_engine_start(&c, &e, NULL, 0) || pc_engine_stop_on_signals(e))
		return 3;
	/* Ready once messages are seen to run, however slow the machine:
	 * the signal must stop an engine at work. */
	for (uint64_t t0 = pc_now_ns(); !st.msgs_in; usleep(1000)) {
		if (pc_now_ns() - t0 > 10000000000ull)
			return 6;
		pc_engine_stats_read(e, 0, &st);
	}
	if (write(ready_fd, "r", 1) != 1)
		return 4;
	pc_engine_join(e);
	pc_engine_stats_read(e, 0, &st);
	pc_engine_destroy(e);
	return st.msgs_in > 0 ? 0 : 5;
}

static void stops_on(int sig)
{
	int p[2], status;
	char c;
	pid_t pid;
	uint64_t t0;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(child(p[1]));
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(kill(pid, sig), 0);
	t0 = pc_now_ns();
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (pc_now_ns() - t0 > 10000000000ull) {
			kill(pid, SIGKILL);
			fail_msg("no exit 10 s after signal %d", sig);
		}
		usleep(1000);
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void sigint_stops(void **state)
{
	(void)state;
	stops_on(SIGINT);
}

static void sigterm_stops(void **state)
{
	(void)state;
	stops_on(SIGTERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sigint_stops),
		cmocka_unit_test(sigterm_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
