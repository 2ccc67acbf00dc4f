/* SPDX-License-Identifier: MIT */
/* The stall detector: a handler that spins 100 ms gets exactly one
 * warning, whose backtrace names the spinning function, and the shard's
 * stall count is 1; a shard that only sleeps idle gets none, nor one
 * whose handler sleeps (not running is not stalling); past five
 * warnings a minute stalls are counted without one. Linked with
 * -rdynamic so that backtrace_symbols names this program's functions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log_util.h"
#include "percore/clock.h"
#include "testmain.h"

#define THRESHOLD_MS 25

/* Not static, not inlined: its name is what the backtrace must show.
 * Spins 100 ms, and on a machine so loaded that the watchdog has not run
 * by then, on until it has counted the stall (at most 10 s more), so the
 * test checks the warning, never the scheduler. */
struct spin {
	struct pc_engine *e;  /* NULL: 100 ms, whatever was counted */
	uint64_t stalls;      /* spin on until shard 0 has this many */
	uint64_t turns;       /* out: shard 0's turn count during the spin */
};

__attribute__((noinline)) void stall_test_spin_100ms(void *arg)
{
	struct spin *sp = arg;
	struct pc_shard_stats st = { .stalls = 0 };
	uint64_t t0 = pc_now_ns(), t;

	do {
		t = pc_elapsed(pc_now_ns(), t0);
		if (sp && t >= 100000000)
			pc_engine_stats_read(sp->e, 0, &st);
	} while (t < 100000000 || (sp && st.stalls < sp->stalls && t < 10000000000ull));
	if (sp)
		sp->turns = st.turns;
}

/* Until shard 0 has finished the turn that ran the spin (bounded): a
 * spin submitted sooner may run in that same turn, and two handlers in
 * one turn are one stall, the loop never having come back in between. */
static void wait_turn_after(struct pc_engine *e, const struct spin *sp)
{
	struct pc_shard_stats st = { .turns = 0 };
	uint64_t t0 = pc_now_ns();

	do {
		assert_int_equal(pc_engine_stats_read(e, 0, &st), 0);
		if (st.turns > sp->turns)
			return;
		usleep(1000);
	} while (pc_elapsed(pc_now_ns(), t0) < 10000000000ull);
	fail_msg("shard 0 did not finish its turn");
}

static void open_log(char *path, size_t len)
{
	struct pc_log_cfg c;

	log_tmp_path(path, len, "stall");
	pc_log_cfg_init(&c);
	c.file = path;
	assert_int_equal(pc_log_open(&c, NULL, 0), 0);
}

static void spinning_handler_warns_once(void **state)
{
	char path[128];
	struct pc_engine *e;
	char *text = NULL, *warn;
	(void)state;

	open_log(path, sizeof(path));
	e = log_engine(1, THRESHOLD_MS);
	assert_non_null(e);
	assert_int_equal(log_on_shard(e, 0, stall_test_spin_100ms, &(struct spin){ e, 1, 0 }), 0);
	/* The line that the shard is back comes at the watchdog's next look
	 * after the spin. */
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(pc_log_flush(), 0);
		text = log_slurp(path);
		if (strstr(text, "msg=\"shard 0 back in its loop after "))
			break;
		free(text);
		text = NULL;
		usleep(10000);
	}
	assert_non_null(text);
	pc_engine_destroy(e);
	assert_int_equal(log_count(text, "level=warn"), 1);
	warn = strstr(text, "level=warn shard=-1 msg=\"shard 0 stalled: not back to its loop for ");
	assert_non_null(warn);
	*strchr(warn, '\n') = '\0';
	assert_non_null(strstr(warn, " stalled_shard=0 threshold_ms=25 unreported_before=0 "));
	assert_non_null(strstr(warn, "stall_test_spin_100ms"));
	assert_int_equal(strtoul(strstr(warn, "stuck_ms=") + 9, NULL, 10) >= THRESHOLD_MS, 1);
	free(text);
	pc_log_close();
	unlink(path);
}

static void count_is_one(void **state)
{
	struct pc_shard_stats st;
	char path[128];
	struct pc_engine *e;
	(void)state;

	open_log(path, sizeof(path));
	e = log_engine(1, THRESHOLD_MS);
	assert_non_null(e);
	assert_int_equal(log_on_shard(e, 0, stall_test_spin_100ms, &(struct spin){ e, 1, 0 }), 0);
	assert_int_equal(pc_engine_stats_read(e, 0, &st), 0);
	assert_int_equal(st.stalls, 1);
	pc_engine_destroy(e);
	pc_log_close();
	unlink(path);
}

