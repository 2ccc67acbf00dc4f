/* SPDX-License-Identifier: MIT */
/* One shard's keyspace: see db.h. */
#include "db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"
#include "pool.h"
#include "txn.h"
#include "percore/clock.h"
#include "percore/map.h"

#define HAS_EXPIRE 0x80000000u
#define IS_RAW     0x40000000u
#define NO_INT     0x20000000u
#define STR_ENC    (IS_RAW | NO_INT)
/* Which snapshot saw the entry last (kv_db_snap_begin) */
#define SNAP_MARK  0x10000000u
#define KLEN_MASK  (~(HAS_EXPIRE | STR_ENC | SNAP_MARK))
#define POOL_SIZE  16
/* A command's look ahead: the control bytes of the next AHEAD_CTRL keys,
 * the slots of the next AHEAD_SLOT and the entries of the next
 * AHEAD_ENTRY are on their way to the cache. */
#define AHEAD_CTRL  12
#define AHEAD_SLOT  8
#define AHEAD_ENTRY 4
#define AHEAD_RING  16 /* > AHEAD_CTRL, a power of two */

struct kv_db {
	struct pc_map map;        /* hash -> struct kv_entry * */
	struct kv_pool mem;       /* where the entries live */
	size_t entry_bytes;       /* entries as the allocator sized them */
	size_t obj_bytes;         /* typed values' objects (kv_type_ops.mem) */
	uint64_t epoch;           /* inserts so far: slot pointers older than this may have moved */
	uint64_t expire_cursor;   /* where active expiry goes on */
	uint64_t expires;         /* entries with an expiry time */
	uint64_t expired;         /* deleted past their expiry, since creation */
	uint64_t evicted;         /* deleted over the memory limit, since creation */
	uint64_t changes;         /* writes counted since creation (kv_db_count_changes) */
	uint64_t maxmemory;       /* 0: no limit */
	kv_db_ready_fn *ready;    /* kv_db_on_ready's watch, or NULL */
	void *ready_arg;
	kv_db_gone_fn *gone;      /* kv_db_on_gone's watch, or NULL */
	void *gone_arg;
	enum kv_policy policy;
	uint32_t samples;
	uint32_t clock;           /* the last lookup's time: the age of entries made now */
	uint64_t rng;             /* xorshift state for eviction samples */
	struct {                  /* kv_db_known_hash's key, or key NULL */
		const char *key;
		size_t len;
		uint64_t hash;
	} known;
	/* A command's keys looked up ahead (kv_db_ahead): key k is
	 * argv[first + k * step]; next is the key its next lookup should
	 * name; hash[k % AHEAD_RING] holds key k's hash for next <= k <
	 * next + AHEAD_RING. n 0: none. */
	struct {
		const char *const *argv;
		const size_t *argl;
		uint32_t first, step, n, next;
		const uint64_t *given; /* the keys' hashes, known (kv_db_known_keys) */
		uint64_t hash[AHEAD_RING];
	} ahead;
	struct {                  /* kv_db_known_keys's keys, or argv NULL */
		const char *const *argv;
		uint32_t first, step, n;
		const uint64_t *hash;
	} known_keys;
	/* The point-in-time walk (kv_db_snap_begin): an entry whose
	 * SNAP_MARK bit equals snap_mark was handed over already, or was
	 * made after the walk began; every entry gets that value by the
	 * walk's end, so flipping it starts the next walk with none seen. */
	struct {
		bool on;
		uint32_t mark;            /* 0 or SNAP_MARK */
		int64_t at;               /* the snapshot's time: older expiries are left out */
		uint64_t cursor;
		size_t seen;              /* entries the current step looked at */
		kv_db_snap_fn *fn;
		void *arg;
	} snap;
	/* the oldest keys sampled so far and not yet evicted (Redis's
	 * eviction pool): each eviction takes the oldest that is still there
	 * and unread since, so samples add up across evictions */
	uint32_t npool;
	struct candidate {
		uint64_t hash;
		const struct kv_entry *entry;   /* compared, read only while in the map */
		uint32_t lru;                   /* entry->lru when sampled */
	} pool[POOL_SIZE];
};

