/* SPDX-License-Identifier: MIT */
/* One shard's share of a command that spans shards, kept as values (a
 * count, a cursor, strings), and the merge of the shares into the reply.
 *
 * A command whose record names a merge (KV_MULTI_SUM, _OK, _VALUES,
 * _CONCAT, _WALK) writes its result into a kv_part, and to its reply only
 * an error. Run whole on one shard, the executor turns its one part into
 * the reply; split over shards, each shard fills a part of its own and the
 * home shard merges them: nothing is parsed back out of reply text. */
#ifndef KV_SHARD_MERGE_H
#define KV_SHARD_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resp_reply.h"

/* How a command is split over shards and its parts merged. */
enum kv_multi {
	KV_MULTI_NONE,     /* one shard, or none (runs where the client is) */
	KV_MULTI_SUM,      /* the parts' counts added (DEL, EXISTS, DBSIZE) */
	KV_MULTI_OK,       /* OK when every part is (MSET, FLUSHALL) */
	KV_MULTI_VALUES,   /* one value per key, in the request's key order (MGET) */
	KV_MULTI_CONCAT,   /* the parts' strings one after the other (KEYS) */
	/* one of the parts that has a string, the one with the largest n (a
	 * random draw: RANDOMKEY's shard), or nil when none has */
	KV_MULTI_RANDOM,
	/* one text (bulk string): the parts' strings i (i = 0, 1, ...), each
	 * in part order, one after the other (CLIENT LIST: its lines) */
	KV_MULTI_TEXT,
	/* CLIENT KILL: the counts added (its filters' form), or for its old
	 * form (CLIENT KILL addr, each part's one string saying so) OK when
	 * one was closed, else Redis's error */
	KV_MULTI_KILL,
	KV_MULTI_WALK,     /* one shard at a time, the cursor naming it (SCAN) */
	/* each shard's key records (one string, n keys), written home into
	 * one dump (kv_save_finish: SAVE) */
	KV_MULTI_SAVE,
	/* staged protocols (multi.c), their parts plain replies */
	KV_MULTI_MSETNX,   /* EXISTS everywhere, then MSET everywhere */
	KV_MULTI_RENAME,   /* take the source, put the destination, drop the source */
	KV_MULTI_RENAMENX,
	/* the keys' values gathered home, the result computed there and put
	 * where its keys live (gather.h: set operations, SMOVE, COPY) */
	KV_MULTI_GATHER,
	/* keys of one shard only: over several, refused with CROSSSLOT (for
	 * a command not split over shards yet) */
	KV_MULTI_SAMESHARD,
};

/* Whether commands of this kind fill a kv_part. */
static inline bool kv_multi_typed(enum kv_multi m)
{
	return m >= KV_MULTI_SUM && m <= KV_MULTI_SAVE;
}

struct kv_part_str {
	size_t off;        /* into bytes */
	size_t len;        /* KV_PART_NIL: a missing value */
};

#define KV_PART_NIL SIZE_MAX

struct kv_part {
	int64_t n;                 /* SUM: the count; WALK: the shard's next cursor */
	uint32_t count, cap;       /* strings */
	struct kv_part_str *strs;
	char *bytes;
	size_t used, room;
	bool failed;               /* out of memory while adding: the command fails */
};

void kv_part_init(struct kv_part *p);
void kv_part_free(struct kv_part *p);

/* Adds a copy of s[0..len), or a missing value. Out of memory sets
 * p->failed and adds nothing more. */
void kv_part_add(struct kv_part *p, const char *s, size_t len);
void kv_part_add_nil(struct kv_part *p);

/* The reply of a command of kind `how` (a typed one) run whole on one
 * shard: its one part's count, OK, strings, or SCAN's cursor (p->n) and
 * keys. */
void kv_part_reply(enum kv_multi how, const struct kv_part *p, struct kv_reply *out);

/* The reply of `how` over parts[0..n), none of which failed: the counts
 * added (SUM), OK, each key's value in the request's order, key k's from
 * parts[key_part[k]] (VALUES), every part's strings in part order
 * (CONCAT), or one part's string (RANDOM), or one text (TEXT). Not for WALK (one shard at a time: kv_part_reply_walk) or the
 * staged kinds. */
void kv_part_merge(enum kv_multi how, const struct kv_part *const *parts, unsigned n,
		   const unsigned *key_part, uint32_t nkeys, struct kv_reply *out);

/* SCAN's reply: the cursor, then the part's strings. */
void kv_part_reply_walk(const struct kv_part *p, uint64_t cursor, struct kv_reply *out);

#endif
