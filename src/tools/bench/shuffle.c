/* SPDX-License-Identifier: MIT */
/* percore bench: deterministic shuffling of each round's order. */
#include "bench/shuffle.h"

void bench_rng_seed(struct pc_bench_rng *r, uint64_t seed)
{
	r->state = seed;
}

uint64_t bench_rng_next(struct pc_bench_rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform draw in [0, bound): reject the top sliver of the 64-bit range
 * that would favour small values under a plain modulo. */
static uint64_t below(struct pc_bench_rng *r, uint64_t bound)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % bound, x;

	do
		x = bench_rng_next(r);
	while (x >= limit);
	return x % bound;
}

void bench_shuffle(size_t *idx, size_t n, struct pc_bench_rng *r)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)below(r, i), t = idx[i - 1];

		idx[i - 1] = idx[j];
		idx[j] = t;
	}
}
