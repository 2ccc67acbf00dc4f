/* SPDX-License-Identifier: MIT */
/* percore bench: the deterministic shuffle that orders each round. */
#ifndef PERCORE_SRC_BENCH_SHUFFLE_H
#define PERCORE_SRC_BENCH_SHUFFLE_H

#include <stddef.h>
#include <stdint.h>

/* A small PRNG (splitmix64): the same seed gives the same sequence on every
 * machine and libc, which rand() does not promise. */
struct pc_bench_rng {
	uint64_t state;
};

void bench_rng_seed(struct pc_bench_rng *r, uint64_t seed);
uint64_t bench_rng_next(struct pc_bench_rng *r);

/* Put idx[0..n-1] in a random order drawn from r (Fisher-Yates, unbiased).
 * The result is a permutation of the input. */
void bench_shuffle(size_t *idx, size_t n, struct pc_bench_rng *r);

#endif
