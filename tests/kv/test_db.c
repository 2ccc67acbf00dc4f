/* SPDX-License-Identifier: MIT */
/* One shard's keyspace: entries and their expiry, lazy and active expiry,
 * the byte count, the scan guarantee while the table grows, the memory
 * limit and allkeys-lru eviction. */
#include <errno.h>
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
#include "keyhash.h"
#include "kvlist.h"
#include "kvzset.h"
#include "pool.h"

#define S(lit) lit, sizeof(lit) - 1

static void check(const struct kv_db *db)
{
	char why[200];
	if (kv_db_validate(db, why, sizeof(why)))
		fail_msg("kv_db_validate: %s", why);
}

static void want_value(struct kv_db *db, const char *k, size_t kl, int64_t now,
			 const char *v, size_t vl)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_db_lookup(db, k, kl, now, &pos);
	if (!v) {
		assert_null(e);
		return;
	}
	assert_non_null(e);
	size_t got;
	const char *p = kv_entry_value(e, &got);
	assert_int_equal(got, vl);
	assert_memory_equal(p, v, vl);
	p = kv_entry_key(e, &got);
	assert_int_equal(got, kl);
	assert_memory_equal(p, k, kl);
}

static void store(struct kv_db *db, const char *k, size_t kl, const char *v, size_t vl, int64_t exp)
{
	struct kv_pos pos;
	kv_db_lookup(db, k, kl, 0, &pos);
	assert_int_equal(kv_db_store(db, &pos, v, vl, exp), 0);
}

static void test_store_lookup_erase(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	size_t empty_used = kv_db_used(db);
	store(db, S("a"), S("1"), KV_NO_EXPIRE);
	store(db, S("b\0\r\n"), S("\0\0"), KV_NO_EXPIRE);
	store(db, "", 0, "", 0, KV_NO_EXPIRE);
	want_value(db, S("a"), 0, S("1"));
	want_value(db, S("b\0\r\n"), 0, S("\0\0"));
	want_value(db, "", 0, 0, "", 0);
	want_value(db, S("b"), 0, NULL, 0);
	assert_int_equal(kv_db_size(db), 3);
	/* replace, longer then shorter */
	store(db, S("a"), S("a much longer value than before"), KV_NO_EXPIRE);
	want_value(db, S("a"), 0, S("a much longer value than before"));
	store(db, S("a"), S("x"), KV_NO_EXPIRE);
	want_value(db, S("a"), 0, S("x"));
	assert_int_equal(kv_db_size(db), 3);
	check(db);
	struct kv_pos pos;
	assert_non_null(kv_db_lookup(db, S("a"), 0, &pos));
	kv_db_erase(db, &pos);
	assert_null(pos.entry);
	want_value(db, S("a"), 0, NULL, 0);
	assert_int_equal(kv_db_size(db), 2);
	assert_true(kv_db_used(db) > empty_used);
	check(db);
	kv_db_flush(db);
	assert_int_equal(kv_db_size(db), 0);
	assert_int_equal(kv_db_used(db), empty_used);
	check(db);
	kv_db_free(db);
}

/* A key hashed by the caller: the lookup takes the given hash for those
 * very bytes (so a wrong one, given on purpose, misses), hashes the same
 * bytes at another address itself, and forgets it when told. */
static void test_known_hash(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	char key[] = "known", copy[] = "known";
	struct kv_pos pos;

	store(db, S("known"), S("v"), KV_NO_EXPIRE);
	store(db, S("know"), S("w"), KV_NO_EXPIRE);
	kv_db_known_hash(db, key, 5, kv_keyhash(key, 5));
	assert_non_null(kv_db_lookup(db, key, 5, 0, &pos));
	assert_int_equal(pos.hash, kv_keyhash(key, 5));
	kv_db_known_hash(db, key, 5, kv_keyhash(key, 5) ^ 1);
	assert_null(kv_db_lookup(db, key, 5, 0, &pos)); /* the hash given was taken */
	assert_non_null(kv_db_lookup(db, copy, 5, 0, &pos)); /* other bytes: hashed */
	kv_db_known_hash(db, key, 5, kv_keyhash(key, 5));
	want_value(db, key, 4, 0, S("w")); /* "know": another key, its own hash */
	kv_db_known_hash(db, NULL, 0, 0);
	assert_non_null(kv_db_lookup(db, key, 5, 0, &pos));
	check(db);
	kv_db_free(db);
}

/* kv_db_ahead: a command's keys looked up in order, more of them than the
 * look ahead holds, find their own entries (hashes taken from the ring in
 * the right places); lookups out of order, of the same key twice, of
 * other bytes, and after the end all find what a plain lookup finds. */
