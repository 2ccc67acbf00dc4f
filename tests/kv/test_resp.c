/* SPDX-License-Identifier: MIT */
/* The RESP2 request parser against requests written out by hand: what each
 * request parses to, that any split of the input into reads gives the same
 * requests, and Redis's protocol error for each kind of bad input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "resp.h"

/* Parses one request from the whole of s and checks its arguments, given as
 * NUL-terminated strings after the expected length consumed. */
static void expect_req(const char *s, size_t len, long consumed, unsigned argc, ...)
{
	struct kv_parser p;
	struct kv_resp_req req;
	assert_int_equal(kv_resp_init(&p, NULL), 0);
	long r = kv_resp_parse(&p, s, len, &req);
	if (r < 0)
		fail_msg("parse failed (%ld): %s", r, p.error);
	assert_int_equal(r, consumed);
	assert_int_equal(req.argc, argc);
	va_list ap;
	va_start(ap, argc);
	for (unsigned i = 0; i < argc; i++) {
		const char *want = va_arg(ap, const char *);
		assert_int_equal(req.argl[i], strlen(want));
		assert_memory_equal(req.argv[i], want, strlen(want));
	}
	va_end(ap);
	kv_resp_free(&p);
}

#define S(lit) lit, sizeof(lit) - 1

static void test_multibulk(void **state)
{
	(void)state;
	expect_req(S("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), 20, 2, "GET", "k");
	expect_req(S("*1\r\n$0\r\n\r\n"), 10, 1, "");
	/* Redis ignores an empty or negative count */
	expect_req(S("*0\r\n"), 4, 0);
	expect_req(S("*-1\r\n"), 5, 0);
	/* only the first of two pipelined requests */
	expect_req(S("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n"), 14, 1, "PING");
}

static void test_binary_safe(void **state)
{
	(void)state;
	static const char in[] = "*2\r\n$3\r\nSET\r\n$5\r\na\r\n\0b\r\n";
	struct kv_parser p;
	struct kv_resp_req req;
	kv_resp_init(&p, NULL);
	assert_int_equal(kv_resp_parse(&p, in, sizeof(in) - 1, &req), (long)sizeof(in) - 1);
	assert_int_equal(req.argc, 2);
	assert_int_equal(req.argl[1], 5);
	assert_memory_equal(req.argv[1], "a\r\n\0b", 5);
	kv_resp_free(&p);
}

static void test_inline(void **state)
{
	(void)state;
	expect_req(S("PING\r\n"), 6, 1, "PING");
	expect_req(S("set a  b\n"), 9, 3, "set", "a", "b");
	expect_req(S("  \r\n"), 4, 0);
	expect_req(S("\r\n"), 2, 0);
	expect_req(S("SET \"a b\" 'c d'\r\n"), 17, 3, "SET", "a b", "c d");
	expect_req(S("ECHO \"\\x41\\n\\t\\q\"\r\n"), 19, 2, "ECHO", "A\n\tq");
	expect_req(S("ECHO 'it\\'s'\r\n"), 14, 2, "ECHO", "it's");
	/* a quote may open inside a word */
	expect_req(S("ECHO ab\"c d\"\r\n"), 14, 2, "ECHO", "abc d");
	/* \v is part of an unquoted word, as in Redis */
	expect_req(S("ECHO a\vb\r\n"), 10, 2, "ECHO", "a\vb");
}

static void expect_error(const char *s, size_t len, const struct kv_resp_limits *lim,
			 const char *error)
{
	struct kv_parser p;
	struct kv_resp_req req;
	kv_resp_init(&p, lim);
	long r = kv_resp_parse(&p, s, len, &req);
	assert_int_equal(r, -EPROTO);
	assert_string_equal(p.error, error);
	kv_resp_free(&p);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error(S("*abc\r\n\n"), NULL, "Protocol error: invalid multibulk length");
	expect_error(S("*2000000\r\n"), NULL, "Protocol error: invalid multibulk length");
	expect_error(S("*01\r\n"), NULL, "Protocol error: invalid multibulk length");
	expect_error(S("*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"), NULL,
		     "Protocol error: expected '$', got 'f'");
	expect_error(S("*1\r\n$-1\r\n"), NULL, "Protocol error: invalid bulk length");
	expect_error(S("*1\r\n$+1\r\n"), NULL, "Protocol error: invalid bulk length");
	struct kv_resp_limits small = { .max_bulk = 10, .max_args = 2 };
	expect_error(S("*1\r\n$11\r\n"), &small, "Protocol error: invalid bulk length");
	expect_error(S("*3\r\n"), &small, "Protocol error: invalid multibulk length");
	expect_error(S("SET \"abc\r\n"), NULL, "Protocol error: unbalanced quotes in request");
	expect_error(S("SET \"abc\"x\r\n"), NULL, "Protocol error: unbalanced quotes in request");
	expect_error(S("SET 'abc\r\n"), NULL, "Protocol error: unbalanced quotes in request");
}

/* Count lines the usual digits-only reading does not take go the general
 * way, to Redis's answers: a leading zero, a sign, a byte after the
 * digits, more digits than an int64 holds. */
static void test_count_lines(void **state)
{
	(void)state;
	expect_req(S("*1\r\n$10\r\n0123456789\r\n"), 21, 1, "0123456789");
	expect_error(S("*1\r\n$03\r\nabc\r\n"), NULL, "Protocol error: invalid bulk length");
	expect_error(S("*1x\r\n"), NULL, "Protocol error: invalid multibulk length");
	expect_error(S("*1\r\n$3 \r\nabc\r\n"), NULL, "Protocol error: invalid bulk length");
	expect_error(S("*1\r\n$123456789012345678\r\n"), NULL,
		     "Protocol error: invalid bulk length");
	expect_error(S("*1\r\n$99999999999999999999\r\n"), NULL,
		     "Protocol error: invalid bulk length");
	expect_error(S("*99999999999999999999\r\n"), NULL,
		     "Protocol error: invalid multibulk length");
}

/* Lines without their end, longer than Redis waits for. */
static void test_too_big(void **state)
{
	(void)state;
	size_t n = KV_RESP_MAX_INLINE + 2;
	char *big = malloc(n + 16);
	assert_non_null(big);
	memset(big, 'a', n + 16);
	expect_error(big, n, NULL, "Protocol error: too big inline request");
	big[0] = '*';
	expect_error(big, n, NULL, "Protocol error: too big mbulk count string");
	memcpy(big, "*1\r\n$", 5);
	expect_error(big, n + 16, NULL, "Protocol error: too big bulk count string");
	/* one byte short of the limit: still waiting */
	struct kv_parser p;
	struct kv_resp_req req;
	kv_resp_init(&p, NULL);
	memset(big, 'a', n);
	assert_int_equal(kv_resp_parse(&p, big, KV_RESP_MAX_INLINE, &req), 0);
	kv_resp_free(&p);
	/* a line over the limit that came with its newline */
	memcpy(big + n - 1, "\r\n", 2);
	expect_error(big, n + 1, NULL, "Protocol error: too big inline request");
	/* a line of exactly the limit is taken */
	memcpy(big + KV_RESP_MAX_INLINE, "\n", 1);
	kv_resp_init(&p, NULL);
	assert_int_equal(kv_resp_parse(&p, big, KV_RESP_MAX_INLINE + 1, &req),
			 (long)KV_RESP_MAX_INLINE + 1);
	kv_resp_free(&p);
	free(big);
}

/* A NUL byte hides the newline after it, as Redis's strchr does: the
 * request waits, the requests behind it with it, until too big. */
static void test_inline_nul(void **state)
{
	(void)state;
	static const char in[] = "ECHO a\0b\r\nPING\r\n";
	struct kv_parser p;
	struct kv_resp_req req;
	size_t n = KV_RESP_MAX_INLINE + 64;
	char *big = malloc(n);

	assert_non_null(big);
	kv_resp_init(&p, NULL);
	assert_int_equal(kv_resp_parse(&p, in, sizeof(in) - 1, &req), 0);
	kv_resp_free(&p);
	memset(big, 'a', n);
	memcpy(big, in, sizeof(in) - 1);
	expect_error(big, n, NULL, "Protocol error: too big inline request");
	free(big);
}

/* Feeds in the input in reads of `step` bytes, as a session would, dropping
 * consumed bytes, and returns the arguments of every request joined by '|'
 * (requests by ';'). */
static void parse_stream(const char *in, size_t len, size_t step, char *out, size_t cap)
{
	struct kv_parser p;
	struct kv_resp_req req;
	kv_resp_init(&p, NULL);
	size_t start = 0, have = 0, o = 0;
	out[0] = '\0';
	while (start < len) {
		have = have + step > len - start ? len - start : have + step;
		long r;
		while ((r = kv_resp_parse(&p, in + start, have, &req)) > 0) {
			for (unsigned i = 0; i < req.argc; i++)
				o += (size_t)snprintf(out + o, cap - o, "%s%.*s", i ? "|" : "",
						      (int)req.argl[i], req.argv[i]);
			o += (size_t)snprintf(out + o, cap - o, ";");
			start += (size_t)r;
			have -= (size_t)r;
		}
		assert_int_equal(r, 0);
	}
	kv_resp_free(&p);
}

static void test_any_split(void **state)
{
	(void)state;
	/* with an empty argument, and one whose two bytes after it are not
	 * CRLF (Redis skips them unread) */
	static const char in[] = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n"
				 "PING\r\n*0\r\nECHO \"a b\"\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
				 "*1\r\n$4\r\nPINGxy*1\r\n$4\r\nQUIT\r\n";
	char whole[256], split[256];
	parse_stream(in, sizeof(in) - 1, sizeof(in), whole, sizeof(whole));
	assert_string_equal(whole, "SET|key|va\r\nl;PING;;ECHO|a b;ECHO|;PING;QUIT;");
	for (size_t step = 1; step < sizeof(in); step++) {
		parse_stream(in, sizeof(in) - 1, step, split, sizeof(split));
		assert_string_equal(split, whole);
	}
}

/* A whole request read in one pass meets the same limits as one read
 * in parts, and takes as many arguments as its table holds or grows to. */
static void test_whole(void **state)
{
	(void)state;
	struct kv_resp_limits small = { .max_bulk = 10, .max_args = 2 };
	expect_error(S("*1\r\n$11\r\nabcdefghijk\r\n"), &small,
		     "Protocol error: invalid bulk length");
	expect_error(S("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"), &small,
		     "Protocol error: invalid multibulk length");
	expect_req(S("*1\r\n$10\r\nabcdefghij\r\n"), 21, 1, "abcdefghij");
	expect_error(S("*1\r\n$03\r\nabc\r\n"), NULL, "Protocol error: invalid bulk length");
	expect_error(S("*2\r\n$1\r\na\r\n:1\r\n"), NULL, "Protocol error: expected '$', got ':'");
	for (size_t n = 63; n <= 66; n++) {
		char in[1024];
		struct kv_parser p;
		struct kv_resp_req req;
		size_t o = (size_t)snprintf(in, sizeof(in), "*%zu\r\n", n);

		for (size_t i = 0; i < n; i++)
			o += (size_t)snprintf(in + o, sizeof(in) - o, "$1\r\n%c\r\n", (char)('a' + i % 26));
		kv_resp_init(&p, NULL);
		assert_int_equal(kv_resp_parse(&p, in, o, &req), (long)o);
		assert_int_equal(req.argc, n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(req.argl[i], 1);
			assert_int_equal(req.argv[i][0], 'a' + i % 26);
		}
		/* the next request, shorter, reads whole into the same table */
		assert_int_equal(kv_resp_parse(&p, S("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), &req), 20);
		assert_int_equal(req.argc, 2);
		assert_memory_equal(req.argv[1], "k", 1);
		kv_resp_free(&p);
	}
}

/* A request announcing many arguments costs memory only as they arrive. */
static void test_many_args(void **state)
{
	(void)state;
	size_t n = 100000;
	size_t cap = n * 8 + 32;
	char *in = malloc(cap);
	assert_non_null(in);
	size_t o = (size_t)snprintf(in, cap, "*%zu\r\n", n);
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(in + o, cap - o, "$1\r\n%c\r\n", (char)('a' + i % 26));
	struct kv_parser p;
	struct kv_resp_req req;
	kv_resp_init(&p, NULL);
	assert_int_equal(kv_resp_parse(&p, in, o, &req), (long)o);
	assert_int_equal(req.argc, n);
	assert_memory_equal(req.argv[n - 1], (char[]){ (char)('a' + (n - 1) % 26) }, 1);
	kv_resp_free(&p);
	free(in);
}

/* The look ahead: whole multibulk requests with their count and first
 * arguments, nothing for a partial, inline or unusual one. */
static void test_peek(void **state)
{
	(void)state;
	static const char two[] = "*2\r\n$3\r\nGET\r\n$4\r\nk\r\n1\r\n*1\r\n$4\r\nPING\r\n";
	const char *argv[4];
	size_t argl[4];
	struct kv_resp_peeked q;
	size_t first = 23;

	assert_int_equal(kv_resp_peek(two, sizeof(two) - 1, argv, argl, 4, &q), first);
	assert_int_equal(q.argc, 2);
	assert_int_equal(q.kept, 2);
	assert_int_equal(argl[0], 3);
	assert_memory_equal(argv[0], "GET", 3);
	assert_int_equal(argl[1], 4);
	assert_memory_equal(argv[1], "k\r\n1", 4);
	assert_int_equal(kv_resp_peek(two + first, sizeof(two) - 1 - first, argv, argl, 4, &q),
			 sizeof(two) - 1 - first);
	assert_int_equal(q.argc, 1);
	assert_memory_equal(argv[0], "PING", 4);
	/* every cut of the first request is not whole */
	for (size_t cut = 0; cut < first; cut++) {
		assert_int_equal(kv_resp_peek(two, cut, argv, argl, 4, &q), 0);
		assert_int_equal(q.argc, 0);
	}
	/* more arguments than it has room for: counted, the first kept */
	static const char six[] = "*6\r\n$4\r\nMSET\r\n$1\r\na\r\n$1\r\n1\r\n"
				  "$1\r\nb\r\n$0\r\n\r\n$10\r\n0123456789\r\n";
	assert_int_equal(kv_resp_peek(six, sizeof(six) - 1, argv, argl, 4, &q), sizeof(six) - 1);
	assert_int_equal(q.argc, 6);
	assert_int_equal(q.kept, 4);
	assert_memory_equal(argv[3], "b", 1);
	/* with room for all of them, all kept, past the fourth untouched */
	const char *wide_argv[8] = { 0 };
	size_t wide_argl[8] = { 0 };
	struct kv_resp_peeked w;
	assert_int_equal(kv_resp_peek(six, sizeof(six) - 1, wide_argv, wide_argl, 6, &w),
			 sizeof(six) - 1);
	assert_int_equal(w.argc, 6);
	assert_int_equal(w.kept, 6);
	assert_int_equal(wide_argl[4], 0);
	assert_int_equal(wide_argl[5], 10);
	assert_memory_equal(wide_argv[5], "0123456789", 10);
	assert_null(wide_argv[6]);
	static const char *const bad[] = {
		"PING\r\n", "*0\r\n", "*x\r\n", "*1\n$4\r\nPING\r\n",
		"*1\r\n$4\r\nPINGxx", "*1\r\n$9999999999\r\nPING\r\n",
		"*1\r\n:4\r\nPING\r\n", "*1\r\n$-1\r\n", "*99999999999\r\n",
		"*2\r\n$3\r\nGET\r\n$18446744073709551615\r\n", "*1\r\n$04\r\nPING\r\n",
		"*01\r\n$4\r\nPING\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(kv_resp_peek(bad[i], strlen(bad[i]), argv, argl, 4, &q), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_multibulk),
		cmocka_unit_test(test_binary_safe),
		cmocka_unit_test(test_inline),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_count_lines),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_inline_nul),
		cmocka_unit_test(test_any_split),
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_many_args),
		cmocka_unit_test(test_peek),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
