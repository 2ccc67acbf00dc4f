/* SPDX-License-Identifier: MIT */
/* Hashes and sets: a collection of distinct members (a hash's fields, each
 * with a value; a set's members alone), in the encoding Redis 7.0 would
 * use for it, so OBJECT ENCODING and the memory it takes follow Redis:
 *  - listpack: one buffer of length-prefixed strings (a length of 1
 *    byte below 128, lplen.h), a hash's field then value, searched in
 *    order; a hash while it has at most lp_entries fields and none of its
 *    strings is longer than lp_value bytes; a set of strings while it has
 *    at most 128 members of at most 64 bytes (Redis 7.2's defaults; Redis
 *    7.0 gives such a set a hashtable, and OBJECT ENCODING says so);
 *  - intset (sets): a sorted array of integers in the narrowest of 16, 32
 *    and 64 bits that holds every member (widened as members come, never
 *    narrowed), while every member is an integer as Redis reads one and
 *    there are at most intset_entries; up to 16 bytes of it are held in
 *    the header;
 *  - hashtable: a pc_map keyed by the member's hash, each slot pointing at
 *    one allocation holding the member (and the value).
 * A packed collection is a 24-byte header and its buffer; the hashtable's
 * state is allocated when it converts.
 * A collection converts to hashtable once it passes a limit, and never
 * back, as in Redis (a set: intset, then listpack when small, then
 * hashtable). Its byte count (kv_coll_mem) is kept as it changes, for
 * the keyspace's memory figure.
 *
 * Iteration order is the encoding's: insertion order for listpack,
 * ascending for intset, the table's for hashtable. One shard's thread. */
#ifndef KV_COLL_H
#define KV_COLL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/map.h"
#include "types.h"

/* The type table's rows for these two types (types.c). */
extern const struct kv_type_ops kv_hash_ops;
extern const struct kv_type_ops kv_set_ops;

enum kv_coll_enc { KV_ENC_LISTPACK, KV_ENC_INTSET, KV_ENC_HASHTABLE };

/* The conversion thresholds (Redis's CONFIG names in the comments). */
struct kv_coll_limits {
	uint32_t lp_entries;       /* hash-max-listpack-entries (512) */
	uint32_t lp_value;         /* hash-max-listpack-value (64) */
	uint32_t intset_entries;   /* set-max-intset-entries (512) */
};

/* Redis's defaults. */
extern const struct kv_coll_limits kv_coll_default_limits;

struct kv_coll;

/* One element as the collection hands it out: the member (an intset's
 * rendered into num), and for a hash its value. Valid until the
 * collection changes. */
struct kv_elem {
	const char *m;
	size_t mlen;
	const char *v;
	size_t vlen;
	char num[24];
};

/* A new, empty hash (KV_HASH: listpack) or set (KV_SET: intset, which the
 * first member that is not an integer converts). NULL when out of
 * memory. */
struct kv_coll *kv_coll_new(enum kv_type type);
void kv_coll_free(struct kv_coll *c);

size_t kv_coll_len(const struct kv_coll *c);
enum kv_coll_enc kv_coll_encoding(const struct kv_coll *c);

/* Bytes the collection holds, as the allocator sized them. */
size_t kv_coll_mem(const struct kv_coll *c);

/* Finds member m; fills *out (may be NULL) and returns true when
 * present. */
bool kv_coll_find(const struct kv_coll *c, const char *m, size_t mlen, struct kv_elem *out);

/* Adds member m (a hash's field with value v; a set ignores v), or for a
 * hash sets the value of a field already there, converting the
 * encoding as lim says. Returns 1 when added, 0 when it was there, or
 * -ENOMEM with nothing changed. */
int kv_coll_put(struct kv_coll *c, const char *m, size_t mlen, const char *v, size_t vlen,
		const struct kv_coll_limits *lim);

/* Removes member m; returns whether it was there. */
bool kv_coll_del(struct kv_coll *c, const char *m, size_t mlen);

/* Iteration: pos starts at KV_COLL_ITER_INIT; each call hands out the
 * next element, false at the end. Removing the element just handed out
 * is allowed, other changes are not. */
struct kv_coll_iter {
	size_t i;                  /* listpack: byte offset; intset: index */
	struct pc_map_iter it;     /* hashtable */
};
#define KV_COLL_ITER_INIT { 0, PC_MAP_ITER_INIT }
bool kv_coll_next(const struct kv_coll *c, struct kv_coll_iter *pos, struct kv_elem *out);

/* A random element (the collection not empty): uniform for listpack and
 * intset; for hashtable, one of the group a random cursor lands on.
 * rng: the caller's xorshift state. */
void kv_coll_random(const struct kv_coll *c, uint64_t *rng, struct kv_elem *out);

/* Cursor walk (HSCAN, SSCAN): hands fn the elements of the part cursor
 * names and returns the next cursor (0: done). A listpack or intset comes
 * out whole at once, as in Redis; a hashtable a group at a time, every
 * member present for the whole walk at least once (pc_map_scan). */
typedef void kv_coll_scan_fn(const struct kv_elem *e, void *arg);
uint64_t kv_coll_scan(const struct kv_coll *c, uint64_t cursor, kv_coll_scan_fn *fn, void *arg);

/* Checks the encoding's invariants and the byte count; 0 or -EINVAL with
 * what broke in why. For tests. */
int kv_coll_validate(const struct kv_coll *c, char *why, size_t whylen);

#endif
