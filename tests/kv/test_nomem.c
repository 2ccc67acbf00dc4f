/* SPDX-License-Identifier: MIT */
/* Commands whose store fails for want of memory answer one error and
 * change nothing: the allocation of large values is made to fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmd.h"

/* The kv objects are linked with --wrap=malloc: their mallocs come here. */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);

static size_t fail_from = SIZE_MAX; /* mallocs of at least this many bytes fail */

void *__wrap_malloc(size_t n)
{
	return n >= fail_from ? NULL : __real_malloc(n);
}

static struct kv_db *db;
static struct kv_reply out;
static char big[64 << 10];

static void run(uint32_t argc, const char **argv)
{
	size_t argl[8];
	struct kv_call c = { .db = db, .out = &out, .now = 1000, .max_bulk = 1 << 20,
			     .argc = argc, .argv = argv, .argl = argl };

	for (uint32_t i = 0; i < argc; i++)
		argl[i] = argv[i] == big ? sizeof(big) : strlen(argv[i]);
	kv_reply_clear(&out);
	kv_cmd_exec(&c);
}

static void expect_reply(const char *want)
{
	if (out.len != strlen(want) || memcmp(out.buf, want, out.len))
		fail_msg("got \"%.*s\", want \"%s\"", (int)out.len, out.buf, want);
}

static int setup(void **state)
{
	(void)state;
	db = kv_db_new();
	kv_reply_init(&out);
	memset(big, 'x', sizeof(big));
	run(3, (const char *[]){ "set", "k", "old" });
	return db ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	fail_from = SIZE_MAX;
	kv_reply_free(&out);
	kv_db_free(db);
	return 0;
}

/* One request, one reply: the error, not the old value and then the error. */
static void getset_fails_whole(void **state)
{
	(void)state;
	fail_from = sizeof(big);
	run(3, (const char *[]){ "getset", "k", big });
	fail_from = SIZE_MAX;
	expect_reply("-ERR out of memory\r\n");
	run(2, (const char *[]){ "get", "k" });
	expect_reply("$3\r\nold\r\n");
}

static void set_get_fails_whole(void **state)
{
	(void)state;
	fail_from = sizeof(big);
	run(4, (const char *[]){ "set", "k", big, "get" });
	fail_from = SIZE_MAX;
	expect_reply("-ERR out of memory\r\n");
	run(2, (const char *[]){ "get", "k" });
	expect_reply("$3\r\nold\r\n");
}

/* The allocation does work when it is not made to fail. */
static void getset_stores(void **state)
{
	(void)state;
	run(3, (const char *[]){ "getset", "k", big });
	expect_reply("$3\r\nold\r\n");
	run(2, (const char *[]){ "strlen", "k" });
	expect_reply(":65536\r\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(getset_fails_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(set_get_fails_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(getset_stores, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
