/* SPDX-License-Identifier: MIT */
/* Writing one value in RDB form (rdb.h), as redis-server 7.0 writes it,
 * and DUMP's framing. Reading is rdb_load.c. */
#include "rdb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc64.h"
#include "kvlist.h"
#include "kvzset.h"
#include "lzf.h"
#include "num.h"
#include "rdb_pack.h"

/* Strings up to this long may be stored as integers (Redis's limit: a
 * 32-bit integer prints in at most 11 characters). */
#define INT_STR_MAX 11
/* Strings longer than this are tried with LZF. */
#define LZF_MIN 20
/* A list node's listpack stops growing past this many bytes, as Redis's
 * default list-max-listpack-size (-2: 8 KiB) does. */
#define LIST_NODE_BYTES 8192
/* What a listpack entry adds to its string at most (header and back
 * length). */
#define LP_ENTRY_OVERHEAD 10
/* Quicklist node containers. */
#define NODE_PLAIN  1
#define NODE_PACKED 2

void kv_rdb_buf_free(struct kv_rdb_buf *b)
{
	free(b->p);
	*b = (struct kv_rdb_buf)KV_RDB_BUF_INIT;
}

void kv_rdb_put(struct kv_rdb_buf *b, const void *p, size_t n)
{
	if (b->failed || n == 0)
		return;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap - b->len < n)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void put_byte(struct kv_rdb_buf *b, uint8_t v)
{
	kv_rdb_put(b, &v, 1);
}

static void put_be(struct kv_rdb_buf *b, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--)
		put_byte(b, (uint8_t)(v >> (8 * i)));
}

static void put_le(struct kv_rdb_buf *b, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		put_byte(b, (uint8_t)(v >> (8 * i)));
}

void kv_rdb_put_len(struct kv_rdb_buf *b, uint64_t len)
{
	if (len < 64) {
		put_byte(b, (uint8_t)len);
	} else if (len < 16384) {
		put_byte(b, (uint8_t)(0x40 | len >> 8));
		put_byte(b, (uint8_t)len);
	} else if (len <= UINT32_MAX) {
		put_byte(b, 0x80);
		put_be(b, len, 4);
	} else {
		put_byte(b, 0x81);
		put_be(b, len, 8);
	}
}

/* The integer encodings: false when s is not a 32-bit integer as Redis
 * prints one. */
static bool put_int_string(struct kv_rdb_buf *b, const void *s, size_t n)
{
	int64_t v;
	if (n > INT_STR_MAX || !kv_str2ll(s, n, &v) || v < INT32_MIN || v > INT32_MAX)
		return false;
	if (v >= INT8_MIN && v <= INT8_MAX) {
		put_byte(b, 0xc0);
		put_le(b, (uint64_t)v, 1);
	} else if (v >= INT16_MIN && v <= INT16_MAX) {
		put_byte(b, 0xc1);
		put_le(b, (uint64_t)v, 2);
	} else {
		put_byte(b, 0xc2);
		put_le(b, (uint64_t)v, 4);
	}
	return true;
}

/* LZF form, when it saves at least 4 bytes (Redis's rule); false to
 * store the string plain. */
static bool put_lzf_string(struct kv_rdb_buf *b, const void *s, size_t n)
{
	uint8_t *out = malloc(n - 4);
	if (!out)
		return false;  /* plain is as right, just longer */
	size_t c = kv_lzf_compress(s, n, out, n - 4);
	if (c) {
		put_byte(b, 0xc3);
		kv_rdb_put_len(b, c);
		kv_rdb_put_len(b, n);
		kv_rdb_put(b, out, c);
	}
	free(out);
	return c != 0;
}

void kv_rdb_put_string(struct kv_rdb_buf *b, const void *s, size_t n, bool compress)
{
	if (put_int_string(b, s, n))
		return;
	if (compress && n > LZF_MIN && put_lzf_string(b, s, n))
		return;
	kv_rdb_put_len(b, n);
	kv_rdb_put(b, s, n);
}

