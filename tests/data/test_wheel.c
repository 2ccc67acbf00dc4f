/* SPDX-License-Identifier: MIT */
/* Timing wheel: every timer fires exactly once at its tick, cancelled ones
 * never, callbacks may change the wheel; checked case by case and against a
 * reference model (a min-heap) over millions of random operations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "percore/wheel.h"
#include "testutil.h"
#include "validate_check.h"

struct tt {
	struct pc_timer t;
	unsigned id;
	struct tt *other;       /* for callbacks that act on another timer */
	uint64_t period;        /* for a periodic callback */
};

#define TT(p) ((struct tt *)((char *)(p) - offsetof(struct tt, t)))

/* What fired, in order. */
static struct { unsigned id; uint64_t now; } fired[64];
static unsigned nfired;

static void record(struct pc_wheel *w, struct pc_timer *t)
{
	assert_false(pc_timer_active(t));
	assert_true(nfired < PC_ARRAY_LEN(fired));
	fired[nfired].id = TT(t)->id;
	fired[nfired].now = pc_wheel_now(w);
	nfired++;
}

static void tt_init(struct tt *x, unsigned id, pc_timer_fn *fn)
{
	memset(x, 0, sizeof(*x));
	pc_timer_init(&x->t, fn);
	x->id = id;
}

static void past_and_present_fire_on_next_advance(void **state)
{
	struct pc_wheel w;
	struct tt a, b;
	(void)state;
	pc_wheel_init(&w, 1000);
	tt_init(&a, 1, record);
	tt_init(&b, 2, record);
	pc_wheel_schedule(&w, &a.t, 1000);
	pc_wheel_schedule(&w, &b.t, 3);
	assert_int_equal(pc_wheel_next(&w), 1000);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
	nfired = 0;
	/* Same time again: the due timers still fire. */
	assert_int_equal(pc_wheel_advance(&w, 1000), 2);
	assert_int_equal(nfired, 2);
	assert_int_equal(fired[0].now, 1000);
	assert_int_equal(pc_wheel_count(&w), 0);
	assert_int_equal(pc_wheel_next(&w), UINT64_MAX);
	/* Time never goes back. */
	assert_int_equal(pc_wheel_advance(&w, 10), 0);
	assert_int_equal(pc_wheel_now(&w), 1000);
}

/* Deltas that sit on every level edge, scheduled from a now that is not
 * aligned, each must fire with pc_wheel_now() equal to its expiry, whether
 * time moves tick by tick around it or jumps over it. */
static void fires_at_its_tick_on_every_level(void **state)
{
	static const uint64_t deltas[] = {
		1, 2, 255, 256, 257, 65535, 65536, 65537, 1u << 24, (1u << 24) + 1,
		(1ull << 32) - 1, 1ull << 32, (1ull << 32) + 1, 1ull << 40, (1ull << 40) + 12345,
	};
	(void)state;
	for (int jump = 0; jump < 2; jump++) {
		for (size_t i = 0; i < PC_ARRAY_LEN(deltas); i++) {
			struct pc_wheel w;
			struct tt a;
			uint64_t start = 0x12345678abull, at = start + deltas[i];

			pc_wheel_init(&w, start);
			tt_init(&a, (unsigned)i, record);
			pc_wheel_schedule(&w, &a.t, at);
			assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
			nfired = 0;
			if (jump) {
				assert_int_equal(pc_wheel_advance(&w, at - 1), 0);
				assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
				assert_int_equal(pc_wheel_advance(&w, at + 1000), 1);
			} else {
				/* Follow pc_wheel_next() the way a reactor does. */
				while (nfired == 0) {
					uint64_t next = pc_wheel_next(&w);
					assert_true(next <= at);
					pc_wheel_advance(&w, next);
					assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
				}
			}
			assert_int_equal(nfired, 1);
			assert_int_equal(fired[0].now, at);
			assert_false(pc_timer_active(&a.t));
		}
	}
}

