/* SPDX-License-Identifier: MIT */
/* The metrics registry: what each kind of family writes, read back from
 * the exposition; every refusal with its reason; tables with labels and
 * failing reads; an engine's live figures; and shards writing while a
 * scraper reads (every count arrives, no series ever goes backwards). */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "metrics_util.h"
#include "percore/arena.h"
#include "percore/engine.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "percore/slab.h"
#include "testmain.h"

static void test_counter_gauge(void **state)
{
	struct pc_metrics *m = pc_metrics_create(3, 0);
	char err[160];

	(void)state;
	assert_non_null(m);
	assert_int_equal(pc_metrics_shards(m), 3);
	struct pc_metric *c = pc_metrics_counter(m, "jobs_total", "Jobs done.", err, sizeof(err));
	struct pc_metric *g = pc_metrics_gauge(m, "queue_depth", "Jobs waiting.", err, sizeof(err));
	assert_non_null(c);
	assert_non_null(g);
	pc_metric_add(c, 0, 5);
	pc_metric_add(c, 2, 7);
	pc_metric_add(c, 2, 1);
	pc_metric_set(g, 1, 42);
	pc_metric_set(g, 2, -3);
	char *t = mu_text(m);
	assert_non_null(t);
	assert_int_equal(mu_lines(t, "# HELP percore_jobs_total Jobs done.\n"), 1);
	assert_int_equal(mu_lines(t, "# TYPE percore_jobs_total counter\n"), 1);
	assert_int_equal(mu_lines(t, "# TYPE percore_queue_depth gauge\n"), 1);
	assert_true(mu_value(t, "percore_jobs_total{shard=\"0\"}") == 5);
	assert_true(mu_value(t, "percore_jobs_total{shard=\"1\"}") == 0);
	assert_true(mu_value(t, "percore_jobs_total{shard=\"2\"}") == 8);
	assert_true(mu_value(t, "percore_queue_depth{shard=\"1\"}") == 42);
	assert_non_null(strstr(t, "\npercore_queue_depth{shard=\"2\"} -3\n"));
	/* The process's own series come first, without a shard label. */
	assert_true(mu_value(t, "percore_process_resident_memory_bytes") > 0);
	assert_true(mu_value(t, "percore_shards") == 3);
	free(t);
	pc_metrics_destroy(m);
}

static void test_histogram(void **state)
{
	static const uint64_t bounds[] = { 10, 100, 1000 };
	struct pc_metrics *m = pc_metrics_create(2, 0);
	struct pc_metric *h =
		pc_metrics_histogram(m, "wait_seconds", "Waits.", bounds, 3, 1e-3, NULL, 0);

	(void)state;
	assert_non_null(h);
	pc_metric_observe(h, 1, 5);
	pc_metric_observe(h, 1, 10);  /* on a bound: that bucket (le) */
	pc_metric_observe(h, 1, 11);
	pc_metric_observe(h, 1, 5000); /* over every bound: +Inf only */
	char *t = mu_text(m);
	assert_int_equal(mu_lines(t, "# TYPE percore_wait_seconds histogram\n"), 1);
	assert_true(mu_value(t, "percore_wait_seconds_bucket{shard=\"1\",le=\"0.01\"}") == 2);
	assert_true(mu_value(t, "percore_wait_seconds_bucket{shard=\"1\",le=\"0.1\"}") == 3);
	assert_true(mu_value(t, "percore_wait_seconds_bucket{shard=\"1\",le=\"1\"}") == 3);
	assert_true(mu_value(t, "percore_wait_seconds_bucket{shard=\"1\",le=\"+Inf\"}") == 4);
	assert_true(mu_value(t, "percore_wait_seconds_count{shard=\"1\"}") == 4);
	double sum = mu_value(t, "percore_wait_seconds_sum{shard=\"1\"}");
	assert_true(sum > 5.0259 && sum < 5.0261);
	assert_true(mu_value(t, "percore_wait_seconds_count{shard=\"0\"}") == 0);
	assert_true(mu_value(t, "percore_wait_seconds_bucket{shard=\"0\",le=\"+Inf\"}") == 0);
	free(t);
	pc_metrics_destroy(m);
}

