/* SPDX-License-Identifier: MIT */
/* Helpers shared by the concurrency stress tests: how many items to move
 * (an environment override, smaller under ThreadSanitizer), how long a run
 * may take, and a cheap random mix of operations. Waiting uses
 * tests/backoff.h. */
#ifndef PERCORE_TESTS_STRESS_H
#define PERCORE_TESTS_STRESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backoff.h"
#include "percore/clock.h"

/* Items for one stress run: PC_STRESS_ITEMS when set (a positive integer),
 * else tsan_default under ThreadSanitizer and normal otherwise. */
static inline uint64_t stress_items(uint64_t normal, uint64_t tsan_default)
{
	const char *env = getenv("PC_STRESS_ITEMS");
	char *end;
	unsigned long long v;

	(void)normal;
	(void)tsan_default;
	if (env && *env) {
		errno = 0;
		v = strtoull(env, &end, 10);
		if (errno == 0 && *end == '\0' && v > 0)
			return v;
		fprintf(stderr, "PC_STRESS_ITEMS='%s' is not a positive integer; using the default\n", env);
	}
#ifdef PC_TSAN
	return tsan_default;
#else
	return normal;
#endif
}

/* A run's time limit. Threads that hand every item to each other and yield
 * while waiting can move a hundred times slower when every CPU is busy with
 * something else; a producer that finds the limit passed stops sending, and
 * the run checks exactly what was sent (every item once, in order) instead
 * of nearing its test's timeout. PC_STRESS_SECONDS overrides the limit. */
#define STRESS_SECONDS 30
/* A run that moved fewer items than this in its time proves too little. */
#define STRESS_MIN_ITEMS 10000

struct stress_clock {
	uint64_t start_ns;
	uint64_t limit_ns;
};

static inline void stress_clock_start(struct stress_clock *c)
{
	const char *env = getenv("PC_STRESS_SECONDS");
	double seconds = STRESS_SECONDS, v;
	char *end;

	if (env && *env) {
		v = strtod(env, &end);
		if (*end == '\0' && v > 0)
			seconds = v;
		else
			fprintf(stderr, "PC_STRESS_SECONDS='%s' is not a positive number; using %d\n",
				env, STRESS_SECONDS);
	}
	c->limit_ns = (uint64_t)(seconds * 1e9);
	c->start_ns = pc_now_ns();
}

/* Whether the limit has passed (any thread of the run). */
static inline bool stress_clock_expired(const struct stress_clock *c)
{
	return pc_elapsed(pc_now_ns(), c->start_ns) >= c->limit_ns;
}

/* The least a run must have moved: all it was asked for, or when it was
 * cut short by time, STRESS_MIN_ITEMS. */
static inline uint64_t stress_min_moved(uint64_t asked)
{
	return asked < STRESS_MIN_ITEMS ? asked : STRESS_MIN_ITEMS;
}

/* A cheap, reproducible mix of choices per thread (xorshift64). */
static inline uint64_t stress_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif
