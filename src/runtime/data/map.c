/* SPDX-License-Identifier: MIT */
/* percore: flat hash map, the parts that allocate or walk the table.
 * Lookups and the common insert path are inline in include/percore/map.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/map.h"
#include "sys/errmsg.h"

/* What an empty map probes: one group of empty bytes, so a lookup needs no
 * "is there a table" test. Never written: the first insert allocates. */
static const int8_t empty_group[PC__MAP_GROUP] __attribute__((aligned(16))) = {
	PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY,
	PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY,
	PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY,
	PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY, PC__MAP_EMPTY,
};

/* Entries a table of cap slots holds before it must be rebuilt. */
static size_t max_load(size_t cap)
{
	return cap - cap / 8;
}

static uint64_t slot_hash(const struct pc_map *m, const struct pc_map_slot *s)
{
	return m->_hashed ? s->key : pc_map_hash_u64(s->key);
}

int pc_map_init(struct pc_map *m, unsigned flags)
{
	if (flags & ~PC_MAP_HASHED)
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->_ctrl = (int8_t *)empty_group;
	m->_hashed = flags & PC_MAP_HASHED;
	return 0;
}

void pc_map_destroy(struct pc_map *m)
{
	/* ctrl and slots are one allocation, ctrl first. */
	if (m->_slots)
		free(m->_ctrl);
	m->_slots = NULL;
	m->_ctrl = (int8_t *)empty_group;
	m->_gmask = m->_size = m->_growth_left = m->_tombstones = 0;
}

/* The first empty or deleted slot on hash's probe path. One exists: the
 * load bound keeps at least 1/8 of the slots empty. */
static size_t first_free(const int8_t *ctrl, size_t gmask, uint64_t hash)
{
	size_t g = (size_t)(hash >> 7) & gmask;

	for (size_t step = 1;; step++) {
		unsigned free_mask = pc__map_free(ctrl, g);
		if (free_mask)
			return g * PC__MAP_GROUP + (unsigned)__builtin_ctz(free_mask);
		g = (g + step) & gmask;
	}
}

/* Move every entry into a fresh table of cap slots (a power of two >= 16),
 * dropping the tombstones. On failure the map is unchanged. */
static int rebuild(struct pc_map *m, size_t cap)
{
	size_t bytes = cap + cap * sizeof(struct pc_map_slot);
	int8_t *ctrl = aligned_alloc(64, (bytes + 63) & ~(size_t)63);

	if (!ctrl)
		return -ENOMEM;
	struct pc_map_slot *slots = (struct pc_map_slot *)(void *)(ctrl + cap);
	size_t gmask = cap / PC__MAP_GROUP - 1;
	memset(ctrl, PC__MAP_EMPTY, cap);
	const struct pc_map_slot *s;
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(m, &it));) {
		uint64_t hash = slot_hash(m, s);
		size_t to = first_free(ctrl, gmask, hash);
		ctrl[to] = (int8_t)(hash & 0x7f);
		slots[to] = *s;
	}
	if (m->_slots)
		free(m->_ctrl);
	m->_ctrl = ctrl;
	m->_slots = slots;
	m->_gmask = gmask;
	m->_growth_left = max_load(cap) - m->_size;
	m->_tombstones = 0;
	return 0;
}

int pc_map_reserve(struct pc_map *m, size_t n)
{
	if (n > ((size_t)1 << 58))
		return -EINVAL;
	if (n <= m->_size + m->_growth_left)
		return 0;
	size_t cap = pc_next_pow2(n + n / 7 + 1);
	if (cap < PC__MAP_GROUP)
		cap = PC__MAP_GROUP;
	while (max_load(cap) < n)
		cap *= 2;
	return rebuild(m, cap);
}

void pc_map_clear(struct pc_map *m)
{
	if (!m->_slots)
		return;
	memset(m->_ctrl, PC__MAP_EMPTY, pc_map_capacity(m));
	m->_size = m->_tombstones = 0;
	m->_growth_left = max_load(pc_map_capacity(m));
}

/* No room left: rebuild at the same size when tombstones hold at least half
 * of the room (so at least 7/16 of the slots are free again afterwards and
 * the rebuild is paid for by as many inserts), else double. */