static bool has_expire(const struct kv_entry *e)
{
	return e->klen & HAS_EXPIRE;
}

static size_t key_len(const struct kv_entry *e)
{
	return e->klen & KLEN_MASK;
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

void *kv_entry_obj(const struct kv_entry *e)
{
	void *obj;
	size_t n;
	memcpy(&obj, kv_entry_value(e, &n), sizeof(obj));
	return obj;
}

bool kv_entry_raw(const struct kv_entry *e)
{
	return e->klen & IS_RAW;
}

void kv_entry_set_raw(struct kv_entry *e)
{
	e->klen |= IS_RAW;
}

unsigned kv_entry_str_enc(const struct kv_entry *e)
{
	return (e->klen & IS_RAW ? KV_STR_RAW : 0) | (e->klen & NO_INT ? KV_STR_NOINT : 0);
}

void kv_entry_set_str_enc(struct kv_entry *e, unsigned enc)
{
	e->klen |= (enc & KV_STR_RAW ? IS_RAW : 0) | (enc & KV_STR_NOINT ? NO_INT : 0);
}

uint64_t kv_entry_idle_ms(const struct kv_entry *e, int64_t now)
{
	return pc_elapsed32((uint32_t)now, e->lru);
}

void kv_entry_set_idle(struct kv_entry *e, int64_t now, uint64_t idle_ms)
{
	e->lru = (uint32_t)now - (uint32_t)idle_ms;
}

/* Frees a typed value's object, no longer counted. */
static void release_obj(struct kv_db *db, enum kv_type t, void *obj)
{
	db->obj_bytes -= kv_types[t]->mem(obj);
	kv_types[t]->free(obj);
}

int64_t kv_entry_expire(const struct kv_entry *e)
{
	int64_t when;
	if (!has_expire(e))
		return KV_NO_EXPIRE;
	memcpy(&when, e->data, sizeof(when));
	return when;
}

/* Before an entry's first change (or deletion) since the snapshot walk
 * began: the walk gets the value as it was then, when it was live at the
 * snapshot's time; the entry is marked so that it goes out once. */
static void snap_keep(struct kv_db *db, struct kv_entry *e)
{
	if (!db->snap.on || (e->klen & SNAP_MARK) == db->snap.mark)
		return;
	e->klen ^= SNAP_MARK;
	if (!has_expire(e) || db->snap.at <= kv_entry_expire(e))
		db->snap.fn(e, db->snap.arg);
}

static void put_expire(struct kv_entry *e, int64_t when)
{
	memcpy(e->data, &when, sizeof(when));
}

/* What an entry costs the process, as the pool sizes it. */
static size_t alloc_bytes(const struct kv_entry *e)
{
	return kv_pool_cost(e, e->cls);
}

static size_t entry_size(size_t klen, size_t vlen, bool expire)
{
	return offsetof(struct kv_entry, data) + (expire ? sizeof(int64_t) : 0) + klen + vlen;
}

struct kv_db *kv_db_new(void)
{
	if (kv_keyhash_init())
		return NULL;
	struct kv_db *db = calloc(1, sizeof(*db));
	if (!db)
		return NULL;
	pc_map_init(&db->map, PC_MAP_HASHED);
	kv_pool_init(&db->mem);
	db->samples = 5;
	db->rng = kv_keyhash(&db, sizeof(db)) | 1;
	return db;
}

/* Frees every entry: those from malloc one by one, the pooled ones with
 * their slabs, all at once (their memory goes back to the system). */
static void free_entries(struct kv_db *db)
{
	struct pc_map_slot *s;
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(&db->map, &it));) {
		struct kv_entry *e = (struct kv_entry *)(uintptr_t)s->value;
		if (e->type != KV_STRING)
			release_obj(db, kv_entry_type(e), kv_entry_obj(e));
		if (!e->cls)
			free(e);
	}
	kv_pool_destroy(&db->mem);
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

