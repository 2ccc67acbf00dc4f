/* SPDX-License-Identifier: MIT */
/* The time-difference helpers: a "time since" never wraps, whichever of
 * the two readings is the later, at the 2^32 and 2^64 boundaries too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "percore/clock.h"

static void elapsed_in_order(void **state)
{
	(void)state;
	assert_int_equal(pc_elapsed(10, 3), 7);
	assert_int_equal(pc_elapsed(5, 5), 0);
	assert_int_equal(pc_elapsed(UINT64_MAX, 0), UINT64_MAX);
	assert_int_equal(pc_elapsed(UINT64_MAX, UINT64_MAX - 1), 1);
	/* Across the 32-bit boundary: 64-bit values carry on past it. */
	assert_int_equal(pc_elapsed(UINT64_C(1) << 32, (UINT64_C(1) << 32) - 1), 1);
	assert_int_equal(pc_elapsed((UINT64_C(1) << 32) + 5, UINT32_MAX), 6);
}

static void elapsed_never_negative(void **state)
{
	(void)state;
	/* then read after now: no age, not nearly 2^64. */
	assert_int_equal(pc_elapsed(3, 10), 0);
	assert_int_equal(pc_elapsed(0, UINT64_MAX), 0);
	assert_int_equal(pc_elapsed(UINT64_MAX - 1, UINT64_MAX), 0);
	assert_int_equal(pc_elapsed((UINT64_C(1) << 32) - 1, UINT64_C(1) << 32), 0);
	assert_int_equal(pc_elapsed(UINT32_MAX, (UINT64_C(1) << 32) + 5), 0);
}

static void elapsed32_across_the_wrap(void **state)
{
	(void)state;
	assert_int_equal(pc_elapsed32(10, 3), 7);
	assert_int_equal(pc_elapsed32(7, 7), 0);
	/* now has wrapped past 2^32, then has not: still a small age. */
	assert_int_equal(pc_elapsed32(2, UINT32_MAX - 1), 4);
	assert_int_equal(pc_elapsed32(0, UINT32_MAX), 1);
	/* Stamps cut from 64-bit ticks on both sides of 2^32. */
	uint64_t then = (UINT64_C(1) << 32) - 3, now = then + 1000;
	assert_int_equal(pc_elapsed32((uint32_t)now, (uint32_t)then), 1000);
	/* The largest age it represents. */
	assert_int_equal(pc_elapsed32(INT32_MAX, 0), INT32_MAX);
	assert_int_equal(pc_elapsed32(UINT32_C(0x7fffffff) + 5, 5), INT32_MAX);
}

static void elapsed32_never_negative(void **state)
{
	(void)state;
	/* then is the later reading: 0, not about 2^32 (the busy-session
	 * case: a read stamped a tick the timer has not reached yet). */
	assert_int_equal(pc_elapsed32(3, 10), 0);
	assert_int_equal(pc_elapsed32(UINT32_MAX, 0), 0);
	assert_int_equal(pc_elapsed32(UINT32_MAX - 1, 2), 0);
	assert_int_equal(pc_elapsed32(UINT32_MAX - 5, UINT32_MAX), 0);
	uint64_t now = (UINT64_C(1) << 32) - 2, then = now + 5;
	assert_int_equal(pc_elapsed32((uint32_t)now, (uint32_t)then), 0);
	assert_int_equal(pc_elapsed32(0, UINT32_C(0x80000000)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(elapsed_in_order),
		cmocka_unit_test(elapsed_never_negative),
		cmocka_unit_test(elapsed32_across_the_wrap),
		cmocka_unit_test(elapsed32_never_negative),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
