/* SPDX-License-Identifier: MIT */
/* pc_spsc in slot-sequence mode on one thread: bad arguments, the initial
 * sequence words, empty, full, staging invisible until published, peek,
 * take/release, wrap-around, positions crossing 2^32 and 2^64, and the
 * validator catching a corrupt sequence word. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "percore/spsc_seq.h"
#include "validate_check.h"

struct msg {
	void (*fn)(void *);
	pc_spsc_seq_t seq;
	uint32_t tag;
	uint64_t val[6];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct msg) == 64, "a message is one cache line");

PC_SPSC_SEQ_TYPED(msgq, struct msg, seq)

struct ring {
	struct msgq q;
	struct msg *buf;
};

static struct ring *ring_new(size_t cap)
{
	/* aligned: the ring's blocks are cache-aligned */
	struct ring *r = aligned_alloc(_Alignof(struct ring), sizeof(*r));

	assert_non_null(r);
	memset(r, 0, sizeof(*r));
	r->buf = aligned_alloc(64, cap * sizeof(struct msg));
	assert_non_null(r->buf);
	assert_int_equal(msgq_init(&r->q, r->buf, cap), 0);
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	return r;
}

static void ring_free(struct ring *r)
{
	free(r->buf);
	free(r);
}

/* Stage and fill n messages numbered from first. Returns how many fit. */
static unsigned stage_n(struct ring *r, uint64_t first, unsigned n)
{
	unsigned k = 0;
	struct msg *m;

	while (k < n && (m = msgq_stage(&r->q))) {
		m->tag = 7;
		m->val[0] = first + k;
		m->val[5] = ~(first + k);
		k++;
	}
	return k;
}

/* Take up to n messages, checking they are first, first + 1, ... */
static unsigned take_n(struct ring *r, uint64_t first, unsigned n)
{
	unsigned k = 0;
	struct msg *m;

	while (k < n && (m = msgq_take(&r->q))) {
		assert_int_equal(m->tag, 7);
		assert_int_equal(m->val[0], first + k);
		assert_int_equal(m->val[5], ~(first + k));
		k++;
	}
	return k;
}

static void init_rejects_bad_arguments(void **state)
{
	struct pc_spsc_seq r;
	struct msg buf[8];
	_Alignas(64) char raw[8 * 64 + 64];

	(void)state;
	assert_int_equal(pc_spsc_seq_init(NULL, buf, 8, 64, 8), -EINVAL);
	assert_int_equal(pc_spsc_seq_init(&r, NULL, 8, 64, 8), -EINVAL);
	assert_int_equal(pc_spsc_seq_init(&r, buf, 6, 64, 8), -EINVAL);
	assert_int_equal(pc_spsc_seq_init(&r, buf, 8, 64, 2), -EINVAL);  /* misaligned word */
	assert_int_equal(pc_spsc_seq_init(&r, buf, 8, 64, 64), -EINVAL); /* outside the element */
	assert_int_equal(pc_spsc_seq_init(&r, buf, 8, 64, 62), -EINVAL); /* runs past its end */
	assert_int_equal(pc_spsc_seq_init(&r, buf, 8, 6, 0), -EINVAL);   /* elements misalign words */
	assert_int_equal(pc_spsc_seq_init(&r, raw + 1, 8, 64, 0), -EINVAL);
	assert_int_equal(pc_spsc_seq_init(&r, buf, (size_t)1 << 32, 64, 8), -EINVAL);
	assert_int_equal(msgq_init((struct msgq *)&r, (struct msg *)(raw + 4), 8), -EINVAL);
	assert_int_equal(pc_spsc_seq_init(&r, buf, 8, 64, offsetof(struct msg, seq)), 0);
	assert_int_equal(pc_spsc_seq_validate(&r, NULL, 0), 0);
	assert_int_equal(pc_spsc_seq_capacity(&r), 8);
	assert_int_equal(pc_spsc_seq_size(&r), 0);
	/* the plain validator refuses a ring in this mode */
	assert_int_equal(pc_spsc_validate(&r._ring, NULL, 0), -EINVAL);
	/* every word says "published one lap ago" */
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(atomic_load(&buf[i].seq), i + 1 - 8);
	assert_null(pc_spsc_seq_take(&r));
	assert_null(pc_spsc_seq_peek(&r));
}

static void staged_is_invisible_until_published(void **state)
{
	struct ring *r = ring_new(8);
	struct msg *m;

	(void)state;
	assert_int_equal(stage_n(r, 0, 3), 3);
	assert_null(msgq_peek(&r->q));
	assert_null(msgq_take(&r->q));
	assert_int_equal(msgq_size(&r->q), 0);
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	assert_int_equal(msgq_publish(&r->q), 3);
	assert_int_equal(msgq_publish(&r->q), 0);
	assert_int_equal(msgq_size(&r->q), 3);
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	m = msgq_peek(&r->q);
	assert_non_null(m);
	assert_int_equal(m->val[0], 0);
	assert_ptr_equal(msgq_peek(&r->q), m); /* peek does not consume */
	assert_int_equal(take_n(r, 0, 3), 3);
	assert_null(msgq_take(&r->q));
	/* taken but not released: still counted, still not reusable */
	assert_int_equal(msgq_size(&r->q), 3);
	assert_int_equal(msgq_release(&r->q), 3);
	assert_int_equal(msgq_size(&r->q), 0);
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	ring_free(r);
}

