/* SPDX-License-Identifier: MIT */
/* The runner end to end over benchmarks of this program's own: a threaded
 * one, one that skips, one with manual time, one that pauses, one with
 * counters and rates. Checks the JSON layout row by row, the skip, the
 * pinning, the calibration target and the interleaved order. */
#define _GNU_SOURCE 1
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "percore/bench.h"
#include "percore/clock.h"
#include "percore/defs.h"

#define MIN_TIME 0.002
#define PAUSE_NS 50000000ull    /* each T/pause run sleeps this long paused */

/* ---- the benchmarks -------------------------------------------------------- */

/* Every run() call on thread 0, in order: the runner's visible schedule. */
struct call {
	const struct pc_bench *b;
	bool affinity;
};
static struct call calls[4096];
static atomic_uint ncalls;

static void log_call(const struct pc_bench_state *st)
{
	unsigned i;

	if (st->thread_index != 0)
		return;
	i = atomic_fetch_add(&ncalls, 1);
	if (i < PC_ARRAY_LEN(calls))
		calls[i] = (struct call){ st->bench, st->affinity };
}

static atomic_int setups, teardowns, bad_ctx;

static int counted_setup(struct pc_bench_state *st)
{
	st->ctx = malloc(64);
	atomic_fetch_add(&setups, 1);
	return st->ctx ? 0 : -ENOMEM;
}

static void counted_teardown(struct pc_bench_state *st)
{
	free(st->ctx);
	atomic_fetch_add(&teardowns, 1);
}

static void spin(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		PC_DO_NOT_OPTIMIZE(i);
}

static void add_run(struct pc_bench_state *st)
{
	if (!st->ctx)
		atomic_fetch_add(&bad_ctx, 1);
	log_call(st);
	spin(st->iterations);
	pc_bench_counter(st, "answer", 41);
	pc_bench_counter(st, "answer", 42);     /* the same name replaces */
	pc_bench_counter(st, "iters", (double)st->iterations);
}
static const struct pc_bench add_bench = {
	.name = "T/add", .setup = counted_setup, .run = add_run,
	.teardown = counted_teardown,
};
PC_BENCH_REGISTER(add_bench)

/* Two items and 64 bytes per iteration. */
static void bytes_run(struct pc_bench_state *st)
{
	log_call(st);
	spin(st->iterations);
	st->items = 2 * st->iterations;
	st->bytes = 64 * st->iterations;
}
static const struct pc_bench bytes_bench = { .name = "T/bytes", .run = bytes_run };
PC_BENCH_REGISTER(bytes_bench)

/* What the threads of T/threads saw. */
static atomic_int thr_pinned_ok, thr_pinned_bad, thr_unpinned_ok, thr_unpinned_bad;
static atomic_int thr_index_seen[2], barrier_bad;

static int threads_setup(struct pc_bench_state *st)
{
	atomic_int *arrived = calloc(1, sizeof(*arrived));

	st->ctx = arrived;
	return arrived ? 0 : -ENOMEM;
}

static void threads_run(struct pc_bench_state *st)
{
	atomic_int *arrived = st->ctx;

	log_call(st);
	if (st->thread_index < 2)
		atomic_fetch_add(&thr_index_seen[st->thread_index], 1);
	if (st->affinity) {
		bool ok = st->cpu >= 0 && sched_getcpu() == st->cpu;
		atomic_fetch_add(ok ? &thr_pinned_ok : &thr_pinned_bad, 1);
	} else {
		atomic_fetch_add(st->cpu == -1 ? &thr_unpinned_ok : &thr_unpinned_bad, 1);
	}
	/* Both threads arrive before either passes. */
	atomic_fetch_add(arrived, 1);
	pc_bench_barrier(st);
	if (atomic_load(arrived) != 2)
		atomic_fetch_add(&barrier_bad, 1);
	spin(st->iterations);
}

static void free_ctx(struct pc_bench_state *st)
{
	free(st->ctx);
}

static const struct pc_bench threads_bench = {
	.name = "T/threads", .threads = 2, .setup = threads_setup, .run = threads_run,
	.teardown = free_ctx,
};
PC_BENCH_REGISTER(threads_bench)

static atomic_int skip_ran;

static int skip_setup(struct pc_bench_state *st)
{
	(void)st;
	return -ENOTSUP;
}

static void skip_run(struct pc_bench_state *st)
{
	(void)st;
	atomic_fetch_add(&skip_ran, 1);
}
static const struct pc_bench skip_bench = {
	.name = "T/skip", .setup = skip_setup, .run = skip_run,
};
PC_BENCH_REGISTER(skip_bench)