/* Each refusal: NULL, a reason naming the problem, nothing registered. */
static void test_refusals(void **state)
{
	static const uint64_t down[] = { 10, 5 };
	static const uint64_t one[] = { 1 };
	struct pc_metrics *m = pc_metrics_create(1, 8);
	char err[160];

	(void)state;
	assert_null(pc_metrics_create(0, 0));
	assert_null(pc_metrics_create(1025, 0));
	assert_null(pc_metrics_counter(m, "jobs", "x", err, sizeof(err)));
	assert_non_null(strstr(err, "_total"));
	assert_null(pc_metrics_gauge(m, "depth_total", "x", err, sizeof(err)));
	assert_non_null(strstr(err, "only counters"));
	assert_null(pc_metrics_counter(m, "9lives_total", "x", err, sizeof(err)));
	assert_non_null(strstr(err, "9lives_total"));
	assert_null(pc_metrics_counter(m, "a-b_total", "x", err, sizeof(err)));
	assert_null(pc_metrics_counter(m, "", "x", err, sizeof(err)));
	assert_null(pc_metrics_counter(m, "a_total", "two\nlines", err, sizeof(err)));
	assert_non_null(strstr(err, "one-line"));
	assert_null(pc_metrics_counter(m, "a_total", NULL, err, sizeof(err)));
	assert_null(pc_metrics_histogram(m, "h", "x", down, 2, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "bound 1 (5) is not above bound 0 (10)"));
	assert_null(pc_metrics_histogram(m, "h", "x", one, 0, 1, err, sizeof(err)));
	assert_null(pc_metrics_histogram(m, "h", "x", one, 1, -1, err, sizeof(err)));
	/* Taken names, across families and the built-in tables. */
	assert_non_null(pc_metrics_counter(m, "a_total", "x", err, sizeof(err)));
	assert_null(pc_metrics_counter(m, "a_total", "x", err, sizeof(err)));
	assert_non_null(strstr(err, "registered already"));
	assert_null(pc_metrics_gauge(m, "shards", "x", err, sizeof(err)));
	/* 8 slots: a_total took one; a histogram of 5 bounds takes 7. */
	static const uint64_t five[] = { 1, 2, 3, 4, 5 };
	static const uint64_t six[] = { 1, 2, 3, 4, 5, 6 };
	assert_null(pc_metrics_histogram(m, "big", "x", six, 6, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "no slots left"));
	assert_non_null(pc_metrics_histogram(m, "fits", "x", five, 5, 1, err, sizeof(err)));
	assert_null(pc_metrics_gauge(m, "more", "x", err, sizeof(err)));
	char *t = mu_text(m);
	assert_int_equal(mu_lines(t, "# TYPE "), 4); /* rss, shards, a_total, fits */
	free(t);
	pc_metrics_destroy(m);
	pc_metrics_destroy(NULL);
}

struct fig {
	uint64_t a, b, c;
};

static int read_figs(void *ctx, unsigned i, void *out)
{
	struct fig *f = out;

	(void)ctx;
	if (i == 1)
		return -EIO; /* this shard is left out */
	*f = (struct fig){ 10 + i, 20 + i, 1500000000u };
	return 0;
}

static void test_table(void **state)
{
	const struct pc_metric_field rows[] = {
		{ "things_total", "Things, by kind.", PC_METRIC_COUNTER, offsetof(struct fig, a), 0,
		  "kind", "a\"b\\c\nd" },
		{ "things_total", "Things, by kind.", PC_METRIC_COUNTER, offsetof(struct fig, b), 0,
		  "kind", "plain" },
		{ "elapsed_seconds", "Time.", PC_METRIC_GAUGE, offsetof(struct fig, c), 1e-9, NULL,
		  NULL },
	};
	struct pc_metric_field bad[3];
	struct pc_metrics *m = pc_metrics_create(3, 0);
	char err[160];

	(void)state;
	assert_int_equal(pc_metrics_add_table(m, rows, 3, sizeof(struct fig), true, read_figs, NULL,
					      err, sizeof(err)), 0);
	char *t = mu_text(m);
	assert_int_equal(mu_lines(t, "# HELP percore_things_total"), 1);
	assert_true(mu_value(t, "percore_things_total{shard=\"0\",kind=\"a\\\"b\\\\c\\nd\"}") == 10);
	assert_true(mu_value(t, "percore_things_total{shard=\"2\",kind=\"plain\"}") == 22);
	assert_true(mu_value(t, "percore_things_total{shard=\"1\",kind=\"plain\"}") == -1);
	assert_true(mu_value(t, "percore_elapsed_seconds{shard=\"2\"}") == 1.5);
	free(t);

	/* Refusals: each names the row. */
	memcpy(bad, rows, sizeof(rows));
	bad[2].name = "things_total";
	bad[2].kind = PC_METRIC_COUNTER;
	bad[2].help = "Things, by kind.";
	bad[1].name = "other_total";
	assert_int_equal(pc_metrics_add_table(m, bad, 3, sizeof(struct fig), true, read_figs, NULL,
					      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "adjacent"));
	memcpy(bad, rows, sizeof(rows));
	bad[2].offset = sizeof(struct fig);
	bad[2].name = "new_gauge";
	assert_int_equal(pc_metrics_add_table(m, bad, 3, sizeof(struct fig), true, read_figs, NULL,
					      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "offset"));
	memcpy(bad, rows, sizeof(rows));
	bad[1].label = "shard";
	assert_int_equal(pc_metrics_add_table(m, bad, 2, sizeof(struct fig), true, read_figs, NULL,
					      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "label"));
	memcpy(bad, rows, sizeof(rows));
	bad[1].help = "Other help.";
	assert_int_equal(pc_metrics_add_table(m, bad, 2, sizeof(struct fig), true, read_figs, NULL,
					      err, sizeof(err)), -EINVAL);
	assert_int_equal(pc_metrics_add_table(m, rows, 3, sizeof(struct fig), false, read_figs,
					      NULL, err, sizeof(err)), -EEXIST);
	assert_int_equal(pc_metrics_add_table(m, rows, 3, sizeof(struct fig), false, NULL, NULL,
					      err, sizeof(err)), -EINVAL);
	/* A process-wide table has no shard label. */
	const struct pc_metric_field proc[] = {
		{ "boot_things_total", "x", PC_METRIC_COUNTER, offsetof(struct fig, b), 1, NULL, NULL },
	};
	assert_int_equal(pc_metrics_add_table(m, proc, 1, sizeof(struct fig), false, read_figs,
					      NULL, err, sizeof(err)), 0);
	t = mu_text(m);
	assert_true(mu_value(t, "percore_boot_things_total") == 20);
	free(t);
	pc_metrics_destroy(m);
}

