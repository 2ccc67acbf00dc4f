/* SPDX-License-Identifier: MIT */
/* Hashes and sets in their compact encodings: listpack and intset while
 * within the limits, one conversion to hashtable past them, the byte
 * count kept as they change, and typed values in the keyspace (counted
 * in kv_db_used, freed when replaced, deleted when emptied). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coll.h"
#include "db.h"
#include "lplen.h"

#define S(lit) lit, sizeof(lit) - 1

static void check_coll(const struct kv_coll *c)
{
	char why[200];
	if (kv_coll_validate(c, why, sizeof(why)))
		fail_msg("kv_coll_validate: %s", why);
}

static void check_db(const struct kv_db *db)
{
	char why[200];
	if (kv_db_validate(db, why, sizeof(why)))
		fail_msg("kv_db_validate: %s", why);
}

static void put_num(struct kv_coll *c, int i, const char *v, size_t vlen,
		    const struct kv_coll_limits *lim, int want)
{
	char m[24];
	int n = snprintf(m, sizeof(m), "%d", i);
	assert_int_equal(kv_coll_put(c, m, (size_t)n, v, vlen, lim), want);
}

static void test_hash_listpack_to_hashtable(void **state)
{
	(void)state;
	struct kv_coll_limits lim = { 4, 8, 512 };
	struct kv_coll *h = kv_coll_new(KV_HASH);
	struct kv_elem e;

	for (int i = 0; i < 4; i++)
		put_num(h, i, S("v"), &lim, 1);
	assert_int_equal(kv_coll_encoding(h), KV_ENC_LISTPACK);
	put_num(h, 2, S("12345678"), &lim, 0);          /* at the value limit: stays */
	assert_int_equal(kv_coll_encoding(h), KV_ENC_LISTPACK);
	assert_true(kv_coll_find(h, S("2"), &e));
	assert_memory_equal(e.v, "12345678", 8);
	check_coll(h);
	size_t small = kv_coll_mem(h);
	put_num(h, 4, S("v"), &lim, 1);                  /* the fifth field converts */
	assert_int_equal(kv_coll_encoding(h), KV_ENC_HASHTABLE);
	assert_int_equal(kv_coll_len(h), 5);
	assert_true(kv_coll_mem(h) > small);
	assert_true(kv_coll_find(h, S("2"), &e));
	assert_memory_equal(e.v, "12345678", 8);
	check_coll(h);
	for (int i = 0; i < 4; i++)
		assert_true(kv_coll_del(h, (char[]){ (char)('0' + i) }, 1));
	assert_int_equal(kv_coll_encoding(h), KV_ENC_HASHTABLE);    /* never back */
	assert_false(kv_coll_del(h, S("0")));
	check_coll(h);
	kv_coll_free(h);

	h = kv_coll_new(KV_HASH);                        /* a long value converts */
	put_num(h, 1, S("123456789"), &lim, 1);
	assert_int_equal(kv_coll_encoding(h), KV_ENC_HASHTABLE);
	check_coll(h);
	kv_coll_free(h);
}

static void test_set_intset(void **state)
{
	(void)state;
	struct kv_coll_limits lim = { 128, 64, 3 };
	struct kv_coll *s = kv_coll_new(KV_SET);
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	const char *want[] = { "-9223372036854775808", "-5", "7" };

	assert_int_equal(kv_coll_put(s, S("7"), NULL, 0, &lim), 1);
	assert_int_equal(kv_coll_put(s, S("-5"), NULL, 0, &lim), 1);
	assert_int_equal(kv_coll_put(s, S("-9223372036854775808"), NULL, 0, &lim), 1);
	assert_int_equal(kv_coll_put(s, S("7"), NULL, 0, &lim), 0);
	assert_int_equal(kv_coll_encoding(s), KV_ENC_INTSET);
	for (int i = 0; kv_coll_next(s, &it, &e); i++) {   /* ascending, as text */
		assert_int_equal(e.mlen, strlen(want[i]));
		assert_memory_equal(e.m, want[i], e.mlen);
	}
	assert_false(kv_coll_find(s, S("07"), NULL));      /* not Redis's form of 7 */
	assert_false(kv_coll_del(s, S("+7")));
	check_coll(s);
	assert_int_equal(kv_coll_put(s, S("8"), NULL, 0, &lim), 1);   /* past 3 */
	assert_int_equal(kv_coll_encoding(s), KV_ENC_HASHTABLE);
	assert_true(kv_coll_find(s, S("-5"), NULL));
	check_coll(s);
	kv_coll_free(s);

	s = kv_coll_new(KV_SET);                          /* not an integer */
	assert_int_equal(kv_coll_put(s, S("1"), NULL, 0, &lim), 1);
	assert_int_equal(kv_coll_put(s, S("01"), NULL, 0, &lim), 1);
	assert_int_equal(kv_coll_encoding(s), KV_ENC_LISTPACK);
	assert_string_equal(kv_set_ops.encoding(s), "hashtable");   /* as Redis 7.0 */
	assert_int_equal(kv_coll_len(s), 2);
	check_coll(s);
	kv_coll_free(s);
}