static void test_ahead(void **state)
{
	(void)state;
	enum { NKEYS = 53 };
	struct kv_db *db = kv_db_new();
	char keys[NKEYS][16], vals[NKEYS][16];
	const char *argv[1 + 2 * NKEYS];
	size_t argl[1 + 2 * NKEYS];
	struct kv_pos pos;

	argv[0] = "mset";
	argl[0] = 4;
	for (int k = 0; k < NKEYS; k++) {
		argl[1 + 2 * k] = (size_t)snprintf(keys[k], sizeof(keys[k]), "key:%d", k);
		argl[2 + 2 * k] = (size_t)snprintf(vals[k], sizeof(vals[k]), "v%d", k);
		argv[1 + 2 * k] = keys[k];
		argv[2 + 2 * k] = vals[k];
		if (k % 3) /* a third absent */
			store(db, keys[k], argl[1 + 2 * k], vals[k], argl[2 + 2 * k], KV_NO_EXPIRE);
	}
	kv_db_ahead(db, argv, argl, 1, 2, NKEYS);
	for (int k = 0; k < NKEYS; k++) {
		want_value(db, keys[k], argl[1 + 2 * k], 0, k % 3 ? vals[k] : NULL, argl[2 + 2 * k]);
		assert_int_equal(kv_db_lookup(db, keys[k], argl[1 + 2 * k], 0, &pos) != NULL,
				 k % 3 != 0); /* the same key again: out of order */
		if (k == 20) /* another key's bytes in between */
			want_value(db, S("key:1"), 0, S("v1"));
	}
	kv_db_ahead_end(db);

	/* out of order from the start, then in order from the middle */
	kv_db_ahead(db, argv, argl, 1, 2, NKEYS);
	want_value(db, keys[40], argl[81], 0, vals[40], argl[82]);
	for (int k = 0; k < NKEYS; k++)
		want_value(db, keys[k], argl[1 + 2 * k], 0, k % 3 ? vals[k] : NULL, argl[2 + 2 * k]);
	kv_db_ahead_end(db);

	/* The look ahead carries on past a first key whose hash the caller
	 * gave (kv_db_known_hash, as the server does): seen by changing key
	 * 5's bytes behind its back to an existing key's (breaking the
	 * contract on purpose), which its lookup then misses, the hash being
	 * the one taken ahead. */
	kv_db_known_hash(db, keys[0], argl[1], kv_keyhash(keys[0], argl[1]));
	kv_db_ahead(db, argv, argl, 1, 2, NKEYS);
	for (int k = 0; k < 5; k++)
		want_value(db, keys[k], argl[1 + 2 * k], 0, k % 3 ? vals[k] : NULL, argl[2 + 2 * k]);
	memcpy(keys[5], "key:7", 5);
	assert_null(kv_db_lookup(db, keys[5], argl[11], 0, &pos));
	kv_db_ahead_end(db);
	kv_db_known_hash(db, NULL, 0, 0);
	want_value(db, keys[5], argl[11], 0, S("v7")); /* hashed anew */
	memcpy(keys[5], "key:5", 5);

	/* Hashes the caller gave (kv_db_known_keys, a part's keys hashed at
	 * home) are taken instead of hashing: seen by giving key 4 key 5's
	 * hash, which its lookup then misses while key 5's finds; a look
	 * ahead over other positions (step 1) or another count ignores them. */
	uint64_t given[NKEYS];
	for (int k = 0; k < NKEYS; k++)
		given[k] = kv_keyhash(keys[k], argl[1 + 2 * k]);
	given[4] = given[5];
	kv_db_known_keys(db, argv, 1, 2, NKEYS, given);
	kv_db_ahead(db, argv, argl, 1, 2, NKEYS);
	for (int k = 0; k < NKEYS; k++)
		assert_int_equal(kv_db_lookup(db, keys[k], argl[1 + 2 * k], 0, &pos) != NULL,
				 k != 4 && k % 3 != 0);
	kv_db_ahead_end(db);
	for (uint32_t step = 1; step <= 2; step++) {
		uint32_t n = step == 1 ? 2 * NKEYS : NKEYS - 1;

		kv_db_ahead(db, argv, argl, 1, step, n);
		for (uint32_t k = 0; k < n; k++) {
			struct kv_entry *e = kv_db_lookup(db, argv[1 + k * step], argl[1 + k * step], 0,
							  &pos);

			if (argv[1 + k * step] == keys[4])
				assert_non_null(e);
		}
		kv_db_ahead_end(db);
	}
	kv_db_known_keys(db, NULL, 0, 0, 0, NULL);

	/* after the end, the same addresses with other bytes: hashed anew */
	kv_db_ahead(db, argv, argl, 1, 2, NKEYS);
	kv_db_ahead_end(db);
	memcpy(keys[0], "key:1", 5); /* key:0 becomes key:1, same length */
	want_value(db, keys[0], argl[1], 0, S("v1"));
	check(db);
	kv_db_free(db);
}

