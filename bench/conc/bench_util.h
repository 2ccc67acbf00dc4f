/* SPDX-License-Identifier: MIT */
/* Shared by the two- and three-thread queue benchmarks. */
#ifndef PERCORE_BENCH_CONC_UTIL_H
#define PERCORE_BENCH_CONC_UTIL_H

#include <stdint.h>

#include "percore/bench.h"

/* Report total items across the benchmark's threads: each thread claims a
 * share, so the harness's per-thread sum is total whichever thread did the
 * counting. */
static inline void bench_split_items(struct pc_bench_state *st, uint64_t total)
{
	st->items = total / st->threads + (st->thread_index < total % st->threads);
}

/* The share of n that thread index i of k does when n is split k ways. */
static inline uint64_t bench_share(uint64_t n, unsigned i, unsigned k)
{
	return n / k + (i < n % k);
}

#endif