static void snap_keep_all(struct kv_db *db);

void kv_db_flush(struct kv_db *db)
{
	snap_keep_all(db);
	free_entries(db);
	pc_map_destroy(&db->map);
	pc_map_init(&db->map, PC_MAP_HASHED);
	db->epoch++;
	db->expire_cursor = 0;
	db->expires = 0;
	db->npool = 0;
}

size_t kv_db_size(const struct kv_db *db)
{
	return pc_map_size(&db->map);
}

size_t kv_db_used(const struct kv_db *db)
{
	size_t cap = pc_map_capacity(&db->map);
	return sizeof(*db) + db->entry_bytes + db->obj_bytes + cap +
	       cap * sizeof(struct pc_map_slot);
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

/* Deletes the entry in slot s, its object too when free_obj. */
static void drop_entry(struct kv_db *db, struct pc_map_slot *s, struct kv_entry *e, bool free_obj)
{
	snap_keep(db, e);
	if (e->type != KV_STRING && free_obj)
		release_obj(db, kv_entry_type(e), kv_entry_obj(e));
	else if (e->type != KV_STRING)
		db->obj_bytes -= kv_types[e->type]->mem(kv_entry_obj(e));
	db->expires -= has_expire(e);
	pc_map_erase_slot(&db->map, s);
	db->entry_bytes -= alloc_bytes(e);
	kv_pool_free(&db->mem, e, e->cls);
}

/* A key expired or evicted: WATCH counts it as changed. */
static void touch_key(const struct kv_entry *e)
{
	size_t len;
	const char *k = kv_entry_key(e, &len);

	kv_txn_touch(k, len);
}

static void drop(struct kv_db *db, struct pc_map_slot *s, struct kv_entry *e)
{
	drop_entry(db, s, e, true);
}

/* Deletes an entry the keyspace drops by itself (active expiry,
 * eviction): WATCH sees it change, the gone watch is told while its key
 * is still readable, after a point-in-time walk got the entry (a
 * rewrite's file holds the key before its deletion). */
static void drop_reported(struct kv_db *db, struct pc_map_slot *s, struct kv_entry *e)
{
	size_t len;
	const char *k = kv_entry_key(e, &len);

	touch_key(e);
	snap_keep(db, e);
	if (db->gone)
		db->gone(db->gone_arg, k, len);
	drop(db, s, e);
}

void kv_db_erase(struct kv_db *db, struct kv_pos *pos)
{
	drop(db, pos_slot(db, pos), pos->entry);
	pos->entry = NULL;
	pos->_slot = NULL;
}

void kv_db_detach(struct kv_db *db, struct kv_pos *pos)
{
	drop_entry(db, pos_slot(db, pos), pos->entry, false);
	pos->entry = NULL;
	pos->_slot = NULL;
}

size_t kv_db_edit_begin(struct kv_db *db, struct kv_entry *e)
{
	snap_keep(db, e);
	return kv_types[e->type]->mem(kv_entry_obj(e));
}

bool kv_db_edit_end(struct kv_db *db, struct kv_pos *pos, size_t before)
{
	const struct kv_type_ops *t = kv_types[pos->entry->type];
	void *obj = kv_entry_obj(pos->entry);

	db->obj_bytes = db->obj_bytes - before + t->mem(obj);
	if (t->len(obj)) {
		if (db->ready)
			db->ready(db->ready_arg, pos);
		return true;
	}
	kv_db_erase(db, pos);
	return false;
}

static struct kv_entry *find(struct kv_db *db, const char *key, size_t klen, int64_t now,
			     struct kv_pos *pos, bool touch);

struct kv_entry *kv_db_lookup(struct kv_db *db, const char *key, size_t klen, int64_t now,
			      struct kv_pos *pos)
{
	return find(db, key, klen, now, pos, true);
}

struct kv_entry *kv_db_peek(struct kv_db *db, const char *key, size_t klen, int64_t now,
			    struct kv_pos *pos)
{
	return find(db, key, klen, now, pos, false);
}

void kv_db_prefetch(const struct kv_db *db, const uint64_t *hash, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pc_map_prefetch(&db->map, hash[i]);
	for (size_t i = 0; i < n; i++) {
		uintptr_t e = (uintptr_t)pc_map_peek_hashed(&db->map, hash[i]);

		if (!e)
			continue;
		/* the header and the key, which may cross a line */
		__builtin_prefetch((const void *)e);
		__builtin_prefetch((const void *)(e + 64));
	}
}

/* The member index of r's key and where r names a member, or NULL. */
static const struct pc_map *member_index(const struct kv_db *db, const struct kv_member_ahead *r,
					 uint32_t *arg)
{
	const struct kv_entry *e =
		(const struct kv_entry *)(uintptr_t)pc_map_peek_hashed(&db->map, r->key_hash);
	const struct kv_type_ops *t;
	int at;

	if (!e || !(t = kv_types[e->type]) || !t->members)
		return NULL;
	at = t->member_arg < 0 ? (int)r->argc - 1 : t->member_arg;
	if (at < 2 || (uint32_t)at >= r->nargs)
		return NULL;
	*arg = (uint32_t)at;
	return t->members(kv_entry_obj(e));
}

size_t kv_db_prefetch_members(const struct kv_db *db, struct kv_member_ahead *r, size_t n,
			      struct kv_hash_memo *memo)
{
	size_t found = 0;

	if (memo)
		memo->n = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t a;

		r[i]._index = member_index(db, &r[i], &a);
		if (!r[i]._index)
			continue;
		r[i]._hash = kv_keyhash(r[i].argv[a], r[i].argl[a]);
		pc_map_prefetch_ctrl(r[i]._index, r[i]._hash);
		if (memo && memo->n < KV_HASH_MEMO_MAX) {
			memo->p[memo->n] = r[i].argv[a];
			memo->len[memo->n] = r[i].argl[a];
			memo->hash[memo->n++] = r[i]._hash;
		}
		found++;
	}
	for (size_t i = 0; i < n; i++)
		if (r[i]._index)
			pc_map_prefetch_slot(r[i]._index, r[i]._hash);
	for (size_t i = 0; i < n; i++) {
		uintptr_t node = r[i]._index ? pc_map_peek_hashed(r[i]._index, r[i]._hash) : 0;

		if (node) /* its lengths and the member's first bytes */
			__builtin_prefetch((const void *)node);
	}
	return found;
}