static void store_obj(struct kv_db *db, const char *k, size_t kl, enum kv_type t, void *obj)
{
	struct kv_pos pos;
	assert_non_null(obj);
	kv_db_lookup(db, k, kl, 0, &pos);
	assert_int_equal(kv_db_store_obj(db, &pos, t, obj, KV_NO_EXPIRE), 0);
}

/* A member looked up ahead (kv_db_prefetch_members()): taken from the
 * argument its key's type names it by, only where the collection has a
 * member index, and nothing in the keyspace changes. */
static void test_prefetch_members(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	struct kv_coll *big = kv_coll_new(KV_SET), *small = kv_coll_new(KV_SET);
	struct kv_coll *hash = kv_coll_new(KV_HASH);
	struct kv_zset *z = kv_zset_new(4, 64), *zsmall = kv_zset_new(128, 64);
	struct kv_list *l = kv_list_new(-2);
	char m[16];
	int out;
	double score;

	for (int i = 0; i < 600; i++) { /* past the packed encodings' limits */
		size_t ml = (size_t)snprintf(m, sizeof(m), "m%d", i);
		assert_int_equal(kv_coll_put(big, m, ml, NULL, 0, &kv_coll_default_limits), 1);
		assert_int_equal(kv_coll_put(hash, m, ml, S("v"), &kv_coll_default_limits), 1);
		assert_int_equal(kv_zset_add(z, m, ml, i, 0, &out, &score), 0);
	}
	assert_int_equal(kv_coll_put(small, S("a"), NULL, 0, &kv_coll_default_limits), 1);
	assert_int_equal(kv_zset_add(zsmall, S("a"), 1, 0, &out, &score), 0);
	assert_int_equal(kv_list_push(l, KV_LIST_HEAD, S("a")), 0);
	store_obj(db, S("big"), KV_SET, big);
	store_obj(db, S("small"), KV_SET, small);
	store_obj(db, S("h"), KV_HASH, hash);
	store_obj(db, S("z"), KV_ZSET, z);
	store_obj(db, S("zs"), KV_ZSET, zsmall);
	store_obj(db, S("l"), KV_LIST, l);
	store(db, S("str"), S("v"), KV_NO_EXPIRE);

	static const char *const reqs[][4] = {
		{ "SADD", "big", "m7", NULL },       /* 0: argument 2 */
		{ "HSET", "h", "m9", "v" },          /* 1: argument 2, not the last */
		{ "ZADD", "z", "1", "m11" },         /* 2: the last */
		{ "SADD", "small", "b", NULL },      /* packed: no index */
		{ "ZADD", "zs", "1", "b" },          /* packed */
		{ "LPUSH", "l", "x", NULL },         /* a list */
		{ "SETEX", "str", "10", "v" },       /* a string */
		{ "SADD", "none", "m1", NULL },      /* absent */
		{ "ZADD", "z", "1", "m1" },          /* 8: its last beyond nargs */
		{ "SADD", "big", "m1", NULL },       /* 9: argument 2 beyond nargs */
	};
	enum { NREQ = sizeof(reqs) / sizeof(reqs[0]) };
	struct kv_member_ahead r[NREQ];
	size_t argl[NREQ][4];

	for (size_t i = 0; i < NREQ; i++) {
		uint32_t argc = reqs[i][3] ? 4 : 3;
		for (uint32_t a = 0; a < argc; a++)
			argl[i][a] = strlen(reqs[i][a]);
		r[i] = (struct kv_member_ahead){
			.key_hash = kv_keyhash(reqs[i][1], argl[i][1]), .argv = reqs[i],
			.argl = argl[i], .argc = argc, .nargs = argc,
		};
	}
	r[8].argc = 6;  /* ZADD z 1 m1 2 m2: the last not among the 4 read */
	r[9].nargs = 2;
	struct kv_hash_memo memo = { .n = 7 };
	assert_int_equal(kv_db_prefetch_members(db, r, NREQ, &memo), 3);
	assert_int_equal(r[0]._hash, kv_keyhash(S("m7")));
	assert_int_equal(r[1]._hash, kv_keyhash(S("m9")));
	assert_int_equal(r[2]._hash, kv_keyhash(S("m11")));
	/* the memo: the three members at their own addresses, in order */
	assert_int_equal(memo.n, 3);
	static const int member_at[3] = { 2, 2, 3 };
	for (size_t i = 0; i < 3; i++) {
		const char *m = reqs[i][member_at[i]];
		assert_ptr_equal(memo.p[i], m);
		assert_int_equal(memo.len[i], strlen(m));
		assert_int_equal(memo.hash[i], r[i]._hash);
	}
	for (size_t i = 3; i < NREQ; i++)
		assert_null(r[i]._index);
	check(db);
	assert_int_equal(kv_coll_len(big), 600);
	assert_int_equal(kv_zset_len(z), 600);
	want_value(db, S("str"), 0, S("v"));
	assert_int_equal(kv_db_prefetch_members(db, r, 0, &memo), 0);
	assert_int_equal(memo.n, 0);
	assert_int_equal(kv_db_prefetch_members(db, r, 3, NULL), 3);
	kv_db_free(db);
}

