/* SPDX-License-Identifier: MIT */
/* Baselines every machine has: memcpy bandwidth and glibc malloc+free. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/bench.h"
#include "percore/defs.h"

struct copy_ctx {
	char *src, *dst;
};

static int memcpy_setup(struct pc_bench_state *st)
{
	struct copy_ctx *c = calloc(1, sizeof(*c));
	size_t n = (size_t)st->bench->arg;

	if (!c)
		return -ENOMEM;
	c->src = aligned_alloc(64, n);
	c->dst = aligned_alloc(64, n);
	if (!c->src || !c->dst) {
		free(c->src);
		free(c->dst);
		free(c);
		return -ENOMEM;
	}
	memset(c->src, 0x5a, n);
	memset(c->dst, 0, n);
	st->ctx = c;
	return 0;
}

static void memcpy_run(struct pc_bench_state *st)
{
	struct copy_ctx *c = st->ctx;
	size_t n = (size_t)st->bench->arg;

	for (uint64_t i = 0; i < st->iterations; i++) {
		memcpy(c->dst, c->src, n);
		PC_DO_NOT_OPTIMIZE(c->dst);
	}
	st->bytes = st->iterations * n;
}

static void copy_teardown(struct pc_bench_state *st)
{
	struct copy_ctx *c = st->ctx;

	free(c->src);
	free(c->dst);
	free(c);
}

static const struct pc_bench memcpy_4096 = {
	.name = "Peer/memcpy/4096", .arg = 4096,
	.setup = memcpy_setup, .run = memcpy_run, .teardown = copy_teardown,
};
PC_BENCH_REGISTER(memcpy_4096)

static void malloc_run(struct pc_bench_state *st)
{
	size_t n = (size_t)st->bench->arg;

	for (uint64_t i = 0; i < st->iterations; i++) {
		void *p = malloc(n);
		PC_DO_NOT_OPTIMIZE(p);
		free(p);
	}
}

static const struct pc_bench malloc_64 = {
	.name = "Peer/malloc/64", .arg = 64, .run = malloc_run,
};
PC_BENCH_REGISTER(malloc_64)
