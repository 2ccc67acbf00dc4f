/* SPDX-License-Identifier: MIT */
/* One shard's keyspace: see db.h. */
#include "db.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"
#include "percore/map.h"

#define HAS_EXPIRE 0x80000000u

/* klen's top bit says whether an expiry time opens data[]; the key and
 * the value follow. 8 bytes of header: 16-byte keys with 32-byte values
 * take 56 bytes, one 64-byte chunk of glibc's allocator. */
struct kv_entry {
	uint32_t klen;
	uint32_t vlen;
	unsigned char data[];
};

struct kv_db {
	struct pc_map map;        /* hash -> struct kv_entry * */
	size_t entry_bytes;       /* entries as the allocator sized them */
	uint64_t epoch;           /* inserts so far: slot pointers older than this may have moved */
	uint64_t expire_cursor;   /* where active expiry goes on */
	uint64_t expires;         /* entries with an expiry time */
	uint64_t expired;         /* deleted past their expiry, since creation */
	uint64_t evicted;         /* deleted over the memory limit, since creation */
	uint64_t maxmemory;       /* 0: no limit */
	enum kv_policy policy;
	uint32_t samples;
};

static bool has_expire(const struct kv_entry *e)
{
	return e->klen & HAS_EXPIRE;
}

static size_t key_len(const struct kv_entry *e)
{
	return e->klen & ~HAS_EXPIRE;
}

static unsigned char *key_at(const struct kv_entry *e)
{
	return (unsigned char *)e->data + (has_expire(e) ? sizeof(int64_t) : 0);
}

const char *kv_entry_key(const struct kv_entry *e, size_t *len)
{
	*len = key_len(e);
	return (const char *)key_at(e);
}

const char *kv_entry_value(const struct kv_entry *e, size_t *len)
{
	*len = e->vlen;
	return (const char *)key_at(e) + key_len(e);
}

int64_t kv_entry_expire(const struct kv_entry *e)
{
	int64_t when;
	if (!has_expire(e))
		return KV_NO_EXPIRE;
	memcpy(&when, e->data, sizeof(when));
	return when;
}

static void put_expire(struct kv_entry *e, int64_t when)
{
	memcpy(e->data, &when, sizeof(when));
}

/* What an allocation costs: its usable bytes and the allocator's header
 * word in front of it (glibc keeps one per chunk), so the count matches
 * what the process really holds. */
static size_t alloc_bytes(const void *p)
{
	return malloc_usable_size((void *)p) + sizeof(size_t);
}

static size_t entry_size(size_t klen, size_t vlen, bool expire)
{
	return sizeof(struct kv_entry) + (expire ? sizeof(int64_t) : 0) + klen + vlen;
}

struct kv_db *kv_db_new(void)
{
	if (kv_keyhash_init())
		return NULL;
	struct kv_db *db = calloc(1, sizeof(*db));
	if (db)
		pc_map_init(&db->map, PC_MAP_HASHED);
	return db;
}

static void free_entries(struct kv_db *db)
{
	struct pc_map_slot *s;
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(&db->map, &it));)
		free((void *)(uintptr_t)s->value);
	db->entry_bytes = 0;
}

void kv_db_free(struct kv_db *db)
{
	if (!db)
		return;
	free_entries(db);
	pc_map_destroy(&db->map);
	free(db);
}

void kv_db_flush(struct kv_db *db)
{
	free_entries(db);
	pc_map_destroy(&db->map);
	pc_map_init(&db->map, PC_MAP_HASHED);
	db->epoch++;
	db->expire_cursor = 0;
	db->expires = 0;
}

size_t kv_db_size(const struct kv_db *db)
{
	return pc_map_size(&db->map);
}

size_t kv_db_used(const struct kv_db *db)
{
	size_t cap = pc_map_capacity(&db->map);
	return sizeof(*db) + db->entry_bytes + cap + cap * sizeof(struct pc_map_slot);
}

void kv_db_set_maxmemory(struct kv_db *db, uint64_t bytes, enum kv_policy policy,
			 uint32_t samples)
{
	db->maxmemory = bytes;
	db->policy = policy;
	db->samples = samples ? samples : 1;
}

void kv_db_stats(const struct kv_db *db, struct kv_db_stats *s)
{
	*s = (struct kv_db_stats){ .keys = kv_db_size(db), .expires = db->expires,
				   .used = kv_db_used(db), .expired = db->expired,
				   .evicted = db->evicted };
}

bool kv_db_make_room(struct kv_db *db)
{
	return !db->maxmemory || kv_db_used(db) <= db->maxmemory;
}