/* kv_member_hash() takes a hash from the thread's memo only for the very
 * bytes it holds: the same address and length (the memo's hashes here
 * are made up, so that taking one shows); anything else is hashed. */
static void test_member_hash_memo(void **state)
{
	(void)state;
	static const char read[] = "alpha beta gamma delta";
	const char *alpha = read, *beta = read + 6, *gamma = read + 11, *delta = read + 17;
	char copy[] = "beta";
	struct kv_hash_memo memo = {
		.p = { alpha, beta, delta }, .len = { 5, 4, 5 }, .hash = { 101, 102, 104 }, .n = 3,
	}, inner = { .p = { gamma }, .len = { 5 }, .hash = { 203 }, .n = 1 };

	assert_int_equal(kv_keyhash_init(), 0);
	assert_null(kv_keyhash_memo(&memo));
	assert_int_equal(kv_member_hash(alpha, 5), 101);
	assert_int_equal(kv_member_hash(beta, 4), 102);
	assert_int_equal(kv_member_hash(beta, 4), 102); /* found, then inserted */
	assert_int_equal(kv_member_hash(delta, 5), 104);
	assert_int_equal(kv_member_hash(alpha, 5), kv_keyhash(alpha, 5)); /* behind the search */
	assert_int_equal(kv_keyhash_memo(&memo), &memo); /* starts over */
	assert_int_equal(kv_member_hash(alpha, 5), 101);
	assert_int_equal(kv_member_hash(beta, 3), kv_keyhash(beta, 3));   /* another length */
	assert_int_equal(kv_member_hash(copy, 4), kv_keyhash(S("beta")));  /* another address */
	assert_int_equal(kv_member_hash(gamma, 5), kv_keyhash(gamma, 5));  /* not in it */
	assert_int_equal(kv_member_hash(read + 20, 2), kv_keyhash(S("ta"))); /* past its last */
	/* a nested run's memo, then the outer one's back */
	struct kv_hash_memo *outer = kv_keyhash_memo(&inner);
	assert_ptr_equal(outer, &memo);
	assert_int_equal(kv_member_hash(gamma, 5), 203);
	assert_int_equal(kv_member_hash(delta, 5), kv_keyhash(delta, 5));
	assert_ptr_equal(kv_keyhash_memo(outer), &inner);
	assert_int_equal(kv_member_hash(delta, 5), 104);
	assert_ptr_equal(kv_keyhash_memo(NULL), &memo);
	assert_int_equal(kv_member_hash(alpha, 5), kv_keyhash(alpha, 5));
	memo.n = 0;
	kv_keyhash_memo(&memo);
	assert_int_equal(kv_member_hash(alpha, 5), kv_keyhash(alpha, 5)); /* empty */
	kv_keyhash_memo(NULL);
}

