/* SPDX-License-Identifier: MIT */
/* Peer: libuv timers (uv_timer_start/stop on one loop; a binary min-heap)
 * behind timer_peer.h. libuv keeps time in milliseconds of the real clock,
 * so Expire lets real time pass (untimed) before uv_run(UV_RUN_NOWAIT)
 * runs every due timer: the timed part is libuv's own expiry work, heap
 * pops and callbacks, plus one non-blocking poll per batch. */
#include <stdlib.h>
#include <time.h>
#include <uv.h>

#include "timer_peer.h"

struct uv_timers {
	uv_loop_t loop;
	size_t n;
	uint64_t fired;
	uv_timer_t *t;
};

static void on_timer(uv_timer_t *h)
{
	((struct uv_timers *)h->loop->data)->fired++;
}

static void *create(size_t n)
{
	struct uv_timers *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->t = calloc(n, sizeof(*u->t));
	if (!u->t || uv_loop_init(&u->loop)) {
		free(u->t);
		free(u);
		return NULL;
	}
	u->loop.data = u;
	u->n = n;
	for (size_t i = 0; i < n; i++)
		uv_timer_init(&u->loop, &u->t[i]);
	return u;
}

static void destroy(void *p)
{
	struct uv_timers *u = p;

	for (size_t i = 0; i < u->n; i++)
		uv_close((uv_handle_t *)&u->t[i], NULL);
	uv_run(&u->loop, UV_RUN_DEFAULT);
	uv_loop_close(&u->loop);
	free(u->t);
	free(u);
}

static void start(void *p, const uint64_t *delay, size_t n)
{
	struct uv_timers *u = p;

	uv_update_time(&u->loop);
	for (size_t i = 0; i < n; i++)
		uv_timer_start(&u->t[i], on_timer, delay[i], 0);
}

static void rearm(void *p, const uint32_t *idx, const uint64_t *delay, size_t n)
{
	struct uv_timers *u = p;

	for (size_t k = 0; k < n; k++) {
		uv_timer_stop(&u->t[idx[k]]);
		uv_timer_start(&u->t[idx[k]], on_timer, delay[k], 0);
	}
}

static void stop_all(void *p)
{
	struct uv_timers *u = p;

	for (size_t i = 0; i < u->n; i++)
		uv_timer_stop(&u->t[i]);
}

static void wait_ms(void *p, uint64_t span)
{
	struct uv_timers *u = p;
	/* One millisecond more: libuv's clock has millisecond steps. */
	uint64_t until = uv_now(&u->loop) + span + 1;
	struct timespec ms = { 0, 200000 };

	do {
		nanosleep(&ms, NULL);
		uv_update_time(&u->loop);
	} while (uv_now(&u->loop) < until);
}

static uint64_t expire(void *p, uint64_t span)
{
	struct uv_timers *u = p;
	uint64_t before = u->fired;

	(void)span;
	uv_run(&u->loop, UV_RUN_NOWAIT);
	return u->fired - before;
}

/* Deadlines 1..8 ms: libuv's heap pops cost the same whatever the spread,
 * and a wider one would only add real time to wait. */
const struct timer_peer timer_peer_libuv = {
	.expire_span = 8, .create = create, .destroy = destroy, .start = start,
	.rearm = rearm, .stop_all = stop_all, .wait = wait_ms, .expire = expire,
};
