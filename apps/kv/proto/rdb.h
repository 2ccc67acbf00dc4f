/* SPDX-License-Identifier: MIT */
/* One value in Redis's RDB serialization (version 10, Redis 7.0): the
 * type byte and the payload, as an RDB file holds it after a key and as
 * DUMP sends it. Independent of files, keyspaces and shards: the file
 * writer and loader (header, aux fields, db selector, expiry opcodes,
 * EOF and the file's CRC) build on the length, string and value calls
 * here.
 *
 * Writing follows what redis-server 7.0 writes: strings with the integer
 * encodings and LZF for long ones (compress: rdbcompression), small
 * hashes and sorted sets as listpacks, small integer sets as intsets,
 * lists as quicklists of listpacks; large hashes, sets and sorted sets in
 * the plain encodings (HASH, SET, ZSET_2).
 *
 * Reading takes every encoding Redis 7.0 writes and the plain legacy
 * ones (LIST, ZSET); the ziplist and zipmap encodings of Redis before 7.0
 * (LIST_ZIPLIST, LIST_QUICKLIST, ZSET_ZIPLIST, HASH_ZIPLIST, HASH_ZIPMAP),
 * modules and streams are refused. Every length is checked against the
 * bytes there are: a corrupt payload is refused with a reason, never read
 * past its end. Internal to apps/kv. */
#ifndef KV_RDB_H
#define KV_RDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll.h"
#include "types.h"

/* The version written (Redis 7.0) and the highest one read. */
#define KV_RDB_VERSION 10

/* Value type bytes (Redis's RDB_TYPE_*). */
enum kv_rdb_type {
	KV_RDB_STRING = 0,
	KV_RDB_LIST = 1,
	KV_RDB_SET = 2,
	KV_RDB_ZSET = 3,
	KV_RDB_HASH = 4,
	KV_RDB_ZSET_2 = 5,
	KV_RDB_HASH_ZIPMAP = 9,
	KV_RDB_LIST_ZIPLIST = 10,
	KV_RDB_SET_INTSET = 11,
	KV_RDB_ZSET_ZIPLIST = 12,
	KV_RDB_HASH_ZIPLIST = 13,
	KV_RDB_LIST_QUICKLIST = 14,
	KV_RDB_HASH_LISTPACK = 16,
	KV_RDB_ZSET_LISTPACK = 17,
	KV_RDB_LIST_QUICKLIST_2 = 18,
	/* not read: skipped at most (kv_rdb_skip_payload) */
	KV_RDB_MODULE = 6,
	KV_RDB_MODULE_2 = 7,
	KV_RDB_STREAM_LISTPACKS = 15,
	KV_RDB_STREAM_LISTPACKS_2 = 19,
	KV_RDB_SET_LISTPACK = 20,
};

/* A growing output buffer. An allocation that fails sets failed and
 * drops every later write, so a writer checks once at the end. */
struct kv_rdb_buf {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};
#define KV_RDB_BUF_INIT { NULL, 0, 0, false }

void kv_rdb_buf_free(struct kv_rdb_buf *b);
void kv_rdb_put(struct kv_rdb_buf *b, const void *p, size_t n);

/* A length (6-, 14-, 32- or 64-bit form, the shortest that holds it). */
void kv_rdb_put_len(struct kv_rdb_buf *b, uint64_t len);

/* A string: as an 8-, 16- or 32-bit integer when it reads as one and
 * prints back the same (at most 11 bytes), LZF-compressed when compress
 * and longer than 20 bytes and compression saves at least 4 bytes, else
 * length and bytes. */
void kv_rdb_put_string(struct kv_rdb_buf *b, const void *s, size_t n, bool compress);

/* One value: a string (val[0..len)) or an object of type t
 * (kv_entry_obj), as its type byte and payload. */
struct kv_rdb_value {
	enum kv_type type;
	const char *str;   /* KV_STRING */
	size_t len;
	void *obj;         /* other types: a struct kv_coll, kv_list, kv_zset */
};

/* Writes v's type byte and payload. Check b->failed afterwards. */
void kv_rdb_put_value(struct kv_rdb_buf *b, const struct kv_rdb_value *v, bool compress);

/* DUMP's payload: v, then the RDB version (2 bytes) and the CRC-64 of
 * all before it (8 bytes), both little-endian. Check b->failed. */
void kv_rdb_dump(struct kv_rdb_buf *b, const struct kv_rdb_value *v, bool compress);

/* Whether p[0..n) is a DUMP payload this version reads: long enough, a
 * version no newer than KV_RDB_VERSION, and its CRC right. */
bool kv_rdb_dump_check(const uint8_t *p, size_t n);

/* Reading: the bytes, how far it got, why it stopped. */
struct kv_rdb_reader {
	const uint8_t *p;
	size_t len, pos;
	char why[128];     /* set when a call fails */
};

/* How values read are stored: the conversion limits a key's value would
 * have if made by commands. */
struct kv_rdb_limits {
	struct kv_coll_limits coll;
	size_t zset_entries, zset_value;  /* zset-max-listpack-* */
	int list_fill;                    /* list-max-listpack-size */
};

/* Redis's defaults. */
extern const struct kv_rdb_limits kv_rdb_default_limits;

/* Reads a length; *encoded is set (may be NULL) when the byte opens a
 * special string encoding instead (the number in *len is then which).
 * Returns 0 or -EINVAL with why. */
int kv_rdb_get_len(struct kv_rdb_reader *r, uint64_t *len, bool *encoded);

/* Reads a string in any encoding into a new allocation (*s, *n; one
 * spare byte, zero, after it). Returns 0, -EINVAL (why), or -ENOMEM. */
int kv_rdb_get_string(struct kv_rdb_reader *r, char **s, size_t *n);

/* Reads a type byte and its payload into *v: a string (v->str, to
 * free()) or a new object the caller owns (kv_rdb_value_free()). An
 * empty collection is refused, as Redis refuses one. Returns 0, -EINVAL
 * (why), -ENOTSUP for a type or encoding not read (why), or -ENOMEM. */
int kv_rdb_get_value(struct kv_rdb_reader *r, const struct kv_rdb_limits *lim,
		     struct kv_rdb_value *v);

/* kv_rdb_get_value() of a value whose type byte t was read already (an
 * RDB file puts the key between the two). */
int kv_rdb_get_payload(struct kv_rdb_reader *r, unsigned t, const struct kv_rdb_limits *lim,
		       struct kv_rdb_value *v);

/* Whether kv_rdb_get_payload() reads type t. */
bool kv_rdb_type_read(unsigned t);

/* Steps over the payload of a value of type t (read or not: streams,
 * the pre-7.0 ziplist encodings; not a module's) without building it,
 * checking only that its lengths stay within the bytes. Returns 0,
 * -EINVAL (why) or -ENOTSUP (a module's value: its length is the
 * module's secret). */
int kv_rdb_skip_payload(struct kv_rdb_reader *r, unsigned t);

/* Frees what kv_rdb_get_value() made. */
void kv_rdb_value_free(struct kv_rdb_value *v);

#endif