/* Seven stalls in a row: all counted, five reported (the rest of the
 * minute's are left out, so a machine where shards stall all the time
 * does not pay a backtrace for each). */
static void reports_are_limited(void **state)
{
	struct pc_shard_stats st;
	char path[128];
	struct pc_engine *e;
	char *text;
	(void)state;

	open_log(path, sizeof(path));
	e = log_engine(1, THRESHOLD_MS);
	assert_non_null(e);
	for (uint64_t k = 1; k <= 7; k++) {
		struct spin sp = { e, k, 0 };

		assert_int_equal(log_on_shard(e, 0, stall_test_spin_100ms, &sp), 0);
		wait_turn_after(e, &sp);
	}
	assert_int_equal(pc_engine_stats_read(e, 0, &st), 0);
	assert_int_equal(st.stalls, 7);
	pc_engine_destroy(e);
	assert_int_equal(pc_log_flush(), 0);
	text = log_slurp(path);
	assert_int_equal(log_count(text, "level=warn"), 5);
	assert_int_equal(log_count(text, " unreported_before=0 "), 5);
	free(text);
	pc_log_close();
	unlink(path);
}

static void nothing(void *arg)
{
	(void)arg;
}

/* Idle shards sleep in their reactor's wait for many thresholds: no
 * warning, no count. A message in between wakes one briefly. */
static void idle_shard_gets_none(void **state)
{
	struct pc_shard_stats st;
	char path[128];
	struct pc_engine *e;
	char *text;
	(void)state;

	open_log(path, sizeof(path));
	e = log_engine(2, THRESHOLD_MS);
	assert_non_null(e);
	usleep(150000);
	assert_int_equal(log_on_shard(e, 1, nothing, NULL), 0);
	usleep(150000);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(pc_engine_stats_read(e, i, &st), 0);
		assert_int_equal(st.stalls, 0);
	}
	pc_engine_destroy(e);
	assert_int_equal(pc_log_flush(), 0);
	text = log_slurp(path);
	assert_null(strstr(text, "stalled"));
	free(text);
	pc_log_close();
	unlink(path);
}

/* Asleep 150 ms (six thresholds), in small naps so that the watchdog
 * looks many times meanwhile. */
static void sleep_150ms(void *arg)
{
	uint64_t t0 = pc_now_ns();

	(void)arg;
	while (pc_elapsed(pc_now_ns(), t0) < 150000000)
		usleep(5000);
}

/* A stall is the shard's own code holding the CPU: a handler asleep (or
 * a thread waiting for a CPU) is not running, so it gets no warning and
 * no count, while a spinning one does (spinning_handler_warns_once). */
static void sleeping_handler_is_not_a_stall(void **state)
{
	struct pc_shard_stats st;
	char path[128];
	struct pc_engine *e;
	char *text;
	(void)state;

	open_log(path, sizeof(path));
	e = log_engine(1, THRESHOLD_MS);
	assert_non_null(e);
	assert_int_equal(log_on_shard(e, 0, sleep_150ms, NULL), 0);
	assert_int_equal(pc_engine_stats_read(e, 0, &st), 0);
	assert_int_equal(st.stalls, 0);
	pc_engine_destroy(e);
	assert_int_equal(pc_log_flush(), 0);
	text = log_slurp(path);
	assert_null(strstr(text, "stalled"));
	free(text);
	pc_log_close();
	unlink(path);
}

/* Threshold 0: no watchdog, so the spin goes uncounted. */
static void threshold_zero_is_off(void **state)
{
	struct pc_shard_stats st;
	struct pc_engine *e = log_engine(1, 0);
	(void)state;

	assert_non_null(e);
	assert_int_equal(log_on_shard(e, 0, stall_test_spin_100ms, NULL), 0);
	assert_int_equal(pc_engine_stats_read(e, 0, &st), 0);
	assert_int_equal(st.stalls, 0);
	pc_engine_destroy(e);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spinning_handler_warns_once),
		cmocka_unit_test(count_is_one),
		cmocka_unit_test(reports_are_limited),
		cmocka_unit_test(idle_shard_gets_none),
		cmocka_unit_test(sleeping_handler_is_not_a_stall),
		cmocka_unit_test(threshold_zero_is_off),
	};
	return pc_test_main(tests, argc, argv);
}
