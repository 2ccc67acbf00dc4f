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

#endif
