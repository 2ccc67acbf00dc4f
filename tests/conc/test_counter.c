/* SPDX-License-Identifier: MIT */
/* pc_counter: cells on separate lines, sums and resets exact on one thread,
 * and exact totals with several threads adding (by CPU, by index and as the
 * single owner of a cell) while another thread sums and drains it.
 * PC_STRESS_ITEMS overrides the adds per thread. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "percore/counter.h"
#include "conc/stress.h"

#define THREADS 4

static void cells_are_padded_and_rounded(void **state)
{
	struct pc_counter *c = pc_counter_create(3);

	(void)state;
	assert_non_null(c);
	assert_int_equal(pc_counter_cells(c), 4);
	assert_int_equal(sizeof(struct pc_counter_cell), PC_CACHE_PAD);
	assert_int_equal((uintptr_t)&c->_cells[1] - (uintptr_t)&c->_cells[0], PC_CACHE_PAD);
	assert_int_equal((uintptr_t)c->_cells % PC_CACHE_PAD, 0);
	pc_counter_destroy(c);
	c = pc_counter_create(0); /* one per possible CPU */
	assert_non_null(c);
	assert_true(pc_counter_cells(c) >= 1);
	pc_counter_destroy(c);
	pc_counter_destroy(NULL);
	assert_null(pc_counter_create(((size_t)1 << 20) + 1));
}

static void sums_and_resets_on_one_thread(void **state)
{
	struct pc_counter *c = pc_counter_create(4);

	(void)state;
	assert_int_equal(pc_counter_sum(c), 0);
	pc_counter_add(c, 5);
	pc_counter_add_at(c, 1, 10);
	pc_counter_add_at(c, 6, 100); /* index wraps onto cell 2 */
	pc_counter_add_owned(c, 3, -7);
	assert_int_equal(pc_counter_sum(c), 108);
	assert_int_equal(atomic_load(&c->_cells[2]._v), 100);
	assert_int_equal(pc_counter_reset(c), 108);
	assert_int_equal(pc_counter_sum(c), 0);
	pc_counter_add_at(c, 0, -3);
	assert_int_equal(pc_counter_sum(c), -3);
	pc_counter_destroy(c);
}

struct run {
	struct pc_counter *c;   /* locked adds: by CPU and by index */
	struct pc_counter *own; /* one writer per cell */
	uint64_t per_thread;
	_Atomic int adders_left;
	int64_t drained;        /* by the reader */
};

struct adder {
	struct run *run;
	unsigned id;
};

static void *adder(void *arg)
{
	struct adder *a = arg;
	struct run *run = a->run;

	for (uint64_t i = 0; i < run->per_thread; i++) {
		switch (i % 3) {
		case 0:
			pc_counter_add(run->c, 3);
			break;
		case 1:
			pc_counter_add_at(run->c, a->id, -1);
			break;
		default:
			pc_counter_add_owned(run->own, a->id, 2);
			break;
		}
	}
	atomic_fetch_sub(&run->adders_left, 1);
	return NULL;
}

static int64_t expected_per_thread(uint64_t n)
{
	int64_t v = 0;

	for (uint64_t r = 0; r < 3; r++) {
		uint64_t k = n / 3 + (r < n % 3);

		v += (int64_t)k * (r == 0 ? 3 : r == 1 ? -1 : 2);
	}
	return v;
}

/* Adds from several threads while a reader sums and drains the shared
 * cells: nothing is lost or counted twice. */
static void concurrent_adds_sum_exactly(void **state)
{
	struct run run = {.c = pc_counter_create(2 * THREADS),
			  .own = pc_counter_create(THREADS),
			  .per_thread = stress_items(3000000, 300000)};
	struct adder args[THREADS];
	pthread_t t[THREADS];

	(void)state;
	assert_non_null(run.c);
	assert_non_null(run.own);
	atomic_init(&run.adders_left, THREADS);
	print_message("counter: %d threads x %" PRIu64 " adds\n", THREADS, run.per_thread);
	for (unsigned i = 0; i < THREADS; i++) {
		args[i] = (struct adder){.run = &run, .id = i};
		assert_int_equal(pthread_create(&t[i], NULL, adder, &args[i]), 0);
	}
	/* drain only the counter written with locked adds: an exchange on an
	 * owned cell would race with its owner's plain store; the owned one
	 * is only summed */
	while (atomic_load(&run.adders_left) > 0) {
		run.drained += pc_counter_reset(run.c);
		PC_DO_NOT_OPTIMIZE(pc_counter_sum(run.own));
		sched_yield();
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(run.drained + pc_counter_sum(run.c) + pc_counter_sum(run.own),
			 THREADS * expected_per_thread(run.per_thread));
	assert_int_equal(pc_counter_sum(run.own), THREADS * 2 * (int64_t)(run.per_thread / 3));
	pc_counter_destroy(run.c);
	pc_counter_destroy(run.own);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cells_are_padded_and_rounded),
		cmocka_unit_test(sums_and_resets_on_one_thread),
		cmocka_unit_test(concurrent_adds_sum_exactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
