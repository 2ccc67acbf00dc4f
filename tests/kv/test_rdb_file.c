/* SPDX-License-Identifier: MIT */
/* The RDB file (rdb_file.h): a keyspace written as a dump and read back
 * gives the same keys, values and expiry times; expired keys are dropped;
 * every truncation and every flipped bit of a dump is refused with a
 * reason and the offset, never read past its end; a failed save leaves
 * the previous dump as it was. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rdb_file.h"

#define NOW 1700000000000LL
#define NKEYS 200

/* A keyspace of NKEYS strings (integers, binary, long), every third with
 * an expiry in the future, and one already expired. */
static struct kv_db *make_db(void)
{
	struct kv_db *db = kv_db_new();
	struct kv_pos pos;
	char key[32], val[300];

	assert_non_null(db);
	for (int i = 0; i < NKEYS; i++) {
		size_t kl = (size_t)snprintf(key, sizeof(key), "key:%d", i);
		size_t vl = i % 2 ? (size_t)snprintf(val, sizeof(val), "%d", i * 7919 - 50000)
				  : (size_t)(i % 250) + 1;
		if (i % 2 == 0)
			for (size_t j = 0; j < vl; j++)
				val[j] = (char)(j % 7 == 0 ? 0 : 'a' + (i + (int)j) % 3);
		kv_db_lookup(db, key, kl, NOW, &pos);
		assert_int_equal(kv_db_store(db, &pos, val, vl, i % 3 ? KV_NO_EXPIRE : NOW + 1000 + i), 0);
	}
	kv_db_lookup(db, "gone", 4, NOW - 10, &pos);
	assert_int_equal(kv_db_store(db, &pos, "x", 1, NOW - 5), 0);
	return db;
}

struct check {
	struct kv_db *db;
	uint64_t seen;
};

/* Each key read must be in the keyspace with the same value and expiry. */
static int check_key(const char *key, size_t klen, struct kv_rdb_value *v, int64_t expire, void *arg)
{
	struct check *c = arg;
	struct kv_pos pos;
	struct kv_entry *e = kv_db_peek(c->db, key, klen, NOW, &pos);
	size_t n;
	const char *want;

	assert_non_null(e);
	assert_int_equal(v->type, KV_STRING);
	want = kv_entry_value(e, &n);
	assert_int_equal(v->len, n);
	assert_memory_equal(v->str, want, n);
	assert_int_equal(expire, kv_entry_expire(e));
	kv_rdb_value_free(v);
	c->seen++;
	return 0;
}

/* Writes db's dump into dir (a new temporary directory). */
static void save(struct kv_db *db, const char *dir, bool compress)
{
	struct kv_rdb_keys k = { .b = KV_RDB_BUF_INIT };
	const struct kv_rdb_keys *kp = &k;
	struct kv_rdb_save_opts o = { .dir = dir, .name = "dump.rdb", .checksum = true, .now = NOW };
	char why[256];

	assert_int_equal(kv_rdb_file_keys(db, NOW, compress, &k), 0);
	assert_int_equal(k.keys, NKEYS);
	assert_int_equal(k.expires, (NKEYS + 2) / 3);
	assert_int_equal(kv_rdb_file_save(&o, &kp, 1, why, sizeof(why)), 0);
	kv_rdb_buf_free(&k.b);
}

static void read_dump(const char *dir, uint8_t **p, size_t *n)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/dump.rdb", dir);
	assert_int_equal(kv_rdb_file_read(path, p, n), 0);
}

static int ignore_key(const char *key, size_t klen, struct kv_rdb_value *v, int64_t expire, void *arg)
{
	(void)key, (void)klen, (void)expire, (void)arg;
	kv_rdb_value_free(v);
	return 0;
}

static int load(const uint8_t *p, size_t n, int64_t now, kv_rdb_key_fn *fn, void *arg,
		bool (*want)(const char *, size_t, void *), struct kv_rdb_load_info *info)
{
	struct kv_rdb_load_opts o = { .now = now, .fn = fn, .want = want, .arg = arg };
	return kv_rdb_file_load(p, n, &o, info);
}

