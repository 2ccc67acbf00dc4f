/* SPDX-License-Identifier: MIT */
/* BumpAlloc/64/16K: 64-byte allocations from an arena, rewound to the same
 * mark after every 16 KiB (a request's scratch). One iteration is one
 * allocation. */
#include <errno.h>

#include "percore/arena.h"
#include "percore/bench.h"

#define SCRATCH (16u << 10)

static int bump_setup(struct pc_bench_state *st)
{
	/* a block with room for the whole 16 KiB: rewinds never change block */
	st->ctx = pc_arena_create(2 * SCRATCH, -1);
	return st->ctx ? 0 : -ENOMEM;
}

static void bump_run(struct pc_bench_state *st)
{
	struct pc_arena *a = st->ctx;
	size_t size = (size_t)st->bench->arg, per_round = SCRATCH / size;
	struct pc_arena_mark m = pc_arena_mark(a);

	for (uint64_t i = 0; i < st->iterations;) {
		uint64_t n = st->iterations - i < per_round ? st->iterations - i : per_round;

		for (uint64_t j = 0; j < n; j++) {
			void *p = pc_arena_alloc(a, size, 16);
			PC_DO_NOT_OPTIMIZE(p);
		}
		pc_arena_rewind(a, m);
		i += n;
	}
}

static void bump_teardown(struct pc_bench_state *st)
{
	pc_arena_destroy(st->ctx);
}

static const struct pc_bench bump_64 = {
	.name = "BumpAlloc/64/16K", .arg = 64,
	.setup = bump_setup, .run = bump_run, .teardown = bump_teardown,
};
PC_BENCH_REGISTER(bump_64)
