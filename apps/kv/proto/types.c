/* SPDX-License-Identifier: MIT */
/* The type table (types.h): one row per non-string type. */
#include "types.h"

#include "coll.h"

const struct kv_type_ops *const kv_types[KV_NTYPES] = {
	[KV_SET] = &kv_set_ops,
	[KV_HASH] = &kv_hash_ops,
};

const char *const kv_type_names[KV_NTYPES] = {
	[KV_STRING] = "string", [KV_LIST] = "list", [KV_SET] = "set",
	[KV_ZSET] = "zset", [KV_HASH] = "hash",
};
