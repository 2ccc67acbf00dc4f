/* SPDX-License-Identifier: MIT */
/* pc_spsc on one thread: every operation and edge (empty, full, wrap-around,
 * bursts across the end of the buffer, staging, in-place consumption,
 * capacity rounding, bad arguments), with the validator after each step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "percore/spsc.h"
#include "validate_check.h"

struct msg {
	void (*fn)(void *);
	uint64_t seq;
	char payload[48];
};
_Static_assert(sizeof(struct msg) == 64, "a message is one cache line");

PC_SPSC_TYPED(u64q, uint64_t)
PC_SPSC_TYPED(msgq, struct msg)

static struct pc_spsc *ring_u64(size_t cap)
{
	struct pc_spsc *r = pc_spsc_create(cap, sizeof(uint64_t));

	assert_non_null(r);
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	return r;
}

static void init_rejects_bad_arguments(void **state)
{
	struct pc_spsc r;
	uint64_t buf[8];

	(void)state;
	assert_int_equal(pc_spsc_init(NULL, buf, 8, 8), -EINVAL);
	assert_int_equal(pc_spsc_init(&r, NULL, 8, 8), -EINVAL);
	assert_int_equal(pc_spsc_init(&r, buf, 8, 0), -EINVAL);
	assert_int_equal(pc_spsc_init(&r, buf, 0, 8), -EINVAL);
	assert_int_equal(pc_spsc_init(&r, buf, 6, 8), -EINVAL);
	assert_int_equal(pc_spsc_init(&r, buf, (size_t)1 << 62, 8), -EINVAL);
	assert_int_equal(pc_spsc_init(&r, buf, 8, 8), 0);
	assert_int_equal(pc_spsc_validate(&r, NULL, 0), 0);
	assert_int_equal(pc_spsc_capacity(&r), 8);
	assert_int_equal(pc_spsc_elem_size(&r), 8);
	pc_spsc_destroy(&r); /* caller's memory: left alone */
	pc_spsc_destroy(NULL);
	assert_int_equal(pc_spsc_validate(NULL, NULL, 0), -EINVAL);
}

static void create_rounds_capacity_up(void **state)
{
	static const size_t asked[][2] = {{1, 1}, {2, 2}, {3, 4}, {1000, 1024}, {1024, 1024}, {1025, 2048}};

	(void)state;
	for (size_t i = 0; i < PC_ARRAY_LEN(asked); i++) {
		struct pc_spsc *r = ring_u64(asked[i][0]);

		assert_int_equal(pc_spsc_capacity(r), asked[i][1]);
		assert_int_equal((uintptr_t)r % PC_CACHE_PAD, 0);
		pc_spsc_destroy(r);
	}
	assert_null(pc_spsc_create(0, 8));
	assert_null(pc_spsc_create(8, 0));
	assert_null(pc_spsc_create(SIZE_MAX / 2, 64));
}

static void sides_do_not_share_a_line(void **state)
{
	(void)state;
	assert_true(offsetof(struct pc_spsc, _c) - offsetof(struct pc_spsc, _p) >= PC_CACHE_PAD);
	assert_true(sizeof(struct pc_spsc_side) <= PC_CACHE_LINE);
	assert_int_equal(sizeof(struct pc_spsc) % PC_CACHE_PAD, 0);
}

static void empty_ring_gives_nothing(void **state)
{
	struct pc_spsc *r = ring_u64(4);
	uint64_t v = 7, out[4];

	(void)state;
	assert_int_equal(pc_spsc_pop(r, &v), -EAGAIN);
	assert_int_equal(v, 7); /* untouched */
	assert_null(pc_spsc_peek(r));
	assert_null(pc_spsc_take(r));
	assert_int_equal(pc_spsc_pop_burst(r, out, 4), 0);
	assert_int_equal(pc_spsc_pop_bulk(r, out, 1), -EAGAIN);
	assert_int_equal(pc_spsc_pop_bulk(r, out, 0), 0);
	assert_int_equal(pc_spsc_size(r), 0);
	assert_int_equal(pc_spsc_release(r), 0);
	assert_int_equal(pc_spsc_publish(r), 0);
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	pc_spsc_destroy(r);
}

static void full_ring_refuses_and_loses_nothing(void **state)
{
	struct pc_spsc *r = ring_u64(8);
	uint64_t v;

	(void)state;
	for (v = 0; v < 8; v++)
		assert_int_equal(pc_spsc_push(r, &v), 0);
	assert_int_equal(pc_spsc_size(r), 8);
	v = 99;
	assert_int_equal(pc_spsc_push(r, &v), -EAGAIN);
	assert_int_equal(pc_spsc_push_burst(r, &v, 1), 0);
	assert_int_equal(pc_spsc_push_bulk(r, &v, 1), -EAGAIN);
	assert_null(pc_spsc_stage(r));
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	for (uint64_t want = 0; want < 8; want++) {
		assert_int_equal(pc_spsc_pop(r, &v), 0);
		assert_int_equal(v, want);
	}
	assert_int_equal(pc_spsc_pop(r, &v), -EAGAIN);
	pc_spsc_destroy(r);
}

