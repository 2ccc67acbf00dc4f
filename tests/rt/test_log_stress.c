/* SPDX-License-Identifier: MIT */
/* The log under load: every shard and two other threads log numbered
 * lines at once while the writer drains; every line arrives exactly once
 * and in order per producer, and nothing is dropped (the rings are large
 * enough). Labelled concurrency: ThreadSanitizer runs it. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "log_util.h"
#include "percore/shard.h"
#include "testmain.h"

#define SHARDS 3
#define OTHERS 2
#define LINES 6000
#define PRODUCERS (SHARDS + OTHERS)

static _Atomic unsigned shards_done;

static void produce(unsigned who)
{
	for (unsigned i = 0; i < LINES; i++) {
		struct pc_log_field f[] = { PC_LOG_UINT("who", who), PC_LOG_UINT("seq", i) };

		pc_log_fields(PC_LOG_INFO, f, 2, "line");
	}
}

static void on_shard(void *arg)
{
	(void)arg;
	produce((unsigned)pc_shard_id());
	atomic_fetch_add(&shards_done, 1);
}

static void *other_thread(void *arg)
{
	produce((unsigned)(uintptr_t)arg);
	return NULL;
}

/* One line: "... shard=S msg=line who=W seq=N". Its producer's next seq
 * must be N; lines from shards carry their shard number, the others -1. */
static void check_line(const char *line, unsigned *next)
{
	const char *p = strstr(line, " msg=line who=");
	const char *shard = strstr(line, " shard=");
	char *end;
	unsigned who, seq;

	assert_non_null(p);
	assert_non_null(shard);
	who = (unsigned)strtoul(p + 14, &end, 10);
	seq = (unsigned)strtoul(end + 5, NULL, 10);
	assert_true(who < PRODUCERS);
	assert_int_equal(seq, next[who]);
	next[who]++;
	assert_int_equal(strtol(shard + 7, NULL, 10), who < SHARDS ? (long)who : -1);
}

/* Line by line (a search over the whole text per line would be
 * quadratic under the sanitizers' string checks). */
static void check(char *text)
{
	unsigned next[PRODUCERS] = { 0 };

	for (char *line = text, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		assert_non_null(nl);
		*nl = '\0';
		check_line(line, next);
	}
	for (unsigned i = 0; i < PRODUCERS; i++)
		assert_int_equal(next[i], LINES);
}

static void every_line_once_in_order(void **state)
{
	pthread_t t[OTHERS];
	struct pc_shard_stats st;
	struct pc_log_cfg c;
	struct pc_engine *e;
	char path[128];
	char *text;
	(void)state;

	log_tmp_path(path, sizeof(path), "stress");
	pc_log_cfg_init(&c);
	c.file = path;
	c.ring_size = 1u << 22; /* 4 MiB: no drops, so every line must arrive */
	assert_int_equal(pc_log_open(&c, NULL, 0), 0);
	e = log_engine(SHARDS, 0);
	assert_non_null(e);
	for (unsigned i = 0; i < SHARDS; i++)
		assert_int_equal(pc_engine_submit(e, i, on_shard, NULL), 0);
	for (unsigned i = 0; i < OTHERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, other_thread,
						(void *)(uintptr_t)(SHARDS + i)), 0);
	for (unsigned i = 0; i < OTHERS; i++)
		pthread_join(t[i], NULL);
	while (atomic_load(&shards_done) < SHARDS)
		usleep(1000);
	for (unsigned i = 0; i < SHARDS; i++) {
		assert_int_equal(pc_engine_stats_read(e, i, &st), 0);
		assert_int_equal(st.log_dropped, 0);
	}
	assert_int_equal(pc_log_dropped_other(), 0);
	/* Destroying the engine detaches its rings; closing writes what is
	 * left of them. */
	pc_engine_destroy(e);
	pc_log_close();
	text = log_slurp(path);
	check(text);
	free(text);
	unlink(path);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_line_once_in_order),
	};
	return pc_test_main(tests, argc, argv);
}