/* A packed blob built in tmp, then stored as a string in b. */
static void put_blob(struct kv_rdb_buf *b, struct kv_rdb_buf *tmp, bool compress)
{
	if (tmp->failed)
		b->failed = true;
	else
		kv_rdb_put_string(b, tmp->p, tmp->len, compress);
	kv_rdb_buf_free(tmp);
}

static void put_hash(struct kv_rdb_buf *b, const struct kv_coll *h, bool compress)
{
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	if (kv_coll_encoding(h) == KV_ENC_LISTPACK) {
		struct kv_rdb_buf lp = KV_RDB_BUF_INIT;
		size_t start;
		put_byte(b, KV_RDB_HASH_LISTPACK);
		kv_lpk_begin(&lp, &start);
		while (kv_coll_next(h, &it, &e)) {
			kv_lpk_str(&lp, e.m, e.mlen);
			kv_lpk_str(&lp, e.v, e.vlen);
		}
		kv_lpk_end(&lp, start, 2 * kv_coll_len(h));
		put_blob(b, &lp, compress);
		return;
	}
	put_byte(b, KV_RDB_HASH);
	kv_rdb_put_len(b, kv_coll_len(h));
	while (kv_coll_next(h, &it, &e)) {
		kv_rdb_put_string(b, e.m, e.mlen, compress);
		kv_rdb_put_string(b, e.v, e.vlen, compress);
	}
}

static void put_intset(struct kv_rdb_buf *b, const struct kv_coll *s, bool compress)
{
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	struct kv_rdb_buf blob = KV_RDB_BUF_INIT;
	size_t n = kv_coll_len(s), i = 0;
	int64_t *v = malloc(n * sizeof(*v));
	if (!v) {
		b->failed = true;
		return;
	}
	while (kv_coll_next(s, &it, &e) && i < n)
		kv_str2ll(e.m, e.mlen, &v[i++]);
	put_byte(b, KV_RDB_SET_INTSET);
	kv_intset_put(&blob, v, i);
	free(v);
	put_blob(b, &blob, compress);
}

static void put_set(struct kv_rdb_buf *b, const struct kv_coll *s, bool compress)
{
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	if (kv_coll_encoding(s) == KV_ENC_INTSET) {
		put_intset(b, s, compress);
		return;
	}
	put_byte(b, KV_RDB_SET);
	kv_rdb_put_len(b, kv_coll_len(s));
	while (kv_coll_next(s, &it, &e))
		kv_rdb_put_string(b, e.m, e.mlen, compress);
}

/* Whether a list node holding used bytes of listpack takes an entry of
 * n bytes: a node is never empty, and grows to LIST_NODE_BYTES. */
static bool node_takes(size_t used, size_t n)
{
	return used == 0 || used + n + LP_ENTRY_OVERHEAD <= LIST_NODE_BYTES;
}

/* How many nodes the list is written as (node_takes() decides). */
static size_t list_nodes(const struct kv_list *l)
{
	struct kv_list_iter it;
	const uint8_t *v;
	size_t n, used = 0, nodes = 0;
	kv_list_iter_init(l, &it, 0, true);
	while ((v = kv_list_iter_next(&it, &n))) {
		if (!node_takes(used, n)) {
			nodes++;
			used = 0;
		}
		used += n + LP_ENTRY_OVERHEAD;
	}
	return nodes + (used != 0);
}

/* RDB_TYPE_LIST_QUICKLIST_2: nodes of listpacks, cut where node_takes()
 * says. */
static void put_list(struct kv_rdb_buf *b, const struct kv_list *l, bool compress)
{
	struct kv_list_iter it;
	struct kv_rdb_buf lp = KV_RDB_BUF_INIT;
	const uint8_t *v;
	size_t n, used = 0, count = 0, start = 0;
	put_byte(b, KV_RDB_LIST_QUICKLIST_2);
	kv_rdb_put_len(b, list_nodes(l));
	kv_list_iter_init(l, &it, 0, true);
	while ((v = kv_list_iter_next(&it, &n))) {
		if (!node_takes(used, n)) {
			kv_lpk_end(&lp, start, count);
			kv_rdb_put_len(b, NODE_PACKED);
			put_blob(b, &lp, compress);
			used = count = 0;
		}
		if (used == 0)
			kv_lpk_begin(&lp, &start);
		kv_lpk_str(&lp, v, n);
		used += n + LP_ENTRY_OVERHEAD;
		count++;
	}
	if (used) {
		kv_lpk_end(&lp, start, count);
		kv_rdb_put_len(b, NODE_PACKED);
		put_blob(b, &lp, compress);
	}
}

