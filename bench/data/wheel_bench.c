/* SPDX-License-Identifier: MIT */
/* TimingWheel/... (pc_wheel) beside Peer/libuv/... (uv_timer_t), with the
 * same delays in each one's unit (ticks, milliseconds):
 *   Expire            the headline: a timer's whole life, scheduled and
 *                     fired (below)
 *   N (1000, 100000)  N live timers at random delays in [1, 2^20); each
 *                     item cancels one of them, picked at random, and
 *                     schedules it again at a new random delay: the re-arm
 *                     of an idle timeout, so the cancelled timer sits
 *                     anywhere in the structure, as it does in a server.
 *                     Time never advances in these rows, so nothing fires
 *                     and the wheel never cascades: the cost it defers to
 *                     expiry (moving timers down its levels) is not in the
 *                     figure, while libuv's heap pays its ordering at each
 *                     insert. The rows say so in their label; Expire is
 *                     where the two pay for the same thing.
 *   ScheduleOnly      100,000 timers scheduled one after the other into an
 *                     empty structure (cancelling them again is not timed).
 *   Expire            100,000 timers scheduled then all fired by moving
 *                     time past the last one, both timed (only libuv's
 *                     wait for its millisecond clock is not); one item is
 *                     one timer scheduled and fired. The wheel's deadlines spread over 65,536
 *                     ticks, so its slots cascade through two levels; see
 *                     peer_libuv.c for libuv's clock.
 */
#include <errno.h>
#include <stdlib.h>

#include "percore/bench.h"
#include "percore/wheel.h"
#include "bench_util.h"
#include "timer_peer.h"

/* ---- pc_wheel behind the peer interface --------------------------------- */

struct wheel_timers {
	struct pc_wheel w;
	size_t n;
	uint64_t fired;
	struct pc_timer *t;
};

static void on_timer(struct pc_wheel *w, struct pc_timer *t)
{
	(void)t;
	/* The wheel is the first member of wheel_timers. */
	((struct wheel_timers *)(void *)w)->fired++;
}

static void *w_create(size_t n)
{
	struct wheel_timers *x = malloc(sizeof(*x));

	if (!x)
		return NULL;
	x->t = malloc(n * sizeof(*x->t));
	if (!x->t) {
		free(x);
		return NULL;
	}
	pc_wheel_init(&x->w, 0);
	x->n = n;
	x->fired = 0;
	for (size_t i = 0; i < n; i++)
		pc_timer_init(&x->t[i], on_timer);
	return x;
}

static void w_destroy(void *p)
{
	struct wheel_timers *x = p;

	free(x->t);
	free(x);
}

static void w_start(void *p, const uint64_t *delay, size_t n)
{
	struct wheel_timers *x = p;
	uint64_t now = pc_wheel_now(&x->w);

	for (size_t i = 0; i < n; i++)
		pc_wheel_schedule(&x->w, &x->t[i], now + delay[i]);
}

static void w_rearm(void *p, const uint32_t *idx, const uint64_t *delay, size_t n)
{
	struct wheel_timers *x = p;
	uint64_t now = pc_wheel_now(&x->w);

	for (size_t k = 0; k < n; k++) {
		pc_wheel_cancel(&x->w, &x->t[idx[k]]);
		pc_wheel_schedule(&x->w, &x->t[idx[k]], now + delay[k]);
	}
}

static void w_stop_all(void *p)
{
	struct wheel_timers *x = p;

	for (size_t i = 0; i < x->n; i++)
		pc_wheel_cancel(&x->w, &x->t[i]);
}

static void w_wait(void *p, uint64_t span)
{
	(void)p;
	(void)span;
}

static uint64_t w_expire(void *p, uint64_t span)
{
	struct wheel_timers *x = p;

	return pc_wheel_advance(&x->w, pc_wheel_now(&x->w) + span);
}

const struct timer_peer timer_peer_wheel = {
	.expire_span = 65536, .create = w_create, .destroy = w_destroy, .start = w_start,
	.rearm = w_rearm, .stop_all = w_stop_all, .wait = w_wait, .expire = w_expire,
};

static const struct timer_peer *const peers[] = { &timer_peer_wheel, &timer_peer_libuv };

/* ---- the benchmarks ---------------------------------------------------- */

#define STREAM 65536

struct timer_ctx {
	const struct timer_peer *p;
	void *t;
	size_t n;
	uint64_t *delay;      /* n delays, for start */
	uint64_t *rdelay;     /* STREAM delays, for rearm */
	uint32_t *ridx;       /* STREAM timer indexes, for rearm */
};

