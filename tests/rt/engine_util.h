/* SPDX-License-Identifier: MIT */
/* Helpers shared by the engine tests: one engine at a time, started and
 * finished with bounded waits. Include after cmocka.h. */
#ifndef PERCORE_TESTS_RT_ENGINE_UTIL_H
#define PERCORE_TESTS_RT_ENGINE_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "percore/clock.h"
#include "percore/engine.h"
#include "rt_util.h"

static struct pc_engine *engine;

static struct pc_engine_cfg base_cfg(unsigned shards, enum pc_idle idle)
{
	struct pc_engine_cfg c;

	pc_engine_cfg_init(&c);
	c.shards = shards;
	c.oversubscribe = true;
	c.idle = idle;
	return c;
}

static void start(struct pc_engine_cfg *c)
{
	char err[200] = "";
	int rc = pc_engine_start(c, &engine, err, sizeof(err));

	if (rc)
		fprintf(stderr, "start: %s\n", err);
	assert_int_equal(rc, 0);
}

/* Wait (bounded) until cond() holds; a hang fails instead of blocking. */
static void wait_for(bool (*cond)(void), const char *what)
{
	uint64_t t0 = pc_now_ns();

	while (!cond()) {
		if (pc_now_ns() - t0 > 60000000000ull) {
			fprintf(stderr, "timed out waiting for %s\n", what);
			_exit(1);
		}
		usleep(1000);
	}
}

static bool stopping(void)
{
	return pc_engine_stopping(engine);
}

static void finish(void)
{
	wait_for(stopping, "the engine to stop");
	assert_int_equal(pc_engine_join(engine), 0);
	assert_int_equal(atomic_load(&rt_failures), 0);
}

#endif