static void nothing(void *arg)
{
	(void)arg;
}

/* The first failure on a shard (cmocka asserts only on the test thread). */
static _Atomic int start_rc;

/* Shard 0 sends 10 messages to shard 1 and defers one task; shard 1
 * takes memory from its arena and one slab object (kept: the figures
 * must show them). */
static void on_start(void *arg)
{
	int rc = 0;

	(void)arg;
	if (pc_shard_id() == 1) {
		if (!pc_arena_alloc(pc_shard_arena(), 1000, 8) || !pc_slab_alloc(pc_shard_slab(64)))
			atomic_store(&start_rc, -ENOMEM);
		return;
	}
	for (int k = 0; k < 10 && !rc; k++)
		rc = pc_shard_submit(1, nothing, NULL);
	if (!rc)
		rc = pc_reactor_defer(pc_shard_reactor(), nothing, NULL);
	if (rc)
		atomic_store(&start_rc, rc);
}

/* An engine's figures while it runs: turns counted, busy and idle time
 * running, both only ever growing; messages per destination and tasks
 * run exactly as sent. */
static void test_engine_live(void **state)
{
	struct pc_engine_cfg cfg;
	struct pc_engine *e;
	struct pc_metrics *m = pc_metrics_create(2, 0);
	double last_busy = 0, last_idle = 0, last_turns = 0;

	(void)state;
	pc_engine_cfg_init(&cfg);
	cfg.shards = 2;
	cfg.placement = "off";
	cfg.oversubscribe = true;
	cfg.idle = PC_IDLE_SLEEP;
	cfg.on_start = on_start;
	assert_int_equal(pc_engine_start(&cfg, &e, NULL, 0), 0);
	assert_int_equal(pc_metrics_add_engine(m, e), 0);
	assert_int_equal(pc_metrics_add_engine(m, e), -EEXIST);
	/* Shard 1 has run the 10 messages (it reports them as it runs them);
	 * before any scrape, which sends each shard a message of its own. */
	struct pc_shard_stats st = { 0 };
	for (int k = 0; k < 500 && st.msgs_in < 10; k++) {
		struct timespec ts = { .tv_nsec = 10000000 };
		pc_engine_stats_read(e, 1, &st);
		nanosleep(&ts, NULL);
	}
	assert_int_equal(atomic_load(&start_rc), 0);
	assert_int_equal(st.msgs_in, 10);
	for (int k = 0; k < 5; k++) {
		struct timespec ts = { .tv_nsec = 20000000 };
		char *t = mu_text(m);
		double busy = mu_value(t, "percore_reactor_busy_seconds_total{shard=\"1\"}");
		double idle = mu_value(t, "percore_reactor_idle_seconds_total{shard=\"1\"}");
		double turns = mu_value(t, "percore_reactor_turns_total{shard=\"1\"}");

		assert_true(busy >= last_busy && idle >= last_idle && turns >= last_turns);
		last_busy = busy;
		last_idle = idle;
		last_turns = turns;
		free(t);
		nanosleep(&ts, NULL);
	}
	/* A sleeping shard's time is idle time as it passes. */
	assert_true(last_idle > 0.05);
	assert_true(last_turns > 0);
	char *t = mu_text(m);
	assert_true(mu_value(t, "percore_mesh_messages_sent_to_total{shard=\"0\",to=\"1\"}") == 10);
	assert_true(mu_value(t, "percore_mesh_messages_sent_to_total{shard=\"0\",to=\"0\"}") == 0);
	assert_true(mu_value(t, "percore_mesh_messages_sent_to_total{shard=\"1\",to=\"0\"}") == 0);
	assert_true(mu_value(t, "percore_mesh_messages_received_total{shard=\"1\"}") >= 10);
	assert_true(mu_value(t, "percore_reactor_tasks_run_total{shard=\"0\"}") >= 1);
	free(t);
	uint64_t sent[2];
	assert_int_equal(pc_engine_sent_to(e, 2, sent), -EINVAL);
	/* Pool memory: each scrape asks the shards to measure for the next;
	 * every shard has its arena from the start. */
	double arena = 0, used = 0;
	for (int k = 0; k < 500 && (arena <= 0 || used <= 0); k++) {
		struct timespec ts = { .tv_nsec = 10000000 };
		t = mu_text(m);
		arena = mu_value(t, "percore_shard_arena_bytes{shard=\"1\"}");
		used = mu_value(t, "percore_shard_slab_used_bytes{shard=\"1\"}");
		assert_true(mu_value(t, "percore_shard_slab_bytes{shard=\"1\"}") >= used);
		free(t);
		nanosleep(&ts, NULL);
	}
	assert_true(arena >= 1000);
	assert_true(used >= 64);
	struct pc_shard_mem mem;
	assert_int_equal(pc_engine_mem_read(e, 2, &mem), -EINVAL);
	pc_engine_stop(e);
	pc_engine_join(e);
	pc_engine_destroy(e);
	pc_metrics_destroy(m);
}

