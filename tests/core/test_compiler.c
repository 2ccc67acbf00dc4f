/* SPDX-License-Identifier: MIT */
/* Compiler helpers and the bench registry behave as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "percore/defs.h"
#include "percore/clock.h"

struct two_writers {
	PC_CACHE_ALIGNED unsigned long a; /* written by core A */
	PC_CACHE_ALIGNED unsigned long b; /* written by core B */
};

static void next_pow2_rounds_up(void **state)
{
	(void)state;
	assert_int_equal(pc_next_pow2(0), 1);
	assert_int_equal(pc_next_pow2(1), 1);
	assert_int_equal(pc_next_pow2(2), 2);
	assert_int_equal(pc_next_pow2(3), 4);
	assert_int_equal(pc_next_pow2(1000), 1024);
	assert_int_equal(pc_next_pow2(1024), 1024);
	assert_int_equal(pc_next_pow2((size_t)1 << 40 | 1), (size_t)1 << 41);
}

static void is_pow2(void **state)
{
	(void)state;
	assert_false(PC_IS_POW2(0));
	assert_true(PC_IS_POW2(1));
	assert_true(PC_IS_POW2(4096));
	assert_false(PC_IS_POW2(4095));
}

static void padded_fields_do_not_share_a_line(void **state)
{
	(void)state;
	assert_true(offsetof(struct two_writers, b) - offsetof(struct two_writers, a) >= PC_CACHE_PAD);
	assert_int_equal(_Alignof(struct two_writers), PC_CACHE_PAD);
}

static void clock_is_monotonic(void **state)
{
	(void)state;
	uint64_t a = pc_now_ns(), b = pc_now_ns();
	assert_true(b >= a);
	assert_non_null(pc_version());
	assert_non_null(pc_build_info());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(next_pow2_rounds_up),
		cmocka_unit_test(is_pow2),
		cmocka_unit_test(padded_fields_do_not_share_a_line),
		cmocka_unit_test(clock_is_monotonic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
