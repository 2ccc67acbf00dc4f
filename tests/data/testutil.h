/* SPDX-License-Identifier: MIT */
/* Helpers shared by the data-structure tests: a seeded random source and
 * the operation count (PC_TEST_OPS overrides it, PC_TEST_SEED the seed). */
#ifndef PERCORE_TESTS_DATA_TESTUTIL_H
#define PERCORE_TESTS_DATA_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct rng {
	uint64_t s;
};

/* splitmix64: small, fast, and every seed gives a full-period stream. */
static inline uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}

static inline uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

/* The seed for this run, printed so a failure can be replayed. */
static inline struct rng test_rng(const char *what)
{
	struct rng r = { env_u64("PC_TEST_SEED", 0x5eed0001) };
	fprintf(stderr, "%s: PC_TEST_SEED=0x%llx\n", what, (unsigned long long)r.s);
	return r;
}

/* Operations for a random-model test: default, or PC_TEST_OPS. */
static inline uint64_t test_ops(uint64_t dflt)
{
	return env_u64("PC_TEST_OPS", dflt);
}

#endif
