/* SPDX-License-Identifier: MIT */
/* The packed forms RDB payloads carry as strings: Redis's listpack (a
 * 4-byte total length and a 2-byte count, little-endian, then entries,
 * then 0xff; each entry an encoding byte naming an integer of 7 to 64
 * bits or a string of 6-, 12- or 32-bit length, its data, and its own
 * length written backwards in 1 to 5 bytes) and intset (a 4-byte width
 * of 2, 4 or 8, a 4-byte count, then the integers ascending, each in
 * that width, little-endian). rdb.c writes and reads them; the reader
 * checks every byte it looks at. Internal to apps/kv. */
#ifndef KV_RDB_PACK_H
#define KV_RDB_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdb.h"

/* Starts a listpack at the end of b. */
void kv_lpk_begin(struct kv_rdb_buf *b, size_t *start);

/* Appends a string, as an integer entry when it reads as one. */
void kv_lpk_str(struct kv_rdb_buf *b, const void *s, size_t n);

/* Ends the listpack opened at start, holding count entries. */
void kv_lpk_end(struct kv_rdb_buf *b, size_t start, size_t count);

/* One entry read: its bytes (an integer's rendered into num). */
struct kv_lpk_elem {
	const uint8_t *s;
	size_t n;
	char num[24];
};

/* Checks a whole listpack p[0..n): lengths, every entry's framing and
 * back length, the terminator, the count (unless unknown). *count gets
 * the entries. Returns 0 or -EINVAL with why. */
int kv_lpk_check(const uint8_t *p, size_t n, size_t *count, char *why, size_t whylen);

/* Iterates a checked listpack: *off starts at 0; false at the end. */
bool kv_lpk_next(const uint8_t *p, size_t *off, struct kv_lpk_elem *e);

/* Writes an intset of the count integers v[] (ascending). */
void kv_intset_put(struct kv_rdb_buf *b, const int64_t *v, size_t count);

/* Checks an intset p[0..n): width, size, strictly ascending, not empty;
 * *count gets the integers. Returns 0 or -EINVAL with why. */
int kv_intset_check(const uint8_t *p, size_t n, size_t *count, char *why, size_t whylen);

/* The integer at i of a checked intset. */
int64_t kv_intset_get(const uint8_t *p, size_t i);

#endif