void kv_db_known_hash(struct kv_db *db, const char *key, size_t len, uint64_t hash)
{
	db->known.key = key;
	db->known.len = len;
	db->known.hash = hash;
}

void kv_db_known_keys(struct kv_db *db, const char *const *argv, uint32_t first, uint32_t step,
		      uint32_t n, const uint64_t *hash)
{
	db->known_keys.argv = argv;
	db->known_keys.first = first;
	db->known_keys.step = step;
	db->known_keys.n = n;
	db->known_keys.hash = hash;
}

/* The three steps of a key's look ahead, each a few keys before the
 * next so that what it reads has arrived: the table's control bytes,
 * then the slot they point to, then the entry the slot names. */
static void ahead_ctrl(struct kv_db *db, uint32_t k)
{
	uint32_t at = db->ahead.first + k * db->ahead.step;
	uint64_t h = db->ahead.given ? db->ahead.given[k] :
				       kv_keyhash(db->ahead.argv[at], db->ahead.argl[at]);

	db->ahead.hash[k % AHEAD_RING] = h;
	pc_map_prefetch_ctrl(&db->map, h);
}

static void ahead_slot(const struct kv_db *db, uint32_t k)
{
	pc_map_prefetch_slot(&db->map, db->ahead.hash[k % AHEAD_RING]);
}