struct key_ref {
	const char *key;
	size_t klen;
};

static bool key_eq(uint64_t value, const void *arg)
{
	const struct kv_entry *e = (const struct kv_entry *)(uintptr_t)value;
	const struct key_ref *k = arg;
	return key_len(e) == k->klen && memcmp(key_at(e), k->key, k->klen) == 0;
}

static bool same_entry(uint64_t value, const void *arg)
{
	return (const void *)(uintptr_t)value == arg;
}

/* pos's slot, found again when an insert since the lookup may have moved
 * it. */
static struct pc_map_slot *pos_slot(struct kv_db *db, struct kv_pos *pos)
{
	if (pos->_epoch != db->epoch) {
		pos->_slot = pc_map_find_hashed(&db->map, pos->hash, same_entry, pos->entry);
		pos->_epoch = db->epoch;
	}
	return pos->_slot;
}

static void drop(struct kv_db *db, struct pc_map_slot *s, struct kv_entry *e)
{
	db->expires -= has_expire(e);
	pc_map_erase_slot(&db->map, s);
	db->entry_bytes -= alloc_bytes(e);
	free(e);
}

void kv_db_erase(struct kv_db *db, struct kv_pos *pos)
{
	drop(db, pos_slot(db, pos), pos->entry);
	pos->entry = NULL;
	pos->_slot = NULL;
}

struct kv_entry *kv_db_lookup(struct kv_db *db, const char *key, size_t klen, int64_t now,
			      struct kv_pos *pos)
{
	struct key_ref k = { key, klen };

	pos->key = key;
	pos->klen = klen;
	pos->hash = kv_keyhash(key, klen);
	pos->_epoch = db->epoch;
	pos->_slot = pc_map_find_hashed(&db->map, pos->hash, key_eq, &k);
	pos->entry = pos->_slot ? (struct kv_entry *)(uintptr_t)pos->_slot->value : NULL;
	if (pos->entry && has_expire(pos->entry) && now > kv_entry_expire(pos->entry)) {
		kv_db_erase(db, pos);
		db->expired++;
	}
	return pos->entry;
}

/* A new entry for pos's key with room for vlen value bytes (cap bytes in
 * all), its value bytes undefined. */
static struct kv_entry *new_entry(const struct kv_pos *pos, size_t vlen, bool expire, size_t cap)
{
	struct kv_entry *e = malloc(cap);
	if (!e)
		return NULL;
	e->klen = (uint32_t)pos->klen | (expire ? HAS_EXPIRE : 0);
	e->vlen = (uint32_t)vlen;
	memcpy(key_at(e), pos->key, pos->klen);
	return e;
}

static int add(struct kv_db *db, struct kv_pos *pos, struct kv_entry *e)
{
	if (pc_map_insert_hashed(&db->map, pos->hash, (uint64_t)(uintptr_t)e)) {
		free(e);
		return -ENOMEM;
	}
	db->epoch++;
	db->entry_bytes += alloc_bytes(e);
	db->expires += has_expire(e);
	pos->entry = e;
	pos->_epoch = db->epoch - 1;    /* the slot is found when needed */
	return 0;
}

/* Room to grow a value of vlen bytes into: as much again, at most 1 MiB
 * more (so n appends copy O(log n) times). */
static size_t slack(size_t vlen)
{
	return vlen < ((size_t)1 << 20) ? vlen : (size_t)1 << 20;
}

/* Gives pos's entry the layout (vlen value bytes, an expiry or not),
 * reusing its allocation when it fits and is not mostly wasted, else
 * moving it. The value keeps its first min(old, vlen) bytes, an expiry
 * kept from before stays. Returns the entry or NULL (nothing changed). */
static struct kv_entry *reshape(struct kv_db *db, struct kv_pos *pos, size_t vlen, bool expire,
				bool grow)
{
	struct kv_entry *old = pos->entry;
	size_t need = entry_size(pos->klen, vlen, expire);

	if (!old) {
		struct kv_entry *e = new_entry(pos, vlen, expire, need + (grow ? slack(vlen) : 0));
		return e && add(db, pos, e) == 0 ? pos->entry : NULL;
	}
	size_t have = malloc_usable_size(old);
	if (has_expire(old) == expire && need <= have && (need >= have / 2 || have <= 64)) {
		old->vlen = (uint32_t)vlen;
		return old;
	}
	struct kv_entry *e = new_entry(pos, vlen, expire, need + (grow ? slack(vlen) : 0));
	if (!e)
		return NULL;
	size_t olen, keep;
	const char *ov = kv_entry_value(old, &olen);
	keep = olen < vlen ? olen : vlen;
	memcpy(key_at(e) + pos->klen, ov, keep);
	if (expire && has_expire(old))
		put_expire(e, kv_entry_expire(old));
	pos_slot(db, pos)->value = (uint64_t)(uintptr_t)e;
	db->entry_bytes += alloc_bytes(e) - alloc_bytes(old);
	db->expires += (uint64_t)has_expire(e) - (uint64_t)has_expire(old);
	free(old);
	pos->entry = e;
	return e;
}

