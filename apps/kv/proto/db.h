/* SPDX-License-Identifier: MIT */
/* One shard's keyspace: string keys to typed values (strings, hashes,
 * sets, ...), each with an optional expiry time, in a caller-hashed pc_map
 * keyed by kv_keyhash().
 *
 * An entry is one allocation: a small header, the expiry time when it has
 * one, then the key's and the value's bytes. The map's slot keeps the
 * key's hash and the entry's address, so a lookup touches the entry only
 * to compare the key after a full 64-bit hash match. A string's bytes are
 * the value itself (no other allocation, no indirection); any other type's
 * value bytes are the address of an object the entry owns, which the
 * type's row in kv_types[] frees, measures and names (types.h).
 *
 * Expiry is lazy (an expired entry found by a lookup is deleted then) and
 * active (kv_db_expire_step(), driven from the shard's timing wheel,
 * walks a bounded number of entries a call and deletes the expired ones).
 *
 * Memory: kv_db_used() counts the entries' allocations as the allocator
 * sized them and the table, for --maxmemory and INFO.
 *
 * Times are milliseconds since the epoch. A db belongs to one shard: every
 * call from its thread only. */
#ifndef KV_DB_H
#define KV_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

struct kv_hash_memo;

struct pc_map_slot;
struct kv_db;

/* An entry's header: in the open so that the type check inlines (one byte
 * test on the per-request path). Fields other than type belong to db.c.
 * klen's top bit says whether an expiry time opens data[], the next one
 * whether the string value was edited in place (Redis's "raw"); the key
 * and the value follow. lru: when the key was last looked up (the low 32
 * bits of its ms clock; ages are taken with pc_elapsed32, so they are
 * right for keys idle less than 24 days and read as new beyond), for
 * allkeys-lru. cls: the pool class the entry came from. 13 bytes of
 * header, type included. */
struct kv_entry {
	uint32_t klen;
	uint32_t vlen;
	uint32_t lru;
	uint8_t cls : 5;
	uint8_t type : 3;     /* enum kv_type */
	unsigned char data[];
};

/* The entry's value type. */
static inline enum kv_type kv_entry_type(const struct kv_entry *e)
{
	return (enum kv_type)e->type;
}

/* No expiry; and, for kv_db_store(), "keep the expiry the key has". */
#define KV_NO_EXPIRE  ((int64_t)-1)
#define KV_KEEP_TTL   ((int64_t)-2)

/* Where a key is (or would be added) after kv_db_lookup(): pass it to the
 * calls that change that key. Stays usable across other keys' changes in
 * the same db (the slot is found again when an insert moved it); a
 * command's keys come from its request, so key points into it. */
struct kv_pos {
	const char *key;
	size_t klen;
	uint64_t hash;
	struct kv_entry *entry;      /* NULL: the key is absent */
	struct pc_map_slot *_slot;   /* valid while _epoch is the db's */
	uint64_t _epoch;
};

/* maxmemory-policy values. */
enum kv_policy {
	KV_POLICY_NOEVICTION,    /* refuse DENYOOM commands over the limit (Redis's default) */
	KV_POLICY_ALLKEYS_LRU,   /* evict the least recently used of a sample of keys */
};

/* A new, empty keyspace, or NULL when out of memory or when the process's
 * hash key cannot be drawn. */
struct kv_db *kv_db_new(void);

/* Frees the keyspace and every entry. */
void kv_db_free(struct kv_db *db);

/* Starts loading what lookups of the keys with these hashes
 * (kv_keyhash()) will read: the table's lines for all, then each entry
 * they likely find (percore/map.h's batch prefetch), so that a
 * pipeline's misses overlap. A hint: nothing changes. */
void kv_db_prefetch(const struct kv_db *db, const uint64_t *hash, size_t n);

/* A request whose member lookup kv_db_prefetch_members() starts: its
 * key's hash and its first nargs arguments (argc in all). */
struct kv_member_ahead {
	uint64_t key_hash;
	const char *const *argv;
	const size_t *argl;
	uint32_t argc, nargs;
	/* kv_db_prefetch_members()'s own, between its passes */
	const struct pc_map *_index;
	uint64_t _hash;
};

