/* Helpers shared by the concurrency stress tests: how many items to move
 * (an environment override, smaller under ThreadSanitizer) and a polite wait
 * for a full or empty queue on a machine with fewer cores than threads. */
#ifndef PERCORE_TESTS_STRESS_H
#define PERCORE_TESTS_STRESS_H

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "percore/compiler.h"

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

/* Spin briefly, then give the CPU away: with more threads than cores a pure
 * spin would burn the time slice the other side needs to make progress. */
static inline void stress_wait(unsigned *spins)
{
	if (++*spins < 64) {
		pc_cpu_relax();
	} else {
		*spins = 0;
		sched_yield();
	}
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