/* Many laps around a small ring at every fill level. */
static void wraps_around_in_order(void **state)
{
	struct pc_spsc *r = ring_u64(8);
	uint64_t in = 0, out = 0, v;

	(void)state;
	for (unsigned lap = 0; lap < 200; lap++) {
		unsigned fill = lap % 9;

		for (unsigned i = 0; i < fill; i++, in++)
			assert_int_equal(pc_spsc_push(r, &in), 0);
		assert_int_equal(pc_spsc_size(r), fill);
		while (pc_spsc_pop(r, &v) == 0)
			assert_int_equal(v, out++);
		assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	}
	assert_int_equal(in, out);
	assert_true(in > 8 * 50);
	pc_spsc_destroy(r);
}

/* Every burst length from every starting offset, so runs cross the end of
 * the buffer in every possible split. */
static void bursts_cross_the_end_in_every_split(void **state)
{
	enum { CAP = 16 };
	struct pc_spsc *r = ring_u64(CAP);
	uint64_t in = 0, out = 0, buf[CAP + 4], got[CAP + 4];

	(void)state;
	for (unsigned offset = 0; offset < CAP; offset++) {
		for (unsigned n = 1; n <= CAP; n++) {
			/* move the indices to offset modulo CAP */
			while ((in % CAP) != offset) {
				assert_int_equal(pc_spsc_push(r, &in), 0);
				in++;
				assert_int_equal(pc_spsc_pop(r, got), 0);
				assert_int_equal(got[0], out++);
			}
			for (unsigned i = 0; i < n; i++)
				buf[i] = in + i;
			assert_int_equal(pc_spsc_push_burst(r, buf, n), n);
			in += n;
			assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
			assert_int_equal(pc_spsc_pop_bulk(r, got, n), 0);
			for (unsigned i = 0; i < n; i++)
				assert_int_equal(got[i], out++);
			assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
		}
	}
	pc_spsc_destroy(r);
}

