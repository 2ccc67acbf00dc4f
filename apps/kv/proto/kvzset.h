/* SPDX-License-Identifier: MIT */
/* A sorted set, the value of a kv zset key: members (byte strings) with a
 * double score, ordered by score, then by member bytes (memcmp, shorter
 * first on a tie), as Redis orders them.
 *
 * Two encodings, as Redis 7.0: up to max_entries members of at most
 * max_value bytes live in one packed buffer ("listpack": score, length,
 * bytes, length; a score that is an integer in as few bytes as hold it,
 * as Redis's listpack), walked linearly; past either limit the set converts,
 * once, to a skip list with spans (ranks in O(log n)) plus a hash index of
 * members ("skiplist"). Like Redis's listpack, the packed form keeps -0 as
 * 0.
 *
 * Ranks are 0-based in score order. Every range operation reduces to a span
 * of ranks [first, first + n): find it (by rank, score or lex), then walk
 * it with an iterator or delete it. Mutations that allocate return -ENOMEM
 * with the set unchanged. Member pointers handed out stay valid until the
 * next mutation. One shard's. */
#ifndef KV_KVZSET_H
#define KV_KVZSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_zset;

/* Redis's zset-max-listpack-entries and zset-max-listpack-value. */
#define KV_ZSET_MAX_LISTPACK_ENTRIES 128
#define KV_ZSET_MAX_LISTPACK_VALUE   64

/* Room kv_zset_score_fmt() needs. */
#define KV_ZSET_SCORE_CHARS 32

/* ZADD's options (in) and what it did (out). */
enum {
	KV_ZADD_NX = 1, KV_ZADD_XX = 2, KV_ZADD_GT = 4, KV_ZADD_LT = 8, KV_ZADD_INCR = 16,
};
enum {
	KV_ZADD_ADDED = 1,    /* a new member */
	KV_ZADD_UPDATED = 2,  /* its score changed */
	KV_ZADD_NOP = 4,      /* refused by NX, XX, GT or LT */
	KV_ZADD_NAN = 8,      /* INCR made NaN: nothing changed, an error */
};

/* A score bound (ZRANGEBYSCORE's "(1.5", "-inf"). */
struct kv_zscore_range {
	double min, max;
	bool minex, maxex;  /* exclusive */
};

/* A lex bound (ZRANGEBYLEX's "[a", "(b", "-", "+"): the bytes (not
 * copied: the request's) and the kind. */
enum kv_zlex_kind { KV_ZLEX_INCL, KV_ZLEX_EXCL, KV_ZLEX_MIN, KV_ZLEX_MAX };
struct kv_zlex_range {
	const uint8_t *min, *max;
	size_t minl, maxl;
	enum kv_zlex_kind mink, maxk;
};

/* A walk over ranks. Fields are private. */
struct kv_zset_iter {
	const struct kv_zset *_z;
	const void *_node;  /* skip list node */
	uint32_t _off;      /* packed: the entry's offset; past the end when done */
	size_t _left;
	bool _rev;
};

/* A new empty set converting past max_entries members or a member longer
 * than max_value bytes (KV_ZSET_MAX_LISTPACK_*). NULL without memory or
 * without hash key (kv_keyhash_init()). */
struct kv_zset *kv_zset_new(size_t max_entries, size_t max_value);
void kv_zset_free(struct kv_zset *z);

size_t kv_zset_len(const struct kv_zset *z);

/* Converts a packed set to the skip list (SORT does, as Redis's does);
 * nothing for one that is a skip list already. Returns 0, or -ENOMEM
 * with the set unchanged. */
int kv_zset_to_skiplist(struct kv_zset *z);

/* A copy with the same limits and encoding rules (a value moving to
 * another shard), or NULL without memory. */
struct kv_zset *kv_zset_clone(const struct kv_zset *z);

/* ZADD / ZINCRBY for one member, with Redis's zsetAdd semantics: flags
 * KV_ZADD_NX..INCR in, *out gets KV_ZADD_ADDED..NAN, *newscore the score
 * it has (INCR's reply) unless NOP or NAN. Returns 0 or -ENOMEM
 * (unchanged). */