/* Whether a request of argc arguments, command name[0..len), may name a
 * member of a set, hash or sorted set after its key: their commands begin
 * with S, H or Z and have a third argument. SET, the commonest of the
 * rest, is left out by its length, so that its entry is not read early
 * for nothing; any other is told apart by its key's type. */
static inline bool kv_may_name_member(const char *name, size_t len, uint32_t argc)
{
	char c = len ? (char)(name[0] | 0x20) : 0;

	return argc >= 3 && (c == 's' || c == 'h' || c == 'z') && !(c == 's' && len == 3);
}

/* After kv_db_prefetch() of the same keys: for each request whose key
 * holds a set, hash or sorted set with a member index (types.h's
 * members), starts loading the index's lines for the member it names,
 * then the member itself, all requests' each step before any next one,
 * so that a pipeline's misses inside a large collection (HSET, SADD,
 * ZADD on one big key) overlap as its keys' do. A hint: nothing
 * changes. Returns how many members it went after; memo (NULL: none)
 * gets their hashes, for the requests' lookups to take while the
 * arguments stay put (keyhash.h's kv_keyhash_memo()). */
size_t kv_db_prefetch_members(const struct kv_db *db, struct kv_member_ahead *r, size_t n,
			      struct kv_hash_memo *memo);

/* The caller hashed a key already (to find its shard, to prefetch it):
 * lookups of exactly those bytes (the same address and length) take
 * hash instead of hashing them again, until the next call; key NULL
 * forgets it. The bytes must stay unchanged meanwhile. */
void kv_db_known_hash(struct kv_db *db, const char *key, size_t len, uint64_t hash);

/* A command about to look up n keys in order, key k being argv[first +
 * k * step] (MSET's, MGET's): each lookup of the next of them asks
 * memory for the keys a few places further on, so that their cache
 * misses overlap instead of coming one per key. A lookup of anything
 * else, or out of order, works as before. argv and argl must stay
 * unchanged until kv_db_ahead_end(). */
void kv_db_ahead(struct kv_db *db, const char *const *argv, const size_t *argl, uint32_t first,
		 uint32_t step, uint32_t n);
void kv_db_ahead_end(struct kv_db *db);

/* The caller hashed a command's keys already (a part of a command over
 * several shards, hashed where it was placed): a kv_db_ahead() of the
 * same argv, first, step and n takes hash[k] as key k's hash instead of
 * hashing it again, until the next call; argv NULL forgets them. argv,
 * its bytes and hash must stay unchanged meanwhile. */
void kv_db_known_keys(struct kv_db *db, const char *const *argv, uint32_t first, uint32_t step,
		      uint32_t n, const uint64_t *hash);

/* Finds key. An entry whose expiry time is past (now > expiry, as Redis
 * decides) is deleted and reported absent. Returns the entry or NULL, and
 * fills *pos either way. */
struct kv_entry *kv_db_lookup(struct kv_db *db, const char *key, size_t klen, int64_t now,
			      struct kv_pos *pos);

/* Sets pos's key to the string val[0..vlen), adding the key when absent
 * and replacing a value of any type. expire: an absolute time,
 * KV_NO_EXPIRE (clears any), or KV_KEEP_TTL. Returns 0, or -ENOMEM with
 * nothing changed. val may point into another key's entry (RENAME copies
 * that way), never into pos's own. */
int kv_db_store(struct kv_db *db, struct kv_pos *pos, const void *val, size_t vlen, int64_t expire);

/* Sets pos's key to obj, a value of type t (not KV_STRING) that the entry
 * then owns, replacing a value of any type (freed); expire as for
 * kv_db_store(). Returns 0, or -ENOMEM with nothing changed (obj is still
 * the caller's). */
int kv_db_store_obj(struct kv_db *db, struct kv_pos *pos, enum kv_type t, void *obj,
		    int64_t expire);

/* A typed entry's object (kv_entry_type(e) != KV_STRING). */
void *kv_entry_obj(const struct kv_entry *e);

/* Whether a string value was edited in place (APPEND, SETRANGE): Redis
 * calls its encoding "raw" whatever it holds. */
bool kv_entry_raw(const struct kv_entry *e);

/* Marks a string value as edited in place (RENAME keeps "raw"). */
void kv_entry_set_raw(struct kv_entry *e);

