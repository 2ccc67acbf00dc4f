/* SPDX-License-Identifier: MIT */
/* percore: waiting politely for another thread (a full or empty ring).
 * Internal: a helper for tests and benchmarks, not installed.
 *
 * Spin with the CPU's pause hint for a short while, then give the time
 * slice away: when the thread being waited for shares this core (more
 * threads than cores, or no pinning), spinning alone would burn the very
 * time it needs to make progress. The runtime's idle policy is a separate,
 * richer thing; this is for tests, benchmarks and short waits. */
#ifndef PERCORE_BACKOFF_H
#define PERCORE_BACKOFF_H

#include <sched.h>

#include "percore/defs.h"

/* Pause hints before each yield. */
#define PC_BACKOFF_SPINS 128

struct pc_backoff {
	unsigned spins;
};

/* One step of waiting. Any thread; the struct is the caller's own. */
static inline void pc_backoff_wait(struct pc_backoff *b)
{
	if (++b->spins < PC_BACKOFF_SPINS) {
		pc_cpu_relax();
	} else {
		b->spins = 0;
		sched_yield();
	}
}

#endif
