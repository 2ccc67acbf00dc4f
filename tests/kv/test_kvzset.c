/* SPDX-License-Identifier: MIT */
/* The sorted set: ZADD's flags, ranks and ranges by rank, score and lex,
 * removals, the conversion to a skip list, score text as Redis writes and
 * reads it, a random run against a sorted-array model in both encodings,
 * and allocation failure leaving the set unchanged. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvzset.h"

void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);
static bool fail_allocs;
void *__wrap_malloc(size_t n)
{
	return fail_allocs ? NULL : __real_malloc(n);
}
void *__wrap_realloc(void *p, size_t n)
{
	return fail_allocs ? NULL : __real_realloc(p, n);
}

#define S(lit) lit, sizeof(lit) - 1

static void check(const struct kv_zset *z)
{
	char why[200];
	if (kv_zset_validate(z, why, sizeof(why)))
		fail_msg("kv_zset_validate: %s", why);
}

/* Members of ranks [first, first + n) as "m:score,..." (rev: backwards). */
static const char *dump(const struct kv_zset *z, size_t first, size_t n, bool rev)
{
	static char buf[1 << 16];
	size_t o = 0, ml;
	const uint8_t *m;
	double s;
	struct kv_zset_iter it;
	kv_zset_iter_init(z, &it, first, n, rev);
	buf[0] = '\0';
	while (kv_zset_iter_next(&it, &m, &ml, &s)) {
		char sc[KV_ZSET_SCORE_CHARS];
		kv_zset_score_fmt(sc, s);
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%.*s:%s", o ? "," : "", (int)ml,
				      (const char *)m, sc);
	}
	return buf;
}

static void add(struct kv_zset *z, const char *m, double s)
{
	int out;
	double ns;
	assert_int_equal(kv_zset_add(z, m, strlen(m), s, 0, &out, &ns), 0);
	check(z);
}

