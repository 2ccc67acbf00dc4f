/* SPDX-License-Identifier: MIT */
/* The timer comparison: pc_wheel and libuv's timers behind the same calls,
 * each looping over a batch in its own translation unit (so pc_wheel's
 * inline schedule and cancel are inlined, as its users get them). Time is
 * in the implementation's unit: wheel ticks, libuv milliseconds. */
#ifndef PERCORE_BENCH_DATA_TIMER_PEER_H
#define PERCORE_BENCH_DATA_TIMER_PEER_H

#include <stddef.h>
#include <stdint.h>

struct timer_peer {
	/* Expire benchmark: deadlines are spread over [1, expire_span]. */
	uint64_t expire_span;
	void *(*create)(size_t n);               /* n idle timers; NULL on failure */
	void (*destroy)(void *t);
	/* Schedule timers [0, n) at now + delay[i]. */
	void (*start)(void *t, const uint64_t *delay, size_t n);
	/* For each k: cancel timer idx[k], schedule it at now + delay[k]. */
	void (*rearm)(void *t, const uint32_t *idx, const uint64_t *delay, size_t n);
	/* Cancel every timer. */
	void (*stop_all)(void *t);
	/* Let span time units pass (untimed part of Expire). */
	void (*wait)(void *t, uint64_t span);
	/* Run every timer due within span; returns how many fired. */
	uint64_t (*expire)(void *t, uint64_t span);
};

extern const struct timer_peer timer_peer_wheel;   /* pc_wheel */
extern const struct timer_peer timer_peer_libuv;   /* uv_timer_t, a min-heap */

#endif
