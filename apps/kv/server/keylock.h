/* SPDX-License-Identifier: MIT */
/* One shard's key locks: which keys the transactions running over
 * several shards hold, exclusively (a writer) or shared (readers), so
 * that commands on other keys go on meanwhile. Keys are named by their
 * 64-bit hash (kv_keyhash()): two keys with the same hash share one lock,
 * which only ever makes a command wait, never lets two in at once.
 * Internal to apps/kv; one shard's thread only. */
#ifndef KV_KEYLOCK_H
#define KV_KEYLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_keylock;

/* An empty table, or NULL when out of memory. */
struct kv_keylock *kv_keylock_new(void);
void kv_keylock_free(struct kv_keylock *kl);

/* Whether no key is locked. */
bool kv_keylock_empty(const struct kv_keylock *kl);

/* Whether any key is locked exclusively. */
bool kv_keylock_any_writer(const struct kv_keylock *kl);

enum kv_keylock_state { KV_KEY_FREE, KV_KEY_SHARED, KV_KEY_EXCLUSIVE };

/* How the key with hash h is locked. */
enum kv_keylock_state kv_keylock_state(const struct kv_keylock *kl, uint64_t h);

/* Whether transaction tx could lock every key h[0..n) now: shared ones
 * where no writer holds them, exclusive ones where nobody else does
 * (the same key twice in one request is one lock). */
bool kv_keylock_can(const struct kv_keylock *kl, const uint64_t *h, size_t n, bool shared,
		    uint64_t tx);

/* Locks them (kv_keylock_can() said yes). Returns 0, or -ENOMEM with
 * nothing locked. */
int kv_keylock_take(struct kv_keylock *kl, const uint64_t *h, size_t n, bool shared, uint64_t tx);

/* Releases what kv_keylock_take() took with the same keys. */
void kv_keylock_release(struct kv_keylock *kl, const uint64_t *h, size_t n);

#endif
