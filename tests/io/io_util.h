/* SPDX-License-Identifier: MIT */
/* Helpers shared by the file and journal tests: one engine of one shard,
 * a step run on it and waited for (bounded), a scratch directory. The
 * step's asynchronous chain calls step_done() when it ends; checks on the
 * shard use RT_CHECK. Include after cmocka.h. */
#ifndef PERCORE_TESTS_IO_UTIL_H
#define PERCORE_TESTS_IO_UTIL_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt/engine_util.h"

static _Atomic int step_flag;

__attribute__((unused)) static void step_done(void)
{
	atomic_store(&step_flag, 1);
}

static bool step_finished(void)
{
	return atomic_load(&step_flag) != 0;
}

/* Run fn(arg) on shard 0 and wait until its chain calls step_done(). */
__attribute__((unused)) static void on_shard(void (*fn)(void *), void *arg)
{
	atomic_store(&step_flag, 0);
	assert_int_equal(pc_engine_submit(engine, 0, fn, arg), 0);
	wait_for(step_finished, "a step on the shard");
	assert_int_equal(atomic_load(&rt_failures), 0);
}

/* PC_TEST_REACTOR=uring gives the shard an io_uring reactor, beside
 * which its file ring signals an eventfd (src/runtime/io/io.h). */
__attribute__((unused)) static void start_one_shard(void)
{
	struct pc_engine_cfg c = base_cfg(1, PC_IDLE_SLEEP);
	const char *reactor = getenv("PC_TEST_REACTOR");

	c.placement = "off";
	if (reactor && !strcmp(reactor, "uring"))
		c.backend = PC_BACKEND_URING;
	start(&c);
	if (c.backend == PC_BACKEND_URING)
		printf("the shard's reactor: %s\n",
		       pc_engine_backend(engine) == PC_BACKEND_URING ? "io_uring"
								   : "epoll (io_uring refused)");
}

__attribute__((unused)) static void stop_engine(void)
{
	pc_engine_stop(engine);
	finish();
	pc_engine_destroy(engine);
	engine = NULL;
}

/* A fresh directory on the disk the tests run on (TMPDIR, else /tmp):
 * tmpfs has no O_DIRECT, so the build tree's file system is preferred
 * when PC_BUILD_DIR says where it is. */
__attribute__((unused)) static void scratch_dir(char *out, size_t len)
{
	const char *base = getenv("PC_BUILD_DIR");

	if (!base)
		base = getenv("TMPDIR");
	snprintf(out, len, "%s/pc-io-XXXXXX", base ? base : "/tmp");
	assert_non_null(mkdtemp(out));
}

__attribute__((unused)) static void remove_dir(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

#endif