static void ahead_entry(const struct kv_db *db, uint32_t k)
{
	uintptr_t e = (uintptr_t)pc_map_peek_hashed(&db->map, db->ahead.hash[k % AHEAD_RING]);

	if (!e)
		return;
	__builtin_prefetch((const void *)e); /* the header and the key, */
	__builtin_prefetch((const void *)(e + 64)); /* which may cross a line */
}

void kv_db_ahead(struct kv_db *db, const char *const *argv, const size_t *argl, uint32_t first,
		 uint32_t step, uint32_t n)
{
	db->ahead.argv = argv;
	db->ahead.argl = argl;
	db->ahead.first = first;
	db->ahead.step = step;
	db->ahead.next = 0;
	db->ahead.n = n;
	db->ahead.given = db->known_keys.argv == argv && db->known_keys.first == first &&
			  db->known_keys.step == step && db->known_keys.n == n ?
			  db->known_keys.hash : NULL;
	for (uint32_t k = 0; k < n && k < AHEAD_CTRL; k++)
		ahead_ctrl(db, k);
	for (uint32_t k = 0; k < n && k < AHEAD_SLOT; k++)
		ahead_slot(db, k);
	for (uint32_t k = 0; k < n && k < AHEAD_ENTRY; k++)
		ahead_entry(db, k);
}

void kv_db_ahead_end(struct kv_db *db)
{
	db->ahead.n = 0;
}

/* The next key of the look ahead, when key (klen bytes) is it: its hash
 * in *hash, and the keys further on taken a step each, so that the misses
 * of a command's keys overlap instead of coming one after another. */
static bool ahead_take(struct kv_db *db, const char *key, size_t klen, uint64_t *hash)
{
	uint32_t k = db->ahead.next, at = db->ahead.first + k * db->ahead.step;

	if (k >= db->ahead.n || db->ahead.argv[at] != key || db->ahead.argl[at] != klen)
		return false;
	*hash = db->ahead.hash[k % AHEAD_RING];
	db->ahead.next = k + 1;
	if (k + AHEAD_CTRL < db->ahead.n)
		ahead_ctrl(db, k + AHEAD_CTRL);
	if (k + AHEAD_SLOT < db->ahead.n)
		ahead_slot(db, k + AHEAD_SLOT);
	if (k + AHEAD_ENTRY < db->ahead.n)
		ahead_entry(db, k + AHEAD_ENTRY);
	return true;
}

static uint64_t key_hash(struct kv_db *db, const char *key, size_t klen)
{
	uint64_t h;

	if (db->ahead.n && ahead_take(db, key, klen, &h))
		return h; /* before known, which may be the look ahead's first key */
	if (key == db->known.key && klen == db->known.len && key)
		return db->known.hash;
	return kv_keyhash(key, klen);
}

/* The lookup; touch: mark the entry used now. */
static struct kv_entry *find(struct kv_db *db, const char *key, size_t klen, int64_t now,
			     struct kv_pos *pos, bool touch)
{
	struct key_ref k = { key, klen };

	pos->key = key;
	pos->klen = klen;
	pos->hash = key_hash(db, key, klen);
	pos->_epoch = db->epoch;
	pos->_slot = pc_map_find_hashed(&db->map, pos->hash, key_eq, &k);
	pos->entry = pos->_slot ? (struct kv_entry *)(uintptr_t)pos->_slot->value : NULL;
	db->clock = (uint32_t)now;
	if (!pos->entry)
		return NULL;
	if (has_expire(pos->entry) && now > kv_entry_expire(pos->entry)) {
		kv_db_erase(db, pos);
		db->expired++;
		kv_txn_touch_hash(pos->hash); /* WATCH sees it go */
		if (db->gone)
			db->gone(db->gone_arg, key, klen);
		return NULL;
	}
	if (touch)
		pos->entry->lru = db->clock;
	return pos->entry;
}

/* A new entry for pos's key with room for vlen value bytes (cap bytes in
 * all), its value bytes undefined, used now. */