/* Reports 1 us per iteration whatever the clock says. */
static void manual_run(struct pc_bench_state *st)
{
	log_call(st);
	st->manual_ns = st->iterations * 1000;
}
static const struct pc_bench manual_bench = {
	.name = "T/manual", .flags = PC_BENCH_MANUAL_TIME, .run = manual_run,
};
PC_BENCH_REGISTER(manual_bench)

static atomic_int pauses;

/* Sleeps PAUSE_NS paused twice around a timed loop, and reports as
 * "own_ns" the unpaused time by its own clock reads: what the runner must
 * measure, give or take the instants around the call. */
static void pause_run(struct pc_bench_state *st)
{
	struct timespec ts = { 0, (long)PAUSE_NS };
	uint64_t t0 = pc_now_ns(), p, paused;

	pc_bench_pause(st);
	nanosleep(&ts, NULL);
	pc_bench_resume(st);
	paused = pc_now_ns() - t0;
	atomic_fetch_add(&pauses, 1);
	spin(st->iterations);
	p = pc_now_ns();
	pc_bench_pause(st);     /* left open: ends when run() returns */
	nanosleep(&ts, NULL);
	paused += pc_now_ns() - p;
	pc_bench_counter(st, "own_ns", (double)(pc_now_ns() - t0 - paused));
}
static const struct pc_bench pause_bench = { .name = "T/pause", .run = pause_run };
PC_BENCH_REGISTER(pause_bench)

static void full_run(struct pc_bench_state *st)
{
	spin(st->iterations);
}
static const struct pc_bench full_bench = {
	.name = "T/full", .flags = PC_BENCH_FULL, .run = full_run,
};
PC_BENCH_REGISTER(full_bench)

/* A server row: pinned in the default suite, unpinned only in the full. */
static const struct pc_bench server_bench = {
	.name = "T/server", .flags = PC_BENCH_AFFINITY | PC_BENCH_UNPINNED_FULL,
	.run = full_run,
};
PC_BENCH_REGISTER(server_bench)

/* Whether T/where ran on one CPU only, through every repetition. */
static atomic_int where_one_cpu, where_more_cpus;

static void where_run(struct pc_bench_state *st)
{
	cpu_set_t set;

	spin(st->iterations);
	if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1)
		atomic_fetch_add(&where_one_cpu, 1);
	else
		atomic_fetch_add(&where_more_cpus, 1);
}
static const struct pc_bench where_bench = { .name = "T/where", .run = where_run };
PC_BENCH_REGISTER(where_bench)

/* Refused at registration: a second "T/add", and one without run(). */
/* Rows whose repetitions fail now and then. Each iteration claims a full
 * second of manual time, so calibration is one trial and the calls are
 * numbered: call 1 calibrates, calls 2.. are the repetitions. */
static atomic_int flaky_setups, failrun_calls, allfail_calls;

static void second_per_iteration(struct pc_bench_state *st)
{
	st->manual_ns = st->iterations * 1000000000ull;
}

/* setup fails in the second repetition (a server that did not start) */
static int flaky_setup(struct pc_bench_state *st)
{
	(void)st;
	return atomic_fetch_add(&flaky_setups, 1) + 1 == 3 ? -EADDRINUSE : 0;
}
static const struct pc_bench flaky_bench = {
	.name = "T/flaky", .flags = PC_BENCH_MANUAL_TIME, .setup = flaky_setup,
	.run = second_per_iteration,
};
PC_BENCH_REGISTER(flaky_bench)

/* thread 1 says the third repetition failed (a helper that died) */
static void failrun_run(struct pc_bench_state *st)
{
	second_per_iteration(st);
	if (st->thread_index == 1 && atomic_fetch_add(&failrun_calls, 1) + 1 == 4)
		pc_bench_fail(st, "the helper exited");
}
static const struct pc_bench failrun_bench = {
	.name = "T/failrun", .threads = 2, .flags = PC_BENCH_MANUAL_TIME, .run = failrun_run,
};
PC_BENCH_REGISTER(failrun_bench)

/* every repetition after calibration fails */
static void allfail_run(struct pc_bench_state *st)
{
	second_per_iteration(st);
	if (atomic_fetch_add(&allfail_calls, 1) > 0)
		pc_bench_fail(st, "no reply");
}
static const struct pc_bench allfail_bench = {
	.name = "T/allfail", .flags = PC_BENCH_MANUAL_TIME, .run = allfail_run,
};
PC_BENCH_REGISTER(allfail_bench)

