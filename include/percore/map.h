/* SPDX-License-Identifier: MIT */
/* percore: an open-addressing hash map of 64-bit keys to 64-bit values.
 *
 * SwissTable layout: one control byte per slot (empty, deleted, or 7 bits
 * of the key's hash) kept apart from the slots, probed 16 at a time with
 * SSE2 (a plain loop on machines without it). A lookup compares a whole
 * group of control bytes in two instructions and touches a slot only on a
 * 7-bit match (a false match is 1 in 128), so a miss usually costs one
 * cache line. Groups are aligned and
 * probed quadratically (group g, g+1, g+3, g+6, ...); the load stays below
 * 7/8.
 *
 * Two kinds of keys:
 * - u64 keys (pc_map_find, pc_map_insert, ...): the map hashes them with a
 *   multiply-fold mixer, so sequential ids spread well. Not meant to resist
 *   deliberately colliding keys: key maps on attacker-chosen values through
 *   the hashed API with a keyed hash.
 * - caller-hashed keys (map created with PC_MAP_HASHED): for keys the map
 *   cannot hold (strings, structs). The caller passes a 64-bit hash and an
 *   equality test; the slot keeps the hash (in .key) and the caller's value
 *   (typically a pointer to the object that holds the real key), so growing
 *   never calls back into the caller.
 *
 * Erasing never moves other entries: slot pointers stay valid until the
 * next insert, and the entry an iteration is at may be erased. An erased
 * slot becomes empty again when its group has an empty slot (no probe ever
 * went past that group), else a tombstone; tombstones count against the
 * load, and when they use up the room the table is rebuilt at the same
 * size instead of grown, so they cannot pile up.
 *
 * Single-threaded: a map belongs to one shard.
 */
#ifndef PERCORE_MAP_H
#define PERCORE_MAP_H

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* Flags of pc_map_init(). */
#define PC_MAP_HASHED 1u

#define PC__MAP_GROUP   16
#define PC__MAP_EMPTY   ((int8_t)-128)
#define PC__MAP_DELETED ((int8_t)-2)

/* A key and its value, as the map stores them. */
struct pc_map_slot {
	uint64_t key;     /* PC_MAP_HASHED: the key's hash */
	uint64_t value;
};

/* Fields starting with _ are private. */
struct pc_map {
	int8_t *_ctrl;                 /* capacity control bytes, 16-aligned */
	struct pc_map_slot *_slots;    /* capacity slots */
	size_t _gmask;                 /* groups - 1 */
	size_t _size;                  /* live entries */
	size_t _growth_left;           /* empty slots usable before a rebuild */
	size_t _tombstones;
	bool _hashed;
};

/* Set up an empty map (no memory until the first insert or reserve).
 * flags: 0 or PC_MAP_HASHED. Returns 0, or -EINVAL for unknown flags. */
PC_API int pc_map_init(struct pc_map *m, unsigned flags);

/* Free the table. The map may be initialised again afterwards. */
PC_API void pc_map_destroy(struct pc_map *m);

/* Make room for n entries in all, so the next inserts up to n never
 * rebuild. Returns 0, -ENOMEM (the map is unchanged), or -EINVAL when n is
 * too large to address. */
PC_API int pc_map_reserve(struct pc_map *m, size_t n);

/* Remove every entry, keeping the memory. */
PC_API void pc_map_clear(struct pc_map *m);

/* How many entries the map holds. The map's thread only. */
static inline size_t pc_map_size(const struct pc_map *m)
{
	return m->_size;
}

/* Slots in the table (entries fit up to 7/8 of it). */
static inline size_t pc_map_capacity(const struct pc_map *m)
{
	return m->_slots ? (m->_gmask + 1) * PC__MAP_GROUP : 0;
}

/* The mixer for u64 keys: a 64x64->128 multiply folded in half, so every
 * key bit reaches both the low 7 bits (the control tag) and the high bits
 * (the group index). */