#define STRESS_SHARDS 4
#define STRESS_N 200000

struct stress {
	struct pc_metrics *m;
	struct pc_metric *c, *h;
	unsigned shard;
	_Atomic int *writers_left;
};

static void *writer(void *arg)
{
	struct stress *s = arg;

	for (uint64_t k = 1; k <= STRESS_N; k++) {
		pc_metric_add(s->c, s->shard, 1);
		pc_metric_observe(s->h, s->shard, k % 1000);
	}
	atomic_fetch_sub(s->writers_left, 1);
	return NULL;
}

/* One writer thread per shard, the scraper here: every series the scraper
 * sees only grows, and in the end every count is exact. */
static void test_stress_scrape(void **state)
{
	static const uint64_t bounds[] = { 10, 100, 500 };
	struct pc_metrics *m = pc_metrics_create(STRESS_SHARDS, 0);
	struct stress s[STRESS_SHARDS];
	pthread_t th[STRESS_SHARDS];
	_Atomic int left = STRESS_SHARDS;
	double seen[STRESS_SHARDS][2] = { { 0 } };
	char name[96];
	bool done;

	(void)state;
	struct pc_metric *c = pc_metrics_counter(m, "items_total", "x", NULL, 0);
	struct pc_metric *h = pc_metrics_histogram(m, "item_size", "x", bounds, 3, 1, NULL, 0);
	for (unsigned i = 0; i < STRESS_SHARDS; i++) {
		s[i] = (struct stress){ m, c, h, i, &left };
		assert_int_equal(pthread_create(&th[i], NULL, writer, &s[i]), 0);
	}
	do {
		done = atomic_load(&left) == 0; /* one last scrape after all end */
		char *t = mu_text(m);
		for (unsigned i = 0; i < STRESS_SHARDS; i++) {
			snprintf(name, sizeof(name), "percore_items_total{shard=\"%u\"}", i);
			double v = mu_value(t, name);
			snprintf(name, sizeof(name), "percore_item_size_count{shard=\"%u\"}", i);
			double n = mu_value(t, name);
			assert_true(v >= seen[i][0] && n >= seen[i][1]);
			seen[i][0] = v;
			seen[i][1] = n;
		}
		free(t);
	} while (!done);
	for (unsigned i = 0; i < STRESS_SHARDS; i++) {
		pthread_join(th[i], NULL);
		assert_true(seen[i][0] == STRESS_N);
		assert_true(seen[i][1] == STRESS_N);
	}
	pc_metrics_destroy(m);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_gauge),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_engine_live),
		cmocka_unit_test(test_stress_scrape),
	};

	return pc_test_main(tests, argc, argv);
}