static const struct pc_bench dup_bench = { .name = "T/add", .run = full_run };
PC_BENCH_REGISTER(dup_bench)
static const struct pc_bench norun_bench = { .name = "T/norun" };
PC_BENCH_REGISTER(norun_bench)

/* ---- helpers ------------------------------------------------------------------- */

static struct pc_bench_options opts(const char *filter, unsigned reps)
{
	struct pc_bench_options o;

	pc_bench_options_init(&o);
	o.filter = filter;
	o.repetitions = reps;
	o.min_time = MIN_TIME;
	o.progress = NULL;
	return o;
}

static struct pc_bench_session *run_session(const struct pc_bench_options *o, int want)
{
	struct pc_bench_session *s;
	char why[256] = "";

	assert_int_equal(pc_bench_session_create(o, &s, why, sizeof(why)), 0);
	atomic_store(&ncalls, 0);
	assert_int_equal(pc_bench_session_run(s), want);
	return s;
}

/* The session's JSON, printed and parsed back as a reader would see it. */
static cJSON *reparse(const struct pc_bench_session *s, cJSON *extra)
{
	cJSON *root = pc_bench_session_json(s, extra), *back;
	char *text;

	assert_non_null(root);
	text = cJSON_PrintUnformatted(root);
	assert_non_null(text);
	back = cJSON_Parse(text);
	assert_non_null(back);
	free(text);
	cJSON_Delete(root);
	return back;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		fail_msg("field %s missing or not a number", key);
	return v->valuedouble;
}

static int rows_named(const cJSON *rows, const char *run_name)
{
	const cJSON *r;
	int n = 0;

	cJSON_ArrayForEach(r, rows)
		n += !strcmp(str(r, "run_name"), run_name);
	return n;
}

/* Check one benchmark's rows: reps iteration rows in order, then the six
 * aggregates. Returns the first row. */
static const cJSON *check_rows(const cJSON *rows, const char *name, int reps, int threads)
{
	static const char *const aggs[] = { "mean", "median", "stddev", "cv", "min", "max" };
	const cJSON *r, *first = NULL;
	int k = 0;
	char want[256];

	assert_int_equal(rows_named(rows, name), reps + 6);
	cJSON_ArrayForEach(r, rows) {
		if (strcmp(str(r, "run_name"), name))
			continue;
		first = first ? first : r;
		assert_int_equal(num(r, "repetitions"), reps);
		assert_int_equal(num(r, "threads"), threads);
		assert_string_equal(str(r, "time_unit"), "ns");
		assert_true(num(r, "iterations") >= 1);
		num(r, "real_time");
		num(r, "cpu_time");
		num(r, "items_per_second");
		num(r, "bytes_per_second");
		if (k < reps) {
			assert_string_equal(str(r, "name"), name);
			assert_string_equal(str(r, "run_type"), "iteration");
			assert_int_equal(num(r, "repetition_index"), k);
		} else {
			snprintf(want, sizeof(want), "%s_%s", name, aggs[k - reps]);
			assert_string_equal(str(r, "name"), want);
			assert_string_equal(str(r, "run_type"), "aggregate");
			assert_string_equal(str(r, "aggregate_name"), aggs[k - reps]);
			assert_string_equal(str(r, "aggregate_unit"),
					    k - reps == 3 ? "percentage" : "time");
			assert_true(cJSON_IsBool(cJSON_GetObjectItem(r, "noisy")));
		}
		k++;
	}
	return first;
}

static const cJSON *row(const cJSON *rows, const char *name)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, rows)
		if (!strcmp(str(r, "name"), name))
			return r;
	fail_msg("no row %s", name);
	return NULL;
}

/* ---- tests ------------------------------------------------------------------- */