static void flags_case(size_t max_entries)
{
	struct kv_zset *z = kv_zset_new(max_entries, 64);
	int out;
	double ns;
	add(z, "a", 1);
	assert_int_equal(kv_zset_add(z, S("a"), 5, KV_ZADD_NX, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_NOP);
	assert_int_equal(kv_zset_add(z, S("b"), 5, KV_ZADD_XX, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_NOP);
	assert_int_equal(kv_zset_add(z, S("a"), 0, KV_ZADD_GT, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_NOP);
	assert_int_equal(kv_zset_add(z, S("a"), 3, KV_ZADD_GT, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_UPDATED);
	assert_int_equal(kv_zset_add(z, S("a"), 3, 0, &out, &ns), 0);
	assert_int_equal(out, 0); /* same score: neither added nor updated */
	assert_int_equal(kv_zset_add(z, S("a"), 2.5, KV_ZADD_INCR | KV_ZADD_LT, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_NOP);
	assert_int_equal(kv_zset_add(z, S("a"), -0.5, KV_ZADD_INCR, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_UPDATED);
	assert_true(ns == 2.5);
	assert_int_equal(kv_zset_add(z, S("a"), INFINITY, 0, &out, &ns), 0);
	assert_int_equal(kv_zset_add(z, S("a"), -INFINITY, KV_ZADD_INCR, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_NAN);
	double s;
	assert_true(kv_zset_score(z, S("a"), &s) && isinf(s));
	assert_int_equal(kv_zset_add(z, S("new"), 7, KV_ZADD_INCR, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_ADDED);
	check(z);
	kv_zset_free(z);
}

static void test_add_flags(void **state)
{
	(void)state;
	flags_case(128);
	flags_case(0); /* the skip list from the first member */
}

static void ranges_case(size_t max_entries)
{
	struct kv_zset *z = kv_zset_new(max_entries, 64);
	add(z, "c", 2);
	add(z, "a", 1);
	add(z, "b", 1);
	add(z, "d", 3);
	add(z, "e", INFINITY);
	assert_string_equal(dump(z, 0, 10, false), "a:1,b:1,c:2,d:3,e:inf");
	assert_string_equal(dump(z, 1, 2, true), "c:2,b:1");
	assert_int_equal(kv_zset_rank(z, S("c"), false), 2);
	assert_int_equal(kv_zset_rank(z, S("c"), true), 2);
	assert_int_equal(kv_zset_rank(z, S("a"), true), 4);
	assert_int_equal(kv_zset_rank(z, S("x"), false), -1);
	size_t f, n;
	struct kv_zscore_range r;
	assert_true(kv_zset_score_range_parse(S("(1"), S("+inf"), &r));
	assert_true(kv_zset_span_score(z, &r, &f, &n));
	assert_int_equal(f, 2);
	assert_int_equal(n, 3);
	assert_true(kv_zset_score_range_parse(S("1"), S("(3"), &r));
	assert_true(kv_zset_span_score(z, &r, &f, &n));
	assert_int_equal(n, 3);
	kv_zset_span_limit(&f, &n, true, 1, 5); /* ZREVRANGEBYSCORE LIMIT 1 5 */
	assert_string_equal(dump(z, f, n, true), "b:1,a:1");
	assert_true(kv_zset_score_range_parse(S("5"), S("4"), &r));
	assert_false(kv_zset_span_score(z, &r, &f, &n));
	assert_true(kv_zset_span_rank(z, -2, -1, &f, &n));
	assert_string_equal(dump(z, f, n, false), "d:3,e:inf");
	assert_false(kv_zset_span_rank(z, 3, 1, &f, &n));
	kv_zset_free(z);
}

static void test_ranges(void **state)
{
	(void)state;
	ranges_case(128);
	ranges_case(1);
}

static void lex_case(size_t max_entries)
{
	struct kv_zset *z = kv_zset_new(max_entries, 64);
	const char *ms[] = { "a", "aa", "ab", "b", "c", "" };
	for (int i = 0; i < 6; i++)
		add(z, ms[i], 0);
	struct kv_zlex_range r;
	size_t f, n;
	assert_true(kv_zset_lex_range_parse(S("[aa"), S("(c"), &r));
	assert_true(kv_zset_span_lex(z, &r, &f, &n));
	assert_string_equal(dump(z, f, n, false), "aa:0,ab:0,b:0");
	assert_true(kv_zset_lex_range_parse(S("-"), S("[a"), &r));
	assert_true(kv_zset_span_lex(z, &r, &f, &n));
	assert_string_equal(dump(z, f, n, false), ":0,a:0");
	assert_true(kv_zset_lex_range_parse(S("(b"), S("+"), &r));
	assert_true(kv_zset_span_lex(z, &r, &f, &n));
	assert_string_equal(dump(z, f, n, false), "c:0");
	assert_true(kv_zset_lex_range_parse(S("+"), S("-"), &r));
	assert_false(kv_zset_span_lex(z, &r, &f, &n));
	assert_false(kv_zset_lex_range_parse(S("a"), S("+"), &r));
	assert_false(kv_zset_lex_range_parse(S("[a"), S("+x"), &r));
	assert_false(kv_zset_lex_range_parse("", 0, S("+"), &r));
	/* ZREMRANGEBYLEX [a [b */
	assert_true(kv_zset_lex_range_parse(S("[a"), S("[b"), &r));
	assert_true(kv_zset_span_lex(z, &r, &f, &n));
	assert_int_equal(kv_zset_del_span(z, f, n), 4);
	check(z);
	assert_string_equal(dump(z, 0, 10, false), ":0,c:0");
	assert_true(kv_zset_rem(z, S("")));
	assert_false(kv_zset_rem(z, S("")));
	check(z);
	kv_zset_free(z);
}

static void test_lex(void **state)
{
	(void)state;
	lex_case(128);
	lex_case(2);
}

/* Members of 127 and 128 bytes (a length of one byte, then two) walk
 * both ways, rank, move and go. */
static void test_member_lengths(void **state)
{
	(void)state;
	struct kv_zset *z = kv_zset_new(KV_ZSET_MAX_LISTPACK_ENTRIES, 255);
	char m[256];
	const size_t lens[] = { 128, 0, 127, 255, 1 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(m, 'a' + (int)i, lens[i]);
		m[lens[i]] = '\0';
		add(z, m, (double)i);
	}
	assert_string_equal(kv_zset_encoding(z), "listpack");
	const uint8_t *pm;
	size_t ml;
	double s;
	struct kv_zset_iter it;
	kv_zset_iter_init(z, &it, 0, 5, true);             /* backwards: mirrored lengths */
	for (size_t i = 5; i--;) {
		assert_true(kv_zset_iter_next(&it, &pm, &ml, &s));
		assert_int_equal(ml, lens[i]);
		assert_true(s == (double)i);
	}
	memset(m, 'a', 128);
	assert_int_equal(kv_zset_rank(z, m, 128, false), 0);
	int out;
	double ns;
	assert_int_equal(kv_zset_add(z, m, 128, 10, 0, &out, &ns), 0);   /* moves to the end */
	assert_int_equal(out, KV_ZADD_UPDATED);
	check(z);
	assert_int_equal(kv_zset_rank(z, m, 128, true), 0);
	memset(m, 'd', 255);
	assert_true(kv_zset_rem(z, m, 255));
	check(z);
	assert_int_equal(kv_zset_len(z), 4);
	memset(m, 'x', 256);                                /* past 255: a skip list */
	assert_int_equal(kv_zset_add(z, m, 256, 1, 0, &out, &ns), 0);
	assert_string_equal(kv_zset_encoding(z), "skiplist");
	check(z);
	kv_zset_free(z);
}

/* Scores that are integers within 56 bits are packed in as few bytes as
 * hold them, others as doubles; all read back, order and walk both ways,
 * and a score that grows its entry needs memory or changes nothing. */
static void test_score_forms(void **state)
{
	(void)state;
	const double scores[] = { -INFINITY, -1e300, -0x1p55, -0x1p55 + 1, -129, -128, -1, 0,
				  0.5, 127, 128, 32767, 32768, 4000000, 0x1p55 - 1, 0x1p55,
				  1e300, INFINITY };
	const size_t n = sizeof(scores) / sizeof(scores[0]);
	struct kv_zset *z = kv_zset_new(KV_ZSET_MAX_LISTPACK_ENTRIES, 64);
	char m[24];

	for (size_t i = n; i--;) {                          /* added high to low */
		snprintf(m, sizeof(m), "m%02zu", i);
		add(z, m, scores[i]);
	}
	assert_string_equal(kv_zset_encoding(z), "listpack");
	for (size_t i = 0; i < n; i++) {
		double s;
		snprintf(m, sizeof(m), "m%02zu", i);
		assert_true(kv_zset_score(z, m, 3, &s));
		assert_true(s == scores[i]);
		assert_int_equal(kv_zset_rank(z, m, 3, false), i);
		assert_int_equal(kv_zset_rank(z, m, 3, true), n - 1 - i);
	}
	kv_zset_free(z);

	z = kv_zset_new(KV_ZSET_MAX_LISTPACK_ENTRIES, 64);  /* 4 small integer scores */
	for (int i = 0; i < 4; i++) {
		snprintf(m, sizeof(m), "m%d", i);
		add(z, m, i);
	}
	assert_true(kv_zset_mem(z) <= 24 + 4 * 6 + 8);      /* 6 bytes an entry, not 13 */
	int out;
	double ns;
	fail_allocs = true;                                 /* 1 -> 1.5: 8 bytes more */
	assert_int_equal(kv_zset_add(z, S("m1"), 1.5, 0, &out, &ns), -ENOMEM);
	fail_allocs = false;
	check(z);
	assert_string_equal(dump(z, 0, 4, false), "m0:0,m1:1,m2:2,m3:3");
	assert_int_equal(kv_zset_add(z, S("m1"), 2.5, 0, &out, &ns), 0);
	assert_int_equal(out, KV_ZADD_UPDATED);
	check(z);
	assert_string_equal(dump(z, 0, 4, true), "m3:3,m1:2.5,m2:2,m0:0");
	assert_int_equal(kv_zset_add(z, S("m1"), -7, 0, &out, &ns), 0);   /* and back */
	check(z);
	assert_string_equal(dump(z, 0, 4, false), "m1:-7,m0:0,m2:2,m3:3");
	kv_zset_free(z);
}

/* Past 128 members, or a member past 64 bytes, the set becomes a skip list
 * once and stays one. */
static void test_conversion(void **state)
{
	(void)state;
	struct kv_zset *z = kv_zset_new(KV_ZSET_MAX_LISTPACK_ENTRIES, KV_ZSET_MAX_LISTPACK_VALUE);
	char m[80];
	for (int i = 0; i < 128; i++) {
		snprintf(m, sizeof(m), "m%03d", i);
		add(z, m, i);
	}
	assert_string_equal(kv_zset_encoding(z), "listpack");
	size_t small = kv_zset_mem(z);
	/* a packed set is its 24-byte header and its buffer, no spare room */
	assert_true(small <= 24 + 128 * (4 + 10) + 24);
	add(z, "m128", 128);
	assert_string_equal(kv_zset_encoding(z), "skiplist");
	assert_true(kv_zset_mem(z) > small);
	assert_int_equal(kv_zset_rank(z, S("m100"), false), 100);
	assert_int_equal(kv_zset_del_span(z, 0, 120), 120);
	check(z);
	assert_string_equal(kv_zset_encoding(z), "skiplist");
	assert_int_equal(kv_zset_len(z), 9);
	assert_int_equal(kv_zset_rank(z, S("m128"), true), 0);
	for (int i = 0; i < 100; i++) {                /* grows again as a skip list */
		snprintf(m, sizeof(m), "n%03d", i);
		add(z, m, -i);
	}
	assert_int_equal(kv_zset_len(z), 109);
	check(z);
	kv_zset_free(z);

	z = kv_zset_new(KV_ZSET_MAX_LISTPACK_ENTRIES, KV_ZSET_MAX_LISTPACK_VALUE);
	memset(m, 'x', 64);
	m[64] = '\0';
	add(z, m, 1);
	assert_string_equal(kv_zset_encoding(z), "listpack");
	m[64] = 'x';
	m[65] = '\0';
	add(z, m, 1);
	assert_string_equal(kv_zset_encoding(z), "skiplist");
	kv_zset_free(z);
}

/* -0 as Redis 7.0 keeps it: 0 in the packed form, -0 in the skip list. */
static void test_negative_zero(void **state)
{
	(void)state;
	char b[KV_ZSET_SCORE_CHARS];
	double s;
	struct kv_zset *z = kv_zset_new(128, 64);
	add(z, "g", -0.0);
	assert_true(kv_zset_score(z, S("g"), &s));
	assert_int_equal(kv_zset_score_fmt(b, s), 1);
	assert_string_equal(b, "0");
	kv_zset_free(z);
	z = kv_zset_new(0, 64);
	add(z, "g", 5);
	add(z, "g", -0.0);
	assert_true(kv_zset_score(z, S("g"), &s));
	kv_zset_score_fmt(b, s);
	assert_string_equal(b, "-0");
	kv_zset_free(z);
}

/* As redis-server 7.0.15 replies ZSCORE and reads ZADD's scores. */
static void test_score_text(void **state)
{
	(void)state;
	char b[KV_ZSET_SCORE_CHARS];
	const struct { double v; const char *s; } fmt[] = {
		{ 1.5, "1.5" }, { 0.1, "0.10000000000000001" }, { 1e100, "1e+100" },
		{ INFINITY, "inf" }, { -INFINITY, "-inf" }, { 3, "3" },
		{ 123456789012345678.0, "1.2345678901234568e+17" },
	};
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		assert_int_equal(kv_zset_score_fmt(b, fmt[i].v), strlen(fmt[i].s));
		assert_string_equal(b, fmt[i].s);
	}
	double v;
	assert_true(kv_zset_score_parse(S("inf"), &v) && isinf(v) && v > 0);
	assert_true(kv_zset_score_parse(S("+inf"), &v) && isinf(v) && v > 0);
	assert_true(kv_zset_score_parse(S("-inf"), &v) && isinf(v) && v < 0);
	assert_true(kv_zset_score_parse(S("infinity"), &v) && isinf(v));
	assert_true(kv_zset_score_parse(S("0x10"), &v) && v == 16);
	assert_true(kv_zset_score_parse(S("-1.5e3"), &v) && v == -1500);
	assert_false(kv_zset_score_parse(S("nan"), &v));
	assert_false(kv_zset_score_parse(S("1e400"), &v));
	assert_false(kv_zset_score_parse(S("1e-400"), &v));
	assert_false(kv_zset_score_parse(S(" 1"), &v));
	assert_false(kv_zset_score_parse(S("1 "), &v));
	assert_false(kv_zset_score_parse(S("1x"), &v));
	assert_false(kv_zset_score_parse("", 0, &v));
	struct kv_zscore_range r;
	assert_false(kv_zset_score_range_parse(S("(nan"), S("1"), &r));
	assert_false(kv_zset_score_range_parse(S("a"), S("1"), &r));
	assert_true(kv_zset_score_range_parse(S("(-inf"), S("(1e400"), &r));
	assert_true(r.minex && r.maxex && isinf(r.max));
}

/* ---- random run against a sorted-array model ---- */

struct elem {
	double s;
	char m[80];
	size_t ml;
};

static int elem_cmp(const void *a, const void *b)
{
	const struct elem *x = a, *y = b;
	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	int c = memcmp(x->m, y->m, x->ml < y->ml ? x->ml : y->ml);
	return c ? c : (x->ml > y->ml) - (x->ml < y->ml);
}

static struct elem model[4096];
static size_t mlen;

static long m_find(const char *m, size_t ml)
{
	for (size_t i = 0; i < mlen; i++)
		if (model[i].ml == ml && !memcmp(model[i].m, m, ml))
			return (long)i;
	return -1;
}

static void same(const struct kv_zset *z, unsigned seed)
{
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml, k = 0;
	double s;
	char why[200];
	if (kv_zset_validate(z, why, sizeof(why)))
		fail_msg("seed %u: %s", seed, why);
	if (kv_zset_len(z) != mlen)
		fail_msg("seed %u: len %zu, model %zu", seed, kv_zset_len(z), mlen);
	kv_zset_iter_init(z, &it, 0, mlen, false);
	for (; kv_zset_iter_next(&it, &m, &ml, &s); k++)
		if (s != model[k].s || ml != model[k].ml || memcmp(m, model[k].m, ml))
			fail_msg("seed %u: rank %zu differs", seed, k);
}

static void random_step(struct kv_zset *z, bool long_members)
{
	struct elem e;
	int op = rand() % 10;
	e.ml = (size_t)rand() % (long_members ? 70 : 4);
	for (size_t i = 0; i < e.ml; i++)
		e.m[i] = (char)('a' + rand() % 3);
	e.s = (double)(rand() % 20) / 2;
	long at = m_find(e.m, e.ml);
	int out;
	double ns;
	size_t f, n;
	if (op < 4) {
		int flags = rand() % 3 ? 0 : KV_ZADD_INCR;
		assert_int_equal(kv_zset_add(z, e.m, e.ml, e.s, flags, &out, &ns), 0);
		if (at < 0) {
			model[mlen++] = e;
		} else if (flags) {
			model[at].s += e.s;
		} else {
			model[at].s = e.s;
		}
		qsort(model, mlen, sizeof(model[0]), elem_cmp);
	} else if (op < 6) {
		assert_int_equal(kv_zset_rem(z, e.m, e.ml), at >= 0);
		if (at >= 0)
			model[at] = model[--mlen];
		qsort(model, mlen, sizeof(model[0]), elem_cmp);
	} else if (op == 6) {
		long long r = kv_zset_rank(z, e.m, e.ml, rand() & 1);
		if (at < 0)
			assert_int_equal(r, -1);
		else
			assert_true(r == at || r == (long long)mlen - 1 - at);
	} else if (op == 7) {
		struct kv_zscore_range r = { e.s, e.s + (rand() % 6), rand() & 1, rand() & 1 };
		size_t want = 0, first = SIZE_MAX;
		for (size_t i = 0; i < mlen; i++) {
			double s = model[i].s;
			if ((r.minex ? s > r.min : s >= r.min) && (r.maxex ? s < r.max : s <= r.max)) {
				first = first == SIZE_MAX ? i : first;
				want++;
			}
		}
		kv_zset_span_score(z, &r, &f, &n);
		assert_int_equal(n, want);
		if (want)
			assert_int_equal(f, first);
		if (rand() % 8 == 0) {
			kv_zset_del_span(z, f, n);
			memmove(model + f, model + f + n, (mlen - f - n) * sizeof(model[0]));
			mlen -= n;
		}
	} else if (op == 8 && mlen) {
		bool max = rand() & 1; /* ZPOPMIN / ZPOPMAX */
		size_t r = max ? mlen - 1 : 0;
		assert_int_equal(kv_zset_del_span(z, r, 1), 1);
		memmove(model + r, model + r + 1, (mlen - r - 1) * sizeof(model[0]));
		mlen--;
	} else if (op == 9) {
		double s;
		assert_int_equal(kv_zset_score(z, e.m, e.ml, &s), at >= 0);
		if (at >= 0)
			assert_true(s == model[at].s);
	}
}

static void run_random(size_t max_entries, bool long_members)
{
	unsigned seed = 3333;
	const char *env = getenv("KV_TEST_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 0);
	srand(seed);
	mlen = 0;
	struct kv_zset *z = kv_zset_new(max_entries, 64);
	for (int i = 0; i < 100000; i++) {
		random_step(z, long_members);
		if (i % 500 == 499)
			same(z, seed);
	}
	same(z, seed);
	kv_zset_free(z);
}

static void test_random_packed(void **state)
{
	(void)state;
	run_random(SIZE_MAX, false);
}

static void test_random_skiplist(void **state)
{
	(void)state;
	run_random(0, false);
}

static void test_random_converting(void **state)
{
	(void)state;
	run_random(KV_ZSET_MAX_LISTPACK_ENTRIES, true);
}

/* Without memory: a new member, a growing packed buffer and the
 * conversion fail with -ENOMEM and change nothing. */
static void test_nomem(void **state)
{
	(void)state;
	for (size_t lim = 0; lim <= 3; lim += 3) {
		struct kv_zset *z = kv_zset_new(lim, 64);
		add(z, "a", 1);
		add(z, "b", 2);
		add(z, "c", 3);
		char before[256];
		strcpy(before, dump(z, 0, 10, false));
		int out;
		double ns;
		fail_allocs = true;
		int rc = kv_zset_add(z, S("d"), 0, 0, &out, &ns);
		fail_allocs = false;
		assert_int_equal(rc, -ENOMEM);
		check(z);
		assert_string_equal(dump(z, 0, 10, false), before);
		assert_string_equal(kv_zset_encoding(z), lim ? "listpack" : "skiplist");
		kv_zset_free(z);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_flags),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_lex),
		cmocka_unit_test(test_member_lengths),
		cmocka_unit_test(test_score_forms),
		cmocka_unit_test(test_conversion),
		cmocka_unit_test(test_negative_zero),
		cmocka_unit_test(test_score_text),
		cmocka_unit_test(test_random_packed),
		cmocka_unit_test(test_random_skiplist),
		cmocka_unit_test(test_random_converting),
		cmocka_unit_test(test_nomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
