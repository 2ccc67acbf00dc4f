/* SPDX-License-Identifier: MIT */
/* The log's cost to a shard.
 *
 *   Log/Line           one line with a formatted message and two fields
 *                      (a string and a number) put into the shard's ring:
 *                      vsnprintf, the fields copied, one release store.
 *                      The writer drains to /dev/null every 10 ms; a ring
 *                      of 64 MiB holds a repetition's lines or most of
 *                      them (counter dropped: the share that found the
 *                      ring full, which cost the same formatting).
 *   Log/Line/filtered  the same call below the level threshold: one
 *                      relaxed load and a compare.
 */
#include <errno.h>
#include <stdint.h>

#include "percore/log.h"
#include "percore/shard.h"
#include "rt_bench.h"

struct logb {
	enum pc_log_level level;
	uint64_t dropped0;
};

static struct logb line_ctx = { .level = PC_LOG_INFO };
static struct logb filtered_ctx = { .level = PC_LOG_DEBUG };

static void log_job(void *arg)
{
	struct rtb *b = arg;
	struct logb *l = b->user;

	b->items = b->iterations;
	rtb_begin(b);
	for (uint64_t i = 0; i < b->iterations; i++) {
		struct pc_log_field f[] = { PC_LOG_STR("peer", "10.0.0.7:51234"),
					    PC_LOG_UINT("bytes", i) };

		pc_log_fields(l->level, f, 2, "request %llu done", (unsigned long long)i);
	}
	rtb_finish(b);
}

static int log_setup(struct pc_bench_state *st)
{
	struct pc_log_cfg c;
	int rc;

	pc_log_cfg_init(&c);
	c.file = "/dev/null";
	c.ring_size = 1u << 26;
	rc = pc_log_open(&c, NULL, 0);
	if (rc)
		return rc;
	rc = rtb_setup(st, 1, PC_IDLE_ADAPTIVE, 0, st->bench->arg ? &filtered_ctx : &line_ctx);
	if (rc)
		pc_log_close();
	return rc;
}

static void log_run(struct pc_bench_state *st)
{
	struct rtb *b = st->ctx;
	struct pc_shard_stats s0, s1;

	pc_engine_stats_read(b->e, 0, &s0);
	rtb_run(st, 0, log_job);
	pc_engine_stats_read(b->e, 0, &s1);
	pc_bench_counter(st, "dropped",
			 b->iterations ? (double)(s1.log_dropped - s0.log_dropped) /
						 (double)b->iterations : 0);
}

static void log_teardown(struct pc_bench_state *st)
{
	rtb_teardown(st);
	pc_log_close();
}

static const struct pc_bench log_line = {
	.name = "Log/Line", .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,
	.setup = log_setup, .run = log_run, .teardown = log_teardown,
};
PC_BENCH_REGISTER(log_line)

static const struct pc_bench log_filtered = {
	.name = "Log/Line/filtered", .arg = 1, .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,
	.setup = log_setup, .run = log_run, .teardown = log_teardown,
};
PC_BENCH_REGISTER(log_filtered)