static void burst_moves_what_fits_bulk_all_or_nothing(void **state)
{
	struct pc_spsc *r = ring_u64(8);
	uint64_t buf[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got[10] = {0};

	(void)state;
	assert_int_equal(pc_spsc_push_bulk(r, buf, 9), -EMSGSIZE);
	assert_int_equal(pc_spsc_size(r), 0);
	assert_int_equal(pc_spsc_push_burst(r, buf, 5), 5);
	assert_int_equal(pc_spsc_push_bulk(r, buf + 5, 4), -EAGAIN); /* 3 free */
	assert_int_equal(pc_spsc_size(r), 5);
	assert_int_equal(pc_spsc_push_burst(r, buf + 5, 5), 3);
	assert_int_equal(pc_spsc_size(r), 8);
	assert_int_equal(pc_spsc_pop_bulk(r, got, 9), -EMSGSIZE);
	assert_int_equal(pc_spsc_pop_bulk(r, got, 3), 0);
	assert_int_equal(pc_spsc_pop_bulk(r, got + 3, 6), -EAGAIN); /* 5 left */
	assert_int_equal(pc_spsc_pop_burst(r, got + 3, 10), 5);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(got[i], i);
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	pc_spsc_destroy(r);
}

/* room re-reads the consumer only when fewer than asked are known free. */
static void room_counts_free_slots(void **state)
{
	struct pc_spsc *r = ring_u64(8);
	uint64_t v = 0, got[8];

	(void)state;
	assert_int_equal(pc_spsc_room(r, 1), 8);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(pc_spsc_push(r, &v), 0);
	assert_int_equal(pc_spsc_room(r, 1), 2);
	assert_int_equal(pc_spsc_pop_bulk(r, got, 4), 0);
	assert_int_equal(pc_spsc_room(r, 2), 2);       /* enough known: no re-read */
	assert_int_equal(pc_spsc_room(r, 3), 6);       /* re-read: 4 more free */
	assert_non_null(pc_spsc_stage(r));             /* staged slots count */
	assert_int_equal(pc_spsc_room(r, 1), 5);
	pc_spsc_publish(r);
	pc_spsc_destroy(r);
}

static void staged_slots_are_invisible_until_published(void **state)
{
	struct pc_spsc *r = ring_u64(4);
	uint64_t v, *slot;

	(void)state;
	for (uint64_t i = 0; i < 3; i++) {
		slot = pc_spsc_stage(r);
		assert_non_null(slot);
		*slot = 10 + i;
	}
	assert_int_equal(pc_spsc_size(r), 0);
	assert_int_equal(pc_spsc_produced(r), 3);  /* staged count, unpublished */
	assert_int_equal(pc_spsc_consumed(r), 0);
	assert_int_equal(pc_spsc_pop(r, &v), -EAGAIN);
	assert_null(pc_spsc_peek(r));
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	assert_int_equal(pc_spsc_publish(r), 3);
	assert_int_equal(pc_spsc_publish(r), 0);
	assert_int_equal(pc_spsc_size(r), 3);
	/* staged slots count against the capacity; a push publishes them too */
	assert_non_null(slot = pc_spsc_stage(r));
	*slot = 13;
	assert_null(pc_spsc_stage(r));
	assert_int_equal(pc_spsc_push(r, &v), -EAGAIN);
	assert_int_equal(pc_spsc_publish(r), 1);
	assert_int_equal(pc_spsc_pop(r, &v), 0);
	assert_int_equal(v, 10);
	assert_non_null(slot = pc_spsc_stage(r));
	*slot = 14;
	v = 15;
	assert_int_equal(pc_spsc_pop(r, &v), 0); /* consumer frees one more */
	v = 15;
	assert_int_equal(pc_spsc_push(r, &v), 0); /* publishes 14 and 15 */
	assert_int_equal(pc_spsc_size(r), 4);
	assert_int_equal(pc_spsc_produced(r), 6);
	assert_int_equal(pc_spsc_consumed(r), 2);
	for (uint64_t want = 12; want <= 15; want++) {
		assert_int_equal(pc_spsc_pop(r, &v), 0);
		assert_int_equal(v, want);
	}
	assert_int_equal(pc_spsc_consumed(r), 6);
	pc_spsc_destroy(r);
}

static void taken_slots_stay_busy_until_released(void **state)
{
	struct pc_spsc *r = ring_u64(4);
	uint64_t v, *p;

	(void)state;
	for (v = 0; v < 4; v++)
		assert_int_equal(pc_spsc_push(r, &v), 0);
	assert_non_null(p = pc_spsc_peek(r));
	assert_int_equal(*p, 0);
	assert_ptr_equal(pc_spsc_peek(r), p); /* peeking consumes nothing */
	assert_non_null(p = pc_spsc_take(r));
	assert_int_equal(*p, 0);
	assert_non_null(p = pc_spsc_take(r));
	assert_int_equal(*p, 1);
	assert_int_equal(*(uint64_t *)pc_spsc_peek(r), 2);
	/* taken but not released: the producer still sees a full ring,
	 * the consumer's count moved */
	assert_int_equal(pc_spsc_consumed(r), 2);
	assert_int_equal(pc_spsc_push(r, &v), -EAGAIN);
	assert_int_equal(pc_spsc_size(r), 4);
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	assert_int_equal(pc_spsc_release(r), 2);
	assert_int_equal(pc_spsc_size(r), 2);
	v = 4;
	assert_int_equal(pc_spsc_push(r, &v), 0);
	/* a pop after a take frees the taken slot too */
	assert_non_null(pc_spsc_take(r));
	assert_int_equal(pc_spsc_pop(r, &v), 0);
	assert_int_equal(v, 3);
	assert_int_equal(pc_spsc_size(r), 1);
	assert_int_equal(pc_spsc_pop(r, &v), 0);
	assert_int_equal(v, 4);
	assert_null(pc_spsc_take(r));
	pc_spsc_destroy(r);
}

/* Free-running indices: put both sides just below 2^64 and cross it. */
static void indices_cross_size_max(void **state)
{
	struct pc_spsc *r = ring_u64(4);
	size_t start = SIZE_MAX - 5;
	uint64_t v, buf[3] = {100, 101, 102};

	(void)state;
	atomic_store(&r->_p._pos, start);
	atomic_store(&r->_c._pos, start);
	r->_p._next = r->_p._other = r->_c._next = r->_c._other = start;
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	for (uint64_t i = 0; i < 20; i++) {
		assert_int_equal(pc_spsc_push_bulk(r, buf, 3), 0);
		assert_int_equal(pc_spsc_size(r), 3);
		v = i;
		assert_int_equal(pc_spsc_push(r, &v), 0);
		assert_int_equal(pc_spsc_push(r, &v), -EAGAIN);
		assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
		for (uint64_t want = 100; want < 103; want++) {
			assert_int_equal(pc_spsc_pop(r, &v), 0);
			assert_int_equal(v, want);
		}
		assert_int_equal(pc_spsc_pop(r, &v), 0);
		assert_int_equal(v, i);
	}
	assert_true(r->_p._next < start); /* it did wrap */
	pc_spsc_destroy(r);
}

static void validator_catches_corruption(void **state)
{
	struct pc_spsc *r = ring_u64(8);
	uint64_t v = 1;

	(void)state;
	assert_int_equal(pc_spsc_push(r, &v), 0);
	atomic_store(&r->_p._pos, 20); /* tail more than cap ahead of head */
	PC_EXPECT_BROKEN(pc_spsc_validate(r, PC_WHY), "tail 20 is 20 past head 0");
	atomic_store(&r->_p._pos, 1);
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	r->_c._next = 2; /* taken beyond the tail */
	PC_EXPECT_BROKEN(pc_spsc_validate(r, PC_WHY), "consumer's next 2 outside head..tail 0..1");
	r->_c._next = 0;
	r->_c._mask = 3; /* the sides disagree on the geometry */
	PC_EXPECT_BROKEN(pc_spsc_validate(r, PC_WHY), "the sides disagree");
	r->_c._mask = 7;
	assert_int_equal(pc_spsc_validate(r, NULL, 0), 0);
	pc_spsc_destroy(r);
}

static void typed_ring_of_messages(void **state)
{
	struct msgq q, *qc;
	struct msg *buf = aligned_alloc(64, 8 * sizeof(struct msg)), m = {0}, got[8];

	(void)state;
	assert_non_null(buf);
	assert_int_equal(msgq_init(&q, (struct msg *)((char *)buf + 4), 8), -EINVAL);
	assert_int_equal(msgq_init(&q, buf, 8), 0);
	assert_int_equal(msgq_validate(&q, NULL, 0), 0);
	for (unsigned i = 0; i < 5; i++) {
		m.seq = i;
		m.payload[47] = (char)i;
		assert_int_equal(msgq_push(&q, &m), 0);
	}
	struct msg *slot = msgq_stage(&q);
	assert_non_null(slot);
	slot->seq = 5;
	assert_int_equal(msgq_size(&q), 5);
	assert_int_equal(msgq_publish(&q), 1);
	assert_int_equal(msgq_peek(&q)->seq, 0);
	assert_int_equal(msgq_take(&q)->seq, 0);
	assert_int_equal(msgq_release(&q), 1);
	assert_int_equal(msgq_pop_bulk(&q, got, 2), 0);
	assert_int_equal(got[1].seq, 2);
	assert_int_equal(got[1].payload[47], 2);
	assert_int_equal(msgq_pop_burst(&q, got, 8), 3);
	assert_int_equal(got[2].seq, 5);
	assert_int_equal(msgq_push_burst(&q, got, 3), 3);
	assert_int_equal(msgq_push_bulk(&q, got, 6), -EAGAIN);
	assert_int_equal(msgq_pop(&q, &m), 0);
	assert_int_equal(m.seq, 3);
	/* a typed view of a ring built for another element size is refused */
	q.ring._p._esz = q.ring._c._esz = 32;
	PC_EXPECT_BROKEN(msgq_validate(&q, PC_WHY), "element size 32, expected");
	free(buf);

	qc = msgq_create(3);
	assert_non_null(qc);
	assert_int_equal(pc_spsc_capacity(&qc->ring), 4);
	assert_int_equal((uintptr_t)msgq_stage(qc) % 64, 0);
	msgq_destroy(qc);
	msgq_destroy(NULL);
}

static void typed_u64_matches_generic(void **state)
{
	struct u64q *q = u64q_create(16);
	uint64_t v;

	(void)state;
	assert_non_null(q);
	v = 42;
	assert_int_equal(u64q_push(q, &v), 0);
	assert_int_equal(pc_spsc_pop(&q->ring, &v), 0); /* same ring underneath */
	assert_int_equal(v, 42);
	assert_int_equal(pc_spsc_push(&q->ring, &v), 0);
	assert_int_equal(u64q_pop(q, &v), 0);
	assert_int_equal(v, 42);
	u64q_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_rejects_bad_arguments),
		cmocka_unit_test(create_rounds_capacity_up),
		cmocka_unit_test(sides_do_not_share_a_line),
		cmocka_unit_test(empty_ring_gives_nothing),
		cmocka_unit_test(full_ring_refuses_and_loses_nothing),
		cmocka_unit_test(wraps_around_in_order),
		cmocka_unit_test(bursts_cross_the_end_in_every_split),
		cmocka_unit_test(burst_moves_what_fits_bulk_all_or_nothing),
		cmocka_unit_test(room_counts_free_slots),
		cmocka_unit_test(staged_slots_are_invisible_until_published),
		cmocka_unit_test(taken_slots_stay_busy_until_released),
		cmocka_unit_test(indices_cross_size_max),
		cmocka_unit_test(validator_catches_corruption),
		cmocka_unit_test(typed_ring_of_messages),
		cmocka_unit_test(typed_u64_matches_generic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
