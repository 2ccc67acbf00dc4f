/* SPDX-License-Identifier: MIT */
/* Dispatcher/Lookup/1000: frames with ids 0..999 (the dense table) in
 * random order; Dispatcher/Lookup/sparse: 1,000 random 32-bit ids (the
 * map). One item is one frame dispatched to a handler that counts it. */
#include <errno.h>
#include <stdlib.h>

#include "percore/bench.h"
#include "percore/dispatch.h"
#include "bench_util.h"

#define IDS    1000
#define STREAM 4096

struct dispatch_ctx {
	struct pc_dispatch d;
	struct pc_frame frames[STREAM];
	uint64_t count;
};

static int count_frame(void *ctx, const struct pc_frame *f, void *arg)
{
	(void)ctx;
	(void)f;
	(*(uint64_t *)arg)++;
	return 0;
}

static int dispatch_setup(struct pc_bench_state *st)
{
	struct dispatch_ctx *c = calloc(1, sizeof(*c));
	bool sparse = st->bench->arg;
	uint32_t ids[IDS];
	uint64_t seed = 3;

	if (!c)
		return -ENOMEM;
	st->ctx = c;
	if (pc_dispatch_init(&c->d, sparse ? 0 : IDS))
		return -ENOMEM;
	for (uint32_t i = 0; i < IDS; i++) {
		ids[i] = sparse ? (uint32_t)bench_rand(&seed) : i;
		/* A repeated random id is simply skipped (-EEXIST). */
		int err = pc_dispatch_register(&c->d, ids[i], count_frame, NULL);
		if (err && err != -EEXIST)
			return err;
	}
	for (size_t i = 0; i < STREAM; i++)
		c->frames[i].msg_id = ids[bench_rand(&seed) % IDS];
	return 0;
}

static void dispatch_run(struct pc_bench_state *st)
{
	struct dispatch_ctx *c = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++)
		pc_dispatch_frame(&c->d, &c->frames[i % STREAM], &c->count);
	PC_DO_NOT_OPTIMIZE(c->count);
}

static void dispatch_teardown(struct pc_bench_state *st)
{
	struct dispatch_ctx *c = st->ctx;

	pc_dispatch_destroy(&c->d);
	free(c);
}

static const struct pc_bench dispatch_dense = {
	.name = "Dispatcher/Lookup/1000", .arg = 0,
	.setup = dispatch_setup, .run = dispatch_run, .teardown = dispatch_teardown,
};
PC_BENCH_REGISTER(dispatch_dense)

static const struct pc_bench dispatch_sparse = {
	.name = "Dispatcher/Lookup/sparse", .arg = 1,
	.setup = dispatch_setup, .run = dispatch_run, .teardown = dispatch_teardown,
};
PC_BENCH_REGISTER(dispatch_sparse)
