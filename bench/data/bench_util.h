/* SPDX-License-Identifier: MIT */
/* Helpers the data-layer benchmarks share: a seeded random source, so every
 * implementation of a comparison sees the very same keys and deadlines. */
#ifndef PERCORE_BENCH_DATA_UTIL_H
#define PERCORE_BENCH_DATA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "percore/bench.h"

/* splitmix64 */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* n values in [lo, lo + span), from seed; NULL when out of memory. */
static inline uint64_t *bench_rand_array(uint64_t seed, size_t n, uint64_t lo, uint64_t span)
{
	uint64_t *a = malloc(n * sizeof(*a));

	for (size_t i = 0; a && i < n; i++)
		a[i] = lo + (span ? bench_rand(&seed) % span : bench_rand(&seed));
	return a;
}

/* Register a benchmark whose setup and run are op_setup and op_run. */
#define DATA_BENCH(var, title, op, n, a2, td)                                  \
	static const struct pc_bench var = {                                  \
		.name = title, .arg = n, .arg2 = a2, .setup = op##_setup,     \
		.run = op##_run, .teardown = td,                              \
	};                                                                    \
	PC_BENCH_REGISTER(var)

#endif