int kv_db_store(struct kv_db *db, struct kv_pos *pos, const void *val, size_t vlen, int64_t expire)
{
	bool keep = expire == KV_KEEP_TTL;
	bool with = keep ? pos->entry && has_expire(pos->entry) : expire != KV_NO_EXPIRE;
	struct kv_entry *e = reshape(db, pos, vlen, with, false);

	if (!e)
		return -ENOMEM;
	if (vlen)
		memcpy(key_at(e) + pos->klen, val, vlen);
	if (with && !keep)
		put_expire(e, expire);
	return 0;
}

char *kv_db_resize(struct kv_db *db, struct kv_pos *pos, size_t vlen, bool grow)
{
	bool with = pos->entry && has_expire(pos->entry);
	struct kv_entry *e = reshape(db, pos, vlen, with, grow);
	return e ? (char *)key_at(e) + pos->klen : NULL;
}

int kv_db_set_expire(struct kv_db *db, struct kv_pos *pos, int64_t when)
{
	bool with = when != KV_NO_EXPIRE;
	struct kv_entry *e = reshape(db, pos, pos->entry->vlen, with, false);

	if (!e)
		return -ENOMEM;
	if (with)
		put_expire(e, when);
	return 0;
}

struct expire_walk {
	struct kv_db *db;
	int64_t now;
	size_t seen;
	size_t deleted;
};

static void expire_one(struct pc_map *m, struct pc_map_slot *s, void *arg)
{
	struct expire_walk *w = arg;
	struct kv_entry *e = (struct kv_entry *)(uintptr_t)s->value;

	(void)m;
	w->seen++;
	if (has_expire(e) && w->now > kv_entry_expire(e)) {
		drop(w->db, s, e);
		w->deleted++;
		w->db->expired++;
	}
}

size_t kv_db_expire_step(struct kv_db *db, int64_t now, size_t budget)
{
	struct expire_walk w = { db, now, 0, 0 };

	/* erasing never moves entries, so the walk needs no epoch check */
	do
		db->expire_cursor = pc_map_scan(&db->map, db->expire_cursor, expire_one, &w);
	while (db->expire_cursor && w.seen < budget);
	return w.deleted;
}

struct scan_walk {
	int64_t now;
	kv_db_scan_fn *fn;
	void *arg;
};

static void scan_one(struct pc_map *m, struct pc_map_slot *s, void *arg)
{
	struct scan_walk *w = arg;
	const struct kv_entry *e = (const struct kv_entry *)(uintptr_t)s->value;

	(void)m;
	if (!has_expire(e) || w->now <= kv_entry_expire(e))
		w->fn(e, w->arg);
}

uint64_t kv_db_scan(struct kv_db *db, uint64_t cursor, int64_t now, kv_db_scan_fn *fn, void *arg)
{
	struct scan_walk w = { now, fn, arg };
	return pc_map_scan(&db->map, cursor, scan_one, &w);
}

int kv_db_validate(const struct kv_db *db, char *why, size_t whylen)
{
	const struct pc_map_slot *s;
	size_t bytes = 0;

	if (pc_map_validate(&db->map, why, whylen))
		return -EINVAL;
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(&db->map, &it));) {
		const struct kv_entry *e = (const struct kv_entry *)(uintptr_t)s->value;
		size_t klen;
		const char *k = kv_entry_key(e, &klen);
		if (kv_keyhash(k, klen) != s->key) {
			if (why)
				snprintf(why, whylen, "entry %p (key of %zu bytes): hash %#llx, slot says %#llx",
					 (const void *)e, klen, (unsigned long long)kv_keyhash(k, klen),
					 (unsigned long long)s->key);
			return -EINVAL;
		}
		bytes += alloc_bytes(e);
	}
	if (bytes != db->entry_bytes) {
		if (why)
			snprintf(why, whylen, "entries hold %zu bytes, the count says %zu", bytes,
				 db->entry_bytes);
		return -EINVAL;
	}
	return 0;
}