static void cancel_and_reschedule(void **state)
{
	struct pc_wheel w;
	struct tt a, b;
	(void)state;
	pc_wheel_init(&w, 0);
	tt_init(&a, 1, record);
	tt_init(&b, 2, record);
	assert_false(pc_wheel_cancel(&w, &a.t));
	pc_wheel_schedule(&w, &a.t, 500);
	pc_wheel_schedule(&w, &b.t, 500);
	assert_true(pc_wheel_cancel(&w, &a.t));
	assert_false(pc_wheel_cancel(&w, &a.t));
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
	pc_wheel_schedule(&w, &b.t, 70000);  /* later: moves levels */
	pc_wheel_schedule(&w, &b.t, 300);    /* and back */
	assert_int_equal(pc_wheel_count(&w), 1);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
	nfired = 0;
	assert_int_equal(pc_wheel_advance(&w, 100000), 1);
	assert_int_equal(fired[0].id, 2);
	assert_int_equal(fired[0].now, 300);
}

static unsigned periodic_runs;

static void periodic(struct pc_wheel *w, struct pc_timer *t)
{
	struct tt *x = TT(t);

	assert_int_equal(pc_wheel_now(w), pc_timer_expiry(t));
	assert_int_equal(pc_wheel_now(w) % x->period, 7);
	periodic_runs++;
	pc_wheel_schedule(w, t, pc_wheel_now(w) + x->period);
}

static void callback_reschedules_itself(void **state)
{
	struct pc_wheel w;
	struct tt a;
	(void)state;
	pc_wheel_init(&w, 0);
	tt_init(&a, 1, periodic);
	a.period = 1000;
	pc_wheel_schedule(&w, &a.t, 7);
	periodic_runs = 0;
	/* One jump over a thousand periods runs each at its own tick. */
	pc_wheel_advance(&w, 1000 * 1000 + 6);
	assert_int_equal(periodic_runs, 1000);
	assert_int_equal(pc_timer_expiry(&a.t), 1000 * 1000 + 7);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
}

static void cancel_other(struct pc_wheel *w, struct pc_timer *t)
{
	record(w, t);
	pc_wheel_cancel(w, &TT(t)->other->t);
}

/* Two timers on the same tick each cancel the other: whichever runs first
 * wins and the other never runs, though it sat on the same detached list. */
static void callback_cancels_a_timer_of_the_same_tick(void **state)
{
	struct pc_wheel w;
	struct tt a, b, c;
	(void)state;
	pc_wheel_init(&w, 10);
	tt_init(&a, 1, cancel_other);
	tt_init(&b, 2, cancel_other);
	tt_init(&c, 3, record);
	a.other = &b;
	b.other = &a;
	pc_wheel_schedule(&w, &a.t, 300);
	pc_wheel_schedule(&w, &c.t, 300);
	pc_wheel_schedule(&w, &b.t, 300);
	nfired = 0;
	assert_int_equal(pc_wheel_advance(&w, 400), 2);
	assert_int_equal(nfired, 2);
	assert_true(fired[0].id == 3 || fired[1].id == 3);
	assert_int_equal(pc_wheel_count(&w), 0);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
}

static void into_the_past(struct pc_wheel *w, struct pc_timer *t)
{
	record(w, t);
	if (TT(t)->other)
		pc_wheel_schedule(w, &TT(t)->other->t, pc_wheel_now(w) - 5);
}

/* A callback that schedules into the past does not make the same advance
 * loop: that timer runs on the next call. */
static void past_from_callback_waits_for_next_advance(void **state)
{
	struct pc_wheel w;
	struct tt a, b;
	(void)state;
	pc_wheel_init(&w, 100);
	tt_init(&a, 1, into_the_past);
	tt_init(&b, 2, into_the_past);
	a.other = &b;
	b.other = &a;
	pc_wheel_schedule(&w, &a.t, 150);
	nfired = 0;
	assert_int_equal(pc_wheel_advance(&w, 200), 1);
	assert_true(pc_timer_active(&b.t));
	assert_int_equal(pc_wheel_next(&w), 200);
	assert_int_equal(pc_wheel_advance(&w, 200), 1);
	assert_int_equal(fired[1].id, 2);
	assert_int_equal(fired[1].now, 200);
	assert_true(pc_timer_active(&a.t));
}

static void free_self(struct pc_wheel *w, struct pc_timer *t)
{
	record(w, t);
	free(TT(t));
}

