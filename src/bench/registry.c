/* percore bench: the list of registered benchmarks. Filled before main()
 * by PC_BENCH_REGISTER constructors; read by the runner. */
#include <stddef.h>
#include <stdio.h>

#include "percore/bench.h"
#include "bench/registry.h"

static const struct pc_bench *registry[PC_BENCH_MAX];
static size_t registry_len;

void pc_bench_register(const struct pc_bench *b)
{
	if (registry_len == PC_BENCH_MAX) {
		fprintf(stderr, "percore bench: more than %d benchmarks, '%s' dropped\n",
			PC_BENCH_MAX, b->name);
		return;
	}
	registry[registry_len++] = b;
}

size_t pc_bench_registry(const struct pc_bench *const **out)
{
	*out = registry;
	return registry_len;
}