/* What a string value's encoding depends on beyond its bytes, to carry
 * where the value goes (RENAME, COPY, a move between shards): KV_STR_RAW
 * (kv_entry_raw), KV_STR_NOINT (a number made as text, INCRBYFLOAT's:
 * Redis's "embstr" even where it reads as an integer), or 0. Storing a
 * new value clears both. */
enum { KV_STR_NOINT = 1, KV_STR_RAW = 2 };
unsigned kv_entry_str_enc(const struct kv_entry *e);
void kv_entry_set_str_enc(struct kv_entry *e, unsigned enc);

/* Milliseconds since the entry was last looked up, as of now (OBJECT
 * IDLETIME). */
uint64_t kv_entry_idle_ms(const struct kv_entry *e, int64_t now);

/* Makes the entry look last used idle_ms before now (RESTORE's IDLETIME;
 * at most 2^31 ms: ages are kept in 32 bits). */
void kv_entry_set_idle(struct kv_entry *e, int64_t now, uint64_t idle_ms);

/* A watch over the typed values written: after a typed value is stored
 * or changed in place and still holds elements, fn(arg, pos) runs (the
 * server wakes clients blocked on the key). NULL: none (the default). */
typedef void kv_db_ready_fn(void *arg, const struct kv_pos *pos);
void kv_db_on_ready(struct kv_db *db, kv_db_ready_fn *fn, void *arg);

/* A watch over the keys the keyspace deletes by itself, past their expiry
 * (found by a lookup or by active expiry) or evicted: fn(arg, key, len)
 * runs as the key goes (the server records DEL in its append-only file,
 * as Redis propagates these deletions); fn must not use the keyspace.
 * Deletions by commands are not reported. NULL: none (the default). */
typedef void kv_db_gone_fn(void *arg, const char *key, size_t len);
void kv_db_on_gone(struct kv_db *db, kv_db_gone_fn *fn, void *arg);

/* Changing a typed value in place: kv_db_edit_begin() before (it returns
 * the object's size), kv_db_edit_end() after, with that size, which counts
 * the change in kv_db_used() and deletes the key when the change left the
 * collection empty (as Redis never keeps an empty one). Returns whether
 * the key is still there. */
size_t kv_db_edit_begin(struct kv_db *db, struct kv_entry *e);
bool kv_db_edit_end(struct kv_db *db, struct kv_pos *pos, size_t before);

/* Deletes pos's key (present, typed) but not its object, which has
 * another owner now (a RENAME that stored it under the new name). */
void kv_db_detach(struct kv_db *db, struct kv_pos *pos);

/* kv_db_lookup() that leaves the entry's last-use time as it is (OBJECT
 * IDLETIME looks without using). */
struct kv_entry *kv_db_peek(struct kv_db *db, const char *key, size_t klen, int64_t now,
			    struct kv_pos *pos);

/* Makes pos's value vlen bytes long (adding the key with an expiry of none
 * when absent) and returns those bytes for the caller to fill: the first
 * min(old, vlen) keep the old value, the rest are undefined. grow: leave
 * room for more (APPEND, SETRANGE: a value that keeps growing is not
 * copied each time). Keeps the expiry. Returns NULL on -ENOMEM, nothing
 * changed. The value is "raw" from then on (kv_entry_raw). A string key
 * only. */
char *kv_db_resize(struct kv_db *db, struct kv_pos *pos, size_t vlen, bool grow);

/* Sets pos's expiry (an absolute time, or KV_NO_EXPIRE to clear it). The
 * key must be present. Returns 0 or -ENOMEM (nothing changed). */
int kv_db_set_expire(struct kv_db *db, struct kv_pos *pos, int64_t when);

/* Deletes pos's key (present). */
void kv_db_erase(struct kv_db *db, struct kv_pos *pos);

/* Deletes every key and frees the table. */
void kv_db_flush(struct kv_db *db);

/* Keys held, expired ones not yet deleted included (Redis's DBSIZE). */
size_t kv_db_size(const struct kv_db *db);

/* Bytes the keyspace holds: entries as allocated, the table, the db. */
size_t kv_db_used(const struct kv_db *db);

/* Sets this keyspace's memory limit: bytes as kv_db_used() counts them (0:
 * none), what to do over it, and how many keys an eviction samples (Redis's
 * maxmemory-samples; at least 1). The server gives each shard its share of
 * the whole limit. */