static void results_layout(void **state)
{
	struct pc_bench_options o = opts("^T/(add|bytes|threads|skip|manual)", 3);
	struct pc_bench_session *s;
	cJSON *root, *rows, *pc, *extra = cJSON_CreateObject(), *r;
	(void)state;

	o.affinity = PC_BENCH_AFFINITY_MODE_BOTH;
	o.seed = 7;
	s = run_session(&o, 5);
	assert_int_equal(pc_bench_session_count(s), 6);
	cJSON_AddStringToObject(extra, "audit", "stand-in");
	root = reparse(s, extra);
	rows = cJSON_GetObjectItem(root, "benchmarks");
	assert_int_equal(cJSON_GetArraySize(rows), 5 * (3 + 6));
	check_rows(rows, "T/add", 3, 1);
	check_rows(rows, "T/bytes", 3, 1);
	check_rows(rows, "T/manual", 3, 1);
	check_rows(rows, "T/threads/affinity:on", 3, 2);
	check_rows(rows, "T/threads/affinity:off", 3, 2);
	assert_int_equal(rows_named(rows, "T/skip"), 0);
	assert_int_equal(atomic_load(&skip_ran), 0);

	/* Counters: on every repetition and aggregated. */
	r = (cJSON *)row(rows, "T/add");
	assert_float_equal(num(r, "answer"), 42, 0);
	assert_float_equal(num(r, "iters"), num(r, "iterations"), 0);
	assert_float_equal(num(row(rows, "T/add_mean"), "answer"), 42, 0);
	assert_float_equal(num(row(rows, "T/add_stddev"), "answer"), 0, 0);
	assert_int_equal(atomic_load(&setups), atomic_load(&teardowns));
	assert_int_equal(atomic_load(&bad_ctx), 0);

	/* Rates follow the items and bytes the run reported. */
	r = (cJSON *)row(rows, "T/bytes");
	assert_float_equal(num(r, "items_per_second") * num(r, "real_time") / 1e9, 2, 1e-9);
	assert_float_equal(num(r, "bytes_per_second") / num(r, "items_per_second"), 32, 1e-9);
	r = (cJSON *)row(rows, "T/add");
	assert_float_equal(num(r, "bytes_per_second"), 0, 0);

	/* Manual time is what the benchmark said; calibration reached
	 * min_time with it, growing at most tenfold past it. */
	r = (cJSON *)row(rows, "T/manual");
	assert_float_equal(num(r, "real_time"), 1000, 1e-9);
	assert_true(num(r, "iterations") * 1000 >= MIN_TIME * 1e9);
	assert_true(num(r, "iterations") * 1000 < 10 * MIN_TIME * 1e9);
	assert_float_equal(num(row(rows, "T/manual_cv"), "real_time"), 0, 0);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(row(rows, "T/manual_median"), "noisy")));

	/* Threads: pinned where affinity is on, each where the runner said. */
	assert_true(atomic_load(&thr_pinned_ok) > 0);
	assert_int_equal(atomic_load(&thr_pinned_bad), 0);
	assert_true(atomic_load(&thr_unpinned_ok) > 0);
	assert_int_equal(atomic_load(&thr_unpinned_bad), 0);
	assert_true(atomic_load(&thr_index_seen[0]) > 0);
	assert_int_equal(atomic_load(&thr_index_seen[0]), atomic_load(&thr_index_seen[1]));
	assert_int_equal(atomic_load(&barrier_bad), 0);
	assert_int_equal(num(row(rows, "T/threads/affinity:off"), "per_family_instance_index"), 1);
	assert_int_equal(num(row(rows, "T/threads/affinity:off"), "family_index"),
			 num(row(rows, "T/threads/affinity:on"), "family_index"));

	/* The percore section: build facts, options, the skip, the extra. */
	pc = cJSON_GetObjectItem(root, "percore");
	assert_true(strlen(str(pc, "version")) > 0);
	assert_true(strlen(str(pc, "git_revision")) > 0);
	assert_true(strlen(str(pc, "compiler")) > 0);
	str(pc, "flags");
	str(pc, "build_type");
	assert_string_equal(str(pc, "audit"), "stand-in");
	r = cJSON_GetObjectItem(pc, "options");
	assert_int_equal(num(r, "repetitions"), 3);
	assert_int_equal(num(r, "seed"), 7);
	assert_string_equal(str(r, "affinity"), "both");
	assert_string_equal(str(r, "suite"), "default");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "interleave")));
	r = cJSON_GetObjectItem(pc, "skipped");
	assert_int_equal(cJSON_GetArraySize(r), 1);
	assert_string_equal(str(cJSON_GetArrayItem(r, 0), "name"), "T/skip");
	assert_non_null(strstr(str(cJSON_GetArrayItem(r, 0), "reason"), "not supported"));

	r = cJSON_GetObjectItem(root, "context");
	assert_true(num(r, "num_cpus") >= 1);
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(r, "caches")));
	str(r, "date");
	str(r, "library_build_type");
	cJSON_Delete(root);
	pc_bench_session_destroy(s);
}

