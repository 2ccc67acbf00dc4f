/* SPDX-License-Identifier: MIT */
/* Reading one value in RDB form (rdb.h): every length is checked against
 * the bytes left before anything is allocated for it, every packed blob
 * is checked whole before its entries are read, and a collection is
 * built through its own API (so its encoding follows the limits, and a
 * duplicate member, which Redis refuses, is seen). */
#include "rdb.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvlist.h"
#include "kvzset.h"
#include "lzf.h"
#include "num.h"
#include "rdb_pack.h"

/* LZF turns 2 bytes into at most 264: a longer claimed length is
 * corrupt, refused before it is allocated. */
#define LZF_MAX_RATIO 132

const struct kv_rdb_limits kv_rdb_default_limits = {
	.coll = { 512, 64, 512 },
	.zset_entries = KV_ZSET_MAX_LISTPACK_ENTRIES,
	.zset_value = KV_ZSET_MAX_LISTPACK_VALUE,
	.list_fill = KV_LIST_FILL_DEFAULT,
};

/* Records why reading stopped; returns -EINVAL for the caller's return. */
__attribute__((format(printf, 2, 3)))
static int bad(struct kv_rdb_reader *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static size_t left(const struct kv_rdb_reader *r)
{
	return r->len - r->pos;
}

static int get_bytes(struct kv_rdb_reader *r, void *out, size_t n)
{
	if (left(r) < n)
		return bad(r, "payload ends at byte %zu, %zu more expected", r->len, n);
	memcpy(out, r->p + r->pos, n);
	r->pos += n;
	return 0;
}

static uint64_t from_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int kv_rdb_get_len(struct kv_rdb_reader *r, uint64_t *len, bool *encoded)
{
	uint8_t b = 0, x[8] = { 0 }; /* filled by get_bytes() when it succeeds */
	int err = get_bytes(r, &b, 1);
	if (err)
		return err;
	if (encoded)
		*encoded = false;
	switch (b >> 6) {
	case 0:
		*len = b & 0x3f;
		return 0;
	case 1:
		if ((err = get_bytes(r, x, 1)))
			return err;
		*len = (uint64_t)(b & 0x3f) << 8 | x[0];
		return 0;
	case 2:
		if (b != 0x80 && b != 0x81)
			return bad(r, "unknown length encoding 0x%02x", b);
		int n = b == 0x80 ? 4 : 8;
		if ((err = get_bytes(r, x, (size_t)n)))
			return err;
		*len = 0;
		for (int i = 0; i < n; i++)
			*len = *len << 8 | x[i];
		return 0;
	default:
		if (!encoded)
			return bad(r, "string encoding 0x%02x where a length belongs", b);
		*encoded = true;
		*len = b & 0x3f;
		return 0;
	}
}

/* An integer-encoded string (width bytes, little-endian, signed). */
static int get_int_string(struct kv_rdb_reader *r, int width, char **s, size_t *n)
{
	uint8_t x[4];
	int err = get_bytes(r, x, (size_t)width);
	if (err)
		return err;
	uint64_t u = from_le(x, width);
	int64_t v = width == 1 ? (int8_t)u : width == 2 ? (int16_t)u : (int32_t)u;
	if (!(*s = malloc(24)))
		return -ENOMEM;
	*n = kv_ll2str(*s, v);
	(*s)[*n] = 0;
	return 0;
}

static int get_lzf_string(struct kv_rdb_reader *r, char **s, size_t *n)
{
	uint64_t clen, len;
	int err;
	if ((err = kv_rdb_get_len(r, &clen, NULL)) || (err = kv_rdb_get_len(r, &len, NULL)))
		return err;
	if (clen > left(r) || clen == 0)
		return bad(r, "compressed string of %llu bytes, %zu left",
			   (unsigned long long)clen, left(r));
	if (len / LZF_MAX_RATIO > clen)
		return bad(r, "%llu bytes cannot come of %llu compressed",
			   (unsigned long long)len, (unsigned long long)clen);
	if (!(*s = malloc(len + 1)))
		return -ENOMEM;
	long got = kv_lzf_decompress(r->p + r->pos, clen, (uint8_t *)*s, len);
	if (got < 0 || (uint64_t)got != len) {
		free(*s);
		*s = NULL;
		return bad(r, "compressed string does not decompress to %llu bytes",
			   (unsigned long long)len);
	}
	r->pos += clen;
	(*s)[len] = 0;
	*n = len;
	return 0;
}

int kv_rdb_get_string(struct kv_rdb_reader *r, char **s, size_t *n)
{
	uint64_t len;
	bool encoded;
	int err = kv_rdb_get_len(r, &len, &encoded);
	*s = NULL;
	if (err)
		return err;
	if (encoded) {
		switch (len) {
		case 0: return get_int_string(r, 1, s, n);
		case 1: return get_int_string(r, 2, s, n);
		case 2: return get_int_string(r, 4, s, n);
		case 3: return get_lzf_string(r, s, n);
		default: return bad(r, "unknown string encoding %llu", (unsigned long long)len);
		}
	}
	if (len > left(r))
		return bad(r, "string of %llu bytes, %zu left", (unsigned long long)len, left(r));
	if (!(*s = malloc(len + 1)))
		return -ENOMEM;
	memcpy(*s, r->p + r->pos, len);
	(*s)[len] = 0;
	r->pos += len;
	*n = len;
	return 0;
}

/* A collection's element count, not 0 (Redis refuses empty keys). */
static int get_count(struct kv_rdb_reader *r, uint64_t *n)
{
	int err = kv_rdb_get_len(r, n, NULL);
	if (!err && *n == 0)
		return bad(r, "empty collection");
	return err;
}

/* Adds member m (value v for a hash) to c: -EINVAL on a duplicate. */
static int coll_add(struct kv_rdb_reader *r, struct kv_coll *c, const void *m, size_t ml,
		    const void *v, size_t vl, const struct kv_rdb_limits *lim)
{
	int added = kv_coll_put(c, m, ml, v, vl, &lim->coll);
	if (added < 0)
		return added;
	return added ? 0 : bad(r, "duplicate member");
}

/* HASH and SET: count, then members (and values) as strings. */
static int get_plain_coll(struct kv_rdb_reader *r, struct kv_coll *c, bool hash,
			  const struct kv_rdb_limits *lim)
{
	uint64_t n;
	int err = get_count(r, &n);
	for (uint64_t i = 0; !err && i < n; i++) {
		char *m = NULL, *v = NULL;
		size_t ml, vl = 0;
		err = kv_rdb_get_string(r, &m, &ml);
		if (!err && hash)
			err = kv_rdb_get_string(r, &v, &vl);
		if (!err)
			err = coll_add(r, c, m, ml, v, vl, lim);
		free(m);
		free(v);
	}
	return err;
}

/* A packed blob read as a string and checked: listpack (is_lp) or
 * intset. */
static int get_blob(struct kv_rdb_reader *r, bool is_lp, char **blob, size_t *n,
		    size_t *count)
{
	int err = kv_rdb_get_string(r, blob, n);
	if (err)
		return err;
	err = is_lp ? kv_lpk_check((uint8_t *)*blob, *n, count, r->why, sizeof(r->why)) :
		      kv_intset_check((uint8_t *)*blob, *n, count, r->why, sizeof(r->why));
	if (err) {
		free(*blob);
		*blob = NULL;
	}
	return err;
}

static int get_intset(struct kv_rdb_reader *r, struct kv_coll *c,
		      const struct kv_rdb_limits *lim)
{
	char *blob, num[24];
	size_t n, count;
	int err = get_blob(r, false, &blob, &n, &count);
	for (size_t i = 0; !err && i < count; i++)
		err = coll_add(r, c, num, kv_ll2str(num, kv_intset_get((uint8_t *)blob, i)), NULL, 0,
			       lim);
	free(blob);
	return err;
}

/* HASH_LISTPACK: field, value, field, value... */
static int get_hash_lp(struct kv_rdb_reader *r, struct kv_coll *c,
		       const struct kv_rdb_limits *lim)
{
	char *blob;
	size_t n, count, off = 0;
	struct kv_lpk_elem f, v;
	int err = get_blob(r, true, &blob, &n, &count);
	if (err)
		return err;
	if (count == 0 || count % 2)
		err = bad(r, "hash listpack of %zu entries", count);
	while (!err && kv_lpk_next((uint8_t *)blob, &off, &f) &&
	       kv_lpk_next((uint8_t *)blob, &off, &v))
		err = coll_add(r, c, f.s, f.n, v.s, v.n, lim);
	free(blob);
	return err;
}

static int get_coll(struct kv_rdb_reader *r, int rtype, const struct kv_rdb_limits *lim,
		    struct kv_rdb_value *v)
{
	bool hash = rtype == KV_RDB_HASH || rtype == KV_RDB_HASH_LISTPACK;
	struct kv_coll *c = kv_coll_new(hash ? KV_HASH : KV_SET);
	if (!c)
		return -ENOMEM;
	int err = rtype == KV_RDB_SET_INTSET ? get_intset(r, c, lim) :
		  rtype == KV_RDB_HASH_LISTPACK ? get_hash_lp(r, c, lim) :
						  get_plain_coll(r, c, hash, lim);
	if (err) {
		kv_coll_free(c);
		return err;
	}
	v->type = hash ? KV_HASH : KV_SET;
	v->obj = c;
	return 0;
}

/* Appends every entry of a packed list node. */
static int list_add_node(struct kv_rdb_reader *r, struct kv_list *l)
{
	char *blob;
	size_t n, count, off = 0;
	struct kv_lpk_elem e;
	int err = get_blob(r, true, &blob, &n, &count);
	while (!err && kv_lpk_next((uint8_t *)blob, &off, &e))
		err = kv_list_push(l, KV_LIST_TAIL, e.s, e.n);
	free(blob);
	return err;
}

/* Appends one string read from r. */
static int list_add_string(struct kv_rdb_reader *r, struct kv_list *l)
{
	char *s;
	size_t n;
	int err = kv_rdb_get_string(r, &s, &n);
	if (!err)
		err = kv_list_push(l, KV_LIST_TAIL, s, n);
	free(s);
	return err;
}

/* LIST_QUICKLIST_2 (nodes, each plain or a listpack) or LIST (strings). */
static int get_list(struct kv_rdb_reader *r, int rtype, const struct kv_rdb_limits *lim,
		    struct kv_rdb_value *v)
{
	uint64_t n, container;
	struct kv_list *l = kv_list_new(lim->list_fill);
	if (!l)
		return -ENOMEM;
	int err = get_count(r, &n);
	for (uint64_t i = 0; !err && i < n; i++) {
		if (rtype == KV_RDB_LIST) {
			err = list_add_string(r, l);
			continue;
		}
		err = kv_rdb_get_len(r, &container, NULL);
		if (!err && container != 1 && container != 2)
			err = bad(r, "list node container %llu", (unsigned long long)container);
		if (!err)
			err = container == 1 ? list_add_string(r, l) : list_add_node(r, l);
	}
	if (!err && kv_list_len(l) == 0)
		err = bad(r, "empty list");
	if (err) {
		kv_list_free(l);
		return err;
	}
	v->type = KV_LIST;
	v->obj = l;
	return 0;
}

/* A score written as text (ZSET's, a listpack's): strtod of the whole. */
static int score_parse(struct kv_rdb_reader *r, const void *s, size_t n, double *d)
{
	char buf[128], *end;
	if (n == 0 || n >= sizeof(buf))
		return bad(r, "score of %zu characters", n);
	memcpy(buf, s, n);
	buf[n] = 0;
	*d = strtod(buf, &end);
	if (end != buf + n || isnan(*d))
		return bad(r, "score \"%s\" is not a number", buf);
	return 0;
}

/* ZSET's score: a length byte (253 nan, 254 +inf, 255 -inf) and text. */
static int get_text_score(struct kv_rdb_reader *r, double *d)
{
	uint8_t n = 0, buf[255];
	int err = get_bytes(r, &n, 1);
	if (err)
		return err;
	if (n >= 253) {
		*d = n == 254 ? INFINITY : -INFINITY;
		return n == 253 ? bad(r, "NaN score") : 0;
	}
	if ((err = get_bytes(r, buf, n)))
		return err;
	return score_parse(r, buf, n, d);
}

static int get_bin_score(struct kv_rdb_reader *r, double *d)
{
	uint8_t x[8];
	int err = get_bytes(r, x, 8);
	if (err)
		return err;
	uint64_t bits = from_le(x, 8);
	memcpy(d, &bits, sizeof(*d));
	return isnan(*d) ? bad(r, "NaN score") : 0;
}

static int zset_add(struct kv_rdb_reader *r, struct kv_zset *z, const void *m, size_t ml,
		    double score)
{
	int out = 0;
	double now;
	int err = kv_zset_add(z, m, ml, score, 0, &out, &now);
	if (err)
		return err;
	return out & KV_ZADD_ADDED ? 0 : bad(r, "duplicate member");
}

/* ZSET_LISTPACK: member, score, member, score... */
static int get_zset_lp(struct kv_rdb_reader *r, struct kv_zset *z)
{
	char *blob;
	size_t n, count, off = 0;
	struct kv_lpk_elem m, s;
	double d;
	int err = get_blob(r, true, &blob, &n, &count);
	if (err)
		return err;
	if (count == 0 || count % 2)
		err = bad(r, "sorted set listpack of %zu entries", count);
	while (!err && kv_lpk_next((uint8_t *)blob, &off, &m) &&
	       kv_lpk_next((uint8_t *)blob, &off, &s)) {
		err = score_parse(r, s.s, s.n, &d);
		if (!err)
			err = zset_add(r, z, m.s, m.n, d);
	}
	free(blob);
	return err;
}

/* ZSET_2 (binary scores) and ZSET (text scores): count, then members. */
static int get_zset_plain(struct kv_rdb_reader *r, int rtype, struct kv_zset *z)
{
	uint64_t n;
	int err = get_count(r, &n);
	for (uint64_t i = 0; !err && i < n; i++) {
		char *m;
		size_t ml;
		double d;
		err = kv_rdb_get_string(r, &m, &ml);
		if (!err)
			err = rtype == KV_RDB_ZSET_2 ? get_bin_score(r, &d) : get_text_score(r, &d);
		if (!err)
			err = zset_add(r, z, m, ml, d);
		free(m);
	}
	return err;
}

static int get_zset(struct kv_rdb_reader *r, int rtype, const struct kv_rdb_limits *lim,
		    struct kv_rdb_value *v)
{
	struct kv_zset *z = kv_zset_new(lim->zset_entries, lim->zset_value);
	if (!z)
		return -ENOMEM;
	int err = rtype == KV_RDB_ZSET_LISTPACK ? get_zset_lp(r, z) : get_zset_plain(r, rtype, z);
	if (err) {
		kv_zset_free(z);
		return err;
	}
	v->type = KV_ZSET;
	v->obj = z;
	return 0;
}

int kv_rdb_get_value(struct kv_rdb_reader *r, const struct kv_rdb_limits *lim,
		     struct kv_rdb_value *v)
{
	uint8_t t = 0;
	int err = get_bytes(r, &t, 1);
	*v = (struct kv_rdb_value){ .type = KV_STRING };
	return err ? err : kv_rdb_get_payload(r, t, lim, v);
}

int kv_rdb_get_payload(struct kv_rdb_reader *r, unsigned t, const struct kv_rdb_limits *lim,
		       struct kv_rdb_value *v)
{
	*v = (struct kv_rdb_value){ .type = KV_STRING };
	switch (t) {
	case KV_RDB_STRING:
		return kv_rdb_get_string(r, (char **)&v->str, &v->len);
	case KV_RDB_HASH:
	case KV_RDB_SET:
	case KV_RDB_SET_INTSET:
	case KV_RDB_HASH_LISTPACK:
		return get_coll(r, (int)t, lim, v);
	case KV_RDB_LIST:
	case KV_RDB_LIST_QUICKLIST_2:
		return get_list(r, (int)t, lim, v);
	case KV_RDB_ZSET:
	case KV_RDB_ZSET_2:
	case KV_RDB_ZSET_LISTPACK:
		return get_zset(r, (int)t, lim, v);
	default:
		bad(r, "value type %u is not supported", t);
		return -ENOTSUP;
	}
}

/* ---- skipping a payload unread ---------------------------------------- */

/* Skips a string in any encoding without decompressing it. */
static int skip_string(struct kv_rdb_reader *r)
{
	uint64_t len, clen;
	bool encoded;
	int err = kv_rdb_get_len(r, &len, &encoded);

	if (err)
		return err;
	if (encoded && len <= 2)
		len = 1u << len;              /* an 8-, 16- or 32-bit integer */
	else if (encoded && len == 3 &&
		 !(err = kv_rdb_get_len(r, &clen, NULL)) && !(err = kv_rdb_get_len(r, &len, NULL)))
		len = clen;                   /* LZF: its compressed bytes */
	else if (encoded)
		return err ? err : bad(r, "unknown string encoding %llu", (unsigned long long)len);
	if (len > left(r))
		return bad(r, "string of %llu bytes, %zu left", (unsigned long long)len, left(r));
	r->pos += len;
	return 0;
}

static int skip_bytes(struct kv_rdb_reader *r, uint64_t n)
{
	if (n > left(r))
		return bad(r, "payload ends at byte %zu, %llu more expected", r->len,
			   (unsigned long long)n);
	r->pos += n;
	return 0;
}

/* n lengths in a row. */
static int skip_lens(struct kv_rdb_reader *r, int n)
{
	uint64_t v;
	int err = 0;
	while (!err && n-- > 0)
		err = kv_rdb_get_len(r, &v, NULL);
	return err;
}

/* count elements, each `strings` strings then `bytes` raw bytes (a
 * ZSET_2 score), or a text score (ZSET: bytes < 0). */
static int skip_elements(struct kv_rdb_reader *r, int strings, int bytes)
{
	uint64_t n;
	int err = kv_rdb_get_len(r, &n, NULL);
	for (uint64_t i = 0; !err && i < n; i++) {
		uint8_t slen = 0;
		for (int s = 0; !err && s < strings; s++)
			err = skip_string(r);
		if (!err && bytes > 0)
			err = skip_bytes(r, (uint64_t)bytes);
		if (!err && bytes < 0 && !(err = get_bytes(r, &slen, 1)) && slen < 253)
			err = skip_bytes(r, slen);
	}
	return err;
}

/* A consumer group's pending entries: each a 16-byte id, then (the
 * group's own, full) an 8-byte delivery time and a delivery count. */
static int skip_pel(struct kv_rdb_reader *r, bool full)
{
	uint64_t n;
	int err = kv_rdb_get_len(r, &n, NULL);
	for (uint64_t i = 0; !err && i < n; i++) {
		err = skip_bytes(r, 16);
		if (!err && full && !(err = skip_bytes(r, 8)))
			err = skip_lens(r, 1);
	}
	return err;
}

/* A stream (STREAM_LISTPACKS, and _2 with its extra ids and counters):
 * node keys and listpacks, its length and ids, then each consumer group
 * with its pending entries and consumers. */
static int skip_stream(struct kv_rdb_reader *r, unsigned t)
{
	uint64_t groups, consumers;
	int err = skip_elements(r, 2, 0);

	err = err ? err : skip_lens(r, t == 15 ? 3 : 8);
	err = err ? err : kv_rdb_get_len(r, &groups, NULL);
	for (uint64_t g = 0; !err && g < groups; g++) {
		err = skip_string(r);
		err = err ? err : skip_lens(r, t == 15 ? 2 : 3);
		err = err ? err : skip_pel(r, true);
		err = err ? err : kv_rdb_get_len(r, &consumers, NULL);
		for (uint64_t c = 0; !err && c < consumers; c++) {
			err = skip_string(r);
			err = err ? err : skip_bytes(r, 8);
			err = err ? err : skip_pel(r, false);
		}
	}
	return err;
}

int kv_rdb_skip_payload(struct kv_rdb_reader *r, unsigned t)
{
	switch (t) {
	case KV_RDB_STRING:
	case KV_RDB_HASH_ZIPMAP:
	case KV_RDB_LIST_ZIPLIST:
	case KV_RDB_SET_INTSET:
	case KV_RDB_ZSET_ZIPLIST:
	case KV_RDB_HASH_ZIPLIST:
	case KV_RDB_HASH_LISTPACK:
	case KV_RDB_ZSET_LISTPACK:
	case KV_RDB_SET_LISTPACK:
		return skip_string(r);
	case KV_RDB_LIST:
	case KV_RDB_SET:
	case KV_RDB_LIST_QUICKLIST:
		return skip_elements(r, 1, 0);
	case KV_RDB_HASH:
		return skip_elements(r, 2, 0);
	case KV_RDB_ZSET:
		return skip_elements(r, 1, -1);
	case KV_RDB_ZSET_2:
		return skip_elements(r, 1, 8);
	case KV_RDB_LIST_QUICKLIST_2: {
		uint64_t n;
		int err = kv_rdb_get_len(r, &n, NULL);
		for (uint64_t i = 0; !err && i < n; i++) {
			err = skip_lens(r, 1); /* the node's container */
			err = err ? err : skip_string(r);
		}
		return err;
	}
	case KV_RDB_STREAM_LISTPACKS:
	case KV_RDB_STREAM_LISTPACKS_2:
		return skip_stream(r, t);
	default:
		bad(r, "value type %u cannot be skipped", t);
		return -ENOTSUP;
	}
}

bool kv_rdb_type_read(unsigned t)
{
	switch (t) {
	case KV_RDB_STRING: case KV_RDB_LIST: case KV_RDB_SET: case KV_RDB_ZSET:
	case KV_RDB_HASH: case KV_RDB_ZSET_2: case KV_RDB_SET_INTSET:
	case KV_RDB_HASH_LISTPACK: case KV_RDB_ZSET_LISTPACK: case KV_RDB_LIST_QUICKLIST_2:
		return true;
	default:
		return false;
	}
}

void kv_rdb_value_free(struct kv_rdb_value *v)
{
	switch (v->type) {
	case KV_STRING:
		free((char *)v->str);
		break;
	case KV_HASH:
	case KV_SET:
		kv_coll_free(v->obj);
		break;
	case KV_LIST:
		kv_list_free(v->obj);
		break;
	case KV_ZSET:
		kv_zset_free(v->obj);
		break;
	default:
		break;
	}
	*v = (struct kv_rdb_value){ .type = KV_STRING };
}