/* A score as Redis 7.0 writes it into a listpack (d2string): integers
 * below 2^52 in magnitude as integers, others with 17 digits. */
static size_t score_str(char *buf, size_t cap, double d)
{
	if (isinf(d))
		return (size_t)snprintf(buf, cap, "%s", d > 0 ? "inf" : "-inf");
	if (d == 0)
		return (size_t)snprintf(buf, cap, "%s", signbit(d) ? "-0" : "0");
	if (d > -4503599627370495.0 && d < 4503599627370496.0 && d == (double)(long long)d)
		return kv_ll2str(buf, (long long)d);
	return (size_t)snprintf(buf, cap, "%.17g", d);
}

static void put_zset(struct kv_rdb_buf *b, const struct kv_zset *z, bool compress)
{
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml, n = kv_zset_len(z);
	double score;
	if (strcmp(kv_zset_encoding(z), "listpack") == 0) {
		struct kv_rdb_buf lp = KV_RDB_BUF_INIT;
		char num[KV_ZSET_SCORE_CHARS];
		size_t start;
		put_byte(b, KV_RDB_ZSET_LISTPACK);
		kv_lpk_begin(&lp, &start);
		kv_zset_iter_init(z, &it, 0, n, false);
		while (kv_zset_iter_next(&it, &m, &ml, &score)) {
			kv_lpk_str(&lp, m, ml);
			kv_lpk_str(&lp, num, score_str(num, sizeof(num), score));
		}
		kv_lpk_end(&lp, start, 2 * n);
		put_blob(b, &lp, compress);
		return;
	}
	/* ZSET_2, highest score first as Redis writes it (so its loader
	 * inserts each at the head of its skip list) */
	put_byte(b, KV_RDB_ZSET_2);
	kv_rdb_put_len(b, n);
	kv_zset_iter_init(z, &it, 0, n, true);
	while (kv_zset_iter_next(&it, &m, &ml, &score)) {
		uint64_t bits;
		memcpy(&bits, &score, sizeof(bits));
		kv_rdb_put_string(b, m, ml, compress);
		put_le(b, bits, 8);
	}
}

void kv_rdb_put_value(struct kv_rdb_buf *b, const struct kv_rdb_value *v, bool compress)
{
	switch (v->type) {
	case KV_STRING:
		put_byte(b, KV_RDB_STRING);
		kv_rdb_put_string(b, v->str, v->len, compress);
		break;
	case KV_HASH:
		put_hash(b, v->obj, compress);
		break;
	case KV_SET:
		put_set(b, v->obj, compress);
		break;
	case KV_LIST:
		put_list(b, v->obj, compress);
		break;
	case KV_ZSET:
		put_zset(b, v->obj, compress);
		break;
	default:
		b->failed = true;
	}
}

void kv_rdb_dump(struct kv_rdb_buf *b, const struct kv_rdb_value *v, bool compress)
{
	kv_rdb_put_value(b, v, compress);
	put_le(b, KV_RDB_VERSION, 2);
	if (!b->failed)
		put_le(b, kv_crc64(0, b->p, b->len), 8);
}

bool kv_rdb_dump_check(const uint8_t *p, size_t n)
{
	if (n < 10)
		return false;
	unsigned version = p[n - 10] | (unsigned)p[n - 9] << 8;
	uint64_t crc = 0;
	for (int i = 7; i >= 0; i--)
		crc = crc << 8 | p[n - 8 + (size_t)i];
	return version <= KV_RDB_VERSION && kv_crc64(0, p, n - 8) == crc;
}