static void full_until_released(void **state)
{
	struct ring *r = ring_new(8);

	(void)state;
	assert_int_equal(stage_n(r, 0, 10), 8);
	assert_null(msgq_stage(&r->q));
	assert_int_equal(pc_spsc_seq_room(&r->q.ring, 1), 0);
	msgq_publish(&r->q);
	assert_int_equal(take_n(r, 0, 5), 5);
	/* taken slots are not free until released */
	assert_null(msgq_stage(&r->q));
	msgq_release(&r->q);
	assert_int_equal(pc_spsc_seq_room(&r->q.ring, 1), 5);
	assert_int_equal(stage_n(r, 8, 10), 5);
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	msgq_publish(&r->q);
	assert_int_equal(take_n(r, 5, 20), 8);
	msgq_release(&r->q);
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	ring_free(r);
}

/* Many laps in uneven batches, so batches straddle the end of the buffer
 * and every slot's word goes through many laps. */
static void wraps_around_in_order(void **state)
{
	struct ring *r = ring_new(16);
	uint64_t sent = 0, got = 0;

	(void)state;
	for (unsigned lap = 0; lap < 1000; lap++) {
		unsigned n = lap % 13 + 1;

		sent += stage_n(r, sent, n);
		msgq_publish(&r->q);
		got += take_n(r, got, lap % 7 + 1);
		msgq_release(&r->q);
		assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	}
	got += take_n(r, got, 16);
	msgq_release(&r->q);
	assert_int_equal(got, sent);
	assert_true(sent > 16 * 100);
	ring_free(r);
}

/* Put both sides just below start, with the words as a ring that had
 * reached start would have them. */
static void rebase(struct ring *r, size_t start)
{
	struct pc_spsc *q = &r->q.ring._ring;
	size_t cap = pc_spsc_seq_capacity(&r->q.ring);

	atomic_store(&q->_p._pos, start);
	atomic_store(&q->_c._pos, start);
	q->_p._next = q->_p._other = q->_c._next = q->_c._other = start;
	for (size_t p = start - cap; p != start; p++)
		atomic_store(&r->buf[p & (cap - 1)].seq, (uint32_t)(p + 1));
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
}

/* Sequence words are 32 bits: positions crossing 2^32 (and 2^64, where
 * the indices wrap) must not make an old word look new. */
static void positions_cross_2_32_and_2_64(void **state)
{
	static const size_t starts[] = {((size_t)1 << 32) - 5, SIZE_MAX - 5};

	(void)state;
	for (size_t s = 0; s < PC_ARRAY_LEN(starts); s++) {
		struct ring *r = ring_new(4);
		uint64_t sent = 0, got = 0;

		rebase(r, starts[s]);
		for (unsigned i = 0; i < 20; i++) {
			assert_int_equal(stage_n(r, sent, 3), 3);
			sent += 3;
			assert_null(msgq_take(&r->q)); /* nothing published yet */
			msgq_publish(&r->q);
			assert_int_equal(take_n(r, got, 4), 3);
			got += 3;
			msgq_release(&r->q);
			assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
		}
		ring_free(r);
	}
}

static void validator_catches_corruption(void **state)
{
	struct ring *r = ring_new(8);
	uint32_t w;

	(void)state;
	assert_int_equal(stage_n(r, 0, 2), 2);
	msgq_publish(&r->q);
	/* a published slot whose word went back */
	w = atomic_load(&r->buf[1].seq);
	atomic_store(&r->buf[1].seq, w - 8);
	PC_EXPECT_BROKEN(msgq_validate(&r->q, PC_WHY), "slot 1 (position");
	atomic_store(&r->buf[1].seq, w);
	/* a free slot whose word says published */
	atomic_store(&r->buf[5].seq, 6);
	PC_EXPECT_BROKEN(msgq_validate(&r->q, PC_WHY), "slot 5 (position");
	atomic_store(&r->buf[5].seq, 6 - 8);
	assert_int_equal(msgq_validate(&r->q, NULL, 0), 0);
	/* the two sides disagreeing about the mode */
	r->q.ring._ring._c._seq = PC_SPSC_NO_SEQ;
	PC_EXPECT_BROKEN(msgq_validate(&r->q, PC_WHY), "the sides disagree");
	PC_EXPECT_BROKEN(pc_spsc_seq_validate(&r->q.ring, PC_WHY), "the sides disagree");
	ring_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_rejects_bad_arguments),
		cmocka_unit_test(staged_is_invisible_until_published),
		cmocka_unit_test(full_until_released),
		cmocka_unit_test(wraps_around_in_order),
		cmocka_unit_test(positions_cross_2_32_and_2_64),
		cmocka_unit_test(validator_catches_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