static void test_expiry(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	struct kv_pos pos;
	store(db, S("k"), S("v"), 1000);
	assert_non_null(kv_db_lookup(db, S("k"), 999, &pos));
	assert_int_equal(kv_entry_expire(pos.entry), 1000);
	/* Redis: expired only once now is past the time */
	assert_non_null(kv_db_lookup(db, S("k"), 1000, &pos));
	assert_null(kv_db_lookup(db, S("k"), 1001, &pos));
	assert_int_equal(kv_db_size(db), 0);
	/* KEEP_TTL keeps it, a plain store clears it */
	store(db, S("k"), S("v"), 5000);
	store(db, S("k"), S("w"), KV_KEEP_TTL);
	assert_non_null(kv_db_lookup(db, S("k"), 0, &pos));
	assert_int_equal(kv_entry_expire(pos.entry), 5000);
	store(db, S("k"), S("x"), KV_NO_EXPIRE);
	assert_non_null(kv_db_lookup(db, S("k"), 0, &pos));
	assert_int_equal(kv_entry_expire(pos.entry), KV_NO_EXPIRE);
	/* set and clear on a present key keep the value */
	assert_int_equal(kv_db_set_expire(db, &pos, 7000), 0);
	want_value(db, S("k"), 6000, S("x"));
	assert_non_null(kv_db_lookup(db, S("k"), 0, &pos));
	assert_int_equal(kv_entry_expire(pos.entry), 7000);
	assert_int_equal(kv_db_set_expire(db, &pos, KV_NO_EXPIRE), 0);
	want_value(db, S("k"), INT64_MAX, S("x"));
	/* KEEP_TTL on an absent key means none */
	store(db, S("n"), S("v"), KV_KEEP_TTL);
	assert_non_null(kv_db_lookup(db, S("n"), 0, &pos));
	assert_int_equal(kv_entry_expire(pos.entry), KV_NO_EXPIRE);
	check(db);
	kv_db_free(db);
}

static void test_resize(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	struct kv_pos pos;
	/* append one byte at a time with an expiry set, as APPEND does */
	store(db, S("k"), "", 0, 99999);
	char want[5000];
	for (size_t i = 0; i < sizeof(want); i++) {
		want[i] = (char)('a' + i % 26);
		assert_non_null(kv_db_lookup(db, S("k"), 0, &pos));
		char *v = kv_db_resize(db, &pos, i + 1, true);
		assert_non_null(v);
		v[i] = want[i];
	}
	want_value(db, S("k"), 0, want, sizeof(want));
	assert_non_null(kv_db_lookup(db, S("k"), 0, &pos));
	assert_int_equal(kv_entry_expire(pos.entry), 99999);
	/* shrinking keeps the head and gives memory back */
	size_t big = kv_db_used(db);
	assert_non_null(kv_db_resize(db, &pos, 3, false));
	want_value(db, S("k"), 0, "abc", 3);
	assert_true(kv_db_used(db) < big - 4000);
	/* absent: a new key */
	assert_null(kv_db_lookup(db, S("new"), 0, &pos));
	char *v = kv_db_resize(db, &pos, 2, false);
	memcpy(v, "hi", 2);
	want_value(db, S("new"), 0, "hi", 2);
	check(db);
	kv_db_free(db);
}

/* After an insert moved the table, a position found before it still
 * erases the right key. */
static void test_pos_survives_growth(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	struct kv_pos a, b;
	char k[32];
	store(db, S("src"), S("v"), KV_NO_EXPIRE);
	assert_non_null(kv_db_lookup(db, S("src"), 0, &a));
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(k, sizeof(k), "key:%d", i);
		kv_db_lookup(db, k, (size_t)n, 0, &b);
		assert_int_equal(kv_db_store(db, &b, "x", 1, KV_NO_EXPIRE), 0);
	}
	kv_db_erase(db, &a);
	want_value(db, S("src"), 0, NULL, 0);
	assert_int_equal(kv_db_size(db), 5000);
	check(db);
	kv_db_free(db);
}

static void test_active_expiry(void **state)
{
	(void)state;
	enum { N = 20000 };
	struct kv_db *db = kv_db_new();
	char k[32];
	for (int i = 0; i < N; i++) {
		int n = snprintf(k, sizeof(k), "key:%d", i);
		store(db, k, (size_t)n, "0123456789abcdef0123456789abcdef", 32,
		      i % 2 ? 100 + i % 7 : KV_NO_EXPIRE);
	}
	size_t full = kv_db_used(db);
	/* nothing expired yet: steps delete nothing */
	for (int i = 0; i < 50; i++)
		assert_int_equal(kv_db_expire_step(db, 100, 500), 0);
	size_t deleted = 0, calls = 0;
	while (kv_db_size(db) > N / 2) {
		size_t d = kv_db_expire_step(db, 1000, 500);
		/* a call stops near its budget: it finishes the group it is in */
		assert_true(d <= 500 + 64);
		deleted += d;
		calls++;
		assert_true(calls <= 2 * N / 500 + 10);
	}
	assert_int_equal(deleted, N / 2);
	assert_true(kv_db_used(db) < full - (N / 2) * 48);
	for (int i = 0; i < N; i += 2) {
		int n = snprintf(k, sizeof(k), "key:%d", i);
		want_value(db, k, (size_t)n, 1000, "0123456789abcdef0123456789abcdef", 32);
	}
	check(db);
	kv_db_free(db);
}

struct seen {
	unsigned char *hits;
	int n;
};