static void callback_may_free_its_timer(void **state)
{
	struct pc_wheel w;
	(void)state;
	pc_wheel_init(&w, 0);
	nfired = 0;
	for (unsigned i = 0; i < 8; i++) {
		struct tt *x = malloc(sizeof(*x));
		assert_non_null(x);
		tt_init(x, i, free_self);
		pc_wheel_schedule(&w, &x->t, 1000 + i % 2);
	}
	assert_int_equal(pc_wheel_advance(&w, 5000), 8);
	assert_int_equal(pc_wheel_count(&w), 0);
}

/* Crossing the 2^32 block boundary and the top of the 64-bit range. */
static void block_edges_and_end_of_time(void **state)
{
	struct pc_wheel w;
	struct tt a, b, c;
	uint64_t block = 1ull << 32;
	(void)state;
	pc_wheel_init(&w, block - 3);
	tt_init(&a, 1, record);
	tt_init(&b, 2, record);
	tt_init(&c, 3, record);
	pc_wheel_schedule(&w, &a.t, block + 2);       /* far by XOR, near in time */
	pc_wheel_schedule(&w, &b.t, 5 * block + 9);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
	nfired = 0;
	assert_int_equal(pc_wheel_advance(&w, block + 1), 0);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
	assert_int_equal(pc_wheel_advance(&w, 6 * block), 2);
	assert_int_equal(fired[0].now, block + 2);
	assert_int_equal(fired[1].now, 5 * block + 9);

	pc_wheel_init(&w, UINT64_MAX - 300);
	pc_wheel_schedule(&w, &a.t, UINT64_MAX);
	pc_wheel_schedule(&w, &c.t, UINT64_MAX - 1);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
	nfired = 0;
	assert_int_equal(pc_wheel_advance(&w, UINT64_MAX), 2);
	assert_int_equal(fired[0].now, UINT64_MAX - 1);
	assert_int_equal(fired[1].now, UINT64_MAX);
}

static void next_is_never_late(void **state)
{
	struct pc_wheel w;
	struct tt a;
	(void)state;
	pc_wheel_init(&w, 77);
	tt_init(&a, 1, record);
	assert_int_equal(pc_wheel_next(&w), UINT64_MAX);
	pc_wheel_schedule(&w, &a.t, 78);
	assert_int_equal(pc_wheel_next(&w), 78);
	pc_wheel_schedule(&w, &a.t, 77 + 40000);
	assert_true(pc_wheel_next(&w) <= 77 + 40000);
	assert_true(pc_wheel_next(&w) > 77);
}

static void validate_catches_corruption(void **state)
{
	struct pc_wheel w;
	struct tt a;
	(void)state;
	pc_wheel_init(&w, 0);
	tt_init(&a, 1, record);
	pc_wheel_schedule(&w, &a.t, 1000);
	assert_int_equal(pc_wheel_validate(&w, NULL, 0), 0);
	a.t._expire = 3;        /* now on the wrong list */
	PC_EXPECT_BROKEN(pc_wheel_validate(&w, PC_WHY), "expiring at 3");
	a.t._expire = 1000;
	w._bits[0][1] ^= 1;     /* an occupancy bit for an empty slot */
	PC_EXPECT_BROKEN(pc_wheel_validate(&w, PC_WHY), "occupancy bit 1, but the list is empty");
	w._bits[0][1] ^= 1;
	w._count++;
	PC_EXPECT_BROKEN(pc_wheel_validate(&w, PC_WHY), "1 timers on the lists, count says 2");
}

/* ---- the random model ------------------------------------------------ */

#define MODEL_TIMERS 4096

struct model_timer {
	struct pc_timer t;
	unsigned id;
	bool active;            /* the model's view */
	bool due;               /* scheduled at or before the then now */
	uint64_t expire;
	uint64_t epoch;         /* which advance call was next when scheduled */
	uint32_t gen;           /* bumped by every schedule, cancel and fire */
};

struct heap_item {
	uint64_t expire;
	unsigned id;
	uint32_t gen;
};

struct vec {
	struct heap_item *v;
	size_t len, cap;
};

static void vec_push(struct vec *a, struct heap_item it)
{
	if (a->len == a->cap) {
		a->cap = a->cap ? 2 * a->cap : 1024;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		assert_non_null(a->v);
	}
	a->v[a->len++] = it;
}