static void table_lists_results_and_skips(void **state)
{
	struct pc_bench_options o = opts("^T/(add|skip)$", 2);
	struct pc_bench_session *s = run_session(&o, 1);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	(void)state;

	assert_non_null(f);
	assert_int_equal(pc_bench_session_print(s, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "T/add "));
	assert_non_null(strstr(text, "time/item"));
	assert_non_null(strstr(text, "skipped: T/skip: setup failed"));
	free(text);
	pc_bench_session_destroy(s);
}

/* The entry each logged call belongs to, as an index into names. */
static int call_entry(const struct call *c, const struct pc_bench_session *s)
{
	char name[128];

	snprintf(name, sizeof(name), "%s%s", c->b->name,
		 c->b->threads > 1 ? (c->affinity ? "/affinity:on" : "/affinity:off") : "");
	for (size_t i = 0; i < pc_bench_session_count(s); i++)
		if (!strcmp(pc_bench_session_name(s, i), name))
			return (int)i;
	fail_msg("call to %s, not selected", name);
	return -1;
}

/* The order of the timed rounds: the last reps x n calls. */
static void timed_order(const struct pc_bench_session *s, unsigned reps, int *order)
{
	unsigned n = (unsigned)pc_bench_session_count(s), total = atomic_load(&ncalls);

	assert_true(total >= reps * n && total <= PC_ARRAY_LEN(calls));
	for (unsigned k = 0; k < reps * n; k++)
		order[k] = call_entry(&calls[total - reps * n + k], s);
}

static void rounds_are_shuffled_permutations(void **state)
{
	enum { REPS = 4, N = 4 };
	struct pc_bench_options o = opts("^T/(add|bytes|manual|threads)", REPS);
	struct pc_bench_session *s;
	int a[REPS * N], b[REPS * N], c[REPS * N], rounds_differ = 0;
	(void)state;

	o.seed = 11;
	s = run_session(&o, N);
	timed_order(s, REPS, a);
	pc_bench_session_destroy(s);
	for (int r = 0; r < REPS; r++) {
		bool seen[N] = { false };

		for (int k = 0; k < N; k++) {
			assert_false(seen[a[r * N + k]]);
			seen[a[r * N + k]] = true;
		}
		rounds_differ += r > 0 && memcmp(&a[r * N], &a[(r - 1) * N], sizeof(int) * N);
	}
	assert_true(rounds_differ > 0);
	/* The same seed gives the same schedule; another seed another one. */
	s = run_session(&o, N);
	timed_order(s, REPS, b);
	pc_bench_session_destroy(s);
	assert_memory_equal(a, b, sizeof(a));
	o.seed = 12;
	s = run_session(&o, N);
	timed_order(s, REPS, c);
	pc_bench_session_destroy(s);
	assert_true(memcmp(a, c, sizeof(a)) != 0);
}

static void no_interleave_runs_back_to_back(void **state)
{
	struct pc_bench_options o = opts("^T/(add|bytes|manual)$", 3);
	struct pc_bench_session *s;
	int last = -1, blocks = 0;
	(void)state;

	o.interleave = false;
	s = run_session(&o, 3);
	/* Calibration and repetitions of one benchmark, then the next: one
	 * block per benchmark, in selection order. */
	for (unsigned k = 0; k < atomic_load(&ncalls); k++) {
		int e = call_entry(&calls[k], s);

		if (e != last) {
			assert_int_equal(e, blocks);
			blocks++;
			last = e;
		}
	}
	assert_int_equal(blocks, 3);
	pc_bench_session_destroy(s);
}

/* One session of T/pause: the largest gap, over its runs, between the
 * runner's timed figure and the benchmark's own. */
static double pause_session_gap(void)
{
	struct pc_bench_options o = opts("^T/pause$", 2);
	struct pc_bench_session *s = run_session(&o, 1);
	cJSON *root = reparse(s, NULL), *r;
	double worst = 0;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(root, "benchmarks")) {
		if (strcmp(str(r, "run_type"), "iteration"))
			continue;
		double timed = num(r, "real_time") * num(r, "iterations");

		assert_true(timed > 0);
		worst = fmax(worst, fabs(timed - num(r, "own_ns")));
	}
	cJSON_Delete(root);
	pc_bench_session_destroy(s);
	return worst;
}