static void note(const struct kv_entry *e, void *arg)
{
	struct seen *s = arg;
	size_t kl;
	const char *k = kv_entry_key(e, &kl);
	int i;
	if (kl > 5 && memcmp(k, "keep:", 5) == 0 && sscanf(k + 5, "%d", &i) == 1 && i < s->n)
		s->hits[i]++;
}

/* Keys present for the whole scan all come out while the table grows
 * sixteen-fold and other keys come and go; expired keys never come out. */
static void test_scan_while_growing(void **state)
{
	(void)state;
	enum { N = 3000 };
	struct kv_db *db = kv_db_new();
	static unsigned char hits[N];
	struct seen s = { hits, N };
	char k[32];
	for (int i = 0; i < N; i++) {
		int n = snprintf(k, sizeof(k), "keep:%d", i);
		store(db, k, (size_t)n, "v", 1, KV_NO_EXPIRE);
	}
	store(db, S("keep:999999"), "v", 1, 10);
	uint64_t c = 0;
	int added = 0;
	do {
		c = kv_db_scan(db, c, 11, note, &s);
		for (int j = 0; j < 30; j++, added++) {
			int n = snprintf(k, sizeof(k), "more:%d", added);
			store(db, k, (size_t)n, "v", 1, KV_NO_EXPIRE);
		}
		struct kv_pos pos;
		int n = snprintf(k, sizeof(k), "more:%d", added / 2);
		if (kv_db_lookup(db, k, (size_t)n, 0, &pos))
			kv_db_erase(db, &pos);
	} while (c);
	assert_true(kv_db_size(db) > 8 * N);
	for (int i = 0; i < N; i++)
		if (!hits[i])
			fail_msg("keep:%d never came out of the scan", i);
	check(db);
	kv_db_free(db);
}

/* Stores key:<i> = 32 bytes at time now. */
static void store_at(struct kv_db *db, int i, int64_t now)
{
	char k[32], v[33];
	struct kv_pos pos;
	snprintf(k, sizeof(k), "key:%012d", i);
	snprintf(v, sizeof(v), "%032d", i);
	kv_db_lookup(db, k, 16, now, &pos);
	assert_int_equal(kv_db_store(db, &pos, v, 32, KV_NO_EXPIRE), 0);
}

static bool has_key(struct kv_db *db, int i, int64_t now)
{
	char k[32];
	struct kv_pos pos;
	snprintf(k, sizeof(k), "key:%012d", i);
	return kv_db_lookup(db, k, 16, now, &pos) != NULL;
}

/* noeviction: over the limit nothing is deleted and make_room says no;
 * deleting keys brings the keyspace back under. */
static void test_limit_noeviction(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	struct kv_db_stats st;
	for (int i = 0; i < 500; i++)
		store_at(db, i, 1000);
	assert_true(kv_db_make_room(db));    /* no limit */
	kv_db_set_maxmemory(db, kv_db_used(db) - 1, KV_POLICY_NOEVICTION, 5);
	assert_false(kv_db_make_room(db));
	assert_int_equal(kv_db_size(db), 500);
	struct kv_pos pos;
	kv_db_lookup(db, S("key:000000000007"), 1000, &pos);
	kv_db_erase(db, &pos);
	assert_true(kv_db_make_room(db));
	kv_db_stats(db, &st);
	assert_int_equal(st.evicted, 0);
	assert_int_equal(st.keys, 499);
	check(db);
	kv_db_free(db);
}

/* allkeys-lru: each make_room evicts until under the limit; keys looked up
 * recently outlive the keys nobody read, and evictions are counted. */
static void test_limit_lru(void **state)
{
	(void)state;
	struct kv_db *db = kv_db_new();
	struct kv_db_stats st;
	int64_t now = 1000;
	for (int i = 0; i < 1000; i++)
		store_at(db, i, now++);
	size_t limit = kv_db_used(db);
	kv_db_set_maxmemory(db, limit, KV_POLICY_ALLKEYS_LRU, 5);
	for (int i = 0; i < 100; i++)    /* read the first hundred again */
		assert_true(has_key(db, i, now++));
	for (int i = 1000; i < 1500; i++) {
		assert_true(kv_db_make_room(db));
		store_at(db, i, now++);
	}
	assert_true(kv_db_make_room(db));
	assert_true(kv_db_used(db) <= limit);
	kv_db_stats(db, &st);
	assert_int_equal(st.keys + st.evicted, 1500);
	assert_true(st.evicted >= 450);
	int read_kept = 0, unread_kept = 0, new_kept = 0;
	for (int i = 0; i < 1500; i++) {
		bool kept = has_key(db, i, now);
		read_kept += i < 100 && kept;
		unread_kept += i >= 100 && i < 1000 && kept;
		new_kept += i >= 1000 && kept;
	}
	/* sampled, so approximate: the read keys and the new ones stay, the
	 * evictions fall on the unread */
	if (read_kept < 95 || new_kept < 475 || unread_kept > 900 - 400)
		fail_msg("kept %d of 100 read, %d of 900 unread, %d of 500 new", read_kept,
			 unread_kept, new_kept);
	check(db);
	/* a limit below an empty table's size: eviction empties it and gives up */
	kv_db_set_maxmemory(db, 1, KV_POLICY_ALLKEYS_LRU, 3);
	assert_false(kv_db_make_room(db));
	assert_int_equal(kv_db_size(db), 0);
	check(db);
	kv_db_free(db);
}