static int make_room(struct pc_map *m)
{
	size_t cap = pc_map_capacity(m);

	if (cap == 0)
		return rebuild(m, PC__MAP_GROUP);
	if (m->_size + 1 <= cap * 7 / 16)
		return rebuild(m, cap);
	if (cap > ((size_t)1 << 58))
		return -ENOMEM;
	return rebuild(m, 2 * cap);
}

struct pc_map_slot *pc__map_claim(struct pc_map *m, uint64_t hash)
{
	size_t i = first_free(m->_ctrl, m->_gmask, hash);

	if (m->_ctrl[i] == PC__MAP_EMPTY && m->_growth_left == 0) {
		if (make_room(m))
			return NULL;
		i = first_free(m->_ctrl, m->_gmask, hash);
	}
	if (m->_ctrl[i] == PC__MAP_DELETED)
		m->_tombstones--;
	else
		m->_growth_left--;
	m->_ctrl[i] = (int8_t)(hash & 0x7f);
	m->_size++;
	return &m->_slots[i];
}

void pc_map_erase_slot(struct pc_map *m, struct pc_map_slot *s)
{
	size_t i = (size_t)(s - m->_slots);

	/* A group that still has an empty slot was never full since the last
	 * rebuild, so no probe went past it: the slot can be empty again. */
	if (pc__map_match(m->_ctrl, i / PC__MAP_GROUP, PC__MAP_EMPTY)) {
		m->_ctrl[i] = PC__MAP_EMPTY;
		m->_growth_left++;
	} else {
		m->_ctrl[i] = PC__MAP_DELETED;
		m->_tombstones++;
	}
	m->_size--;
}

struct pc_map_slot *pc_map_find_hashed(const struct pc_map *m, uint64_t hash,
				       pc_map_eq_fn *eq, const void *key)
{
	size_t g = (size_t)(hash >> 7) & m->_gmask;

	if (!m->_hashed)
		return NULL;
	for (size_t step = 1;; step++) {
		unsigned hit = pc__map_match(m->_ctrl, g, (int8_t)(hash & 0x7f));
		while (hit) {
			struct pc_map_slot *s = &m->_slots[g * PC__MAP_GROUP + (unsigned)__builtin_ctz(hit)];
			if (s->key == hash && eq(s->value, key))
				return s;
			hit &= hit - 1;
		}
		if (pc__map_match(m->_ctrl, g, PC__MAP_EMPTY))
			return NULL;
		g = (g + step) & m->_gmask;
	}
}

int pc_map_insert_hashed(struct pc_map *m, uint64_t hash, uint64_t value)
{
	if (!m->_hashed)
		return -EINVAL;
	struct pc_map_slot *s = pc__map_claim(m, hash);
	if (!s)
		return -ENOMEM;
	s->key = hash;
	s->value = value;
	return 0;
}

/* v with its bit order reversed: swap ever larger blocks, then bytes. */
static uint64_t reverse_bits(uint64_t v)
{
	v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
	v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
	v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
	return __builtin_bswap64(v);
}

/* Hands fn the entries of group g whose home group is home. */
static void scan_group(struct pc_map *m, size_t g, size_t home, pc_map_scan_fn *fn, void *arg)
{
	/* Full slots have the top bit clear. Taken before any callback, so an
	 * erase by fn changes nothing still to visit. */
	unsigned full = ~pc__map_free(m->_ctrl, g) & 0xffffu;

	while (full) {
		struct pc_map_slot *s = &m->_slots[g * PC__MAP_GROUP + (unsigned)__builtin_ctz(full)];
		full &= full - 1;
		if (((size_t)(slot_hash(m, s) >> 7) & m->_gmask) == home)
			fn(m, s, arg);
	}
}

uint64_t pc_map_scan(struct pc_map *m, uint64_t cursor, pc_map_scan_fn *fn, void *arg)
{
	if (!m->_slots)
		return 0;
	size_t home = (size_t)cursor & m->_gmask;
	size_t g = home;
	for (size_t step = 1; step <= m->_gmask + 1; step++) {
		/* fn may erase, but an erased slot turns empty only in a group
		 * that already had an empty slot: the end of the path is fixed */
		bool last = pc__map_match(m->_ctrl, g, PC__MAP_EMPTY) != 0;
		scan_group(m, g, home, fn, arg);
		if (last)
			break;
		g = (g + step) & m->_gmask;
	}
	/* Reverse increment: set the bits above the mask so the carry runs
	 * through them, add one to the reversed value, reverse back. */
	uint64_t v = cursor | ~(uint64_t)m->_gmask;
	v = reverse_bits(v);
	v++;
	return reverse_bits(v);
}