static void timer_teardown(struct pc_bench_state *st)
{
	struct timer_ctx *c = st->ctx;

	if (c->t)
		c->p->destroy(c->t);
	free(c->delay);
	free(c->rdelay);
	free(c->ridx);
	free(c);
}

static int timer_setup_common(struct pc_bench_state *st, uint64_t span)
{
	struct timer_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	st->ctx = c;
	c->p = peers[st->bench->arg2];
	c->n = (size_t)st->bench->arg;
	c->t = c->p->create(c->n);
	c->delay = bench_rand_array(4, c->n, 1, span);
	if (!c->t || !c->delay)
		return -ENOMEM;
	return 0;
}

static int rearm_setup(struct pc_bench_state *st)
{
	int err = timer_setup_common(st, 1u << 20);
	struct timer_ctx *c = st->ctx;
	uint64_t seed = 5;

	if (err)
		return err;
	c->rdelay = bench_rand_array(6, STREAM, 1, 1u << 20);
	c->ridx = malloc(STREAM * sizeof(*c->ridx));
	if (!c->rdelay || !c->ridx)
		return -ENOMEM;
	for (size_t i = 0; i < STREAM; i++)
		c->ridx[i] = (uint32_t)(bench_rand(&seed) % c->n);
	c->p->start(c->t, c->delay, c->n);
	return 0;
}

static void rearm_run(struct pc_bench_state *st)
{
	struct timer_ctx *c = st->ctx;
	size_t pos = 0;

	for (uint64_t left = st->iterations; left;) {
		size_t k = STREAM - pos < left ? STREAM - pos : (size_t)left;
		c->p->rearm(c->t, c->ridx + pos, c->rdelay + pos, k);
		pos = (pos + k) % STREAM;
		left -= k;
	}
}

static int schedule_setup(struct pc_bench_state *st)
{
	return timer_setup_common(st, 1u << 20);
}

static void schedule_run(struct pc_bench_state *st)
{
	struct timer_ctx *c = st->ctx;

	for (uint64_t left = st->iterations; left;) {
		size_t k = c->n < left ? c->n : (size_t)left;
		c->p->start(c->t, c->delay, k);
		pc_bench_pause(st);
		c->p->stop_all(c->t);
		pc_bench_resume(st);
		left -= k;
	}
}

static int expire_setup(struct pc_bench_state *st)
{
	return timer_setup_common(st, peers[st->bench->arg2]->expire_span);
}

static void expire_run(struct pc_bench_state *st)
{
	struct timer_ctx *c = st->ctx;
	uint64_t fired = 0, span = c->p->expire_span;

	for (uint64_t left = st->iterations; left;) {
		size_t k = c->n < left ? c->n : (size_t)left;
		c->p->start(c->t, c->delay, k);
		pc_bench_pause(st);
		c->p->wait(c->t, span);
		pc_bench_resume(st);
		fired += c->p->expire(c->t, span);
		left -= k;
	}
	st->items = fired;
}

#define TIMER_BENCH(var, title, op, n, a2) DATA_BENCH(var, title, op, n, a2, timer_teardown)

#define REARM_LABEL                                                              \
	"re-arms only: time never advances, so no timer fires and the wheel "   \
	"never cascades (a cost it pays at expiry; libuv's heap orders at "      \
	"insert); see TimingWheel/Expire"

#define REARM_BENCH(var, title, n, a2)                                           \
	static const struct pc_bench var = {                                      \
		.name = title, .arg = n, .arg2 = a2, .label = REARM_LABEL,         \
		.setup = rearm_setup, .run = rearm_run, .teardown = timer_teardown,\
	};                                                                        \
	PC_BENCH_REGISTER(var)

TIMER_BENCH(wheel_expire, "TimingWheel/Expire", expire, 100000, 0)
TIMER_BENCH(uv_expire, "Peer/libuv/Expire", expire, 100000, 1)
REARM_BENCH(wheel_1k, "TimingWheel/1000", 1000, 0)
REARM_BENCH(uv_1k, "Peer/libuv/1000", 1000, 1)
REARM_BENCH(wheel_100k, "TimingWheel/100000", 100000, 0)
REARM_BENCH(uv_100k, "Peer/libuv/100000", 100000, 1)
TIMER_BENCH(wheel_sched, "TimingWheel/ScheduleOnly", schedule, 100000, 0)
TIMER_BENCH(uv_sched, "Peer/libuv/ScheduleOnly", schedule, 100000, 1)