static void pauses_are_not_timed(void **state)
{
	double gap = 0;
	(void)state;

	/* Two paused sleeps of PAUSE_NS each run: counting either adds
	 * PAUSE_NS to every run of every session. The two figures read the
	 * clock at instants a few instructions apart, and a loaded machine
	 * may stall the thread between two of them now and then: one
	 * session of three within PAUSE_NS / 2 on every run passes. */
	for (int i = 0; i < 3; i++) {
		gap = pause_session_gap();
		if (gap < PAUSE_NS / 2)
			break;
		print_message("runner and benchmark differ by %.0f ns: again\n", gap);
	}
	assert_true(atomic_load(&pauses) > 2);
	assert_true(gap < PAUSE_NS / 2);
}

static void selection(void **state)
{
	struct pc_bench_options o = opts("^T/full$", 1);
	struct pc_bench_session *s;
	(void)state;

	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 0);
	assert_int_equal(pc_bench_session_full_only(s), 1);
	pc_bench_session_destroy(s);
	o.full = true;
	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 1);
	pc_bench_session_destroy(s);

	/* Registration refused the duplicate and the benchmark without run(). */
	o = opts("^T/(add|norun)$", 1);
	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 1);
	pc_bench_session_destroy(s);

	/* The filter sees the affinity suffix. */
	o = opts("T/threads/affinity:off", 1);
	o.affinity = PC_BENCH_AFFINITY_MODE_BOTH;
	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 1);
	assert_string_equal(pc_bench_session_name(s, 0), "T/threads/affinity:off");
	assert_int_equal(pc_bench_session_threads(s, 0), 2);
	pc_bench_session_destroy(s);
	o.affinity = PC_BENCH_AFFINITY_MODE_ON;
	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 0);
	pc_bench_session_destroy(s);

	/* A server row's unpinned entry belongs to the full suite. */
	o = opts("^T/server", 1);
	o.affinity = PC_BENCH_AFFINITY_MODE_BOTH;
	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 1);
	assert_string_equal(pc_bench_session_name(s, 0), "T/server/affinity:on");
	assert_int_equal(pc_bench_session_full_only(s), 1);
	pc_bench_session_destroy(s);
	o.full = true;
	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 2);
	assert_string_equal(pc_bench_session_name(s, 1), "T/server/affinity:off");
	assert_int_equal(pc_bench_session_full_only(s), 0);
	pc_bench_session_destroy(s);
	/* asked for alone, the unpinned entry is there */
	o.full = false;
	o.affinity = PC_BENCH_AFFINITY_MODE_OFF;
	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_int_equal(pc_bench_session_count(s), 1);
	assert_string_equal(pc_bench_session_name(s, 0), "T/server/affinity:off");
	pc_bench_session_destroy(s);
}

/* A single-threaded row runs pinned to one CPU, and the runner's thread
 * gets its own mask back afterwards. */
static void single_threaded_rows_run_pinned(void **state)
{
	struct pc_bench_options o = opts("^T/where$", 3);
	struct pc_bench_session *s;
	cpu_set_t before, after;
	(void)state;

	/* (with one CPU allowed the row is trivially on one CPU) */
	assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
	atomic_store(&where_one_cpu, 0);
	atomic_store(&where_more_cpus, 0);
	s = run_session(&o, 1);
	assert_true(atomic_load(&where_one_cpu) >= 4);  /* calibration and three rounds */
	assert_int_equal(atomic_load(&where_more_cpus), 0);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));
	pc_bench_session_destroy(s);
}

/* What the budget leaves and what a repetition costs, for more(). */
static void budget_and_cost_are_visible(void **state)
{
	struct pc_bench_options o = opts("^T/add$", 1);
	struct pc_bench_session *s;
	(void)state;

	o.budget_s = 1000;
	s = run_session(&o, 1);
	assert_true(pc_bench_session_budget_left_s(s) < 1000);
	assert_true(pc_bench_session_budget_left_s(s) > 900);
	assert_true(pc_bench_session_rep_cost_s(s, 0) > 0);
	assert_true(pc_bench_session_rep_cost_s(s, 0) < 100);
	assert_true(pc_bench_session_rep_cost_s(s, 99) == 0);
	pc_bench_session_destroy(s);
	o.budget_s = 0;
	s = run_session(&o, 1);
	assert_true(isinf(pc_bench_session_budget_left_s(s)));
	pc_bench_session_destroy(s);
}

/* ---- more rounds --------------------------------------------------------- */

/* Wants "T/add" for the first `rounds` calls, then nothing. */
struct want_add {
	int calls, rounds;
	unsigned first_seen;            /* the entry count the session showed */
};

