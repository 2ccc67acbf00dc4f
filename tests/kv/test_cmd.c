/* SPDX-License-Identifier: MIT */
/* The command table and what the oracle cannot pin down: exact TTL
 * arithmetic at a fixed clock, expiry at its boundary, the string-length
 * limit on APPEND and SETRANGE, and KEYS over a table that has grown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmd.h"

struct fixture {
	struct kv_db *db;
	struct kv_reply out;
	int64_t now;
	uint64_t max_bulk;
};

/* Runs the space-separated command text and checks the reply bytes. */
static void expect(struct fixture *f, const char *cmd, const char *want)
{
	char buf[256];
	const char *argv[16];
	size_t argl[16];
	uint32_t argc = 0;
	snprintf(buf, sizeof(buf), "%s", cmd);
	for (char *save, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		argv[argc] = t;
		argl[argc++] = strlen(t);
	}
	struct kv_call c = { .db = f->db, .out = &f->out, .now = f->now, .max_bulk = f->max_bulk,
			     .argc = argc, .argv = argv, .argl = argl };
	kv_reply_clear(&f->out);
	kv_cmd_exec(&c);
	if (f->out.len != strlen(want) || memcmp(f->out.buf, want, f->out.len) != 0)
		fail_msg("%s: got \"%.*s\", want \"%s\"", cmd, (int)f->out.len, f->out.buf, want);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	f->db = kv_db_new();
	kv_reply_init(&f->out);
	f->now = 1000000;
	f->max_bulk = 16;
	*state = f;
	return f->db ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	kv_reply_free(&f->out);
	kv_db_free(f->db);
	free(f);
	return 0;
}

static void test_table(void **state)
{
	(void)state;
	size_t n;
	const struct kv_cmd *t = kv_cmd_table(&n);
	assert_true(n >= 40);
	for (size_t i = 0; i < n; i++) {
		/* the lookup finds a name among those of its first letter,
		 * which a sorted table keeps together */
		if (i)
			assert_true(strcmp(t[i - 1].name, t[i].name) < 0);
		char upper[KV_CMD_NAME_MAX + 1];
		size_t l = strlen(t[i].name);
		for (size_t j = 0; j <= l; j++)
			upper[j] = (char)(t[i].name[j] >= 'a' && t[i].name[j] <= 'z' ? t[i].name[j] - 32 : t[i].name[j]);
		assert_ptr_equal(kv_cmd_lookup(t[i].name, l), &t[i]);
		assert_ptr_equal(kv_cmd_lookup(upper, l), &t[i]);
		assert_true(t[i].arity != 0);
		assert_true(t[i].first_key >= 0 && (t[i].first_key == 0) == (t[i].key_step == 0));
		assert_true(!(t[i].flags & KV_CMD_WRITE) || !(t[i].flags & KV_CMD_READONLY));
	}
	assert_null(kv_cmd_lookup("ge", 2));
	assert_null(kv_cmd_lookup("gett", 4));
	assert_null(kv_cmd_lookup("get\0", 4));
	assert_null(kv_cmd_lookup("", 0));
	assert_null(kv_cmd_lookup("aaaaaaaaaaaaaaaaaaaaaaaa", 24));
	/* any letter case; a byte that is no letter (0x07, 0xc7: one bit
	 * off from G and g) matches none */
	assert_ptr_equal(kv_cmd_lookup("gEtRaNgE", 8), kv_cmd_lookup("getrange", 8));
	assert_null(kv_cmd_lookup("\x07" "et", 3));
	assert_null(kv_cmd_lookup("1get", 4));
	assert_null(kv_cmd_lookup("{et", 3));
	assert_null(kv_cmd_lookup("\xc7" "et", 3));
	assert_null(kv_cmd_lookup("incrbyfloatx", 12));
	assert_null(kv_cmd_lookup("zzz", 3));
	const struct kv_cmd *mset = kv_cmd_lookup("MSET", 4);
	assert_int_equal(mset->first_key, 1);
	assert_int_equal(mset->last_key, -1);
	assert_int_equal(mset->key_step, 2);
}

static void test_ttl_arithmetic(void **state)
{
	struct fixture *f = *state;
	expect(f, "SET k v PX 1499", "+OK\r\n");
	expect(f, "PTTL k", ":1499\r\n");
	expect(f, "TTL k", ":1\r\n");
	expect(f, "SET k v PX 1500", "+OK\r\n");
	expect(f, "TTL k", ":2\r\n");
	expect(f, "SET k v EXAT 1001", "+OK\r\n");
	expect(f, "PTTL k", ":1000\r\n");
	/* alive at its expiry time, gone a millisecond later */
	f->now = 1001000;
	expect(f, "PTTL k", ":0\r\n");
	expect(f, "GET k", "$1\r\nv\r\n");
	f->now++;
	expect(f, "GET k", "$-1\r\n");
	expect(f, "TTL k", ":-2\r\n");
	/* EXPIRE to exactly now deletes at once */
	expect(f, "SET j v", "+OK\r\n");
	expect(f, "PEXPIREAT j 1001001", ":1\r\n");
	expect(f, "EXISTS j", ":0\r\n");
}

static void test_length_limit(void **state)
{
	struct fixture *f = *state;
	expect(f, "APPEND a 0123456789", ":10\r\n");
	expect(f, "APPEND a 012345", ":16\r\n");
	expect(f, "APPEND a x", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
	expect(f, "SETRANGE b 15 x", ":16\r\n");
	expect(f, "SETRANGE b 16 x", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
	expect(f, "SETRANGE c 16 x", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n");
	expect(f, "EXISTS c", ":0\r\n");
	expect(f, "STRLEN a", ":16\r\n");
}

static void test_keys_after_growth(void **state)
{
	struct fixture *f = *state;
	char cmd[64];
	for (int i = 0; i < 3000; i++) {
		snprintf(cmd, sizeof(cmd), "SET key:%d v", i);
		expect(f, cmd, "+OK\r\n");
	}
	expect(f, "SET other v", "+OK\r\n");
	expect(f, "SET key:x v PX 1", "+OK\r\n");
	f->now += 2;
	const char *argv[] = { "KEYS", "key:*" };
	size_t argl[] = { 4, 5 };
	struct kv_call c = { .db = f->db, .out = &f->out, .now = f->now, .max_bulk = f->max_bulk,
			     .argc = 2, .argv = argv, .argl = argl };
	kv_reply_clear(&f->out);
	kv_cmd_exec(&c);
	assert_memory_equal(f->out.buf, "*3000\r\n", 7);
	/* an empty cursor is 0, as strtoul reads it */
	argv[0] = "SCAN";
	argv[1] = "";
	argl[0] = 4;
	argl[1] = 0;
	kv_reply_clear(&f->out);
	kv_cmd_exec(&c);
	assert_memory_equal(f->out.buf, "*2\r\n$", 5);
	kv_reply_clear(&f->out);
	argv[0] = "KEYS";
	argv[1] = "key:*";
	argl[0] = 4;
	argl[1] = 5;
	kv_cmd_exec(&c);
	/* each key once: count the distinct numbers */
	static unsigned char seen[3000];
	memset(seen, 0, sizeof(seen));
	char *p = f->out.buf + 7, *end = f->out.buf + f->out.len;
	while (p < end) {
		int len, i;
		assert_int_equal(sscanf(p, "$%d\r\nkey:%d\r\n", &len, &i), 2);
		assert_true(i >= 0 && i < 3000 && !seen[i]);
		seen[i] = 1;
		p = strstr(p, "\r\n") + 2 + len + 2;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test_setup_teardown(test_ttl_arithmetic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_length_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_after_growth, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
