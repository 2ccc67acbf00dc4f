/* SPDX-License-Identifier: MIT */
/* The allocation loops every SlabAlloc and allocator peer row runs, written
 * once so ours (in process) and each peer (in its own process) do exactly
 * the same work:
 *   pair   alloc one object, free it; one iteration per pair
 *   batch  alloc PC_ALLOC_BATCH objects, then free them in the same order;
 *          one iteration per batch
 * PC_ALLOC_LOOPS(name, ctx_type, ALLOC(ctx), FREE(ctx, p)) defines
 * name_pair(ctx, n) and name_batch(ctx, n). */
#ifndef PERCORE_BENCH_ALLOC_LOOP_H
#define PERCORE_BENCH_ALLOC_LOOP_H

#include <stdint.h>

#include "percore/defs.h"

#define PC_ALLOC_BATCH 1000

#define PC_ALLOC_LOOPS(name, ctx_type, ALLOC, FREE)                          \
	static void name##_pair(ctx_type ctx, uint64_t n)                    \
	{                                                                    \
		for (uint64_t i = 0; i < n; i++) {                           \
			void *p = ALLOC(ctx);                                \
			PC_DO_NOT_OPTIMIZE(p);                               \
			FREE(ctx, p);                                        \
		}                                                            \
	}                                                                    \
	static void name##_batch(ctx_type ctx, uint64_t n)                   \
	{                                                                    \
		void *p[PC_ALLOC_BATCH];                                     \
		for (uint64_t i = 0; i < n; i++) {                           \
			for (unsigned j = 0; j < PC_ALLOC_BATCH; j++) {      \
				p[j] = ALLOC(ctx);                           \
				PC_DO_NOT_OPTIMIZE(p[j]);                    \
			}                                                    \
			for (unsigned j = 0; j < PC_ALLOC_BATCH; j++)        \
				FREE(ctx, p[j]);                             \
		}                                                            \
	}

#endif