static size_t want_add(const struct pc_bench_session *s, bool *want, void *arg)
{
	struct want_add *w = arg;
	size_t n = 0;

	w->first_seen = (unsigned)pc_bench_session_count(s);
	if (w->calls++ >= w->rounds)
		return 0;
	for (size_t i = 0; i < pc_bench_session_count(s); i++) {
		want[i] = !strcmp(pc_bench_session_name(s, i), "T/add");
		n += want[i];
	}
	return n;
}

static int reps_of(const cJSON *root, const char *name)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(root, "benchmarks"))
		if (!strcmp(str(r, "run_name"), name))
			return (int)num(r, "repetitions");
	return -1;
}

static const char *stopped(const cJSON *root)
{
	return str(cJSON_GetObjectItemCaseSensitive(root, "percore"), "rounds_stopped");
}

static void more_rounds_run_only_what_is_wanted(void **state)
{
	struct pc_bench_options o = opts("^T/(add|bytes)$", 2);
	struct want_add w = { .rounds = 2 };
	struct pc_bench_session *s;
	cJSON *root;
	(void)state;

	o.max_repetitions = 10;
	o.more = want_add;
	o.more_arg = &w;
	s = run_session(&o, 2);
	/* asked after round 2, 3 and 4: wanted twice, then decided */
	assert_int_equal(w.calls, 3);
	assert_int_equal(w.first_seen, 2);
	assert_int_equal(pc_bench_session_rounds(s), 4);
	assert_string_equal(pc_bench_session_stop_reason(s), "decided");
	/* rounds 3 and 4 ran T/add alone: the last two calls are its */
	assert_true(atomic_load(&ncalls) >= 2);
	assert_ptr_equal(calls[atomic_load(&ncalls) - 1].b, &add_bench);
	assert_ptr_equal(calls[atomic_load(&ncalls) - 2].b, &add_bench);
	root = reparse(s, NULL);
	assert_int_equal(reps_of(root, "T/add"), 4);
	assert_int_equal(reps_of(root, "T/bytes"), 2);
	assert_string_equal(stopped(root), "decided");
	assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(root, "percore"), "rounds"), 4);
	check_rows(cJSON_GetObjectItemCaseSensitive(root, "benchmarks"), "T/add", 4, 1);
	cJSON_Delete(root);
	pc_bench_session_destroy(s);
}

static void more_rounds_stop_at_the_cap_and_the_budget(void **state)
{
	struct pc_bench_options o = opts("^T/(add|bytes)$", 2);
	struct pc_bench_session *s;
	cJSON *root;
	(void)state;

	/* without a callback every entry wants more, up to the cap; the
	 * samples grow past the first allocation */
	o.max_repetitions = 7;
	s = run_session(&o, 2);
	assert_string_equal(pc_bench_session_stop_reason(s), "max_repetitions");
	root = reparse(s, NULL);
	assert_int_equal(reps_of(root, "T/add"), 7);
	assert_int_equal(reps_of(root, "T/bytes"), 7);
	cJSON_Delete(root);
	pc_bench_session_destroy(s);
	/* a budget already spent: the minimum rounds only */
	o.budget_s = 1e-9;
	s = run_session(&o, 2);
	assert_string_equal(pc_bench_session_stop_reason(s), "budget");
	assert_int_equal(pc_bench_session_rounds(s), 2);
	root = reparse(s, NULL);
	assert_int_equal(reps_of(root, "T/add"), 2);
	cJSON_Delete(root);
	pc_bench_session_destroy(s);
	/* no cap above the minimum: no more rounds asked for */
	o = opts("^T/add$", 2);
	s = run_session(&o, 1);
	assert_string_equal(pc_bench_session_stop_reason(s), "repetitions");
	assert_int_equal(pc_bench_session_rounds(s), 2);
	pc_bench_session_destroy(s);
}

static void bad_options_are_rejected(void **state)
{
	struct pc_bench_options o;
	struct pc_bench_session *s = (void *)1;
	char why[256];
	(void)state;

	o = opts(NULL, 0);
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(why, "repetitions"));
	o = opts(NULL, 1);
	o.min_time = 0;
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "min-time"));
	o.min_time = NAN;
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	o = opts(NULL, 1);
	o.max_repetitions = 100001;
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "max-repetitions"));
	o = opts(NULL, 1);
	o.budget_s = -1;
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "budget"));
	o.budget_s = INFINITY;
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	o = opts(NULL, 1);
	o.max_cv = -0.1;
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "max-cv"));
	o = opts(NULL, 1);
	o.seed = UINT64_MAX;
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	o = opts("T/(", 1);
	assert_int_equal(pc_bench_session_create(&o, &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "bad filter 'T/('"));
}