/* Keys split in two by their last byte's low bit, as shards split
 * them by hash. */
static bool odd_key(const char *key, size_t klen, void *arg)
{
	(void)arg;
	return klen && (key[klen - 1] & 1);
}

static bool even_key(const char *key, size_t klen, void *arg)
{
	return !odd_key(key, klen, arg);
}

static void round_trip(void **state)
{
	char dir[] = "/tmp/kv_rdb_file_XXXXXX";
	struct kv_rdb_load_info info;
	uint8_t *p;
	size_t n;
	(void)state;

	assert_non_null(mkdtemp(dir));
	struct kv_db *db = make_db();
	for (int compress = 0; compress < 2; compress++) {
		struct check c = { db, 0 };
		save(db, dir, compress);
		read_dump(dir, &p, &n);
		assert_memory_equal(p, "REDIS0010", 9);
		assert_int_equal(load(p, n, NOW, check_key, &c, NULL, &info), 0);
		assert_int_equal(c.seen, NKEYS);
		assert_int_equal(info.loaded, NKEYS);
		/* later, the keys with an expiry are gone */
		assert_int_equal(load(p, n, NOW + 5000, ignore_key, NULL, NULL, &info), 0);
		assert_int_equal(info.loaded, NKEYS - (NKEYS + 2) / 3);
		assert_int_equal(info.expired, (NKEYS + 2) / 3);
		/* two loaders that want half each, stepping over the other's
		 * values unread, keep every key between them once */
		struct kv_rdb_load_info odd, even;
		assert_int_equal(load(p, n, NOW, ignore_key, NULL, odd_key, &odd), 0);
		assert_int_equal(load(p, n, NOW, ignore_key, NULL, even_key, &even), 0);
		assert_true(odd.loaded > 0 && even.loaded > 0);
		assert_int_equal(odd.loaded + even.loaded, NKEYS);
		free(p);
	}
	kv_db_free(db);
	char path[300];
	snprintf(path, sizeof(path), "%s/dump.rdb", dir);
	unlink(path);
	rmdir(dir);
}

/* Every prefix and every single flipped bit is refused, with a reason
 * and an offset inside the file. */
static void corrupt_refused(void **state)
{
	char dir[] = "/tmp/kv_rdb_file_XXXXXX";
	struct kv_rdb_load_info info;
	uint8_t *p;
	size_t n;
	(void)state;

	assert_non_null(mkdtemp(dir));
	struct kv_db *db = make_db();
	save(db, dir, true);
	read_dump(dir, &p, &n);
	for (size_t len = 0; len < n; len++) {
		uint8_t *cut = malloc(len ? len : 1);
		memcpy(cut, p, len);
		assert_int_not_equal(load(cut, len, NOW, ignore_key, NULL, NULL, &info), 0);
		assert_true(info.why[0] != 0);
		assert_true(info.offset <= len);
		free(cut);
	}
	for (size_t i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			p[i] ^= (uint8_t)(1u << bit);
			assert_int_not_equal(load(p, n, NOW, ignore_key, NULL, NULL, &info), 0);
			assert_true(info.why[0] != 0);
			p[i] ^= (uint8_t)(1u << bit);
		}
	}
	free(p);
	kv_db_free(db);
	char path[300];
	snprintf(path, sizeof(path), "%s/dump.rdb", dir);
	unlink(path);
	rmdir(dir);
}

/* A save that cannot write (no such directory) fails with the reason. */
static void failed_save(void **state)
{
	struct kv_rdb_keys k = { .b = KV_RDB_BUF_INIT };
	const struct kv_rdb_keys *kp = &k;
	struct kv_rdb_save_opts o = { .dir = "/nonexistent/kv", .name = "dump.rdb", .now = NOW };
	char why[256] = "";
	(void)state;

	assert_int_equal(kv_rdb_file_save(&o, &kp, 1, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "/nonexistent/kv"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(corrupt_refused),
		cmocka_unit_test(failed_save),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