static struct {
	struct pc_wheel w;
	struct model_timer tm[MODEL_TIMERS];
	struct vec heap;         /* (expiry, id, gen) of non-due schedules */
	struct vec due, due_snap; /* (id, gen) of due schedules */
	struct rng rng;
	size_t active;
	uint64_t epoch;          /* advance calls so far */
	uint64_t advance_start;  /* now when the running advance began */
	uint64_t last_fire_now;
	uint64_t fired, far_scheduled;
} M;

static void heap_push(struct heap_item it)
{
	vec_push(&M.heap, it);
	struct heap_item *h = M.heap.v;
	size_t i = M.heap.len - 1;
	while (i > 0 && h[(i - 1) / 2].expire > it.expire) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = it;
}

static void heap_pop(void)
{
	struct heap_item *h = M.heap.v;
	struct heap_item last = h[--M.heap.len];
	size_t i = 0, n = M.heap.len;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1].expire < h[c].expire)
			c++;
		if (h[c].expire >= last.expire)
			break;
		h[i] = h[c];
		i = c;
	}
	if (n)
		h[i] = last;
}

/* The earliest live non-due expiry in the model; false if none. */
static bool heap_min_live(uint64_t *expire)
{
	while (M.heap.len) {
		struct heap_item top = M.heap.v[0];
		struct model_timer *x = &M.tm[top.id];
		if (x->active && x->gen == top.gen) {
			*expire = top.expire;
			return true;
		}
		heap_pop();
	}
	return false;
}

static uint64_t random_expiry(uint64_t now)
{
	uint64_t r = rng_below(&M.rng, 100), d;

	if (r < 5)
		return now - rng_below(&M.rng, 3) * (now > 2);  /* now or past */
	if (r < 55)
		d = 1 + rng_below(&M.rng, 300);
	else if (r < 85)
		d = 1 + rng_below(&M.rng, 70000);
	else if (r < 97)
		d = 1 + rng_below(&M.rng, 1ull << 26);
	else
		d = 1 + rng_below(&M.rng, 1ull << 34);
	return d > UINT64_MAX - now ? UINT64_MAX : now + d;
}

static void model_schedule(unsigned id, uint64_t expire)
{
	struct model_timer *x = &M.tm[id];
	uint64_t now = pc_wheel_now(&M.w);

	if (!x->active)
		M.active++;
	x->active = true;
	x->expire = expire;
	x->due = expire <= now;
	x->gen++;
	x->epoch = M.epoch;
	if (x->due)
		vec_push(&M.due, (struct heap_item){ 0, id, x->gen });
	else
		heap_push((struct heap_item){ expire, id, x->gen });
	if (expire > now && ((expire ^ now) >> PC_WHEEL_RANGE_BITS))
		M.far_scheduled++;
	pc_wheel_schedule(&M.w, &x->t, expire);
}

static void model_cancel(unsigned id)
{
	struct model_timer *x = &M.tm[id];

	assert_int_equal(pc_wheel_cancel(&M.w, &x->t), x->active);
	if (x->active)
		M.active--;
	x->active = false;
	x->gen++;
}

static void model_fire(struct pc_wheel *w, struct pc_timer *t)
{
	struct model_timer *x = (struct model_timer *)((char *)t - offsetof(struct model_timer, t));
	uint64_t now = pc_wheel_now(w);

	/* Scheduled, not cancelled, fires once, and at the right time. */
	assert_true(x->active);
	assert_false(pc_timer_active(t));
	if (x->due) {
		/* Due before this call, not scheduled into the past by it. */
		assert_int_equal(now, M.advance_start);
		assert_true(x->epoch < M.epoch);
	} else
		assert_int_equal(now, x->expire);
	assert_true(now >= M.last_fire_now);
	M.last_fire_now = now;
	x->active = false;
	x->gen++;
	M.active--;
	M.fired++;

	/* Change the wheel from inside the callback. */
	uint64_t r = rng_below(&M.rng, 16);
	if (r < 4)
		model_schedule(x->id, random_expiry(now));
	else if (r < 6)
		model_cancel((unsigned)rng_below(&M.rng, MODEL_TIMERS));
	else if (r < 8)
		model_schedule((unsigned)rng_below(&M.rng, MODEL_TIMERS), random_expiry(now));
}