void kv_db_set_maxmemory(struct kv_db *db, uint64_t bytes, enum kv_policy policy,
			 uint32_t samples);

/* Before a command: when over the limit, deletes keys as the policy allows
 * (allkeys-lru: of samples random keys, the least recently used, again
 * until under the limit or empty; noeviction: none). Returns whether the
 * keyspace is within its limit (always, with none). */
bool kv_db_make_room(struct kv_db *db);

/* Counters for INFO. */
struct kv_db_stats {
	uint64_t keys;       /* kv_db_size() */
	uint64_t expires;    /* of which with an expiry time */
	uint64_t used;       /* kv_db_used() */
	uint64_t expired;    /* deleted for being past their expiry, since creation */
	uint64_t evicted;    /* deleted by kv_db_make_room(), since creation */
	uint64_t changes;    /* writes counted, since creation */
};
void kv_db_stats(const struct kv_db *db, struct kv_db_stats *s);

/* Counts n writes (Redis's "dirty" counter, which save rules and
 * rdb_changes_since_last_save read): the commands count them. */
void kv_db_count_changes(struct kv_db *db, uint64_t n);

/* Entry fields. */
const char *kv_entry_key(const struct kv_entry *e, size_t *len);
/* A string entry's value (for a typed one, the object's address bytes). */
const char *kv_entry_value(const struct kv_entry *e, size_t *len);
/* The absolute expiry time, or KV_NO_EXPIRE. */
int64_t kv_entry_expire(const struct kv_entry *e);

/* Active expiry: walks on from where the last call stopped, looking at
 * up to budget entries (a little more: a call finishes the group it is
 * in), and deletes those expired at now. Returns how many it deleted; the
 * caller calls again sooner when that was a large share of budget. */
size_t kv_db_expire_step(struct kv_db *db, int64_t now, size_t budget);

/* Cursor walk (SCAN): hands fn each entry not expired at now in the part
 * of the table cursor names, and returns the next cursor (0: done). Every
 * key present for the whole walk comes out at least once, even when the
 * table grows in between (pc_map_scan); some may come twice. fn must not
 * change the db. */
typedef void kv_db_scan_fn(const struct kv_entry *e, void *arg);
uint64_t kv_db_scan(struct kv_db *db, uint64_t cursor, int64_t now, kv_db_scan_fn *fn, void *arg);

/* Point-in-time snapshot (BGSAVE without fork): kv_db_snap_begin()
 * fixes the keyspace's state at that moment; kv_db_snap_step() then walks
 * it a bounded step at a time while commands keep changing it. fn gets
 * every entry that was live (not expired) at time `at`, exactly once, as
 * it was at the start: the walk hands over those it reaches unchanged,
 * and any change or deletion of an entry not handed over yet (by a
 * command, expiry, eviction or a flush) hands it over first. Entries
 * added after the start never go. fn must not change the db. Growth of
 * the table during the walk neither skips nor repeats an entry (the
 * walk follows pc_map_scan, and each entry carries a mark of the walk
 * that saw it). Keys are under 512 MiB (a longer one is refused as
 * -ENOMEM): the mark takes a bit of the key length. */
typedef void kv_db_snap_fn(const struct kv_entry *e, void *arg);

/* Starts a walk. Returns 0, or -EBUSY while one is running. */
int kv_db_snap_begin(struct kv_db *db, int64_t at, kv_db_snap_fn *fn, void *arg);

/* Walks on, looking at about budget entries (a call finishes the table
 * group it is in). Returns how many it looked at; kv_db_snap_active()
 * says whether the walk is over. */
size_t kv_db_snap_step(struct kv_db *db, size_t budget);
bool kv_db_snap_active(const struct kv_db *db);

/* A key not expired at now, drawn at random (a random group of the
 * table, then one of its keys: near uniform, as Redis's RANDOMKEY), or
 * NULL when there is none. Changes nothing but the draw's state. */
const struct kv_entry *kv_db_random(struct kv_db *db, int64_t now);

/* Checks every invariant: the map's, each entry's hash against its key,
 * the byte counts (entries and objects). Returns 0, or -EINVAL with what broke in why (when not
 * NULL). For tests; O(keys). */
int kv_db_validate(const struct kv_db *db, char *why, size_t whylen);

#endif
