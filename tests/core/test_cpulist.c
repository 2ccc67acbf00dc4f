/* SPDX-License-Identifier: MIT */
/* CPU list text round-trips and rejects malformed input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "percore/cpulist.h"

static void parses_ranges_and_singles(void **state)
{
	cpu_set_t s;
	(void)state;
	assert_int_equal(pc_cpulist_parse("0-3, 8,10-11\n", &s), 0);
	assert_int_equal(CPU_COUNT(&s), 7);
	assert_true(CPU_ISSET(0, &s) && CPU_ISSET(3, &s) && CPU_ISSET(8, &s));
	assert_true(CPU_ISSET(11, &s));
	assert_false(CPU_ISSET(4, &s));
	assert_int_equal(pc_cpulist_parse("", &s), 0);
	assert_int_equal(CPU_COUNT(&s), 0);
}

static void rejects_malformed(void **state)
{
	cpu_set_t s;
	(void)state;
	const char *bad[] = { "a", "1-", "-1", "3-1", "1,,2", "1 2", "99999", "1;2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pc_cpulist_parse(bad[i], &s), -EINVAL);
}

static void formats_compactly(void **state)
{
	cpu_set_t s;
	char buf[64];
	(void)state;
	assert_int_equal(pc_cpulist_parse("5,0-2,7,6", &s), 0);
	assert_int_equal(pc_cpulist_format(&s, buf, sizeof(buf)), 7);
	assert_string_equal(buf, "0-2,5-7");
	CPU_ZERO(&s);
	assert_int_equal(pc_cpulist_format(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(pc_cpulist_parse("0,2,4,6,8", &s), 0);
	assert_int_equal(pc_cpulist_format(&s, buf, 4), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parses_ranges_and_singles),
		cmocka_unit_test(rejects_malformed),
		cmocka_unit_test(formats_compactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
