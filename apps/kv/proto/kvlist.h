/* SPDX-License-Identifier: MIT */
/* A list of byte strings, the value of a kv list key (LPUSH, LRANGE, ...).
 *
 * Chunked as Redis's quicklist: a doubly linked chain of nodes, each one
 * buffer of packed entries (a length in front, the same length written
 * backwards behind, so a node is read from either end). A node holds up to
 * the fill limit (list-max-listpack-size: -1..-5 are 4..64 KiB of entries,
 * a positive n is n entries); an entry larger than that gets a node of its
 * own. A node keeps room before its first entry as well as after its
 * last: push and pop at either end move its other entries only when that
 * end's room runs out (the node is then laid out again, grown by
 * doubling when full). An index walks whole nodes from
 * the nearer end, then entries inside one node from its nearer end.
 *
 * Mutations that allocate return -ENOMEM with the list unchanged. Entry
 * pointers handed out stay valid until the next mutation. One shard's. */
#ifndef KV_KVLIST_H
#define KV_KVLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_list;
struct kv_list_node;

/* Which end: the head (index 0, LPUSH) or the tail (RPUSH). */
enum kv_list_end { KV_LIST_HEAD, KV_LIST_TAIL };

/* A position while iterating. Fields are private. */
struct kv_list_iter {
	const struct kv_list_node *_node;
	uint32_t _off;  /* byte offset of the entry in its node */
	uint32_t _i;    /* entry index in its node */
	bool _fwd;
};

/* Redis's default list-max-listpack-size: 8 KiB per node. */
#define KV_LIST_FILL_DEFAULT (-2)

/* A new empty list with the given fill (-1..-5, or 1..65535 entries;
 * others are clamped). Returns NULL without memory. */
struct kv_list *kv_list_new(int fill);
void kv_list_free(struct kv_list *l);

/* A copy with the same fill (a value moving to another shard), or NULL
 * without memory. */
struct kv_list *kv_list_clone(const struct kv_list *l);

/* Number of entries. */
size_t kv_list_len(const struct kv_list *l);

/* Adds v[0..vl) at end. Returns 0 or -ENOMEM (unchanged). */
int kv_list_push(struct kv_list *l, enum kv_list_end end, const void *v, size_t vl);

/* The entry at end (NULL when empty), for a pop: read it, then
 * kv_list_pop(). */
const uint8_t *kv_list_peek(const struct kv_list *l, enum kv_list_end end, size_t *len);

/* Removes the entry at end. Returns 0, or -ENOENT when empty. Never
 * allocates. */
int kv_list_pop(struct kv_list *l, enum kv_list_end end);

/* The entry at idx (negative counts from the tail as Redis: -1 is the
 * last), or NULL when out of range. */
const uint8_t *kv_list_index(const struct kv_list *l, long long idx, size_t *len);

/* Replaces the entry at idx (LSET). Returns 0, -ERANGE when idx is out of
 * range, or -ENOMEM (unchanged). */
int kv_list_set(struct kv_list *l, long long idx, const void *v, size_t vl);

/* Inserts v before position idx, 0 <= idx <= len (idx == len appends).
 * Returns 0, -ERANGE, or -ENOMEM (unchanged). */
int kv_list_insert_at(struct kv_list *l, size_t idx, const void *v, size_t vl);

/* LINSERT: inserts v before (or after) the first entry equal to pivot.
 * Returns the new length, -ENOENT when pivot is absent, or -ENOMEM. */
long long kv_list_insert_pivot(struct kv_list *l, bool after, const void *pivot, size_t pl,
			       const void *v, size_t vl);

/* Removes n entries from idx on (clamped to the list). Never allocates. */
void kv_list_del_range(struct kv_list *l, size_t idx, size_t n);

/* LTRIM with Redis's index rules (negative from the tail, out of range
 * clamped; an empty range empties the list). */
void kv_list_trim(struct kv_list *l, long long start, long long stop);

/* LREM: removes entries equal to v, the first count from the head
 * (count > 0), from the tail (count < 0) or all (0). Returns how many. */
size_t kv_list_rem(struct kv_list *l, long long count, const void *v, size_t vl);

/* LPOS: calls fn(idx, arg) for each index where v occurs, as LPOS with
 * RANK rank (non-zero; negative searches from the tail), COUNT count (0 is
 * all) and MAXLEN maxlen (0 is all) walks. Returns how many matched. */
typedef void kv_list_pos_fn(size_t idx, void *arg);
size_t kv_list_pos(const struct kv_list *l, const void *v, size_t vl, long long rank,
		   size_t count, size_t maxlen, kv_list_pos_fn *fn, void *arg);

/* Resolves LRANGE's start and stop (Redis's rules) to a first index and a
 * count; returns false when the range is empty. */
bool kv_list_range(const struct kv_list *l, long long start, long long stop, size_t *first,
		   size_t *n);

/* Starts an iteration at idx (0 <= idx < len, else the iteration is
 * empty) going towards the tail (fwd) or the head. */
void kv_list_iter_init(const struct kv_list *l, struct kv_list_iter *it, size_t idx, bool fwd);

/* The next entry, or NULL at the end. No mutation may happen meanwhile. */
const uint8_t *kv_list_iter_next(struct kv_list_iter *it, size_t *len);

/* OBJECT ENCODING's name as Redis 7.0 reports it ("quicklist" for every
 * list). */
const char *kv_list_encoding(const struct kv_list *l);

/* Bytes the list holds allocated (its header, nodes and their buffers);
 * O(1). */
size_t kv_list_mem(const struct kv_list *l);

/* Checks every invariant: links, counts, entry framing, fill. Returns 0,
 * or -EINVAL with what broke written to why. */
int kv_list_validate(const struct kv_list *l, char *why, size_t whylen);

#endif
