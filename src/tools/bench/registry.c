/* SPDX-License-Identifier: MIT */
/* percore bench: the list of registered benchmarks. Filled before main()
 * by PC_BENCH_REGISTER constructors; read by the runner. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "percore/bench.h"
#include "bench/registry.h"

static const struct pc_bench *registry[PC_BENCH_MAX];
static size_t registry_len;

/* A benchmark the runner could not run, or whose rows would mix with
 * another's, is refused at load time with a message. */
static bool acceptable(const struct pc_bench *b)
{
	if (!b->name || !*b->name || !b->run) {
		fprintf(stderr, "percore bench: benchmark '%s' has no %s, dropped\n",
			b->name ? b->name : "", b->run ? "name" : "run function");
		return false;
	}
	for (size_t i = 0; i < registry_len; i++) {
		if (!strcmp(registry[i]->name, b->name)) {
			fprintf(stderr, "percore bench: '%s' registered twice, second dropped\n",
				b->name);
			return false;
		}
	}
	return true;
}

void pc_bench_register(const struct pc_bench *b)
{
	if (!acceptable(b))
		return;
	if (registry_len == PC_BENCH_MAX) {
		fprintf(stderr, "percore bench: more than %d benchmarks, '%s' dropped\n",
			PC_BENCH_MAX, b->name);
		return;
	}
	registry[registry_len++] = b;
}

size_t bench_registry(const struct pc_bench *const **out)
{
	*out = registry;
	return registry_len;
}
