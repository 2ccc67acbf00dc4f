/* SPDX-License-Identifier: MIT */
/* KvDb/Lookup10/N/ahead beside KvDb/Lookup10/N/plain: one shard's keyspace
 * of N string keys ("key:%012u", as redis-benchmark -r names them), looked
 * up ten random keys at a time as MSET and MGET of ten keys do, with the
 * look ahead (kv_db_ahead(): the keys' misses overlap) and without (one
 * key's misses after another's). The ten keys of each lookup come from a
 * precomputed stream of 2^14 groups, so the stream stays the same for both
 * rows. One item is one key looked up.
 *
 * KvDb/Member16/N/ahead beside KvDb/Member16/N/plain: one set of N members
 * ("element:%012u", as redis-benchmark's SADD names them) under one key,
 * looked up sixteen random members at a time as a pipeline of SISMEMBERs
 * would, with the members' lookups started ahead
 * (kv_db_prefetch_members(), as a pipeline's look ahead does) and
 * without. One item is one member looked up. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "coll.h"
#include "db.h"
#include "keyhash.h"
#include "percore/bench.h"
#include "../data/bench_util.h"

#define GROUP   10
#define NGROUPS (1u << 14)
#define KEY_MAX 24

struct db_ctx {
	struct kv_db *db;
	char (*keys)[KEY_MAX];             /* NGROUPS * GROUP keys */
	const char *(*argv)[2 * GROUP + 1]; /* per group, as MSET's arguments */
	size_t (*argl)[2 * GROUP + 1];
	uint64_t found;
};

/* Either row's context: its keyspace, its three arrays, itself. */
static void free_ctx(struct kv_db *db, void *strings, void *argv, void *argl, void *ctx)
{
	if (db)
		kv_db_free(db);
	free(strings);
	free(argv);
	free(argl);
	free(ctx);
}

static void db_teardown(struct pc_bench_state *st)
{
	struct db_ctx *c = st->ctx;

	if (c)
		free_ctx(c->db, c->keys, c->argv, c->argl, c);
}

static int fill(struct db_ctx *c, uint32_t n)
{
	char key[KEY_MAX];
	struct kv_pos pos;

	for (uint32_t i = 0; i < n; i++) {
		size_t len = (size_t)snprintf(key, sizeof(key), "key:%012u", i);

		kv_db_lookup(c->db, key, len, 0, &pos);
		if (kv_db_store(c->db, &pos, "xxx", 3, KV_NO_EXPIRE))
			return -ENOMEM;
	}
	return 0;
}

static int lookup_setup(struct pc_bench_state *st)
{
	struct db_ctx *c = calloc(1, sizeof(*c));
	uint32_t n = (uint32_t)st->bench->arg;
	uint64_t seed = 3;

	if (!c || kv_keyhash_init())
		return -ENOMEM;
	st->ctx = c;
	c->db = kv_db_new();
	c->keys = malloc((size_t)NGROUPS * GROUP * sizeof(*c->keys));
	c->argv = malloc(NGROUPS * sizeof(*c->argv));
	c->argl = malloc(NGROUPS * sizeof(*c->argl));
	if (!c->db || !c->keys || !c->argv || !c->argl || fill(c, n))
		return -ENOMEM;
	for (uint32_t g = 0; g < NGROUPS; g++) {
		c->argv[g][0] = "mset";
		c->argl[g][0] = 4;
		for (uint32_t k = 0; k < GROUP; k++) {
			char *key = c->keys[g * GROUP + k];

			c->argl[g][1 + 2 * k] = (size_t)snprintf(key, KEY_MAX, "key:%012u",
								 (uint32_t)(bench_rand(&seed) % n));
			c->argv[g][1 + 2 * k] = key;
			c->argv[g][2 + 2 * k] = "yyy";
			c->argl[g][2 + 2 * k] = 3;
		}
	}
	return 0;
}

static void lookup_run(struct pc_bench_state *st)
{
	struct db_ctx *c = st->ctx;
	bool ahead = st->bench->arg2 != 0;
	uint64_t groups = (st->iterations + GROUP - 1) / GROUP;
	struct kv_pos pos;

	for (uint64_t i = 0; i < groups; i++) {
		uint32_t g = (uint32_t)(i % NGROUPS);

		if (ahead)
			kv_db_ahead(c->db, c->argv[g], c->argl[g], 1, 2, GROUP);
		for (uint32_t k = 0; k < GROUP; k++)
			c->found += kv_db_lookup(c->db, c->argv[g][1 + 2 * k],
						 c->argl[g][1 + 2 * k], 0, &pos) != NULL;
		if (ahead)
			kv_db_ahead_end(c->db);
	}
	if (c->found != groups * GROUP) /* every key was stored */
		pc_bench_fail(st, "a stored key was not found");
	c->found = 0;
	st->items = groups * GROUP;
}

#define MGROUP   16
#define MNGROUPS (1u << 12)

struct member_ctx {
	struct kv_db *db;
	char (*members)[KEY_MAX];                 /* MNGROUPS * MGROUP */
	const char *(*argv)[MGROUP][3];           /* per request: SISMEMBER myset m */
	size_t (*argl)[MGROUP][3];
	uint64_t key_hash;
};

static void member_teardown(struct pc_bench_state *st)
{
	struct member_ctx *c = st->ctx;

	if (c)
		free_ctx(c->db, c->members, c->argv, c->argl, c);
}

