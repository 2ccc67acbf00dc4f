/* SPDX-License-Identifier: MIT */
/* The type table (types.h): one row per non-string type. */
#include "types.h"

#include "coll.h"
#include "kvlist.h"
#include "kvzset.h"

static void list_free(void *o) { kv_list_free(o); }
static size_t list_mem(const void *o) { return kv_list_mem(o); }
static size_t list_len(const void *o) { return kv_list_len(o); }
static const char *list_enc(const void *o) { return kv_list_encoding(o); }
static void *list_clone(const void *o) { return kv_list_clone(o); }

static const struct kv_type_ops kv_list_ops = {
	list_free, list_mem, list_len, list_enc, list_clone, NULL, 0,
};

static void zset_free(void *o) { kv_zset_free(o); }
static size_t zset_mem(const void *o) { return kv_zset_mem(o); }
static size_t zset_len(const void *o) { return kv_zset_len(o); }
static const char *zset_enc(const void *o) { return kv_zset_encoding(o); }
static void *zset_clone(const void *o) { return kv_zset_clone(o); }
static const struct pc_map *zset_members(const void *o) { return kv_zset_members(o); }

static const struct kv_type_ops kv_zset_ops = {
	zset_free, zset_mem, zset_len, zset_enc, zset_clone, zset_members, -1,
};

const struct kv_type_ops *const kv_types[KV_NTYPES] = {
	[KV_LIST] = &kv_list_ops,
	[KV_SET] = &kv_set_ops,
	[KV_ZSET] = &kv_zset_ops,
	[KV_HASH] = &kv_hash_ops,
};

const char *const kv_type_names[KV_NTYPES] = {
	[KV_STRING] = "string", [KV_LIST] = "list", [KV_SET] = "set",
	[KV_ZSET] = "zset", [KV_HASH] = "hash",
};
