/* SPDX-License-Identifier: MIT */
/* The length of a string in a packed buffer (a hash's or set's listpack,
 * a sorted set's packed form), in as few bytes as Redis's listpack
 * spends: one byte below 128, two below 16384, else a tag byte and 32
 * bits. A small collection's strings are short, so most cost one byte.
 *
 * Written before the string (read forwards), or mirrored after it (read
 * backwards, from the byte past it), for a walk from the end. Only the
 * shortest form is valid (kv_lplen_valid). Pure functions, any thread. */
#ifndef KV_LPLEN_H
#define KV_LPLEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KV_LPLEN_MAX 5            /* bytes the longest form takes */
#define KV_LPLEN_TWO 0x80u        /* top bits 10: a 14-bit length in two bytes */
#define KV_LPLEN_FIVE 0xc0u       /* the tag of a 32-bit length */

/* Bytes the length of a len-byte string takes (len <= UINT32_MAX). */
static inline size_t kv_lplen_size(size_t len)
{
	return len < 0x80 ? 1 : len < 0x4000 ? 2 : KV_LPLEN_MAX;
}

/* Bytes a length takes, from its first byte (the last when mirrored). */
static inline size_t kv_lplen_form(uint8_t first)
{
	return first < 0x80 ? 1 : first < KV_LPLEN_FIVE ? 2 : KV_LPLEN_MAX;
}

/* Writes len at p, to be read forwards; returns the bytes written. */
static inline size_t kv_lplen_put(uint8_t *p, size_t len)
{
	if (len < 0x80) {
		p[0] = (uint8_t)len;
		return 1;
	}
	if (len < 0x4000) {
		p[0] = (uint8_t)(KV_LPLEN_TWO | (len >> 8));
		p[1] = (uint8_t)len;
		return 2;
	}
	uint32_t n = (uint32_t)len;
	p[0] = KV_LPLEN_FIVE;
	memcpy(p + 1, &n, sizeof(n));
	return KV_LPLEN_MAX;
}

/* Reads the length at p into *len; returns the bytes it takes. */
static inline size_t kv_lplen_get(const uint8_t *p, size_t *len)
{
	if (p[0] < 0x80) {
		*len = p[0];
		return 1;
	}
	if (p[0] < KV_LPLEN_FIVE) {
		*len = (size_t)(p[0] & 0x3f) << 8 | p[1];
		return 2;
	}
	uint32_t n;
	memcpy(&n, p + 1, sizeof(n));
	*len = n;
	return KV_LPLEN_MAX;
}

/* Writes len mirrored at p (its first byte last), to be read backwards
 * from p + the size; returns the bytes written. */
static inline size_t kv_lplen_put_back(uint8_t *p, size_t len)
{
	uint8_t fwd[KV_LPLEN_MAX];
	size_t n = kv_lplen_put(fwd, len);
	if (n == KV_LPLEN_MAX) {           /* the 32 bits, then the tag */
		memcpy(p, fwd + 1, sizeof(uint32_t));
		p[4] = fwd[0];
		return n;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = fwd[n - 1 - i];
	return n;
}

/* Reads the mirrored length that ends just before end; returns the bytes
 * it takes. */
static inline size_t kv_lplen_get_back(const uint8_t *end, size_t *len)
{
	uint8_t fwd[KV_LPLEN_MAX];
	size_t n = kv_lplen_form(end[-1]);
	if (n == KV_LPLEN_MAX) {
		fwd[0] = end[-1];
		memcpy(fwd + 1, end - KV_LPLEN_MAX, sizeof(uint32_t));
	} else {
		for (size_t i = 0; i < n; i++)
			fwd[i] = end[-1 - (ptrdiff_t)i];
	}
	return kv_lplen_get(fwd, len);
}

/* Whether the length at p, within avail bytes, is well formed: complete,
 * the form's tag, the shortest form for its value. */
static inline bool kv_lplen_valid(const uint8_t *p, size_t avail)
{
	size_t len, n;
	if (!avail || (p[0] >= KV_LPLEN_FIVE && p[0] != KV_LPLEN_FIVE))
		return false;
	n = kv_lplen_form(p[0]);
	if (n > avail)
		return false;
	kv_lplen_get(p, &len);
	return kv_lplen_size(len) == n;
}

#endif