static inline uint64_t pc_map_hash_u64(uint64_t key)
{
	pc_uint128_t p = (pc_uint128_t)(key ^ 0x243f6a8885a308d3ull) * 0x9e3779b97f4a7c15ull;
	return (uint64_t)p ^ (uint64_t)(p >> 64);
}

/* Group operations: bit i of the result stands for control byte i of
 * group g. SSE2 compares all 16 at once; elsewhere a loop the compiler may
 * vectorise. */
#if defined(__SSE2__)
static inline unsigned pc__map_match(const int8_t *ctrl, size_t g, int8_t byte)
{
	__m128i c = _mm_load_si128((const __m128i *)(const void *)(ctrl + g * PC__MAP_GROUP));
	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c, _mm_set1_epi8(byte)));
}

/* Empty and deleted slots: the control bytes with the top bit set. */
static inline unsigned pc__map_free(const int8_t *ctrl, size_t g)
{
	__m128i c = _mm_load_si128((const __m128i *)(const void *)(ctrl + g * PC__MAP_GROUP));
	return (unsigned)_mm_movemask_epi8(c);
}
#else
static inline unsigned pc__map_match(const int8_t *ctrl, size_t g, int8_t byte)
{
	unsigned m = 0;
	for (unsigned i = 0; i < PC__MAP_GROUP; i++)
		m |= (unsigned)(ctrl[g * PC__MAP_GROUP + i] == byte) << i;
	return m;
}

static inline unsigned pc__map_free(const int8_t *ctrl, size_t g)
{
	unsigned m = 0;
	for (unsigned i = 0; i < PC__MAP_GROUP; i++)
		m |= (unsigned)(ctrl[g * PC__MAP_GROUP + i] < 0) << i;
	return m;
}
#endif

/* Probe for the slot with this key (u64 mode). */
static inline struct pc_map_slot *pc__map_find(const struct pc_map *m, uint64_t key, uint64_t hash)
{
	size_t g = (size_t)(hash >> 7) & m->_gmask;
	int8_t tag = (int8_t)(hash & 0x7f);

	for (size_t step = 1;; step++) {
		unsigned hit = pc__map_match(m->_ctrl, g, tag);
		while (hit) {
			struct pc_map_slot *s = &m->_slots[g * PC__MAP_GROUP + (unsigned)__builtin_ctz(hit)];
			if (PC_LIKELY(s->key == key))
				return s;
			hit &= hit - 1;
		}
		/* A group with an empty slot ends every probe that reaches it. */
		if (PC_LIKELY(pc__map_match(m->_ctrl, g, PC__MAP_EMPTY)))
			return NULL;
		g = (g + step) & m->_gmask;
	}
}

/* The entry for key, or NULL. The pointer stays valid until the next
 * insert, reserve, clear or destroy (erasing other keys keeps it). Owner
 * thread only. NULL on a PC_MAP_HASHED map. */
static inline struct pc_map_slot *pc_map_find(const struct pc_map *m, uint64_t key)
{
	if (PC_UNLIKELY(m->_hashed))
		return NULL;
	return pc__map_find(m, key, pc_map_hash_u64(key));
}

/* Claim a slot for a key known to be absent (out of line: may rebuild).
 * Returns the slot with its control byte set, or NULL when out of memory. */
PC_API struct pc_map_slot *pc__map_claim(struct pc_map *m, uint64_t hash);

/* Add key -> value. Returns 0; -EEXIST when key is present (its value is
 * left alone); -ENOMEM (the map is unchanged); -EINVAL on a PC_MAP_HASHED
 * map. May move entries (rebuild): earlier slot pointers become invalid. */
static inline int pc_map_insert(struct pc_map *m, uint64_t key, uint64_t value)
{
	if (PC_UNLIKELY(m->_hashed))
		return -EINVAL;
	uint64_t hash = pc_map_hash_u64(key);
	if (pc__map_find(m, key, hash))
		return -EEXIST;
	struct pc_map_slot *s = pc__map_claim(m, hash);
	if (PC_UNLIKELY(!s))
		return -ENOMEM;
	s->key = key;
	s->value = value;
	return 0;
}