static void model_advance(uint64_t to)
{
	struct vec snap = M.due;

	M.due = M.due_snap;
	M.due.len = 0;
	M.epoch++;
	M.advance_start = M.last_fire_now = pc_wheel_now(&M.w);
	pc_wheel_advance(&M.w, to);
	if (to < M.advance_start)
		to = M.advance_start;
	assert_int_equal(pc_wheel_now(&M.w), to);
	/* Every due timer ran (or a callback cancelled or moved it) ... */
	for (size_t i = 0; i < snap.len; i++)
		assert_true(M.tm[snap.v[i].id].gen != snap.v[i].gen);
	M.due_snap = snap;
	/* ... and nothing that should have fired is still waiting. */
	uint64_t first;
	assert_true(!heap_min_live(&first) || first > to);
	assert_int_equal(pc_wheel_count(&M.w), M.active);
}

static uint64_t random_step(void)
{
	uint64_t r = rng_below(&M.rng, 1000);

	if (r < 900)
		return rng_below(&M.rng, 64);
	if (r < 995)
		return rng_below(&M.rng, 1u << 20);
	return rng_below(&M.rng, 1ull << 35);
}

static void run_model(uint64_t start, uint64_t ops)
{
	memset(&M.w, 0, sizeof(M.w));
	for (unsigned i = 0; i < MODEL_TIMERS; i++) {
		memset(&M.tm[i], 0, sizeof(M.tm[i]));
		pc_timer_init(&M.tm[i].t, model_fire);
		M.tm[i].id = i;
	}
	M.heap.len = M.due.len = 0;
	M.active = 0;
	pc_wheel_init(&M.w, start);
	for (uint64_t op = 0; op < ops; op++) {
		uint64_t r = rng_below(&M.rng, 100);
		unsigned id = (unsigned)rng_below(&M.rng, MODEL_TIMERS);
		uint64_t now = pc_wheel_now(&M.w);

		if (r < 55)
			model_schedule(id, random_expiry(now));
		else if (r < 75)
			model_cancel(id);
		else {
			uint64_t step = random_step();
			model_advance(step > UINT64_MAX - now ? UINT64_MAX : now + step);
		}
		if (op % 512 == 0)
			assert_int_equal(pc_wheel_validate(&M.w, NULL, 0), 0);
	}
	/* Drain: everything still scheduled fires exactly once. */
	while (M.active) {
		uint64_t next = pc_wheel_next(&M.w), first;
		assert_true(next != UINT64_MAX || pc_wheel_now(&M.w) == UINT64_MAX);
		assert_true(!heap_min_live(&first) || next <= first);
		model_advance(next);
	}
	assert_int_equal(pc_wheel_count(&M.w), 0);
	assert_int_equal(pc_wheel_validate(&M.w, NULL, 0), 0);
}

static void random_operations_match_the_model(void **state)
{
	uint64_t ops = test_ops(2000000);
	(void)state;
	M.rng = test_rng("test_wheel");
	/* Start just below a 2^32 block edge, then near the end of time. */
	run_model((1ull << 32) - 5000, ops);
	assert_true(M.fired > ops / 10);
	assert_true(M.far_scheduled > 0);
	run_model(UINT64_MAX - (1ull << 36), ops / 8);
	free(M.heap.v);
	free(M.due.v);
	free(M.due_snap.v);
	memset(&M.heap, 0, sizeof(M.heap));
	memset(&M.due, 0, sizeof(M.due));
	memset(&M.due_snap, 0, sizeof(M.due_snap));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(past_and_present_fire_on_next_advance),
		cmocka_unit_test(fires_at_its_tick_on_every_level),
		cmocka_unit_test(cancel_and_reschedule),
		cmocka_unit_test(callback_reschedules_itself),
		cmocka_unit_test(callback_cancels_a_timer_of_the_same_tick),
		cmocka_unit_test(past_from_callback_waits_for_next_advance),
		cmocka_unit_test(callback_may_free_its_timer),
		cmocka_unit_test(block_edges_and_end_of_time),
		cmocka_unit_test(next_is_never_late),
		cmocka_unit_test(validate_catches_corruption),
		cmocka_unit_test(random_operations_match_the_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
