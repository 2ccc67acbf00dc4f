/* SPDX-License-Identifier: MIT */
/* A whole RDB file (version 10, as redis-server 7.0 writes it) on top of
 * the value codec (rdb.h): the header "REDIS0010", the aux fields, the
 * database selector and its sizes, every key with its expiry, EOF and the
 * CRC-64 of everything before it.
 *
 * Writing is in two steps so that each shard serializes its own keys:
 * kv_rdb_file_keys() on each shard appends that shard's key records to a
 * buffer; kv_rdb_file_save() then writes one file from every shard's
 * records, to a temporary file in the directory, fsynced, renamed over the
 * dump and the directory fsynced, so a crash at any point leaves either
 * the previous dump or the new one, whole.
 *
 * Reading (kv_rdb_file_load()) checks the header, every opcode and value,
 * and the CRC (unless the file says 0: written without one), and hands
 * each key not yet expired to a callback. Internal to apps/kv. */
#ifndef KV_RDB_FILE_H
#define KV_RDB_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"
#include "rdb.h"

/* One shard's key records. */
struct kv_rdb_keys {
	struct kv_rdb_buf b;
	uint64_t keys, expires;
};

/* Appends the record of every key of db not expired at now (expiry,
 * type, key, value) to k. Runs on db's shard, with nothing changing db
 * meanwhile. Returns 0, or -ENOMEM (k then holds a partial list: free it
 * with kv_rdb_buf_free(&k->b)). */
int kv_rdb_file_keys(struct kv_db *db, int64_t now, bool compress, struct kv_rdb_keys *k);

/* What the whole file needs besides the keys. */
struct kv_rdb_save_opts {
	const char *dir;          /* "" or NULL: the working directory */
	const char *name;         /* the dump's file name in dir */
	bool checksum;            /* false: the CRC written is 0 */
	int64_t now;              /* ms since the epoch: the ctime field */
	uint64_t used_mem;        /* the used-mem field */
};

/* The streamed form, for a writer that produces the key records in
 * pieces (BGSAVE): the head (header, aux fields, the database and its
 * sizes: keys and expires are hints), then any number of key records in
 * any order, then the tail: EOF and the CRC-64 of every byte before it
 * (crc: kv_crc64() of the head and the records; 0 written when not
 * checksum). Check b->failed after each. */
void kv_rdb_file_head(struct kv_rdb_buf *b, const struct kv_rdb_save_opts *o, uint64_t keys,
		      uint64_t expires);
/* Appends e's record (expiry, type byte, key, value); val is scratch
 * space the caller keeps between calls (kv_rdb_buf_free() at the end). */
void kv_rdb_file_put_key(struct kv_rdb_buf *b, struct kv_rdb_buf *val, const struct kv_entry *e,
			 bool compress);
void kv_rdb_file_tail(struct kv_rdb_buf *b, uint64_t crc, bool checksum);

/* Where a save writes: the dump, and the temporary file beside it
 * (temp-<tag><pid>-<name>) that is renamed over it once whole. */
struct kv_rdb_paths {
	char tmp[4096], path[4096];
};

/* Fills p from o; returns the directory (o->dir, or "."), or NULL with
 * why when a path is too long. */
const char *kv_rdb_file_paths(const struct kv_rdb_save_opts *o, const char *tag,
			      struct kv_rdb_paths *p, char *why, size_t whylen);

/* Writes the file from the n shards' records parts[0..n): temporary file
 * in dir, fsync, rename to name, fsync of dir. Any thread; blocking.
 * Returns 0, or a negative errno with why (a sentence naming the file)
 * and the previous dump left as it was. */
int kv_rdb_file_save(const struct kv_rdb_save_opts *o, const struct kv_rdb_keys *const *parts,
		     unsigned n, char *why, size_t whylen);

/* Called for each key read: the key (klen bytes) and its value, which the
 * callee takes (kv_rdb_value_free() when not kept), and its expiry in ms
 * since the epoch (KV_NO_EXPIRE: none). Returns 0, or a negative errno
 * that stops the load. */
typedef int kv_rdb_key_fn(const char *key, size_t klen, struct kv_rdb_value *v,
			  int64_t expire, void *arg);

/* The outcome of a load. */
struct kv_rdb_load_info {
	uint64_t loaded;          /* keys handed to fn */
	uint64_t expired;         /* keys dropped as expired at now */
	uint64_t skipped;         /* keys of a type not read, skipped (skip_unsupported) */
	size_t offset;            /* where reading stopped (the error's place) */
	char why[160];            /* the reason, when it failed */
};

/* How to load. */
struct kv_rdb_load_opts {
	int64_t now;                        /* keys expired at now are dropped */
	const struct kv_rdb_limits *lim;    /* NULL: kv_rdb_default_limits */
	kv_rdb_key_fn *fn;
	/* NULL, or whether a key is wanted: one that is not (another
	 * shard's) is stepped over unread and not counted */
	bool (*want)(const char *key, size_t klen, void *arg);
	void *arg;                          /* fn's and want's */
	/* a value of a type not read (a stream, the ziplist encodings of
	 * Redis before 7.0) is skipped and counted rather than an error */
	bool skip_unsupported;
};

/* Reads a whole file p[0..n): every wanted key not expired goes to fn.
 * Returns 0, -EINVAL (corrupt or truncated: info->why and info->offset),
 * -ENOTSUP (a type or opcode not read: why names the key and the type),
 * -ENOMEM, or fn's error. */
int kv_rdb_file_load(const uint8_t *p, size_t n, const struct kv_rdb_load_opts *o,
		     struct kv_rdb_load_info *info);

/* Reads the file at path into memory (*p, *n: free() it). Returns 0,
 * -ENOENT when there is none, or a negative errno. */
int kv_rdb_file_read(const char *path, uint8_t **p, size_t *n);

#endif