/* Set key -> value, adding or replacing. Returns 0, -ENOMEM (the map is
 * unchanged) or -EINVAL on a PC_MAP_HASHED map. */
static inline int pc_map_put(struct pc_map *m, uint64_t key, uint64_t value)
{
	if (PC_UNLIKELY(m->_hashed))
		return -EINVAL;
	uint64_t hash = pc_map_hash_u64(key);
	struct pc_map_slot *s = pc__map_find(m, key, hash);
	if (!s) {
		s = pc__map_claim(m, hash);
		if (PC_UNLIKELY(!s))
			return -ENOMEM;
		s->key = key;
	}
	s->value = value;
	return 0;
}

/* Remove the entry s (from a find, or the current one of an iteration).
 * Other entries do not move. Owner thread only. */
PC_API void pc_map_erase_slot(struct pc_map *m, struct pc_map_slot *s);

/* Remove key. Returns 0, or -ENOENT when absent (-EINVAL on a
 * PC_MAP_HASHED map). */
static inline int pc_map_erase(struct pc_map *m, uint64_t key)
{
	if (PC_UNLIKELY(m->_hashed))
		return -EINVAL;
	struct pc_map_slot *s = pc_map_find(m, key);
	if (!s)
		return -ENOENT;
	pc_map_erase_slot(m, s);
	return 0;
}

/* Caller-hashed keys (PC_MAP_HASHED). eq(value, key) says whether the
 * entry holding value is the one for the caller's key. */
typedef bool pc_map_eq_fn(uint64_t value, const void *key);

/* The entry whose hash is hash and for which eq(value, key) holds, or
 * NULL. NULL on a u64 map. */
PC_API struct pc_map_slot *pc_map_find_hashed(const struct pc_map *m, uint64_t hash,
					      pc_map_eq_fn *eq, const void *key);

/* Add an entry under hash (the caller checked it is absent: entries with
 * equal hashes are allowed, told apart by eq). Returns 0, -ENOMEM, or
 * -EINVAL on a u64 map. */
PC_API int pc_map_insert_hashed(struct pc_map *m, uint64_t hash, uint64_t value);

/* Prefetching a batch of lookups (PC_MAP_HASHED). A lookup in a table
 * larger than the caches waits on up to three misses in turn: the control
 * bytes, the slot, then the caller's object that eq() reads. A caller
 * holding several hashes ahead (a pipeline's keys) calls
 * pc_map_prefetch() for each, then pc_map_peek_hashed() for each and
 * prefetches the object its value names, then looks them up: each pass
 * finds in the cache what the pass before asked for, and the misses of
 * the batch overlap instead of following one another. Hints only: the
 * map is not changed. */

/* Starts loading the control bytes and slots of the first group a
 * lookup of hash probes. */
static inline void pc_map_prefetch(const struct pc_map *m, uint64_t hash)
{
	size_t g = (size_t)(hash >> 7) & m->_gmask;

	__builtin_prefetch(m->_ctrl + g * PC__MAP_GROUP);
	if (!m->_slots)
		return;
	/* a group's 16 slots: four cache lines */
	for (unsigned i = 0; i < PC__MAP_GROUP; i += 4)
		__builtin_prefetch(&m->_slots[g * PC__MAP_GROUP + i]);
}

/* Starts loading the control bytes alone of the first group a lookup of
 * hash probes: the first of three steps for a caller far enough ahead
 * (pc_map_prefetch_slot() next, then pc_map_peek_hashed()). */
static inline void pc_map_prefetch_ctrl(const struct pc_map *m, uint64_t hash)
{
	__builtin_prefetch(m->_ctrl + ((size_t)(hash >> 7) & m->_gmask) * PC__MAP_GROUP);
}

/* Reads the control bytes (asked for earlier) and starts loading the
 * slot that most likely holds hash: one line where pc_map_prefetch()
 * asks for the group's four. */