/* A set of strings: a listpack up to 128 members of up to 64 bytes,
 * then a hashtable; OBJECT ENCODING names both hashtable, as Redis 7.0
 * does. A small intset is held in the header (one allocation); a copy
 * keeps the encoding. */
static void test_set_listpack(void **state)
{
	(void)state;
	const struct kv_coll_limits *lim = &kv_coll_default_limits;
	char m[80];
	struct kv_coll *s = kv_coll_new(KV_SET);

	for (int i = 0; i < 8; i++)
		put_num(s, -i, NULL, 0, lim, 1);
	assert_int_equal(kv_coll_encoding(s), KV_ENC_INTSET);
	assert_true(kv_coll_mem(s) <= 32);               /* 8 of 16 bits, held */
	check_coll(s);
	for (int i = 8; i < 127; i++)
		put_num(s, -i, NULL, 0, lim, 1);
	assert_true(kv_coll_mem(s) > 32 + 127 * 2);      /* out into a buffer */
	assert_int_equal(kv_coll_put(s, S("m"), NULL, 0, lim), 1);    /* 128th */
	assert_int_equal(kv_coll_encoding(s), KV_ENC_LISTPACK);
	assert_true(kv_coll_find(s, S("-126"), NULL));
	assert_false(kv_coll_find(s, S("-127"), NULL));
	check_coll(s);
	struct kv_coll *d = kv_set_ops.clone(s);
	assert_true(kv_coll_del(d, S("m")));             /* integers only: a listpack still */
	assert_int_equal(kv_coll_encoding(d), KV_ENC_LISTPACK);
	assert_string_equal(kv_set_ops.encoding(d), "hashtable");
	check_coll(d);
	kv_coll_free(d);
	assert_int_equal(kv_coll_put(s, S("n"), NULL, 0, lim), 1);    /* 129th */
	assert_int_equal(kv_coll_encoding(s), KV_ENC_HASHTABLE);
	assert_int_equal(kv_coll_len(s), 129);
	assert_true(kv_coll_find(s, S("-126"), NULL) && kv_coll_find(s, S("m"), NULL));
	check_coll(s);
	kv_coll_free(s);

	s = kv_coll_new(KV_SET);                          /* a member too long */
	memset(m, 'a', sizeof(m));
	assert_int_equal(kv_coll_put(s, m, 64, NULL, 0, lim), 1);
	assert_int_equal(kv_coll_encoding(s), KV_ENC_LISTPACK);
	assert_int_equal(kv_coll_put(s, m, 65, NULL, 0, lim), 1);
	assert_int_equal(kv_coll_encoding(s), KV_ENC_HASHTABLE);
	check_coll(s);
	kv_coll_free(s);

	s = kv_coll_new(KV_SET);                          /* too long from the start */
	assert_int_equal(kv_coll_put(s, m, 65, NULL, 0, lim), 1);
	assert_int_equal(kv_coll_encoding(s), KV_ENC_HASHTABLE);
	kv_coll_free(s);
}

/* A packed collection carries no hashtable state: its header is a small
 * allocation beside its buffer, and the byte count stays exact as it
 * grows, shrinks and converts. */
