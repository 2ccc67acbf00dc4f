/* SPDX-License-Identifier: MIT */
/* The RDB value codec: CRC-64 and LZF against known vectors, DUMP
 * payloads written by redis-server 7.0.15 read (and, where our encoding
 * is Redis's, written back byte for byte), every truncation and byte
 * flip of them refused without reading out of bounds, and corrupt
 * contents that Redis's deep check (sanitize-dump-payload yes) refuses
 * refused here too. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crc64.h"
#include "kvlist.h"
#include "kvzset.h"
#include "lzf.h"
#include "rdb.h"

#define S(lit) (const uint8_t *)(lit), sizeof(lit) - 1

/* DUMPs by redis-server 7.0.15: SET a to 30 "a"s, SET b to "abcdefgh"
 * 12 times and "xyz" (both LZF), RPUSH l a b 1 -300, ZADD z 1 a 2.5 b
 * -3 c. */
static const char dump_a[] = "\x00\xc3\x09\x1e\x01\x61\x61\xe0\x11\x00\x01\x61\x61\x0a\x00\x45\x73\x7c\xbb\x2b\x64\x7b\xbb";
static const char dump_b[] = "\x00\xc3\x11\x40\x63\x08\x61\x62\x63\x64\x65\x66\x67\x68\x61\xe0\x4e\x07\x02\x78\x79\x7a\x0a\x00\x57\xca\x33\x24\xaa\x44\x3e\x2d";
static const char dump_l[] = "\x12\x01\x02\x12\x12\x00\x00\x00\x04\x00\x81\x61\x02\x81\x62\x02\x01\x01\xde\xd4\x02\xff\x0a\x00\xc5\x2e\x2a\x38\x8f\x1b\x85\x63";
static const char dump_z[] = "\x11\x1a\x1a\x00\x00\x00\x06\x00\x81\x63\x02\xdf\xfd\x02\x81\x61\x02\x01\x01\x81\x62\x02\x83\x32\x2e\x35\x04\xff\x0a\x00\xa6\x8a\x1a\xb1\xa9\xf2\xdc\xc2";

/* Reads a DUMP payload; returns kv_rdb_get_value()'s result. */
static int load(const uint8_t *p, size_t n, struct kv_rdb_value *v)
{
	if (!kv_rdb_dump_check(p, n))
		return -EBADMSG;
	struct kv_rdb_reader r = { .p = p, .len = n - 10 };
	int err = kv_rdb_get_value(&r, &kv_rdb_default_limits, v);
	if (!err && r.pos != r.len) {
		kv_rdb_value_free(v);
		return -EMSGSIZE;
	}
	return err;
}

/* Encodes v as a DUMP payload and compares it with want. */
static void dump_equals(const struct kv_rdb_value *v, const uint8_t *want, size_t n)
{
	struct kv_rdb_buf b = KV_RDB_BUF_INIT;
	kv_rdb_dump(&b, v, true);
	assert_false(b.failed);
	assert_int_equal(b.len, n);
	assert_memory_equal(b.p, want, n);
	kv_rdb_buf_free(&b);
}

static void crc64_vector(void **state)
{
	(void)state;
	assert_true(kv_crc64(0, "123456789", 9) == 0xe9c6d914c4b8d9caull);
	/* continued in two parts: the same */
	assert_true(kv_crc64(kv_crc64(0, "1234", 4), "56789", 5) == 0xe9c6d914c4b8d9caull);
}

static void redis_strings_read(void **state)
{
	(void)state;
	struct kv_rdb_value v;
	char want[100];
	assert_int_equal(load(S(dump_a), &v), 0);
	assert_int_equal(v.type, KV_STRING);
	memset(want, 'a', 30);
	assert_int_equal(v.len, 30);
	assert_memory_equal(v.str, want, 30);
	kv_rdb_value_free(&v);
	assert_int_equal(load(S(dump_b), &v), 0);
	for (int i = 0; i < 12; i++)
		memcpy(want + 8 * i, "abcdefgh", 8);
	memcpy(want + 96, "xyz", 3);
	assert_int_equal(v.len, 99);
	assert_memory_equal(v.str, want, 99);
	/* ours compresses differently, and reads back the same */
	struct kv_rdb_buf b = KV_RDB_BUF_INIT;
	struct kv_rdb_value w;
	kv_rdb_dump(&b, &v, true);
	assert_true(b.len < 99);
	assert_int_equal(load(b.p, b.len, &w), 0);
	assert_int_equal(w.len, 99);
	assert_memory_equal(w.str, want, 99);
	kv_rdb_value_free(&w);
	kv_rdb_value_free(&v);
	kv_rdb_buf_free(&b);
}

static void redis_list_read(void **state)
{
	(void)state;
	struct kv_rdb_value v;
	static const char *const want[] = { "a", "b", "1", "-300" };
	size_t n;
	assert_int_equal(load(S(dump_l), &v), 0);
	assert_int_equal(v.type, KV_LIST);
	assert_int_equal(kv_list_len(v.obj), 4);
	for (int i = 0; i < 4; i++) {
		const uint8_t *e = kv_list_index(v.obj, i, &n);
		assert_int_equal(n, strlen(want[i]));
		assert_memory_equal(e, want[i], n);
	}
	dump_equals(&v, S(dump_l));
	kv_rdb_value_free(&v);
}

