/* SPDX-License-Identifier: MIT */
/* percore bench: internal access to the registered benchmarks. */
#ifndef PERCORE_SRC_BENCH_REGISTRY_H
#define PERCORE_SRC_BENCH_REGISTRY_H

#include <stddef.h>

#include "percore/bench.h"

#define PC_BENCH_MAX 1024

/* Every registered benchmark, in registration order. */
size_t bench_registry(const struct pc_bench *const **out);

#endif
