/* SPDX-License-Identifier: MIT */
/* Helpers shared by the concurrency stress tests: how many items to move
 * (an environment override, smaller under ThreadSanitizer) and a cheap
 * random mix of operations. Waiting uses tests/backoff.h. */
#ifndef PERCORE_TESTS_STRESS_H
#define PERCORE_TESTS_STRESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backoff.h"

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