static struct kv_entry *new_entry(struct kv_db *db, const struct kv_pos *pos, size_t vlen,
				  bool expire, size_t cap)
{
	uint8_t cls;
	struct kv_entry *e = kv_pool_alloc(&db->mem, cap, &cls);
	if (!e)
		return NULL;
	e->cls = cls & 31;
	e->type = KV_STRING;
	e->klen = (uint32_t)pos->klen | (expire ? HAS_EXPIRE : 0) | db->snap.mark;
	e->vlen = (uint32_t)vlen;
	e->lru = db->clock;
	memcpy(key_at(e), pos->key, pos->klen);
	return e;
}

static int add(struct kv_db *db, struct kv_pos *pos, struct kv_entry *e)
{
	if (pc_map_insert_hashed(&db->map, pos->hash, (uint64_t)(uintptr_t)e)) {
		kv_pool_free(&db->mem, e, e->cls);
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

	if (!old && pos->klen > KLEN_MASK)
		return NULL; /* keys under 256 MiB: the top bits are flags */
	if (!old) {
		struct kv_entry *e = new_entry(db, pos, vlen, expire, need + (grow ? slack(vlen) : 0));
		return e && add(db, pos, e) == 0 ? pos->entry : NULL;
	}
	size_t have = kv_pool_usable(old, old->cls);

	snap_keep(db, old);
	if (has_expire(old) == expire && need <= have && (need >= have / 2 || have <= 64)) {
		old->vlen = (uint32_t)vlen;
		return old;
	}
	struct kv_entry *e = new_entry(db, pos, vlen, expire, need + (grow ? slack(vlen) : 0));
	if (!e)
		return NULL;
	size_t olen, keep;
	const char *ov = kv_entry_value(old, &olen);
	keep = olen < vlen ? olen : vlen;
	memcpy(key_at(e) + pos->klen, ov, keep);
	e->type = old->type;
	e->klen |= old->klen & STR_ENC;
	if (expire && has_expire(old))
		put_expire(e, kv_entry_expire(old));
	pos_slot(db, pos)->value = (uint64_t)(uintptr_t)e;
	db->entry_bytes += alloc_bytes(e) - alloc_bytes(old);
	db->expires += (uint64_t)has_expire(e) - (uint64_t)has_expire(old);
	kv_pool_free(&db->mem, old, old->cls);
	pos->entry = e;
	return e;
}

/* Stores val[0..vlen) as pos's value of type t (a string, or an
 * object's address), freeing an object it replaces. */
static int store(struct kv_db *db, struct kv_pos *pos, enum kv_type t, const void *val,
		 size_t vlen, int64_t expire)
{
	bool keep = expire == KV_KEEP_TTL;
	bool with = keep ? pos->entry && has_expire(pos->entry) : expire != KV_NO_EXPIRE;
	enum kv_type old_t = pos->entry ? kv_entry_type(pos->entry) : KV_STRING;
	void *old_obj = old_t != KV_STRING ? kv_entry_obj(pos->entry) : NULL;
	struct kv_entry *e = reshape(db, pos, vlen, with, false);

	if (!e)
		return -ENOMEM;
	if (old_obj)
		release_obj(db, old_t, old_obj);
	e->type = t;
	e->klen &= ~STR_ENC;
	if (vlen)
		memcpy(key_at(e) + pos->klen, val, vlen);
	if (with && !keep)
		put_expire(e, expire);
	return 0;
}

int kv_db_store(struct kv_db *db, struct kv_pos *pos, const void *val, size_t vlen, int64_t expire)
{
	return store(db, pos, KV_STRING, val, vlen, expire);
}

int kv_db_store_obj(struct kv_db *db, struct kv_pos *pos, enum kv_type t, void *obj,
		    int64_t expire)
{
	int rc = store(db, pos, t, &obj, sizeof(obj), expire);

	if (!rc)
		db->obj_bytes += kv_types[t]->mem(obj);
	if (!rc && db->ready)
		db->ready(db->ready_arg, pos);
	return rc;
}

void kv_db_on_ready(struct kv_db *db, kv_db_ready_fn *fn, void *arg)
{
	db->ready = fn;
	db->ready_arg = arg;
}

void kv_db_on_gone(struct kv_db *db, kv_db_gone_fn *fn, void *arg)
{
	db->gone = fn;
	db->gone_arg = arg;
}

char *kv_db_resize(struct kv_db *db, struct kv_pos *pos, size_t vlen, bool grow)
{
	bool with = pos->entry && has_expire(pos->entry);
	struct kv_entry *e = reshape(db, pos, vlen, with, grow);
	if (!e)
		return NULL;
	e->klen |= IS_RAW;
	return (char *)key_at(e) + pos->klen;
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
				   .evicted = db->evicted, .changes = db->changes };
}