static void a_session_runs_once(void **state)
{
	struct pc_bench_options o = opts("^T/manual$", 1);
	struct pc_bench_session *s;
	(void)state;

	assert_int_equal(pc_bench_session_create(&o, &s, NULL, 0), 0);
	assert_null(pc_bench_session_json(s, NULL));
	assert_int_equal(pc_bench_session_run(s), 1);
	assert_int_equal(pc_bench_session_run(s), -EALREADY);
	pc_bench_session_destroy(s);
}

static void all_skipped_measures_nothing(void **state)
{
	struct pc_bench_options o = opts("^T/skip$", 2);
	struct pc_bench_session *s = run_session(&o, 0);
	cJSON *root = reparse(s, NULL);
	(void)state;

	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "benchmarks")), 0);
	cJSON_Delete(root);
	pc_bench_session_destroy(s);
}

/* The iteration rows of run_name: those with figures, and the failed
 * ones (error_occurred, with a message), each numbered in order. */
static void count_rows(const cJSON *rows, const char *run_name, int *good, int *bad,
		       const char **msg)
{
	const cJSON *r;

	*good = *bad = 0;
	cJSON_ArrayForEach(r, rows) {
		if (strcmp(str(r, "run_name"), run_name) || strcmp(str(r, "run_type"), "iteration"))
			continue;
		assert_int_equal(num(r, "repetition_index"), *good + *bad);
		if (cJSON_IsTrue(cJSON_GetObjectItem(r, "error_occurred"))) {
			*msg = str(r, "error_message");
			++*bad;
		} else {
			assert_true(num(r, "real_time") > 0);
			assert_int_equal(*bad, 0); /* failed rows come last */
			++*good;
		}
	}
}

static void failed_repetitions_are_counted_not_dropped(void **state)
{
	struct pc_bench_options o = opts("^T/(flaky|failrun|allfail)", 4);
	struct pc_bench_session *s;
	const char *msg = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	cJSON *root, *rows;
	int good, bad;
	(void)state;

	atomic_store(&flaky_setups, 0);
	atomic_store(&failrun_calls, 0);
	atomic_store(&allfail_calls, 0);
	s = run_session(&o, 3);
	root = reparse(s, NULL);
	rows = cJSON_GetObjectItem(root, "benchmarks");

	/* a setup failure in a later repetition costs that repetition alone */
	count_rows(rows, "T/flaky", &good, &bad, &msg);
	assert_int_equal(good, 3);
	assert_int_equal(bad, 1);
	assert_non_null(strstr(msg, "setup failed"));
	assert_int_equal(num(row(rows, "T/flaky_median"), "failed_repetitions"), 1);
	assert_int_equal(num(row(rows, "T/flaky_median"), "repetitions"), 3);

	/* any thread may fail its repetition; its reason is kept */
	count_rows(rows, "T/failrun/affinity:on", &good, &bad, &msg);
	assert_int_equal(good, 3);
	assert_int_equal(bad, 1);
	assert_string_equal(msg, "the helper exited");

	/* a row with no repetition left still shows every failure */
	count_rows(rows, "T/allfail", &good, &bad, &msg);
	assert_int_equal(good, 0);
	assert_int_equal(bad, 4);
	assert_string_equal(msg, "no reply");
	assert_int_equal(rows_named(rows, "T/allfail"), 4);

	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(pc_bench_session_print(s, f), 0);
	fclose(f);
	assert_non_null(strstr(text, "1 of 4 failed"));
	assert_non_null(strstr(text, "4 repetitions failed: no reply"));
	free(text);
	cJSON_Delete(root);
	pc_bench_session_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(results_layout),
		cmocka_unit_test(table_lists_results_and_skips),
		cmocka_unit_test(rounds_are_shuffled_permutations),
		cmocka_unit_test(no_interleave_runs_back_to_back),
		cmocka_unit_test(pauses_are_not_timed),
		cmocka_unit_test(selection),
		cmocka_unit_test(more_rounds_run_only_what_is_wanted),
		cmocka_unit_test(more_rounds_stop_at_the_cap_and_the_budget),
		cmocka_unit_test(single_threaded_rows_run_pinned),
		cmocka_unit_test(budget_and_cost_are_visible),
		cmocka_unit_test(bad_options_are_rejected),
		cmocka_unit_test(a_session_runs_once),
		cmocka_unit_test(all_skipped_measures_nothing),
		cmocka_unit_test(failed_repetitions_are_counted_not_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
