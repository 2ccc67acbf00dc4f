/* SPDX-License-Identifier: MIT */
/* Listpack and intset blobs (rdb_pack.h), written as Redis 7.0 writes
 * them and read with every length checked. */
#include "rdb_pack.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "num.h"

#define LP_HDR        6
#define LP_EOF        0xff
#define LP_COUNT_UNKNOWN 65535

static void le_put(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le_get(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* An integer of bytes width read as two's complement. */
static int64_t sign_extend(uint64_t v, int bits)
{
	if (bits < 64 && v >> (bits - 1) & 1)
		v |= ~0ull << bits;
	return (int64_t)v;
}

/* The entry's length (encoding and data) as Redis writes it behind the
 * entry: 7 bits a byte, the most significant first, every byte but the
 * first flagged 128, so it is read from its end backwards. */
static size_t backlen_put(uint8_t *buf, uint64_t l)
{
	size_t n = l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3 : l < 268435455 ? 4 : 5;
	for (size_t i = 0; i < n; i++) {
		unsigned shift = (unsigned)(7 * (n - 1 - i));
		buf[i] = (uint8_t)((l >> shift) & 127) | (i ? 128 : 0);
	}
	if (n == 1)
		buf[0] = (uint8_t)l;
	return n;
}

void kv_lpk_begin(struct kv_rdb_buf *b, size_t *start)
{
	static const uint8_t hdr[LP_HDR];
	*start = b->len;
	kv_rdb_put(b, hdr, sizeof(hdr));
}

/* An integer entry in the narrowest encoding. */
static size_t lp_int_enc(uint8_t *e, int64_t v)
{
	if (v >= 0 && v <= 127) {
		e[0] = (uint8_t)v;
		return 1;
	}
	if (v >= -4096 && v <= 4095) {
		uint64_t u = (uint64_t)v & 0x1fff;
		e[0] = (uint8_t)(0xc0 | u >> 8);
		e[1] = (uint8_t)u;
		return 2;
	}
	int bytes = v >= -32768 && v <= 32767 ? 2 : v >= -8388608 && v <= 8388607 ? 3 :
		    v >= INT32_MIN && v <= INT32_MAX ? 4 : 8;
	e[0] = (uint8_t)(bytes == 2 ? 0xf1 : bytes == 3 ? 0xf2 : bytes == 4 ? 0xf3 : 0xf4);
	le_put(e + 1, (uint64_t)v, bytes);
	return 1 + (size_t)bytes;
}

/* A string entry's encoding bytes. */
static size_t lp_str_hdr(uint8_t *e, size_t n)
{
	if (n < 64) {
		e[0] = (uint8_t)(0x80 | n);
		return 1;
	}
	if (n < 4096) {
		e[0] = (uint8_t)(0xe0 | n >> 8);
		e[1] = (uint8_t)n;
		return 2;
	}
	e[0] = 0xf0;
	le_put(e + 1, n, 4);
	return 5;
}

void kv_lpk_str(struct kv_rdb_buf *b, const void *s, size_t n)
{
	uint8_t e[16], back[5];
	int64_t v;
	size_t h, total;
	if (n <= 20 && kv_str2ll(s, n, &v)) {
		h = lp_int_enc(e, v);
		kv_rdb_put(b, e, h);
		total = h;
	} else {
		h = lp_str_hdr(e, n);
		kv_rdb_put(b, e, h);
		kv_rdb_put(b, s, n);
		total = h + n;
	}
	kv_rdb_put(b, back, backlen_put(back, total));
}

void kv_lpk_end(struct kv_rdb_buf *b, size_t start, size_t count)
{
	static const uint8_t eof = LP_EOF;
	kv_rdb_put(b, &eof, 1);
	if (b->failed)
		return;
	le_put(b->p + start, b->len - start, 4);
	le_put(b->p + start + 4, count < LP_COUNT_UNKNOWN ? count : LP_COUNT_UNKNOWN, 2);
}

/* Decodes the entry at p + off, end being the terminator's offset: its
 * element, and *size its bytes including the back length. False when it
 * does not fit or its encoding is unknown. */
static bool lp_entry(const uint8_t *p, size_t off, size_t end, struct kv_lpk_elem *e,
		     size_t *size)
{
	size_t room = end - off, h, dlen = 0;
	uint8_t b = p[off];
	int ibytes = 0;
	int64_t v = 0;
	bool is_int = true;
	if (!(b & 0x80)) {
		h = 1, v = b;
	} else if ((b & 0xc0) == 0x80) {
		h = 1, dlen = b & 0x3f, is_int = false;
	} else if ((b & 0xe0) == 0xc0) {
		if (room < 2)
			return false;
		h = 2, v = sign_extend((uint64_t)(b & 0x1f) << 8 | p[off + 1], 13);
	} else if ((b & 0xf0) == 0xe0) {
		if (room < 2)
			return false;
		h = 2, dlen = (size_t)(b & 0x0f) << 8 | p[off + 1], is_int = false;
	} else if (b == 0xf0) {
		if (room < 5)
			return false;
		h = 5, dlen = le_get(p + off + 1, 4), is_int = false;
	} else if (b >= 0xf1 && b <= 0xf4) {
		ibytes = b == 0xf1 ? 2 : b == 0xf2 ? 3 : b == 0xf3 ? 4 : 8;
		if (room < 1 + (size_t)ibytes)
			return false;
		h = 1 + (size_t)ibytes, v = sign_extend(le_get(p + off + 1, ibytes), ibytes * 8);
	} else {
		return false;
	}
	if (room - h < dlen)
		return false;
	uint8_t back[5];
	size_t bl = backlen_put(back, h + dlen);
	if (room - h - dlen < bl || memcmp(p + off + h + dlen, back, bl) != 0)
		return false;
	if (is_int) {
		e->n = kv_ll2str(e->num, v);
		e->s = (const uint8_t *)e->num;
	} else {
		e->s = p + off + h;
		e->n = dlen;
	}
	*size = h + dlen + bl;
	return true;
}

int kv_lpk_check(const uint8_t *p, size_t n, size_t *count, char *why, size_t whylen)
{
	struct kv_lpk_elem e;
	size_t off = LP_HDR, size, seen = 0;
	if (n < LP_HDR + 1 || le_get(p, 4) != n || p[n - 1] != LP_EOF) {
		snprintf(why, whylen, "listpack of %zu bytes: bad header or terminator", n);
		return -EINVAL;
	}
	while (off < n - 1) {
		if (!lp_entry(p, off, n - 1, &e, &size)) {
			snprintf(why, whylen, "listpack entry at byte %zu is malformed", off);
			return -EINVAL;
		}
		off += size;
		seen++;
	}
	size_t hdr_count = (size_t)le_get(p + 4, 2);
	if (hdr_count != LP_COUNT_UNKNOWN && hdr_count != seen) {
		snprintf(why, whylen, "listpack says %zu entries, holds %zu", hdr_count, seen);
		return -EINVAL;
	}
	*count = seen;
	return 0;
}

bool kv_lpk_next(const uint8_t *p, size_t *off, struct kv_lpk_elem *e)
{
	size_t n = (size_t)le_get(p, 4), size;
	if (*off == 0)
		*off = LP_HDR;
	if (*off >= n - 1 || !lp_entry(p, *off, n - 1, e, &size))
		return false;
	*off += size;
	return true;
}

void kv_intset_put(struct kv_rdb_buf *b, const int64_t *v, size_t count)
{
	int width = 2;
	uint8_t hdr[8], x[8];
	for (size_t i = 0; i < count; i++) {
		if (v[i] < INT32_MIN || v[i] > INT32_MAX)
			width = 8;
		else if ((v[i] < INT16_MIN || v[i] > INT16_MAX) && width < 4)
			width = 4;
	}
	le_put(hdr, (uint64_t)width, 4);
	le_put(hdr + 4, count, 4);
	kv_rdb_put(b, hdr, sizeof(hdr));
	for (size_t i = 0; i < count; i++) {
		le_put(x, (uint64_t)v[i], width);
		kv_rdb_put(b, x, (size_t)width);
	}
}

int kv_intset_check(const uint8_t *p, size_t n, size_t *count, char *why, size_t whylen)
{
	if (n < 8) {
		snprintf(why, whylen, "intset of %zu bytes", n);
		return -EINVAL;
	}
	uint64_t width = le_get(p, 4), len = le_get(p + 4, 4);
	if ((width != 2 && width != 4 && width != 8) || len == 0 || (n - 8) / width != len ||
	    (n - 8) % width) {
		snprintf(why, whylen, "intset of width %llu and %llu members in %zu bytes",
			 (unsigned long long)width, (unsigned long long)len, n);
		return -EINVAL;
	}
	for (size_t i = 1; i < len; i++) {
		if (kv_intset_get(p, i - 1) >= kv_intset_get(p, i)) {
			snprintf(why, whylen, "intset not ascending at %zu", i);
			return -EINVAL;
		}
	}
	*count = (size_t)len;
	return 0;
}

int64_t kv_intset_get(const uint8_t *p, size_t i)
{
	int width = (int)le_get(p, 4);
	return sign_extend(le_get(p + 8 + i * (size_t)width, width), width * 8);
}