void kv_db_count_changes(struct kv_db *db, uint64_t n)
{
	db->changes += n;
}

/* xorshift64: where an eviction sample starts. */
static uint64_t next_random(struct kv_db *db)
{
	db->rng ^= db->rng << 13;
	db->rng ^= db->rng >> 7;
	db->rng ^= db->rng << 17;
	return db->rng;
}

/* Adds e to the pool when there is room or it is older than the pool's
 * youngest (which it then replaces). */
static void pool_offer(struct kv_db *db, uint64_t hash, const struct kv_entry *e)
{
	uint32_t age = pc_elapsed32(db->clock, e->lru), young = 0;
	size_t yi = 0;

	for (size_t i = 0; i < db->npool; i++) {
		uint32_t a = pc_elapsed32(db->clock, db->pool[i].lru);
		if (db->pool[i].entry == e)
			return;
		if (i == 0 || a < young) {
			young = a;
			yi = i;
		}
	}
	if (db->npool < POOL_SIZE)
		yi = db->npool++;
	else if (age <= young)
		return;
	db->pool[yi] = (struct candidate){ hash, e, e->lru };
}

struct sample {
	struct kv_db *db;
	size_t seen;
};

static void sample_one(struct pc_map *m, struct pc_map_slot *s, void *arg)
{
	struct sample *w = arg;
	(void)m;
	pool_offer(w->db, s->key, (const struct kv_entry *)(uintptr_t)s->value);
	w->seen++;
}

/* Offers the pool about db->samples keys read from a random place in the
 * table (whole groups, as Redis samples whole buckets). */
static void sample(struct kv_db *db)
{
	struct sample w = { db, 0 };
	uint64_t cursor = next_random(db);
	size_t steps = 2 * pc_map_capacity(&db->map) + 1;

	/* a walk from any cursor and then one from 0 visit every group, each
	 * step at least one, so a key is found within steps */
	for (size_t i = 0; i < steps && w.seen < db->samples; i++)
		cursor = pc_map_scan(&db->map, cursor, sample_one, &w);
}

/* Takes the pool's oldest candidate out: its slot when the entry is still
 * in the map and unread since it was sampled, else NULL. */
static struct pc_map_slot *pool_take(struct kv_db *db)
{
	size_t oi = 0;
	for (size_t i = 1; i < db->npool; i++)
		if (pc_elapsed32(db->clock, db->pool[i].lru) > pc_elapsed32(db->clock, db->pool[oi].lru))
			oi = i;
	struct candidate c = db->pool[oi];
	db->pool[oi] = db->pool[--db->npool];
	struct pc_map_slot *s = pc_map_find_hashed(&db->map, c.hash, same_entry, c.entry);
	return s && c.entry->lru == c.lru ? s : NULL;
}

/* Deletes the least recently used key the samples found. The table holds
 * at least one key. */
static void evict_one(struct kv_db *db)
{
	struct pc_map_slot *s = NULL;
	sample(db);
	while (!s) {
		/* stale candidates are dropped; an empty pool is sampled again */
		if (!db->npool)
			sample(db);
		s = pool_take(db);
	}
	drop_reported(db, s, (struct kv_entry *)(uintptr_t)s->value);
	db->evicted++;
}

