/* SPDX-License-Identifier: MIT */
/* pc_mpsc on one thread: every operation and edge, plus a producer that
 * stalls between claiming and filling its slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "percore/mpsc.h"
#include "validate_check.h"

PC_MPSC_TYPED(u64q, uint64_t)

struct big {
	uint64_t w[8];
};
PC_MPSC_TYPED(bigq, struct big)

static void init_rejects_bad_arguments(void **state)
{
	struct pc_mpsc q;
	uint64_t buf[32];

	(void)state;
	assert_int_equal(pc_mpsc_buf_size(8, 8), 8 * 16);
	assert_int_equal(pc_mpsc_buf_size(SIZE_MAX / 4, 8), 0);
	assert_int_equal(pc_mpsc_init(NULL, buf, 8, 8), -EINVAL);
	assert_int_equal(pc_mpsc_init(&q, NULL, 8, 8), -EINVAL);
	assert_int_equal(pc_mpsc_init(&q, (char *)buf + 4, 8, 8), -EINVAL);
	assert_int_equal(pc_mpsc_init(&q, buf, 8, 0), -EINVAL);
	assert_int_equal(pc_mpsc_init(&q, buf, 0, 8), -EINVAL);
	assert_int_equal(pc_mpsc_init(&q, buf, 12, 8), -EINVAL);
	assert_int_equal(pc_mpsc_init(&q, buf, 16, 8), 0);
	assert_int_equal(pc_mpsc_validate(&q, NULL, 0), 0);
	assert_int_equal(pc_mpsc_capacity(&q), 16);
	pc_mpsc_destroy(&q); /* the caller's memory: left alone */
	pc_mpsc_destroy(NULL);
	assert_int_equal(pc_mpsc_validate(NULL, NULL, 0), -EINVAL);
}

static void create_rounds_capacity_up(void **state)
{
	(void)state;
	for (size_t cap = 1; cap < 70; cap += 7) {
		struct pc_mpsc *q = pc_mpsc_create(cap, 8);

		assert_non_null(q);
		assert_int_equal(pc_mpsc_capacity(q), pc_next_pow2(cap));
		assert_int_equal(pc_mpsc_validate(q, NULL, 0), 0);
		pc_mpsc_destroy(q);
	}
	assert_null(pc_mpsc_create(0, 8));
	assert_null(pc_mpsc_create(8, 0));
	assert_null(pc_mpsc_create(SIZE_MAX / 8, 64));
}

static void blocks_do_not_share_a_line(void **state)
{
	(void)state;
	assert_true(offsetof(struct pc_mpsc, _head) - offsetof(struct pc_mpsc, _tail) >= PC_CACHE_PAD);
}

static void empty_full_and_nothing_lost(void **state)
{
	struct u64q *q = u64q_create(8);
	uint64_t v = 5, got[10];

	(void)state;
	assert_non_null(q);
	assert_int_equal(u64q_pop(q, &v), -EAGAIN);
	assert_int_equal(v, 5);
	assert_int_equal(u64q_pop_burst(q, got, 10), 0);
	assert_int_equal(u64q_size(q), 0);
	for (v = 0; v < 8; v++)
		assert_int_equal(u64q_push(q, &v), 0);
	assert_int_equal(u64q_size(q), 8);
	assert_int_equal(u64q_push(q, &v), -EAGAIN);
	assert_int_equal(u64q_validate(q, NULL, 0), 0);
	assert_int_equal(u64q_pop_burst(q, got, 3), 3);
	assert_int_equal(u64q_pop_burst(q, got + 3, 10), 5);
	for (v = 0; v < 8; v++)
		assert_int_equal(got[v], v);
	assert_int_equal(u64q_validate(q, NULL, 0), 0);
	u64q_destroy(q);
}

static void wraps_around_in_order(void **state)
{
	struct pc_mpsc *q = pc_mpsc_create(4, sizeof(uint64_t));
	uint64_t in = 0, out = 0, v, got[4];

	(void)state;
	for (unsigned lap = 0; lap < 300; lap++) {
		unsigned fill = lap % 5;

		for (unsigned i = 0; i < fill; i++, in++)
			assert_int_equal(pc_mpsc_push(q, &in), 0);
		assert_int_equal(pc_mpsc_validate(q, NULL, 0), 0);
		if (lap % 2) {
			while (pc_mpsc_pop(q, &v) == 0)
				assert_int_equal(v, out++);
		} else {
			unsigned n = pc_mpsc_pop_burst(q, got, 4);

			assert_int_equal(n, fill);
			for (unsigned i = 0; i < n; i++)
				assert_int_equal(got[i], out++);
		}
	}
	assert_int_equal(in, out);
	pc_mpsc_destroy(q);
}

/* A producer that claimed position 1 and has not filled it yet holds back
 * position 2 even though that one is ready; nothing is lost or reordered. */
static void stalled_producer_holds_back_later_items(void **state)
{
	struct bigq *q = bigq_create(8);
	struct big a = {{1}}, c = {{3}}, got[4];
	struct pc_mpsc_slot *s1;

	(void)state;
	assert_non_null(q);
	assert_int_equal(bigq_push(q, &a), 0);
	atomic_fetch_add(&q->ring._tail, 1); /* claim position 1 by hand */
	assert_int_equal(bigq_push(q, &c), 0);
	assert_int_equal(bigq_size(q), 3);
	assert_int_equal(bigq_pop_burst(q, got, 4), 1);
	assert_int_equal(got[0].w[0], 1);
	assert_int_equal(bigq_pop(q, got), -EAGAIN);
	/* the stalled producer finishes */
	s1 = (struct pc_mpsc_slot *)(q->ring._pslots + q->ring._pstride);
	got[0].w[0] = 2;
	memcpy(s1->data, &got[0], sizeof(struct big));
	atomic_store(&s1->seq, 2);
	assert_int_equal(bigq_pop_burst(q, got, 4), 2);
	assert_int_equal(got[0].w[0], 2);
	assert_int_equal(got[1].w[0], 3);
	assert_int_equal(bigq_validate(q, NULL, 0), 0);
	bigq_destroy(q);
}

static void validator_catches_corruption(void **state)
{
	struct u64q *q = u64q_create(4);
	uint64_t v = 1;

	(void)state;
	assert_int_equal(u64q_push(q, &v), 0);
	struct pc_mpsc_slot *s0 = (struct pc_mpsc_slot *)q->ring._cslots;
	atomic_store(&s0->seq, 0); /* filled slot marked free */
	PC_EXPECT_BROKEN(u64q_validate(q, PC_WHY), "slot 0 (position 0, waiting): sequence 0, expected 1");
	atomic_store(&s0->seq, 1);
	assert_int_equal(u64q_validate(q, NULL, 0), 0);
	atomic_store(&q->ring._tail, 9); /* more waiting than fits */
	PC_EXPECT_BROKEN(u64q_validate(q, PC_WHY), "tail 9 is 9 past head 0");
	atomic_store(&q->ring._tail, 1);
	q->ring._cstride = 8;
	PC_EXPECT_BROKEN(u64q_validate(q, PC_WHY), "the sides disagree");
	q->ring._cstride = q->ring._pstride;
	assert_int_equal(u64q_validate(q, NULL, 0), 0);
	u64q_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_rejects_bad_arguments),
		cmocka_unit_test(create_rounds_capacity_up),
		cmocka_unit_test(blocks_do_not_share_a_line),
		cmocka_unit_test(empty_full_and_nothing_lost),
		cmocka_unit_test(wraps_around_in_order),
		cmocka_unit_test(stalled_producer_holds_back_later_items),
		cmocka_unit_test(validator_catches_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