/* Slot i is reached from its hash's probe start without crossing a group
 * that has an empty slot (such a group ends every probe). */
static bool reachable(const struct pc_map *m, size_t i, uint64_t hash)
{
	size_t g = (size_t)(hash >> 7) & m->_gmask, home = i / PC__MAP_GROUP;

	for (size_t step = 1; step <= m->_gmask + 1; step++) {
		if (g == home)
			return true;
		if (pc__map_match(m->_ctrl, g, PC__MAP_EMPTY))
			return false;
		g = (g + step) & m->_gmask;
	}
	return false;
}

/* A full slot i: tag, reachability and uniqueness of its key. */
static int slot_check(const struct pc_map *m, size_t i, char *err, size_t errlen)
{
	int8_t c = m->_ctrl[i];
	uint64_t hash = slot_hash(m, &m->_slots[i]);

	if (c != (int8_t)(hash & 0x7f))
		return sys_errmsg(err, errlen, -EINVAL, "slot %zu: tag 0x%02x, expected 0x%02x", i,
				 (unsigned)(uint8_t)c, (unsigned)(hash & 0x7f));
	if (!reachable(m, i, hash))
		return sys_errmsg(err, errlen, -EINVAL,
				 "slot %zu (group %zu): a group with an empty slot lies between it "
				 "and its probe start, group %zu", i, i / PC__MAP_GROUP,
				 (size_t)(hash >> 7) & m->_gmask);
	/* The first match on the probe path is this slot: no u64 key is
	 * stored twice. */
	if (!m->_hashed && pc__map_find(m, m->_slots[i].key, hash) != &m->_slots[i])
		return sys_errmsg(err, errlen, -EINVAL, "slot %zu: key %llu is stored twice", i,
				 (unsigned long long)m->_slots[i].key);
	return 0;
}

int pc_map_validate(const struct pc_map *m, char *err, size_t errlen)
{
	size_t cap = pc_map_capacity(m), full = 0, deleted = 0;
	int rc;

	if (!m->_slots)
		return m->_size == 0 && m->_growth_left == 0 && m->_tombstones == 0 &&
		       m->_ctrl == empty_group ? 0 :
		       sys_errmsg(err, errlen, -EINVAL,
				 "no slots, yet size %zu, growth left %zu, tombstones %zu "
				 "(expected 0, 0, 0 and the shared empty group)", (size_t)m->_size,
				 (size_t)m->_growth_left, (size_t)m->_tombstones);
	if (!PC_IS_POW2(cap) || cap < PC__MAP_GROUP)
		return sys_errmsg(err, errlen, -EINVAL,
				 "capacity %zu, expected a power of two of at least %d", cap,
				 PC__MAP_GROUP);
	for (size_t i = 0; i < cap; i++) {
		int8_t c = m->_ctrl[i];
		if (c == PC__MAP_DELETED) {
			deleted++;
			continue;
		}
		if (c == PC__MAP_EMPTY)
			continue;
		if (c < 0)
			return sys_errmsg(err, errlen, -EINVAL,
					 "slot %zu: control byte 0x%02x, expected empty, deleted or a "
					 "tag 0x00..0x7f", i, (unsigned)(uint8_t)c);
		full++;
		if ((rc = slot_check(m, i, err, errlen)))
			return rc;
	}
	if (full != m->_size || deleted != m->_tombstones ||
	    full + deleted + m->_growth_left != max_load(cap))
		return sys_errmsg(err, errlen, -EINVAL,
				 "%zu full and %zu deleted slots; size says %zu, tombstones %zu, "
				 "growth left %zu, expected full + deleted + growth left = %zu",
				 full, deleted, (size_t)m->_size, (size_t)m->_tombstones,
				 (size_t)m->_growth_left, (size_t)max_load(cap));
	return 0;
}
