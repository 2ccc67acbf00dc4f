/* SPDX-License-Identifier: MIT */
/* The stall detector under stress: several shards stall at once, again
 * and again, in engine after engine, and each engine stops while its
 * shards are stalled. Backtrace requests then queue behind each other,
 * time out (a sanitizer delays signals to a spinning thread) and meet
 * handlers that run late, after the request was withdrawn or while the
 * next one is made: two shards block every signal through their first
 * stall and a while past it, so the detector gives up on their
 * backtraces, and the first one's handler runs only once the second has
 * been asked. Checks: every stall is counted exactly once, and no engine
 * logs more warnings than its rate limit (5 a minute) allows. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log_util.h"
#include "percore/clock.h"
#include "testmain.h"

#define SHARDS 3
#define ROUNDS 6
#define STALLS 4            /* per shard and round, before the stop */
#define THRESHOLD_MS 10
#define REPORTS 5           /* RT_STALL_REPORTS: warnings per minute */
#define MINUTE_NS 60000000000ull
#define BOUND_NS 30000000000ull /* for anything awaited: a loaded machine */
/* Past the detector's wait for a backtrace (200 ms): how long the first
 * deaf shard goes on without signals after its stall was counted (the
 * second twice as long). */
#define DEAF_NS 300000000ull

/* One stall: the shard spins until its stall count reaches target (or
 * the engine stops), so each stall lasts just as long as detecting it
 * takes, and the test never depends on how long that is. */
struct job {
	struct pc_engine *e;
	unsigned shard;
	uint64_t target;
	uint64_t deaf_ns;  /* nonzero: with signals blocked, and this long on */
	uint64_t turns;  /* out: the shard's turn count during the spin */
	_Atomic int started, done;
};

/* Spins until the shard's stall count reaches j->target; stopped
 * engine or not, never longer than BOUND_NS (+ j->deaf_ns). */
static uint64_t spin_to(struct job *j, struct pc_shard_stats *st, uint64_t t0)
{
	do
		pc_engine_stats_read(j->e, j->shard, st);
	while (st->stalls < j->target && !pc_engine_stopping(j->e) &&
	       pc_elapsed(pc_now_ns(), t0) < BOUND_NS);
	return pc_now_ns();
}

static void stall_until_counted(void *arg)
{
	struct job *j = arg;
	struct pc_shard_stats st = { .stalls = 0 };
	sigset_t all, old;
	uint64_t t0 = pc_now_ns(), t1;

	atomic_store_explicit(&j->started, 1, memory_order_relaxed);
	sigfillset(&all);
	if (j->deaf_ns)
		pthread_sigmask(SIG_BLOCK, &all, &old);
	t1 = spin_to(j, &st, t0);
	while (j->deaf_ns && pc_elapsed(pc_now_ns(), t1) < j->deaf_ns)
		pc_engine_stats_read(j->e, j->shard, &st);
	if (j->deaf_ns)
		pthread_sigmask(SIG_SETMASK, &old, NULL); /* the late handler runs */
	j->turns = st.turns;
	atomic_store_explicit(&j->done, 1, memory_order_release);
}

static void submit_all(struct pc_engine *e, struct job *jobs, uint64_t target)
{
	for (unsigned i = 0; i < SHARDS; i++) {
		/* In the first stall (all reported), shards 0 and 1 deaf:
		 * the detector gives up on 0, then asks 1, and 0's handler
		 * runs while 1 is asked, then 1's after that request too. */
		jobs[i] = (struct job){ .e = e, .shard = i, .target = target,
					.deaf_ns = i < 2 && target == 1 ? (i + 1) * DEAF_NS : 0 };
		assert_int_equal(pc_engine_submit(e, i, stall_until_counted, &jobs[i]), 0);
	}
}

/* Until the spin has returned and its shard has finished that turn: the
 * next spin must start a new stall, not extend this one. */