static void test_packed_header(void **state)
{
	(void)state;
	struct kv_coll_limits lim = { 8, 64, 8 };
	enum kv_type types[] = { KV_HASH, KV_SET };

	for (int t = 0; t < 2; t++) {
		struct kv_coll *c = kv_coll_new(types[t]);
		assert_true(kv_coll_mem(c) <= 32);       /* a 24-byte header */
		for (int i = 0; i < 8; i++)
			put_num(c, i, S("v"), &lim, 1);
		check_coll(c);
		assert_true(kv_coll_mem(c) <= 32 + 8 * (t ? 8 : 12) + 24);
		for (int i = 0; i < 8; i += 2)
			assert_true(kv_coll_del(c, (char[]){ (char)('0' + i) }, 1));
		check_coll(c);
		for (int i = 8; i < 13; i++)              /* grows past 8: converts */
			put_num(c, i, S("v"), &lim, 1);
		assert_int_equal(kv_coll_encoding(c), KV_ENC_HASHTABLE);
		assert_int_equal(kv_coll_len(c), 9);
		check_coll(c);
		for (int i = 8; i < 13; i++) {
			char m[4];
			assert_true(kv_coll_del(c, m, (size_t)snprintf(m, sizeof(m), "%d", i)));
		}
		assert_int_equal(kv_coll_len(c), 4);
		check_coll(c);
		kv_coll_free(c);
	}
}

/* String lengths take 1, 2 or 5 bytes, forwards and mirrored; only the
 * shortest form is valid. */
static void test_lplen(void **state)
{
	(void)state;
	const size_t lens[] = { 0, 1, 127, 128, 16383, 16384, UINT32_MAX };
	const size_t sizes[] = { 1, 1, 1, 2, 2, 5, 5 };
	uint8_t b[8];
	size_t len;

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		assert_int_equal(kv_lplen_size(lens[i]), sizes[i]);
		assert_int_equal(kv_lplen_put(b, lens[i]), sizes[i]);
		assert_true(kv_lplen_valid(b, sizes[i]));
		assert_false(kv_lplen_valid(b, sizes[i] - 1));
		assert_int_equal(kv_lplen_get(b, &len), sizes[i]);
		assert_int_equal(len, lens[i]);
		memset(b, 0xee, sizeof(b));
		assert_int_equal(kv_lplen_put_back(b + 1, lens[i]), sizes[i]);
		assert_int_equal(kv_lplen_get_back(b + 1 + sizes[i], &len), sizes[i]);
		assert_int_equal(len, lens[i]);
		assert_int_equal(b[0], 0xee);              /* nothing written before */
		assert_int_equal(b[1 + sizes[i]], 0xee);   /* nor after */
	}
	b[0] = KV_LPLEN_TWO;                               /* 5 in two bytes */
	b[1] = 5;
	assert_false(kv_lplen_valid(b, 2));
	b[0] = 0xc1;                                       /* no such tag */
	assert_false(kv_lplen_valid(b, 5));
}

/* A listpack string's length takes one byte below 128, two from 128;
 * values at and past the edges read back whole. */
static void test_listpack_lengths(void **state)
{
	(void)state;
	struct kv_coll_limits lim = { 16, 20000, 16 };
	const size_t lens[] = { 0, 127, 128, 16383, 16384, 1 };
	static char v[20001];
	struct kv_coll *h = kv_coll_new(KV_HASH);
	struct kv_elem e;

	for (int i = 0; i < 4; i++)                        /* 2 + 2 bytes a field */
		put_num(h, i, S("v"), &lim, 1);
	assert_true(kv_coll_mem(h) <= 32 + 32);
	kv_coll_free(h);

	h = kv_coll_new(KV_HASH);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(v, 'a' + (int)i, lens[i]);
		put_num(h, (int)i, v, lens[i], &lim, 1);
		check_coll(h);
	}
	assert_int_equal(kv_coll_encoding(h), KV_ENC_LISTPACK);
	put_num(h, 2, S("x"), &lim, 0);                    /* 128 bytes down to 1 */
	put_num(h, 0, v, 200, &lim, 0);                     /* 0 up to 200 */
	check_coll(h);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		char m[4];
		size_t want = i == 2 ? 1 : i == 0 ? 200 : lens[i];
		assert_true(kv_coll_find(h, m, (size_t)snprintf(m, sizeof(m), "%zu", i), &e));
		assert_int_equal(e.vlen, want);
		if (want && i != 2 && i != 0)
			assert_int_equal(e.v[want - 1], 'a' + (int)i);
	}
	assert_true(kv_coll_del(h, S("3")));
	check_coll(h);
	memset(v, 'z', sizeof(v));
	put_num(h, 9, v, 20000, &lim, 1);                   /* at the limit: packed */
	assert_int_equal(kv_coll_encoding(h), KV_ENC_LISTPACK);
	check_coll(h);
	put_num(h, 10, v, 20001, &lim, 1);                  /* past it: converts */
	assert_int_equal(kv_coll_encoding(h), KV_ENC_HASHTABLE);
	check_coll(h);
	assert_true(kv_coll_find(h, S("9"), &e));
	assert_int_equal(e.vlen, 20000);
	assert_true(kv_coll_find(h, S("4"), &e));
	assert_int_equal(e.vlen, 16384);
	kv_coll_free(h);
}