bool kv_db_make_room(struct kv_db *db)
{
	if (!db->maxmemory)
		return true;
	while (kv_db_used(db) > db->maxmemory) {
		if (db->policy != KV_POLICY_ALLKEYS_LRU || !kv_db_size(db))
			return false;
		evict_one(db);
	}
	return true;
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
		drop_reported(w->db, s, e);
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

int kv_db_snap_begin(struct kv_db *db, int64_t at, kv_db_snap_fn *fn, void *arg)
{
	if (db->snap.on)
		return -EBUSY;
	db->snap.on = true;
	db->snap.mark ^= SNAP_MARK;
	db->snap.at = at;
	db->snap.cursor = 0;
	db->snap.fn = fn;
	db->snap.arg = arg;
	return 0;
}

bool kv_db_snap_active(const struct kv_db *db)
{
	return db->snap.on;
}

static void snap_one(struct pc_map *m, struct pc_map_slot *s, void *arg)
{
	struct kv_db *db = arg;

	(void)m;
	db->snap.seen++;
	snap_keep(db, (struct kv_entry *)(uintptr_t)s->value);
}

size_t kv_db_snap_step(struct kv_db *db, size_t budget)
{
	db->snap.seen = 0;
	/* pc_map_scan hands out every entry present from the first call to
	 * the last at least once, whatever the growth in between; the mark
	 * drops the repeats, and entries added since were marked at birth */
	while (db->snap.on && db->snap.seen < budget) {
		db->snap.cursor = pc_map_scan(&db->map, db->snap.cursor, snap_one, db);
		if (!db->snap.cursor)
			db->snap.on = false;
	}
	return db->snap.seen;
}

/* A flush during the walk: every entry not handed over yet goes now,
 * and the walk is over (the table it walked is gone). */
static void snap_keep_all(struct kv_db *db)
{
	struct pc_map_slot *s;

	if (!db->snap.on)
		return;
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(&db->map, &it));)
		snap_keep(db, (struct kv_entry *)(uintptr_t)s->value);
	db->snap.on = false;
}

struct random_pick {
	const struct kv_entry *e;
	uint64_t seen;
	struct kv_db *db;
};

/* Reservoir of one over the entries a scan step hands over. */
static void random_one(const struct kv_entry *e, void *arg)
{
	struct random_pick *r = arg;
	if (next_random(r->db) % ++r->seen == 0)
		r->e = e;
}

const struct kv_entry *kv_db_random(struct kv_db *db, int64_t now)
{
	struct random_pick r = { NULL, 0, db };
	uint64_t cursor = next_random(db);
	size_t steps = 2 * pc_map_capacity(&db->map) + 1;

	/* as sample(): a walk from any cursor then one from 0 visits every
	 * group, so a live key is found when there is one */
	for (size_t i = 0; i < steps && !r.e && kv_db_size(db); i++)
		cursor = kv_db_scan(db, cursor, now, random_one, &r);
	return r.e;
}

int kv_db_validate(const struct kv_db *db, char *why, size_t whylen)
{
	const struct pc_map_slot *s;
	size_t bytes = 0, expires = 0, objs = 0;

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
		expires += has_expire(e);
		if (e->type != KV_STRING)
			objs += kv_types[e->type]->mem(kv_entry_obj(e));
	}
	if (objs != db->obj_bytes) {
		if (why)
			snprintf(why, whylen, "objects hold %zu bytes, the count says %zu", objs,
				 db->obj_bytes);
		return -EINVAL;
	}
	if (expires != db->expires) {
		if (why)
			snprintf(why, whylen, "%zu entries have an expiry, the count says %llu", expires,
				 (unsigned long long)db->expires);
		return -EINVAL;
	}
	if (bytes != db->entry_bytes) {
		if (why)
			snprintf(why, whylen, "entries hold %zu bytes, the count says %zu", bytes,
				 db->entry_bytes);
		return -EINVAL;
	}
	return 0;
}