static void wait_back(struct pc_engine *e, const struct job *j)
{
	struct pc_shard_stats st = { .turns = 0 };
	uint64_t t0 = pc_now_ns();

	while (!atomic_load_explicit(&j->done, memory_order_acquire) ||
	       (pc_engine_stats_read(e, j->shard, &st), st.turns <= j->turns)) {
		if (pc_elapsed(pc_now_ns(), t0) >= BOUND_NS)
			fail_msg("shard %u did not come back from stall %llu", j->shard,
				 (unsigned long long)j->target);
		usleep(200);
	}
}

/* Until every shard is in its spin (a message not run by the stop is
 * dropped, and this one must run). */
static void wait_started(const struct job *jobs)
{
	uint64_t t0 = pc_now_ns();

	for (unsigned i = 0; i < SHARDS; i++)
		while (!atomic_load_explicit(&jobs[i].started, memory_order_relaxed)) {
			if (pc_elapsed(pc_now_ns(), t0) >= BOUND_NS)
				fail_msg("shard %u did not start its last stall", i);
			usleep(200);
		}
}

/* Warnings allowed for `stalls` stalls over `ns`: five in each minute
 * begun, never more than were counted. */
static unsigned allowed(uint64_t stalls, uint64_t ns)
{
	uint64_t n = REPORTS * (1 + ns / MINUTE_NS);

	return (unsigned)(stalls < n ? stalls : n);
}

static uint64_t one_round(unsigned round)
{
	struct job jobs[SHARDS];
	struct pc_shard_stats st;
	struct pc_log_cfg c;
	uint64_t total = 0, t0 = pc_now_ns(), ns;
	char path[128], *text;
	struct pc_engine *e;
	unsigned warned;

	log_tmp_path(path, sizeof(path), "stall_stress");
	pc_log_cfg_init(&c);
	c.file = path;
	assert_int_equal(pc_log_open(&c, NULL, 0), 0);
	e = log_engine(SHARDS, THRESHOLD_MS);
	assert_non_null(e);
	for (uint64_t k = 1; k <= STALLS; k++) {
		submit_all(e, jobs, k);
		for (unsigned i = 0; i < SHARDS; i++)
			wait_back(e, &jobs[i]);
	}
	for (unsigned i = 0; i < SHARDS; i++) {
		assert_int_equal(pc_engine_stats_read(e, i, &st), 0);
		assert_int_equal(st.stalls, STALLS);
	}
	/* Stop while every shard stalls, at a point that moves across the
	 * detection (threshold, look, backtrace request) from round to
	 * round; a stall caught by then is counted once, else not at all. */
	submit_all(e, jobs, STALLS + 1);
	wait_started(jobs);
	usleep(round * THRESHOLD_MS * 1000 / 2);
	pc_engine_stop(e);
	assert_int_equal(pc_engine_join(e), 0);
	for (unsigned i = 0; i < SHARDS; i++) {
		assert_int_equal(atomic_load(&jobs[i].done), 1);
		assert_int_equal(pc_engine_stats_read(e, i, &st), 0);
		assert_in_range(st.stalls, STALLS, STALLS + 1);
		total += st.stalls;
	}
	pc_engine_destroy(e);
	ns = pc_elapsed(pc_now_ns(), t0);
	assert_int_equal(pc_log_flush(), 0);
	text = log_slurp(path);
	warned = log_count(text, " stalled: not back to its loop for ");
	/* Within a minute exactly the first five are reported; a round that
	 * a loaded machine stretched past one may have more, still bounded. */
	if (ns < MINUTE_NS)
		assert_int_equal(warned, allowed(total, ns));
	else
		assert_in_range(warned, REPORTS, allowed(total, ns));
	free(text);
	pc_log_close();
	unlink(path);
	return total;
}

static void every_stall_counted_once(void **state)
{
	(void)state;
	for (unsigned r = 0; r < ROUNDS; r++)
		assert_in_range(one_round(r), SHARDS * STALLS, SHARDS * (STALLS + 1));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_stall_counted_once),
	};
	return pc_test_main(tests, argc, argv);
}