/* Adds members (text) to an intset, checking it after each. */
static void put_ints(struct kv_coll *s, const struct kv_coll_limits *lim, const char *const *m,
		     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(kv_coll_put(s, m[i], strlen(m[i]), NULL, 0, lim), 1);
		check_coll(s);
	}
}

/* Members in order, as text, joined by spaces. */
static const char *ints_text(const struct kv_coll *s)
{
	static char buf[512];
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	size_t o = 0;
	buf[0] = '\0';
	while (kv_coll_next(s, &it, &e))
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%.*s", o ? " " : "", (int)e.mlen,
				      e.m);
	return buf;
}

/* An intset keeps members in 16 bits while they fit, widens to 32 then
 * 64 as wider ones come (at either end), never narrows, and converts past
 * its limit whatever its width. */
static void test_intset_widths(void **state)
{
	(void)state;
	struct kv_coll_limits lim = { 128, 64, 12 };
	struct kv_coll *s = kv_coll_new(KV_SET);
	static const char *const w16[] = { "7", "-32768", "32767", "0" };
	static const char *const w32[] = { "32768", "-2147483648", "2147483647", "-32769" };
	static const char *const w64[] = { "-9223372036854775808", "9223372036854775807",
					   "2147483648" };

	put_ints(s, &lim, w16, 4);
	assert_string_equal(ints_text(s), "-32768 0 7 32767");
	assert_true(kv_coll_mem(s) <= 32 + 32);          /* 8 bytes (64 bits: 32) */
	assert_false(kv_coll_find(s, S("65536"), NULL)); /* wider than any member */
	assert_false(kv_coll_find(s, S("-9223372036854775808"), NULL));
	assert_false(kv_coll_del(s, S("4294967296")));
	put_ints(s, &lim, w32, 1);                        /* 32 bits, at the top */
	assert_string_equal(ints_text(s), "-32768 0 7 32767 32768");
	put_ints(s, &lim, w32 + 1, 3);
	assert_string_equal(ints_text(s),
			    "-2147483648 -32769 -32768 0 7 32767 32768 2147483647");
	assert_true(kv_coll_mem(s) <= 32 + 48);          /* 8 of 4 bytes (of 8: 64) */
	assert_true(kv_coll_find(s, S("-32769"), NULL));
	assert_false(kv_coll_find(s, S("2147483648"), NULL));
	put_ints(s, &lim, w64, 1);                        /* 64 bits, at the bottom */
	assert_string_equal(ints_text(s), "-9223372036854775808 -2147483648 -32769 -32768 0 7 "
					  "32767 32768 2147483647");
	put_ints(s, &lim, w64 + 1, 2);
	assert_int_equal(kv_coll_len(s), 11);
	assert_true(kv_coll_mem(s) >= 11 * 8);           /* 11 of 8 bytes */
	for (size_t i = 0; i < 3; i++)
		assert_true(kv_coll_del(s, w64[i], strlen(w64[i])));
	assert_string_equal(ints_text(s),                 /* still 64 bits wide */
			    "-2147483648 -32769 -32768 0 7 32767 32768 2147483647");
	check_coll(s);
	put_ints(s, &lim, w64, 3);
	put_ints(s, &lim, (const char *const[]){ "1" }, 1);    /* 12 members: the limit */
	assert_int_equal(kv_coll_encoding(s), KV_ENC_INTSET);
	put_ints(s, &lim, (const char *const[]){ "2" }, 1);    /* 13: converts */
	assert_int_equal(kv_coll_encoding(s), KV_ENC_HASHTABLE);
	for (size_t i = 0; i < 3; i++)
		assert_true(kv_coll_find(s, w64[i], strlen(w64[i]), NULL));
	assert_true(kv_coll_find(s, S("-32768"), NULL));
	kv_coll_free(s);

	s = kv_coll_new(KV_SET);                          /* a string into 16 bits */
	put_ints(s, &lim, w16, 4);
	put_ints(s, &lim, (const char *const[]){ "x" }, 1);
	assert_int_equal(kv_coll_encoding(s), KV_ENC_LISTPACK);
	assert_true(kv_coll_find(s, S("-32768"), NULL));
	assert_int_equal(kv_coll_len(s), 5);
	kv_coll_free(s);
}

