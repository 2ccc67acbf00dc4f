/* SPDX-License-Identifier: MIT */
/* The keyed hash of kv keys: SipHash-1-3 under a key drawn at random once
 * per process, so a client cannot choose keys that collide (Redis hashes
 * its keys the same way, for the same reason). */
#ifndef KV_KEYHASH_H
#define KV_KEYHASH_H

#include <stddef.h>
#include <stdint.h>

/* Draws the process's hash key, once (later calls do nothing); any thread.
 * Returns 0, or -EIO when the kernel gives no random bytes. */
int kv_keyhash_init(void);

/* Uses a fixed hash key instead (tests that need repeatable hashes).
 * Call before any hashing. */
void kv_keyhash_set_key(const uint8_t key[16]);

/* The hash key in use, as kv_keyhash_set_key() takes it (kept beside
 * files whose keys' places depend on it). */
void kv_keyhash_get_key(uint8_t key[16]);

/* The hash of s[0..n). After kv_keyhash_init() or kv_keyhash_set_key();
 * any thread. */
uint64_t kv_keyhash(const void *s, size_t n);

/* Hashes taken ahead of their use (a pipeline's members, hashed to
 * prefetch them; db.h): the bytes p[i][0..len[i]) hash to hash[i], the
 * p[i] in ascending address order. */
#define KV_HASH_MEMO_MAX 32
struct kv_hash_memo {
	const char *p[KV_HASH_MEMO_MAX];
	size_t len[KV_HASH_MEMO_MAX];
	uint64_t hash[KV_HASH_MEMO_MAX];
	size_t n, at;
};

/* Makes m this thread's memo (NULL: none) and returns the one before,
 * for its caller to put back. Its bytes must stay as they were hashed
 * until it is replaced. */
struct kv_hash_memo *kv_keyhash_memo(struct kv_hash_memo *m);

/* kv_keyhash(s, n), taken from this thread's memo when it holds these
 * very bytes (the same address and length): for a member's lookup and
 * insertion, which a pipeline's look ahead hashed already. */
uint64_t kv_member_hash(const void *s, size_t n);

#endif