int kv_zset_add(struct kv_zset *z, const void *m, size_t ml, double score, int flags, int *out,
		double *newscore);

/* ZREM one member: returns true when it was there. Never allocates. */
bool kv_zset_rem(struct kv_zset *z, const void *m, size_t ml);

/* ZSCORE: true and *score when the member is there. */
bool kv_zset_score(const struct kv_zset *z, const void *m, size_t ml, double *score);

/* ZRANK (rev: ZREVRANK): the member's rank, or -1 when absent. */
long long kv_zset_rank(const struct kv_zset *z, const void *m, size_t ml, bool rev);

/* Spans of ranks: ZRANGE's start..stop with Redis's index rules; members
 * within a score range (ZCOUNT is *n); within a lex range (ZLEXCOUNT),
 * meaningful when all scores are equal as Redis says. False (*n = 0)
 * when empty. */
bool kv_zset_span_rank(const struct kv_zset *z, long long start, long long stop, size_t *first,
		       size_t *n);
bool kv_zset_span_score(const struct kv_zset *z, const struct kv_zscore_range *r, size_t *first,
			size_t *n);
bool kv_zset_span_lex(const struct kv_zset *z, const struct kv_zlex_range *r, size_t *first,
		      size_t *n);

/* LIMIT offset count on a span walked forward or (rev) backward: narrows
 * [first, first + n) to the ranks that remain (count < 0: all). */
void kv_zset_span_limit(size_t *first, size_t *n, bool rev, long long offset, long long count);

/* Walks the n ranks from first on, from the low end (or rev, from the
 * high end: first + n - 1 down to first). */
void kv_zset_iter_init(const struct kv_zset *z, struct kv_zset_iter *it, size_t first, size_t n,
		       bool rev);

/* The next member and its score; false when done. No mutation meanwhile. */
bool kv_zset_iter_next(struct kv_zset_iter *it, const uint8_t **m, size_t *ml, double *score);

/* Removes ranks [first, first + n) (ZREMRANGEBY*, ZPOPMIN after reading
 * rank 0, ZPOPMAX after reading the last). Returns how many. Never
 * allocates. */
size_t kv_zset_del_span(struct kv_zset *z, size_t first, size_t n);

/* "listpack" or "skiplist", as Redis 7.0's OBJECT ENCODING. */
const char *kv_zset_encoding(const struct kv_zset *z);

/* The skip list's index from a member's kv_keyhash() to its node, or
 * NULL while packed (types.h's members). */
const struct pc_map *kv_zset_members(const struct kv_zset *z);

/* Bytes the set holds allocated; O(1). */
size_t kv_zset_mem(const struct kv_zset *z);

/* Checks order, spans, levels, the index and the counts. Returns 0, or
 * -EINVAL with what broke written to why. */
int kv_zset_validate(const struct kv_zset *z, char *why, size_t whylen);

/* A score as Redis 7.0 replies it: "inf", "-inf", else "%.17g". buf holds
 * KV_ZSET_SCORE_CHARS; returns the length. */
size_t kv_zset_score_fmt(char *buf, double v);

/* A score argument as ZADD reads it (strtod; no leading space, trailing
 * bytes, NaN, overflow or underflow to 0; "inf" "+inf" "-inf" taken).
 * False when refused ("value is not a valid float"). */
bool kv_zset_score_parse(const char *s, size_t n, double *out);

/* ZRANGEBYSCORE's bounds ("(" for exclusive, Redis's laxer number rules).
 * False when refused ("min or max is not a float"). */
bool kv_zset_score_range_parse(const char *min, size_t minl, const char *max, size_t maxl,
			       struct kv_zscore_range *r);

/* ZRANGEBYLEX's bounds. False when refused ("min or max not valid string
 * range item"). */
bool kv_zset_lex_range_parse(const char *min, size_t minl, const char *max, size_t maxl,
			     struct kv_zlex_range *r);

#endif
