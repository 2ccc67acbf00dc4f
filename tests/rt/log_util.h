/* SPDX-License-Identifier: MIT */
/* Helpers for the log tests: a temporary log file, its text, a shard
 * running a function and the test waiting for it. */
#ifndef PERCORE_TESTS_RT_LOG_UTIL_H
#define PERCORE_TESTS_RT_LOG_UTIL_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/engine.h"
#include "percore/log.h"

/* A fresh path under /tmp (the file itself does not exist yet). */
static inline void log_tmp_path(char *path, size_t len, const char *tag)
{
	static unsigned seq;

	snprintf(path, len, "/tmp/pc_%s_%d_%u.log", tag, (int)getpid(), seq++);
	unlink(path);
}

/* The whole file as a string (malloc'd), "" when it does not exist. */
static inline char *log_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = calloc(1, (size_t)n + 1);
	if (text && fread(text, 1, (size_t)n, f) != (size_t)n)
		text[0] = '\0';
	fclose(f);
	return text;
}

static inline unsigned log_count(const char *text, const char *needle)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Run fn(arg) on shard `to` and wait until it has returned. */
struct log_job {
	void (*fn)(void *arg);
	void *arg;
	_Atomic int done;
};

static inline void log_job_run(void *p)
{
	struct log_job *j = p;

	j->fn(j->arg);
	atomic_store(&j->done, 1);
}

static inline int log_on_shard(struct pc_engine *e, unsigned to, void (*fn)(void *), void *arg)
{
	struct log_job j = { .fn = fn, .arg = arg };
	int rc = pc_engine_submit(e, to, log_job_run, &j);

	while (!rc && !atomic_load(&j.done))
		usleep(200); /* polls the flag; leaves the CPU to the shard */
	return rc;
}

/* An engine of n shards that sleep when idle, with the caller's stall
 * threshold; the log is whatever the test opened. */
static inline struct pc_engine *log_engine(unsigned n, uint32_t stall_ms)
{
	struct pc_engine_cfg c;
	struct pc_engine *e;

	pc_engine_cfg_init(&c);
	c.shards = n;
	c.placement = "off";
	c.oversubscribe = true;
	c.idle = PC_IDLE_SLEEP;
	c.stall_threshold_ms = stall_ms;
	return pc_engine_start(&c, &e, NULL, 0) ? NULL : e;
}

#endif
