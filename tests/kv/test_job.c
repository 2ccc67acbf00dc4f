/* SPDX-License-Identifier: MIT */
/* A job's arguments (kv_job_arg()): every length, the short ones copied
 * without a call included, arrives whole and in order, side by side in
 * the job's own memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server_internal.h"

#define LONGEST 40

/* Argument i's bytes: its length and position in every byte. */
static void fill(char *p, size_t len, unsigned i)
{
	for (size_t b = 0; b < len; b++)
		p[b] = (char)('A' + (i * 7 + b * 3) % 53);
}

static void every_length(void **state)
{
	char src[LONGEST + 1][LONGEST + 1], want[LONGEST + 1];
	size_t bytes = 0;
	struct kv_job *j;

	(void)state;
	for (unsigned i = 0; i <= LONGEST; i++) {
		fill(src[i], i, i);
		bytes += i;
	}
	/* twice over, so that short copies follow long ones and back */
	j = kv_job_new(KV_JOB_CMD, 2 * (LONGEST + 1), 2 * bytes);
	assert_non_null(j);
	for (unsigned round = 0; round < 2; round++)
		for (unsigned i = 0; i <= LONGEST; i++) {
			unsigned len = round ? LONGEST - i : i;

			kv_job_arg(j, src[len], len);
		}
	assert_int_equal(j->a.argc, 2 * (LONGEST + 1));
	for (unsigned a = 0; a < j->a.argc; a++) {
		unsigned len = a <= LONGEST ? a : LONGEST - (a - LONGEST - 1);

		assert_int_equal(j->a.argl[a], len);
		fill(want, len, len);
		assert_memory_equal(j->a.argv[a], want, len);
		if (a)
			assert_ptr_equal(j->a.argv[a], j->a.argv[a - 1] + j->a.argl[a - 1]);
	}
	assert_ptr_equal(j->a.argv[j->a.argc - 1] + j->a.argl[j->a.argc - 1],
			 j->a.argv[0] + 2 * bytes);
	kv_job_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