static inline void pc_map_prefetch_slot(const struct pc_map *m, uint64_t hash)
{
	size_t g = (size_t)(hash >> 7) & m->_gmask;
	unsigned hit = pc__map_match(m->_ctrl, g, (int8_t)(hash & 0x7f));

	if (hit && m->_slots)
		__builtin_prefetch(&m->_slots[g * PC__MAP_GROUP + (unsigned)__builtin_ctz(hit)]);
}

/* The value of the first slot in hash's first probed group that stores
 * hash, or 0: most likely the entry a lookup will find (eq() not called;
 * an entry further along the probe, or a second one with an equal hash,
 * is not looked for). */
static inline uint64_t pc_map_peek_hashed(const struct pc_map *m, uint64_t hash)
{
	size_t g = (size_t)(hash >> 7) & m->_gmask;
	unsigned hit = pc__map_match(m->_ctrl, g, (int8_t)(hash & 0x7f));

	for (; hit; hit &= hit - 1) {
		const struct pc_map_slot *s =
			&m->_slots[g * PC__MAP_GROUP + (unsigned)__builtin_ctz(hit)];
		if (s->key == hash)
			return s->value;
	}
	return 0;
}

/* Iteration cursor: the group being walked and its full slots not yet
 * returned, so a step is a bit scan and a group costs one SSE2 load. */
struct pc_map_iter {
	size_t _group;
	unsigned _full;
};
#define PC_MAP_ITER_INIT { (size_t)-1, 0 }

/* Iterate: `for (struct pc_map_iter it = PC_MAP_ITER_INIT;
 * (s = pc_map_next(m, &it));)`. Each entry once, in no particular order.
 * The current entry may be erased; inserting during an iteration may
 * rebuild and is not allowed. */
static inline struct pc_map_slot *pc_map_next(const struct pc_map *m, struct pc_map_iter *it)
{
	while (!it->_full) {
		if (++it->_group >= pc_map_capacity(m) / PC__MAP_GROUP)
			return NULL;
		/* Full slots have the top bit clear. */
		it->_full = ~pc__map_free(m->_ctrl, it->_group) & 0xffffu;
	}
	unsigned b = (unsigned)__builtin_ctz(it->_full);
	it->_full &= it->_full - 1;
	return &m->_slots[it->_group * PC__MAP_GROUP + b];
}

/* Cursor walk with SCAN's guarantee: every entry present from the first
 * call to the last is handed out at least once, however much the map grew
 * in between; an entry may come twice, one added or erased meanwhile may
 * or may not come.
 *
 * A call hands out the entries whose home group (the group their probe
 * starts at, (hash >> 7) & (groups - 1)) is the one the cursor names:
 * they lie on that group's probe path before the first group with an
 * empty slot, wherever a rebuild put them, so the walk depends on hashes
 * alone, never on slot positions. The cursor counts through the group
 * bits in reverse (Redis's dictScan order): after a table of 2^n groups
 * grows to 2^m, a group g of the old table became the groups whose low n
 * bits are g, and reverse counting visits all of those before any later
 * old group, while earlier old groups were fully walked. The map never
 * shrinks (tombstone clean-up rebuilds at the same size), so no group is
 * ever skipped.
 *
 * fn(m, slot, arg) gets each entry; it may erase that slot
 * (pc_map_erase_slot: it never ends a probe path early) but must not
 * insert. Start with cursor 0; returns the next cursor, 0 when the walk is
 * complete. Owner thread only. */
typedef void pc_map_scan_fn(struct pc_map *m, struct pc_map_slot *s, void *arg);
PC_API uint64_t pc_map_scan(struct pc_map *m, uint64_t cursor, pc_map_scan_fn *fn, void *arg);

/* Check every invariant: counts of full, deleted and empty slots match the
 * bookkeeping, each entry's tag matches its hash, each entry is reached by
 * probing from its hash before an empty group, no u64 key twice, the load
 * bound holds. Returns 0, or -EINVAL and, when err is not NULL, what broke
 * in err (errlen bytes): the slot, the value found, the one expected. For
 * tests; O(capacity). */
PC_API int pc_map_validate(const struct pc_map *m, char *err, size_t errlen);

PC_END_DECLS

#endif