/* Every size gets room for itself from the smallest class that holds it
 * (checked against its neighbour), sizes above the largest class come from
 * malloc, and each object's bytes are all writable (ASan would say). */
static void test_pool_classes(void **state)
{
	(void)state;
	struct kv_pool p;
	static void *obj[700];
	static uint8_t cls[700];
	kv_pool_init(&p);
	for (size_t n = 1; n < 700; n++) {
		obj[n] = kv_pool_alloc(&p, n, &cls[n]);
		assert_non_null(obj[n]);
		assert_true(((uintptr_t)obj[n] & 7) == 0);
		assert_int_equal(cls[n] == 0, n > KV_POOL_MAX);
		size_t u = kv_pool_usable(obj[n], cls[n]);
		assert_true(u >= n);
		if (cls[n]) {
			assert_int_equal(kv_pool_cost(obj[n], cls[n]), u);
			assert_true(n > 16 ? u - n < n / 8 + 8 : u == 16);
		} else {
			assert_true(kv_pool_cost(obj[n], cls[n]) > u);
		}
		memset(obj[n], 0xa5, u);
	}
	for (size_t n = 1; n < 700; n += 2)
		kv_pool_free(&p, obj[n], cls[n]);
	for (size_t n = 1; n < 700; n += 2) {
		obj[n] = kv_pool_alloc(&p, n, &cls[n]);
		memset(obj[n], 0x5a, n);
	}
	for (size_t n = KV_POOL_MAX + 1; n < 700; n++)
		kv_pool_free(&p, obj[n], cls[n]);
	kv_pool_destroy(&p);
}


/* ---- point-in-time walk (kv_db_snap_*) ----------------------------------- */

#define SNAP_KEYS 3000

/* What the walk handed over: per key i of the first SNAP_KEYS, how many
 * times and the value it had; anything else counts as a stranger. */
struct snap_seen {
	unsigned times[SNAP_KEYS];
	unsigned value[SNAP_KEYS];
	unsigned strangers;
	int64_t expire[SNAP_KEYS];
};

static void snap_got(const struct kv_entry *e, void *arg)
{
	struct snap_seen *s = arg;
	size_t kl, vl;
	const char *k = kv_entry_key(e, &kl);
	const char *v = kv_entry_value(e, &vl);
	char buf[32];
	unsigned i, val;

	memcpy(buf, k, kl < 31 ? kl : 31);
	buf[kl < 31 ? kl : 31] = 0;
	if (sscanf(buf, "k%u", &i) != 1 || i >= SNAP_KEYS) {
		s->strangers++;
		return;
	}
	memcpy(buf, v, vl < 31 ? vl : 31);
	buf[vl < 31 ? vl : 31] = 0;
	assert_int_equal(sscanf(buf, "v%u", &val), 1);
	s->times[i]++;
	s->value[i] = val;
	s->expire[i] = kv_entry_expire(e);
}

static void put_key(struct kv_db *db, const char *prefix, unsigned i, unsigned v, int64_t exp)
{
	char k[32], val[32];
	struct kv_pos pos;
	int kl = snprintf(k, sizeof(k), "%s%u", prefix, i);
	int vl = snprintf(val, sizeof(val), "v%u", v);

	kv_db_lookup(db, k, (size_t)kl, 1000, &pos);
	assert_int_equal(kv_db_store(db, &pos, val, (size_t)vl, exp), 0);
}

/* Every key live at the start goes out once with its value then, while
 * the walk meets overwrites, deletes, expiry changes, keys added (the
 * table grows several times over) and a key expiring: none twice, none
 * missed, none added after the start. Keys k0.. start with value v<i>;
 * a key whose expiry (900) is before the snapshot's time (1000) is
 * left out. */