static void redis_zset_read(void **state)
{
	(void)state;
	struct kv_rdb_value v;
	double s;
	assert_int_equal(load(S(dump_z), &v), 0);
	assert_int_equal(v.type, KV_ZSET);
	assert_int_equal(kv_zset_len(v.obj), 3);
	assert_true(kv_zset_score(v.obj, "b", 1, &s) && s == 2.5);
	assert_true(kv_zset_score(v.obj, "c", 1, &s) && s == -3);
	assert_int_equal(kv_zset_rank(v.obj, "a", 1, false), 1);
	dump_equals(&v, S(dump_z));
	kv_rdb_value_free(&v);
}

/* Every prefix and every single-bit flip of a payload is refused (the
 * CRC, or the contents when the flip is in the CRC itself) and never
 * read out of bounds (ASan). */
static void damaged_refused(void **state)
{
	(void)state;
	const char *const dumps[] = { dump_a, dump_b, dump_l, dump_z };
	const size_t lens[] = { sizeof(dump_a) - 1, sizeof(dump_b) - 1, sizeof(dump_l) - 1,
				sizeof(dump_z) - 1 };
	struct kv_rdb_value v;
	for (int d = 0; d < 4; d++) {
		uint8_t *p = malloc(lens[d]);
		memcpy(p, dumps[d], lens[d]);
		for (size_t n = 0; n < lens[d]; n++)
			assert_int_not_equal(load(p, n, &v), 0);
		for (size_t i = 0; i < lens[d] * 8; i++) {
			p[i / 8] ^= (uint8_t)(1 << i % 8);
			assert_int_not_equal(load(p, lens[d], &v), 0);
			p[i / 8] ^= (uint8_t)(1 << i % 8);
		}
		free(p);
		/* the value alone, cut anywhere, with no framing to catch it */
		for (size_t n = 0; n < lens[d] - 10; n++) {
			struct kv_rdb_reader r = { .p = (const uint8_t *)dumps[d], .len = n };
			assert_int_not_equal(kv_rdb_get_value(&r, &kv_rdb_default_limits, &v), 0);
		}
	}
}

/* Contents Redis refuses with sanitize-dump-payload yes. */
static void corrupt_contents_refused(void **state)
{
	(void)state;
	static const struct { const char *p; size_t n; } bad[] = {
		{ "\x0b\x0c\x02\x00\x00\x00\x02\x00\x00\x00\x05\x00\x01\x00", 14 },  /* intset 5, 1 */
		{ "\x04\x02\x01" "a\x01" "b\x01" "a\x01" "c", 10 },                   /* field a twice */
		{ "\x02\x02\x01" "a\x01" "a", 6 },                                    /* member a twice */
		{ "\x05\x01\x01" "a\x00\x00\x00\x00\x00\x00\xf8\x7f", 12 },           /* NaN score */
		{ "\x02\x00", 2 },                                                    /* empty set */
		{ "\x12\x01\x03\x01" "a", 5 },                                         /* node container 3 */
		{ "\x0f\x00", 2 },                                                    /* a stream */
	};
	struct kv_rdb_value v;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kv_rdb_reader r = { .p = (const uint8_t *)bad[i].p, .len = bad[i].n };
		int err = kv_rdb_get_value(&r, &kv_rdb_default_limits, &v);
		if (err == 0)
			fail_msg("case %zu read", i);
		assert_true(r.why[0] != 0);
	}
}

static void lzf_round_trip(void **state)
{
	(void)state;
	uint64_t x = 88172645463325252ull;
	for (size_t n = 1; n < 70000; n = n * 3 / 2 + 1) {
		uint8_t *in = malloc(n), *c = malloc(n + n / 16 + 64), *out = malloc(n);
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* a few distinct bytes in runs: compressible, not trivially */
			in[i] = (uint8_t)(i % 300 < 150 ? 'a' + x % 4 : x);
		}
		size_t cl = kv_lzf_compress(in, n, c, n + n / 16 + 64);
		assert_true(cl > 0);
		assert_int_equal(kv_lzf_decompress(c, cl, out, n), (long)n);
		assert_memory_equal(in, out, n);
		if (n > 1)
			assert_int_equal(kv_lzf_decompress(c, cl, out, n - 1), -E2BIG);
		free(in), free(c), free(out);
	}
	/* random bytes do not fit in 4 bytes less than they are */
	uint8_t r[256], c[256];
	for (size_t i = 0; i < sizeof(r); i++)
		x ^= x << 13, x ^= x >> 7, x ^= x << 17, r[i] = (uint8_t)x;
	assert_int_equal(kv_lzf_compress(r, sizeof(r), c, sizeof(r) - 4), 0);
}

static void lzf_malformed(void **state)
{
	(void)state;
	uint8_t out[64];
	assert_int_equal(kv_lzf_decompress(S("\x20\x00"), out, sizeof(out)), -EINVAL);  /* before the start */
	assert_int_equal(kv_lzf_decompress(S("\x05" "ab"), out, sizeof(out)), -EINVAL); /* run past the end */
	assert_int_equal(kv_lzf_decompress(S("\x00" "a\xe0"), out, sizeof(out)), -EINVAL);
	assert_int_equal(kv_lzf_decompress(S("\x00" "a\x20\x00"), out, sizeof(out)), 4);  /* "aaaa" */
	assert_memory_equal(out, "aaaa", 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc64_vector),
		cmocka_unit_test(redis_strings_read),
		cmocka_unit_test(redis_list_read),
		cmocka_unit_test(redis_zset_read),
		cmocka_unit_test(damaged_refused),
		cmocka_unit_test(corrupt_contents_refused),
		cmocka_unit_test(lzf_round_trip),
		cmocka_unit_test(lzf_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
