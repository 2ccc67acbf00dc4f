/* SPDX-License-Identifier: MIT */
/* LZF (lzf.h): a greedy compressor that finds earlier occurrences of the
 * next three bytes through a small hash table of positions, and the
 * checked decompressor. */
#include "lzf.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define MAX_LIT   32      /* bytes in one literal run */
#define MAX_OFF   8192    /* how far back a reference reaches */
#define MAX_REF   264     /* bytes one reference copies (7 + 255 + 2) */
#define HASH_BITS 13

static uint32_t hash3(const uint8_t *p)
{
	uint32_t v = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
	return (v * 2654435761u) >> (32 - HASH_BITS);
}

/* Writes in[from..to) as literal runs; false when out is full. */
static bool put_literals(const uint8_t *in, size_t from, size_t to, uint8_t *out, size_t cap,
			 size_t *op)
{
	while (from < to) {
		size_t run = to - from < MAX_LIT ? to - from : MAX_LIT;
		if (cap - *op < run + 1)
			return false;
		out[(*op)++] = (uint8_t)(run - 1);
		memcpy(out + *op, in + from, run);
		*op += run;
		from += run;
	}
	return true;
}

/* Writes a reference copying len bytes from back bytes behind (1-based
 * distance minus one: off); false when out is full. */
static bool put_ref(size_t len, size_t off, uint8_t *out, size_t cap, size_t *op)
{
	size_t l = len - 2;
	if (cap - *op < (l >= 7 ? 3 : 2))
		return false;
	if (l < 7) {
		out[(*op)++] = (uint8_t)(l << 5 | off >> 8);
	} else {
		out[(*op)++] = (uint8_t)(7 << 5 | off >> 8);
		out[(*op)++] = (uint8_t)(l - 7);
	}
	out[(*op)++] = (uint8_t)(off & 0xff);
	return true;
}

size_t kv_lzf_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	uint32_t table[1u << HASH_BITS];  /* position + 1 of the last sighting; 0: none */
	size_t ip = 0, lit = 0, op = 0;
	memset(table, 0, sizeof(table));
	while (n >= 3 && ip + 3 <= n) {
		uint32_t h = hash3(in + ip);
		size_t ref = table[h];
		table[h] = (uint32_t)(ip + 1);
		if (!ref || ip - (ref - 1) > MAX_OFF || memcmp(in + ref - 1, in + ip, 3) != 0) {
			ip++;
			continue;
		}
		ref--;
		size_t len = 3, max = n - ip < MAX_REF ? n - ip : MAX_REF;
		while (len < max && in[ref + len] == in[ip + len])
			len++;
		if (!put_literals(in, lit, ip, out, cap, &op) ||
		    !put_ref(len, ip - ref - 1, out, cap, &op))
			return 0;
		ip += len;
		lit = ip;
		if (ip + 2 <= n)   /* the match's last start: helps long runs */
			table[hash3(in + ip - 1)] = (uint32_t)ip;
	}
	if (!put_literals(in, lit, n, out, cap, &op))
		return 0;
	return op;
}

long kv_lzf_decompress(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t ip = 0, op = 0;
	while (ip < n) {
		unsigned c = in[ip++];
		if (c < MAX_LIT) {
			size_t run = c + 1;
			if (n - ip < run)
				return -EINVAL;
			if (cap - op < run)
				return -E2BIG;
			memcpy(out + op, in + ip, run);
			ip += run;
			op += run;
			continue;
		}
		size_t len = c >> 5;
		if (len == 7) {
			if (ip >= n)
				return -EINVAL;
			len += in[ip++];
		}
		if (ip >= n)
			return -EINVAL;
		size_t back = ((size_t)(c & 31) << 8) + in[ip++] + 1;
		len += 2;
		if (back > op)
			return -EINVAL;
		if (cap - op < len)
			return -E2BIG;
		for (size_t i = 0; i < len; i++, op++)   /* may overlap: byte by byte */
			out[op] = out[op - back];
	}
	return (long)op;
}