static int member_fill(struct member_ctx *c, uint32_t n)
{
	struct kv_coll *set = kv_coll_new(KV_SET);
	char m[KEY_MAX];
	struct kv_pos pos;

	if (!set)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = (size_t)snprintf(m, sizeof(m), "element:%012u", i);

		if (kv_coll_put(set, m, len, NULL, 0, &kv_coll_default_limits) < 0)
			goto fail;
	}
	kv_db_lookup(c->db, "myset", 5, 0, &pos);
	if (kv_db_store_obj(c->db, &pos, KV_SET, set, KV_NO_EXPIRE))
		goto fail;
	return 0;
fail:
	kv_coll_free(set);
	return -ENOMEM;
}

static int member_setup(struct pc_bench_state *st)
{
	struct member_ctx *c = calloc(1, sizeof(*c));
	uint32_t n = (uint32_t)st->bench->arg;
	uint64_t seed = 5;

	if (!c || kv_keyhash_init())
		return -ENOMEM;
	st->ctx = c;
	c->db = kv_db_new();
	c->members = malloc((size_t)MNGROUPS * MGROUP * sizeof(*c->members));
	c->argv = malloc(MNGROUPS * sizeof(*c->argv));
	c->argl = malloc(MNGROUPS * sizeof(*c->argl));
	if (!c->db || !c->members || !c->argv || !c->argl || member_fill(c, n))
		return -ENOMEM;
	c->key_hash = kv_keyhash("myset", 5);
	for (uint32_t g = 0; g < MNGROUPS; g++)
		for (uint32_t k = 0; k < MGROUP; k++) {
			char *m = c->members[g * MGROUP + k];

			c->argv[g][k][0] = "sismember";
			c->argl[g][k][0] = 9;
			c->argv[g][k][1] = "myset";
			c->argl[g][k][1] = 5;
			c->argl[g][k][2] = (size_t)snprintf(m, KEY_MAX, "element:%012u",
							    (uint32_t)(bench_rand(&seed) % n));
			c->argv[g][k][2] = m;
		}
	return 0;
}

static void member_run(struct pc_bench_state *st)
{
	struct member_ctx *c = st->ctx;
	bool ahead = st->bench->arg2 != 0;
	uint64_t groups = (st->iterations + MGROUP - 1) / MGROUP, found = 0;
	struct kv_member_ahead r[MGROUP];
	struct kv_hash_memo memo;
	struct kv_pos pos;
	struct kv_elem e;

	for (uint64_t i = 0; i < groups; i++) {
		uint32_t g = (uint32_t)(i % MNGROUPS);

		if (ahead) {
			for (uint32_t k = 0; k < MGROUP; k++)
				r[k] = (struct kv_member_ahead){
					.key_hash = c->key_hash, .argv = c->argv[g][k],
					.argl = c->argl[g][k], .argc = 3, .nargs = 3,
				};
			/* the members' hashes taken by the finds, as a pipeline's */
			kv_db_prefetch_members(c->db, r, MGROUP, &memo);
			kv_keyhash_memo(&memo);
		}
		for (uint32_t k = 0; k < MGROUP; k++) {
			struct kv_entry *set = kv_db_lookup(c->db, "myset", 5, 0, &pos);

			found += set && kv_coll_find(kv_entry_obj(set), c->argv[g][k][2],
						     c->argl[g][k][2], &e);
		}
		kv_keyhash_memo(NULL);
	}
	if (found != groups * MGROUP) /* every member was added */
		pc_bench_fail(st, "an added member was not found");
	st->items = groups * MGROUP;
}

#define MEMBER_BENCH(var, title, n, ahead, fl)                                         \
	static const struct pc_bench var = {                                           \
		.name = title, .flags = fl, .arg = n, .arg2 = ahead, .setup = member_setup, \
		.run = member_run, .teardown = member_teardown,                        \
	};                                                                             \
	PC_BENCH_REGISTER(var)

MEMBER_BENCH(member_100k_ahead, "KvDb/Member16/100000/ahead", 100000, 1, 0)
MEMBER_BENCH(member_100k_plain, "KvDb/Member16/100000/plain", 100000, 0, 0)
MEMBER_BENCH(member_1m_ahead, "KvDb/Member16/1000000/ahead", 1000000, 1, PC_BENCH_FULL)
MEMBER_BENCH(member_1m_plain, "KvDb/Member16/1000000/plain", 1000000, 0, PC_BENCH_FULL)

#define DB_BENCH(var, title, n, ahead, fl)                                            \
	static const struct pc_bench var = {                                          \
		.name = title, .flags = fl, .arg = n, .arg2 = ahead, .setup = lookup_setup, \
		.run = lookup_run, .teardown = db_teardown,                           \
	};                                                                            \
	PC_BENCH_REGISTER(var)

DB_BENCH(lookup_100k_ahead, "KvDb/Lookup10/100000/ahead", 100000, 1, 0)
DB_BENCH(lookup_100k_plain, "KvDb/Lookup10/100000/plain", 100000, 0, 0)
DB_BENCH(lookup_1m_ahead, "KvDb/Lookup10/1000000/ahead", 1000000, 1, PC_BENCH_FULL)
DB_BENCH(lookup_1m_plain, "KvDb/Lookup10/1000000/plain", 1000000, 0, PC_BENCH_FULL)
