/* SPDX-License-Identifier: MIT */
/* The reply encoders byte for byte, and the number rules they and the
 * commands share (Redis's string2ll, string2ld and "human" long doubles). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "num.h"
#include "resp_reply.h"

#define S(lit) lit, sizeof(lit) - 1

static void expect_bytes(const struct kv_reply *r, const char *want, size_t n)
{
	assert_false(kv_reply_failed(r));
	assert_int_equal(r->len, n);
	assert_memory_equal(r->buf, want, n);
}

static void test_encoders(void **state)
{
	(void)state;
	struct kv_reply r;
	kv_reply_init(&r);
	kv_reply_status(&r, "OK");
	kv_reply_int(&r, 0);
	kv_reply_int(&r, INT64_MIN);
	kv_reply_bulk(&r, S("a\r\n\0b"));
	kv_reply_bulk(&r, "", 0);
	kv_reply_null(&r);
	kv_reply_array(&r, 3);
	expect_bytes(&r, S("+OK\r\n:0\r\n:-9223372036854775808\r\n$5\r\na\r\n\0b\r\n"
			   "$0\r\n\r\n$-1\r\n*3\r\n"));
	kv_reply_clear(&r);
	assert_int_equal(r.len, 0);
	kv_reply_free(&r);
}

static void test_errors(void **state)
{
	(void)state;
	struct kv_reply r;
	kv_reply_init(&r);
	kv_reply_error(&r, S("ERR a\r\nb"));
	kv_reply_errorf(&r, "\r\nERR %s '%d'\n", "x\ry", 7);
	expect_bytes(&r, S("-ERR a  b\r\n-ERR x y '7'\r\n"));
	kv_reply_clear(&r);
	/* longer than the formatter's first buffer */
	char big[1000];
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	kv_reply_errorf(&r, "ERR %s", big);
	assert_int_equal(r.len, 1 + 4 + 999 + 2);
	kv_reply_free(&r);
}

static void test_growth(void **state)
{
	(void)state;
	struct kv_reply r;
	kv_reply_init(&r);
	size_t n = 3 * 1024 * 1024;
	char *v = malloc(n);
	assert_non_null(v);
	memset(v, 'v', n);
	for (int i = 0; i < 3; i++)
		kv_reply_bulk(&r, v, n);
	assert_false(kv_reply_failed(&r));
	assert_int_equal(r.len, 3 * (n + 12));
	assert_memory_equal(r.buf, "$3145728\r\nvvv", 13);
	free(v);
	kv_reply_free(&r);
}

static void expect_double(long double v, const char *want)
{
	struct kv_reply r;
	char buf[64];
	kv_reply_init(&r);
	kv_reply_double(&r, v);
	int n = snprintf(buf, sizeof(buf), "$%zu\r\n%s\r\n", strlen(want), want);
	expect_bytes(&r, buf, (size_t)n);
	kv_reply_free(&r);
}

static void test_double(void **state)
{
	(void)state;
	expect_double(10.5L, "10.5");
	expect_double(3.0L, "3");
	expect_double(5200.0L, "5200");
	expect_double(-0.0L, "0");
	expect_double(-1.25L, "-1.25");
	expect_double(10.5L + 0.1L, "10.6");
	expect_double(1e-18L, "0");
	char buf[KV_LD_MAX_CHARS + 1];
	assert_int_equal(kv_ld2str(buf, 1.0L / 0.0L), 0);
	/* the largest long double still fits */
	assert_true(kv_ld2str(buf, 1.18e4932L) > 4900);
}

static void test_str2ll(void **state)
{
	(void)state;
	int64_t v = 42;
	assert_true(kv_str2ll(S("0"), &v) && v == 0);
	assert_true(kv_str2ll(S("-9223372036854775808"), &v) && v == INT64_MIN);
	assert_true(kv_str2ll(S("9223372036854775807"), &v) && v == INT64_MAX);
	const char *bad[] = { "", "-", "-0", "01", "+1", " 1", "1 ", "1a",
			      "9223372036854775808", "-9223372036854775809",
			      "123456789012345678901" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		assert_false(kv_str2ll(bad[i], strlen(bad[i]), &v));
		assert_int_equal(v, 42);
	}
}

static void test_str2ld(void **state)
{
	(void)state;
	long double v = 0;
	assert_true(kv_str2ld(S("1.5"), &v) && v == 1.5L);
	assert_true(kv_str2ld(S("5.0e3"), &v) && v == 5000.0L);
	assert_true(kv_str2ld(S("-0x1p3"), &v) && v == -8.0L);
	assert_true(kv_str2ld(S("inf"), &v));
	const char *bad[] = { "", " 1", "1 ", "nan", "1e99999", "1e-99999", "abc", "1.5x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(kv_str2ld(bad[i], strlen(bad[i]), &v));
	assert_false(kv_str2ld(S("1\0002"), &v));
	char *huge = malloc(KV_LD_MAX_CHARS);
	assert_non_null(huge);
	memset(huge, '1', KV_LD_MAX_CHARS);
	assert_false(kv_str2ld(huge, KV_LD_MAX_CHARS, &v));
	free(huge);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encoders),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_double),
		cmocka_unit_test(test_str2ll),
		cmocka_unit_test(test_str2ld),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