/* A walk from any cursor ends, and every member comes out. */
static void count_one(const struct kv_elem *e, void *arg)
{
	(void)e;
	(*(size_t *)arg)++;
}

static void test_scan_and_random(void **state)
{
	(void)state;
	struct kv_coll *s = kv_coll_new(KV_SET);
	uint64_t rng = 88172645463325252ull;
	char m[16];
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(m, sizeof(m), "m%d", i);
		assert_int_equal(kv_coll_put(s, m, (size_t)n, NULL, 0, &kv_coll_default_limits), 1);
	}
	size_t seen = 0;
	uint64_t cursor = 0;
	do
		cursor = kv_coll_scan(s, cursor, count_one, &seen);
	while (cursor);
	assert_int_equal(seen, 1000);
	for (int i = 0; i < 100; i++) {
		struct kv_elem e;
		kv_coll_random(s, &rng, &e);
		assert_true(kv_coll_find(s, e.m, e.mlen, NULL));
	}
	kv_coll_free(s);
}

/* In the keyspace: counted, replaced by a string (freed: ASan would see
 * a leak), renamed by detaching, deleted when an edit empties it. */
static void test_typed_entries(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	struct kv_pos pos, dst;
	size_t empty = kv_db_used(db);
	struct kv_coll *h = kv_coll_new(KV_HASH);

	assert_null(kv_db_lookup(db, S("h"), 0, &pos));
	assert_int_equal(kv_db_store_obj(db, &pos, KV_HASH, h, KV_NO_EXPIRE), 0);
	assert_int_equal(kv_entry_type(pos.entry), KV_HASH);
	size_t before = kv_db_edit_begin(db, pos.entry);
	for (int i = 0; i < 100; i++)
		put_num(h, i, S("value"), &kv_coll_default_limits, 1);
	assert_true(kv_db_edit_end(db, &pos, before));
	assert_true(kv_db_used(db) >= empty + kv_coll_mem(h));
	check_db(db);

	/* rename: the object changes owner, the count stays */
	size_t used = kv_db_used(db);
	kv_db_lookup(db, S("h2"), 0, &dst);
	assert_int_equal(kv_db_store_obj(db, &dst, KV_HASH, h, 1000), 0);
	kv_db_lookup(db, S("h"), 0, &pos);
	kv_db_detach(db, &pos);
	check_db(db);
	assert_int_equal(kv_entry_expire(kv_db_lookup(db, S("h2"), 0, &dst)), 1000);
	assert_true(kv_db_used(db) < used + kv_coll_mem(h));   /* counted once */

	/* emptied: the key goes */
	before = kv_db_edit_begin(db, dst.entry);
	for (int i = 0; i < 100; i++) {
		char m[8];
		int n = snprintf(m, sizeof(m), "%d", i);
		assert_true(kv_coll_del(h, m, (size_t)n));
	}
	assert_false(kv_db_edit_end(db, &dst, before));
	assert_null(kv_db_lookup(db, S("h2"), 0, &dst));
	check_db(db);

	/* a string over a set frees the set */
	struct kv_coll *s = kv_coll_new(KV_SET);
	assert_int_equal(kv_coll_put(s, S("x"), NULL, 0, &kv_coll_default_limits), 1);
	kv_db_lookup(db, S("s"), 0, &pos);
	assert_int_equal(kv_db_store_obj(db, &pos, KV_SET, s, KV_NO_EXPIRE), 0);
	assert_int_equal(kv_db_store(db, &pos, S("str"), KV_NO_EXPIRE), 0);
	assert_int_equal(kv_entry_type(kv_db_lookup(db, S("s"), 0, &pos)), KV_STRING);
	check_db(db);
	kv_db_flush(db);
	assert_int_equal(kv_db_used(db), empty);
	kv_db_free(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_listpack_to_hashtable),
		cmocka_unit_test(test_set_intset),
		cmocka_unit_test(test_set_listpack),
		cmocka_unit_test(test_packed_header),
		cmocka_unit_test(test_lplen),
		cmocka_unit_test(test_listpack_lengths),
		cmocka_unit_test(test_intset_widths),
		cmocka_unit_test(test_scan_and_random),
		cmocka_unit_test(test_typed_entries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