static void test_snap_point_in_time(void **state)
{
	struct kv_db *db = kv_db_new();
	static struct snap_seen seen;
	unsigned step = 0, added = 0;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	for (unsigned i = 0; i < SNAP_KEYS; i++)
		put_key(db, "k", i, i, i % 10 == 0 ? 5000 : i == 7 ? 900 : KV_NO_EXPIRE);
	assert_int_equal(kv_db_snap_begin(db, 1000, snap_got, &seen), 0);
	assert_int_equal(kv_db_snap_begin(db, 1000, snap_got, &seen), -EBUSY);
	while (kv_db_snap_active(db)) {
		unsigned i = (step * 7919u) % SNAP_KEYS;
		struct kv_pos pos;

		kv_db_snap_step(db, 5);
		if (kv_db_lookup(db, "k", 0, 1000, &pos), step % 3 == 0) {
			char k[32];
			int kl = snprintf(k, sizeof(k), "k%u", i);
			if (kv_db_lookup(db, k, (size_t)kl, 1000, &pos))
				kv_db_erase(db, &pos);
		} else if (step % 3 == 1) {
			put_key(db, "k", i, i + 1000000, KV_NO_EXPIRE);
		}
		/* growth for a while (a walk slower than the inserts would
		 * never reach the end of a table that keeps growing) */
		for (int n = 0; n < 32 && step < 300; n++)
			put_key(db, "new", added++, 1, KV_NO_EXPIRE);
		if (step == 50)
			kv_db_expire_step(db, 6000, 10000); /* k0, k10, ... expire */
		if (++step % 16 == 0)
			check(db);
	}
	for (unsigned i = 0; i < SNAP_KEYS; i++) {
		if (i == 7) {
			assert_int_equal(seen.times[i], 0);
			continue;
		}
		if (seen.times[i] != 1 || seen.value[i] != i)
			fail_msg("k%u went out %u times, value v%u", i, seen.times[i], seen.value[i]);
		assert_int_equal(seen.expire[i], i % 10 == 0 ? 5000 : KV_NO_EXPIRE);
	}
	assert_int_equal(seen.strangers, 0);
	if (added <= 2 * SNAP_KEYS) /* the table grew during the walk */
		fail_msg("only %u keys added during the walk (%u steps)", added, step);
	/* the next walk sees the keyspace as it is now, each key once */
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(kv_db_snap_begin(db, 1000, snap_got, &seen), 0);
	while (kv_db_snap_active(db))
		kv_db_snap_step(db, 100);
	assert_int_equal(seen.strangers, added);
	for (unsigned i = 0; i < SNAP_KEYS; i++) {
		struct kv_pos pos;
		char k[32];
		int kl = snprintf(k, sizeof(k), "k%u", i);
		assert_int_equal(seen.times[i], kv_db_peek(db, k, (size_t)kl, 1000, &pos) ? 1 : 0);
	}
	kv_db_free(db);
}

/* A flush during the walk hands over what is left first and ends it;
 * typed values edited in place go out as they were. */
static void test_snap_flush_and_edit(void **state)
{
	struct kv_db *db = kv_db_new();
	static struct snap_seen seen;
	struct kv_pos pos;

	(void)state;
	memset(&seen, 0, sizeof(seen));
	for (unsigned i = 0; i < 500; i++)
		put_key(db, "k", i, i, KV_NO_EXPIRE);
	assert_int_equal(kv_db_snap_begin(db, 1000, snap_got, &seen), 0);
	kv_db_snap_step(db, 10);
	put_key(db, "k", 3, 77, KV_NO_EXPIRE);
	kv_db_lookup(db, S("k4"), 1000, &pos);
	assert_int_equal(kv_db_set_expire(db, &pos, 9000), 0);
	kv_db_flush(db);
	assert_false(kv_db_snap_active(db));
	for (unsigned i = 0; i < 500; i++) {
		assert_int_equal(seen.times[i], 1);
		assert_int_equal(seen.value[i], i);
		assert_int_equal(seen.expire[i], KV_NO_EXPIRE);
	}
	assert_int_equal(kv_db_size(db), 0);
	kv_db_free(db);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_lookup_erase),
		cmocka_unit_test(test_known_hash),
		cmocka_unit_test(test_ahead),
		cmocka_unit_test(test_prefetch_members),
		cmocka_unit_test(test_member_hash_memo),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_pos_survives_growth),
		cmocka_unit_test(test_active_expiry),
		cmocka_unit_test(test_scan_while_growing),
		cmocka_unit_test(test_limit_noeviction),
		cmocka_unit_test(test_limit_lru),
		cmocka_unit_test(test_pool_classes),
		cmocka_unit_test(test_snap_point_in_time),
		cmocka_unit_test(test_snap_flush_and_edit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
