/* SPDX-License-Identifier: MIT */
/* The value types a key can hold, and what the keyspace needs to know of
 * each non-string one: a row of kv_types[] (free it, measure it, name its
 * encoding, copy it, find its members ahead).
 *
 * Adding a type (lists, sorted sets): write its object and its row (a
 * const struct kv_type_ops), name the row in types.c, and its commands
 * check kv_entry_type() as the hash and set commands do. Nothing in the
 * keyspace changes: it frees, counts and moves values through the row.
 * Internal to apps/kv. */
#ifndef KV_TYPES_H
#define KV_TYPES_H

#include <stddef.h>

struct pc_map;

/* Fits in 3 bits (struct kv_entry's type). KV_STRING is 0: the type
 * check of the string commands is a test of those bits against zero. */
enum kv_type {
	KV_STRING,
	KV_LIST,
	KV_SET,
	KV_ZSET,
	KV_HASH,
	KV_NTYPES,
};

/* One non-string type. Every function takes a valid object of the type. */
struct kv_type_ops {
	void (*free)(void *obj);
	/* Bytes the object holds, as the allocator sized them; O(1). */
	size_t (*mem)(const void *obj);
	/* Elements held: a key whose value reaches 0 is deleted. */
	size_t (*len)(const void *obj);
	/* OBJECT ENCODING's name for how it is stored now. */
	const char *(*encoding)(const void *obj);
	/* A copy (a value moving to another shard), or NULL when out of
	 * memory. */
	void *(*clone)(const void *obj);
	/* For the look ahead (kv_db_prefetch_members()): the index from a
	 * member's kv_keyhash() to the member's own memory, or NULL when the
	 * object has none now (a packed encoding, read whole in one or two
	 * lines). NULL for a type without one (lists). */
	const struct pc_map *(*members)(const void *obj);
	/* Which argument of a command on the type names a member: 2 (HSET
	 * key field, SADD key member), or -1 for the last (ZADD key score
	 * member). */
	int member_arg;
};

/* Each type's row; NULL for KV_STRING and for types not written yet. */
extern const struct kv_type_ops *const kv_types[KV_NTYPES];

/* Each type's name as TYPE replies it ("string", "hash", ...). */
extern const char *const kv_type_names[KV_NTYPES];

#endif
