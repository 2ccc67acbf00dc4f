/* SPDX-License-Identifier: MIT */
/* Hashes and sets in Redis's encodings: see coll.h. */
#include "coll.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"
#include "lplen.h"
#include "num.h"
#include "pool.h"

const struct kv_coll_limits kv_coll_default_limits = { 512, 64, 512 };

/* A hashtable member: its bytes, then its value's. */
struct node {
	uint32_t mlen, vlen;
	char data[];
};

/* The hashtable's state, allocated when the collection converts: a
 * packed collection does not carry it. */
struct ht {
	struct pc_map map;         /* member hash -> struct node * */
	size_t node_bytes;         /* the nodes, as allocated */
};

/* The header stays small for the packed encodings, which most
 * collections keep: their buffer's pointer and bytes (its capacity is
 * what the allocator gave it) and the count. An intset of up to
 * sizeof(u.in) bytes (8 small integers) is held in the header itself:
 * a set of a few integers is then one 24-byte allocation, where a
 * buffer of its own would cost a 32-byte malloc chunk more. */
struct kv_coll {
	union {
		struct {
			char *buf; /* listpack: length (lplen.h) then bytes, per string;
				    * intset: ascending, width bytes each */
			uint32_t len; /* listpack: bytes used */
		} p;
		uint8_t in[16];    /* intset while held (n * width bytes) */
		struct ht *ht;     /* hashtable */
	} u;
	uint32_t n;                /* packed: members */
	uint8_t type;              /* KV_HASH or KV_SET */
	uint8_t enc;               /* enum kv_coll_enc */
	uint8_t width;             /* intset: 2, 4 or 8 bytes a member */
	uint8_t held;              /* intset: its members are in u.in */
};

/* Sets of strings stay a listpack while they have at most this many
 * members of at most this many bytes (Redis 7.2's set-max-listpack-
 * entries and -value defaults): Redis 7.0 gives even a set of 2 strings
 * a hashtable, which costs several times the bytes. */
#define SET_LP_ENTRIES 128
#define SET_LP_VALUE   64

static bool pairs(const struct kv_coll *c)
{
	return c->type == KV_HASH;
}

static size_t cost(const void *p)
{
	return p ? kv_pool_cost(p, 0) : 0;
}

size_t kv_coll_mem(const struct kv_coll *c)
{
	size_t base = cost(c);
	if (c->enc != KV_ENC_HASHTABLE)
		return base + (c->held ? 0 : cost(c->u.p.buf));
	size_t cap = pc_map_capacity(&c->u.ht->map);
	return base + cost(c->u.ht) + c->u.ht->node_bytes + cap + cap * sizeof(struct pc_map_slot);
}

struct kv_coll *kv_coll_new(enum kv_type type)
{
	struct kv_coll *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->type = (uint8_t)type;
	c->enc = type == KV_HASH ? KV_ENC_LISTPACK : KV_ENC_INTSET;
	c->width = sizeof(int16_t);
	c->held = type == KV_SET;
	return c;
}

static void ht_free(struct ht *ht)
{
	struct pc_map_slot *s;
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(&ht->map, &it));)
		free((void *)(uintptr_t)s->value);
	pc_map_destroy(&ht->map);
	free(ht);
}

void kv_coll_free(struct kv_coll *c)
{
	if (!c)
		return;
	if (c->enc == KV_ENC_HASHTABLE)
		ht_free(c->u.ht);
	else if (!c->held)
		free(c->u.p.buf);
	free(c);
}

size_t kv_coll_len(const struct kv_coll *c)
{
	return c->enc == KV_ENC_HASHTABLE ? pc_map_size(&c->u.ht->map) : c->n;
}

enum kv_coll_enc kv_coll_encoding(const struct kv_coll *c)
{
	return (enum kv_coll_enc)c->enc;
}

/* ---- listpack ------------------------------------------------------------ */

/* The string at byte offset at: its bytes and length; returns the offset
 * of the next one. */
static size_t lp_read(const struct kv_coll *c, size_t at, const char **s, size_t *len)
{
	at += kv_lplen_get((const uint8_t *)c->u.p.buf + at, len);
	*s = c->u.p.buf + at;
	return at + *len;
}

/* The element starting at byte offset at; returns the next one's offset. */
static size_t lp_elem(const struct kv_coll *c, size_t at, struct kv_elem *e)
{
	at = lp_read(c, at, &e->m, &e->mlen);
	e->v = NULL;
	e->vlen = 0;
	if (pairs(c))
		at = lp_read(c, at, &e->v, &e->vlen);
	return at;
}

/* The offset of member m's element, or SIZE_MAX. */
static size_t lp_find(const struct kv_coll *c, const char *m, size_t mlen)
{
	struct kv_elem e;
	for (size_t at = 0, next; at < c->u.p.len; at = next) {
		next = lp_elem(c, at, &e);
		if (e.mlen == mlen && memcmp(e.m, m, mlen) == 0)
			return at;
	}
	return SIZE_MAX;
}

/* Whether a listpack may grow by more bytes: its length is 32 bits;
 * past that the collection converts. */
static bool packed_fits(const struct kv_coll *c, size_t more)
{
	return more <= UINT32_MAX - c->u.p.len;
}

/* Room for need bytes in the packed buffer, grown to what it needs (as
 * Redis's listpack, no spare room: small collections are most of them,
 * and the buffer's memmove per change costs more than the realloc). */
static bool buf_reserve(struct kv_coll *c, size_t need)
{
	if (c->u.p.buf && need <= malloc_usable_size(c->u.p.buf))
		return true;
	char *b = realloc(c->u.p.buf, need);
	if (!b)
		return false;
	c->u.p.buf = b;
	return true;
}

/* Writes the string at byte offset at; returns the offset past it. */
static size_t lp_write(char *b, size_t at, const char *s, size_t len)
{
	at += kv_lplen_put((uint8_t *)b + at, len);
	if (len)
		memcpy(b + at, s, len);
	return at + len;
}

/* Bytes the element m (v) takes in the listpack. */
static size_t lp_size(const struct kv_coll *c, size_t mlen, size_t vlen)
{
	return kv_lplen_size(mlen) + mlen + (pairs(c) ? kv_lplen_size(vlen) + vlen : 0);
}

/* Replaces bytes [at, at+old) with the element m (v); room reserved. */
static void lp_splice(struct kv_coll *c, size_t at, size_t old, const char *m, size_t mlen,
		      const char *v, size_t vlen)
{
	size_t add = lp_size(c, mlen, vlen);
	char *b = c->u.p.buf;
	memmove(b + at + add, b + at + old, c->u.p.len - at - old);
	at = lp_write(b, at, m, mlen);
	if (pairs(c))
		lp_write(b, at, v, vlen);
	c->u.p.len = c->u.p.len - old + add;
}

static void lp_remove(struct kv_coll *c, size_t at)
{
	struct kv_elem e;
	size_t next = lp_elem(c, at, &e);
	memmove(c->u.p.buf + at, c->u.p.buf + next, c->u.p.len - next);
	c->u.p.len -= next - at;
}

/* ---- intset -------------------------------------------------------------- */

/* As Redis's intset: every member in the narrowest of 16, 32 and 64 bits
 * that holds them all, widened (never narrowed) as members come. */

/* The narrowest width that holds v. */
static uint8_t is_width(int64_t v)
{
	if (v >= INT16_MIN && v <= INT16_MAX)
		return sizeof(int16_t);
	return v >= INT32_MIN && v <= INT32_MAX ? sizeof(int32_t) : sizeof(int64_t);
}

/* Member i of an array of width-byte members. */
static int64_t is_load(const uint8_t *a, uint8_t width, size_t i)
{
	int16_t v16;
	int32_t v32;
	int64_t v64;

	switch (width) {
	case sizeof(int16_t):
		memcpy(&v16, a + i * width, sizeof(v16));
		return v16;
	case sizeof(int32_t):
		memcpy(&v32, a + i * width, sizeof(v32));
		return v32;
	default:
		memcpy(&v64, a + i * width, sizeof(v64));
		return v64;
	}
}

/* Stores v (which the width holds) as member i. */
static void is_store(uint8_t *a, uint8_t width, size_t i, int64_t v)
{
	int16_t v16 = (int16_t)v;
	int32_t v32 = (int32_t)v;

	switch (width) {
	case sizeof(int16_t):
		memcpy(a + i * width, &v16, sizeof(v16));
		break;
	case sizeof(int32_t):
		memcpy(a + i * width, &v32, sizeof(v32));
		break;
	default:
		memcpy(a + i * width, &v, sizeof(v));
	}
}

/* The members: in the header while they fit there. */
static uint8_t *is_data(const struct kv_coll *c)
{
	return c->held ? (uint8_t *)c->u.in : (uint8_t *)c->u.p.buf;
}

/* Room for need bytes of members: out of the header into a buffer of
 * their own once they outgrow it (and never back). */
static bool is_reserve(struct kv_coll *c, size_t need)
{
	if (!c->held)
		return buf_reserve(c, need);
	if (need <= sizeof(c->u.in))
		return true;
	char *b = malloc(need);
	if (!b)
		return false;
	memcpy(b, c->u.in, (size_t)c->n * c->width);
	c->u.p.buf = b;
	c->held = 0;
	return true;
}

static int64_t is_get(const struct kv_coll *c, size_t i)
{
	return is_load(is_data(c), c->width, i);
}

/* Where v is or would go. */
static size_t is_search(const struct kv_coll *c, int64_t v, bool *found)
{
	size_t lo = 0, hi = c->n;
	if (is_width(v) > c->width) {   /* wider than every member: not there */
		*found = false;
		return v < 0 ? 0 : c->n;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (is_get(c, mid) < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < c->n && is_get(c, lo) == v;
	return lo;
}

/* Bytes the intset needs to take v as well: every member at the width
 * that holds v too. */
static size_t is_need(const struct kv_coll *c, int64_t v)
{
	uint8_t w = is_width(v) > c->width ? is_width(v) : c->width;
	return ((size_t)c->n + 1) * w;
}

/* Widens every member to width w, in place from the last (each moves
 * up, past what is still to be read); room reserved. */
static void is_widen(struct kv_coll *c, uint8_t w)
{
	for (size_t i = c->n; i--;)
		is_store(is_data(c), w, i, is_get(c, i));
	c->width = w;
}

static void is_elem(const struct kv_coll *c, size_t i, struct kv_elem *e)
{
	e->mlen = kv_ll2str(e->num, is_get(c, i));
	e->m = e->num;
	e->v = NULL;
	e->vlen = 0;
}

static int is_add(struct kv_coll *c, int64_t v)
{
	bool found;
	size_t at = is_search(c, v, &found);
	if (found)
		return 0;
	if (!is_reserve(c, is_need(c, v)))
		return -ENOMEM;
	if (is_width(v) > c->width)
		is_widen(c, is_width(v));
	uint8_t w = c->width;
	memmove(is_data(c) + (at + 1) * w, is_data(c) + at * w, (c->n - at) * w);
	is_store(is_data(c), w, at, v);
	c->n++;
	return 1;
}

/* ---- hashtable ----------------------------------------------------------- */

struct member_ref {
	const char *m;
	size_t mlen;
};

static bool node_eq(uint64_t value, const void *arg)
{
	const struct node *nd = (const struct node *)(uintptr_t)value;
	const struct member_ref *r = arg;
	return nd->mlen == r->mlen && memcmp(nd->data, r->m, r->mlen) == 0;
}

static struct pc_map_slot *ht_find(const struct kv_coll *c, const char *m, size_t mlen)
{
	struct member_ref r = { m, mlen };
	return pc_map_find_hashed(&c->u.ht->map, kv_member_hash(m, mlen), node_eq, &r);
}

static void node_elem(const struct node *nd, struct kv_elem *e)
{
	e->m = nd->data;
	e->mlen = nd->mlen;
	e->v = nd->data + nd->mlen;
	e->vlen = nd->vlen;
}

static struct node *node_new(const char *m, size_t mlen, const char *v, size_t vlen)
{
	struct node *nd = malloc(sizeof(*nd) + mlen + vlen);
	if (!nd)
		return NULL;
	nd->mlen = (uint32_t)mlen;
	nd->vlen = (uint32_t)vlen;
	memcpy(nd->data, m, mlen);
	if (vlen)
		memcpy(nd->data + mlen, v, vlen);
	return nd;
}

/* Adds a member known to be absent. */
static int ht_insert(struct ht *ht, const char *m, size_t mlen, const char *v, size_t vlen)
{
	struct node *nd = node_new(m, mlen, v, vlen);
	if (!nd)
		return -ENOMEM;
	if (pc_map_insert_hashed(&ht->map, kv_member_hash(m, mlen), (uint64_t)(uintptr_t)nd)) {
		free(nd);
		return -ENOMEM;
	}
	ht->node_bytes += cost(nd);
	return 1;
}

/* Sets the value of the member in slot s. */
static int ht_update(struct kv_coll *c, struct pc_map_slot *s, const char *v, size_t vlen)
{
	struct node *old = (struct node *)(uintptr_t)s->value;
	struct node *nd = node_new(old->data, old->mlen, v, vlen);
	if (!nd)
		return -ENOMEM;
	c->u.ht->node_bytes += cost(nd) - cost(old);
	s->value = (uint64_t)(uintptr_t)nd;
	free(old);
	return 0;
}

/* Rebuilds c as a hashtable (its members moved over); -ENOMEM leaves it
 * as it was. */
static int to_hashtable(struct kv_coll *c)
{
	struct ht *ht = calloc(1, sizeof(*ht));
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;

	if (!ht)
		return -ENOMEM;
	pc_map_init(&ht->map, PC_MAP_HASHED);
	if (pc_map_reserve(&ht->map, (size_t)c->n + 1))
		goto fail;
	while (kv_coll_next(c, &it, &e))
		if (ht_insert(ht, e.m, e.mlen, e.v, e.vlen) < 0)
			goto fail;
	if (!c->held)
		free(c->u.p.buf);
	c->enc = KV_ENC_HASHTABLE;
	c->held = 0;
	c->u.ht = ht;
	c->n = 0;
	return 0;
fail:
	ht_free(ht);
	return -ENOMEM;
}

/* ---- the operations ------------------------------------------------------ */

bool kv_coll_find(const struct kv_coll *c, const char *m, size_t mlen, struct kv_elem *out)
{
	struct kv_elem tmp;
	struct pc_map_slot *s;
	int64_t v;
	bool found;

	out = out ? out : &tmp;
	switch (c->enc) {
	case KV_ENC_LISTPACK: {
		size_t at = lp_find(c, m, mlen);
		if (at == SIZE_MAX)
			return false;
		lp_elem(c, at, out);
		return true;
	}
	case KV_ENC_INTSET:
		if (!kv_str2ll(m, mlen, &v))
			return false;
		size_t i = is_search(c, v, &found);
		if (found)
			is_elem(c, i, out);
		return found;
	default:
		s = ht_find(c, m, mlen);
		if (s)
			node_elem((const struct node *)(uintptr_t)s->value, out);
		return s != NULL;
	}
}

static int lp_put(struct kv_coll *c, const char *m, size_t mlen, const char *v, size_t vlen)
{
	size_t at = lp_find(c, m, mlen), add = lp_size(c, mlen, vlen);
	if (!buf_reserve(c, c->u.p.len + add))
		return -ENOMEM;
	if (at == SIZE_MAX) {
		lp_splice(c, c->u.p.len, 0, m, mlen, v, vlen);
		c->n++;
		return 1;
	}
	struct kv_elem e;
	size_t next = lp_elem(c, at, &e);
	lp_splice(c, at, next - at, m, mlen, v, vlen);
	return 0;
}

/* Rebuilds an intset as a listpack of its members' text; -ENOMEM leaves
 * it as it was. */
static int to_listpack(struct kv_coll *c)
{
	struct kv_elem e;
	size_t bytes = 0, at = 0;

	for (size_t i = 0; i < c->n; i++) {
		is_elem(c, i, &e);
		bytes += lp_size(c, e.mlen, 0);
	}
	char *b = malloc(bytes ? bytes : 1);
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		is_elem(c, i, &e);
		at = lp_write(b, at, e.m, e.mlen);
	}
	if (!c->held)
		free(c->u.p.buf);
	c->enc = KV_ENC_LISTPACK;
	c->held = 0;
	c->u.p.buf = b;
	c->u.p.len = (uint32_t)bytes;
	return 0;
}

/* The listpack limits: the hash's as configured, the set's fixed. */
static uint32_t lp_entries(const struct kv_coll *c, const struct kv_coll_limits *lim)
{
	return pairs(c) ? lim->lp_entries : SET_LP_ENTRIES;
}

static uint32_t lp_value(const struct kv_coll *c, const struct kv_coll_limits *lim)
{
	return pairs(c) ? lim->lp_value : SET_LP_VALUE;
}

/* Converts c, if m (v) would take it past its encoding's limits, to the
 * encoding that holds it: an intset taking a string becomes a listpack
 * when small enough, anything else a hashtable. 0 or -ENOMEM. */
static int convert_for(struct kv_coll *c, const char *m, size_t mlen, size_t vlen,
		       const struct kv_coll_limits *lim, int64_t *iv)
{
	if (c->enc == KV_ENC_INTSET) {
		if (kv_str2ll(m, mlen, iv))
			return is_need(c, *iv) > UINT32_MAX ? to_hashtable(c) : 0;
		if (c->n < SET_LP_ENTRIES && mlen <= SET_LP_VALUE && to_listpack(c))
			return -ENOMEM;
	}
	if (c->enc == KV_ENC_LISTPACK &&
	    (mlen > lp_value(c, lim) || vlen > lp_value(c, lim) ||
	     !packed_fits(c, lp_size(c, mlen, vlen))))
		return to_hashtable(c);
	return c->enc == KV_ENC_INTSET ? to_hashtable(c) : 0;
}

int kv_coll_put(struct kv_coll *c, const char *m, size_t mlen, const char *v, size_t vlen,
		const struct kv_coll_limits *lim)
{
	int64_t iv;
	int rc;

	if (c->enc != KV_ENC_HASHTABLE && convert_for(c, m, mlen, vlen, lim, &iv))
		return -ENOMEM;
	if (c->enc == KV_ENC_LISTPACK) {
		rc = lp_put(c, m, mlen, v, vlen);
		if (rc == 1 && c->n > lp_entries(c, lim) && to_hashtable(c)) {
			kv_coll_del(c, m, mlen);
			return -ENOMEM;
		}
		return rc;
	}
	if (c->enc == KV_ENC_INTSET) {
		rc = is_add(c, iv);
		if (rc == 1 && c->n > lim->intset_entries && to_hashtable(c)) {
			kv_coll_del(c, m, mlen);
			return -ENOMEM;
		}
		return rc;
	}
	struct pc_map_slot *s = ht_find(c, m, mlen);
	if (!s)
		return ht_insert(c->u.ht, m, mlen, v, vlen);
	return pairs(c) ? ht_update(c, s, v, vlen) : 0;
}

bool kv_coll_del(struct kv_coll *c, const char *m, size_t mlen)
{
	int64_t v;
	bool found;

	switch (c->enc) {
	case KV_ENC_LISTPACK: {
		size_t at = lp_find(c, m, mlen);
		if (at == SIZE_MAX)
			return false;
		lp_remove(c, at);
		break;
	}
	case KV_ENC_INTSET: {
		if (!kv_str2ll(m, mlen, &v))
			return false;
		size_t i = is_search(c, v, &found);
		if (!found)
			return false;
		memmove(is_data(c) + i * c->width, is_data(c) + (i + 1) * c->width,
			(c->n - i - 1) * c->width);
		break;
	}
	default: {
		struct pc_map_slot *s = ht_find(c, m, mlen);
		if (!s)
			return false;
		struct node *nd = (struct node *)(uintptr_t)s->value;
		c->u.ht->node_bytes -= cost(nd);
		pc_map_erase_slot(&c->u.ht->map, s);
		free(nd);
		return true;
	}
	}
	c->n--;
	return true;
}

bool kv_coll_next(const struct kv_coll *c, struct kv_coll_iter *pos, struct kv_elem *out)
{
	struct pc_map_slot *s;

	switch (c->enc) {
	case KV_ENC_LISTPACK:
		if (pos->i >= c->u.p.len)
			return false;
		/* the element handed out may be removed: remember where the
		 * next one is by where this one starts */
		pos->i = lp_elem(c, pos->i, out);
		return true;
	case KV_ENC_INTSET:
		if (pos->i >= c->n)
			return false;
		is_elem(c, pos->i++, out);
		return true;
	default:
		s = pc_map_next(&c->u.ht->map, &pos->it);
		if (s)
			node_elem((const struct node *)(uintptr_t)s->value, out);
		return s != NULL;
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct pick {
	const struct node *found[PC__MAP_GROUP * 4];
	unsigned n;
};

static void pick_one(struct pc_map *m, struct pc_map_slot *s, void *arg)
{
	struct pick *p = arg;
	(void)m;
	if (p->n < sizeof(p->found) / sizeof(p->found[0]))
		p->found[p->n++] = (const struct node *)(uintptr_t)s->value;
}

void kv_coll_random(const struct kv_coll *c, uint64_t *rng, struct kv_elem *out)
{
	size_t k;

	if (c->enc == KV_ENC_INTSET) {
		is_elem(c, xorshift(rng) % c->n, out);
		return;
	}
	if (c->enc == KV_ENC_LISTPACK) {
		size_t at = 0;
		for (k = xorshift(rng) % c->n; k--;)
			at = lp_elem(c, at, out);
		lp_elem(c, at, out);
		return;
	}
	struct pick p = { .n = 0 };
	uint64_t cursor = xorshift(rng);
	/* from a random group on, the first group that has home members;
	 * past the end the walk starts again from 0 and must find one */
	while (!p.n)
		cursor = pc_map_scan((struct pc_map *)&c->u.ht->map, cursor, pick_one, &p);
	node_elem(p.found[xorshift(rng) % p.n], out);
}

struct scan_walk {
	kv_coll_scan_fn *fn;
	void *arg;
};

static void scan_node(struct pc_map *m, struct pc_map_slot *s, void *arg)
{
	struct scan_walk *w = arg;
	struct kv_elem e;
	(void)m;
	node_elem((const struct node *)(uintptr_t)s->value, &e);
	w->fn(&e, w->arg);
}

uint64_t kv_coll_scan(const struct kv_coll *c, uint64_t cursor, kv_coll_scan_fn *fn, void *arg)
{
	if (c->enc == KV_ENC_HASHTABLE) {
		struct scan_walk w = { fn, arg };
		return pc_map_scan((struct pc_map *)&c->u.ht->map, cursor, scan_node, &w);
	}
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	while (kv_coll_next(c, &it, &e))
		fn(&e, arg);
	return 0;
}

/* The listpack's framing: well-formed lengths, strings within the
 * buffer, ending at its length, as many as the count says. */
static int lp_validate(const struct kv_coll *c, char *why, size_t whylen)
{
	const uint8_t *b = (const uint8_t *)c->u.p.buf;
	size_t at = 0, strings = 0, len;

	while (at < c->u.p.len) {
		if (!kv_lplen_valid(b + at, c->u.p.len - at)) {
			snprintf(why, whylen, "listpack: bad length at byte %zu", at);
			return -EINVAL;
		}
		at += kv_lplen_get(b + at, &len);
		if (len > c->u.p.len - at) {
			snprintf(why, whylen, "listpack: string of %zu bytes past the end", len);
			return -EINVAL;
		}
		at += len;
		strings++;
	}
	if (strings != (size_t)c->n * (pairs(c) ? 2 : 1)) {
		snprintf(why, whylen, "listpack: %zu strings for %u members", strings, c->n);
		return -EINVAL;
	}
	return 0;
}

/* The intset: a width it has, its bytes for its count, in order. */
static int is_validate(const struct kv_coll *c, char *why, size_t whylen)
{
	if (c->width != 2 && c->width != 4 && c->width != 8) {
		snprintf(why, whylen, "intset: members of %u bytes", c->width);
		return -EINVAL;
	}
	if (c->held && (size_t)c->n * c->width > sizeof(c->u.in)) {
		snprintf(why, whylen, "intset: %u members of %u held in the header", c->n,
			 c->width);
		return -EINVAL;
	}
	for (size_t i = 1; i < c->n; i++)
		if (is_get(c, i - 1) >= is_get(c, i)) {
			snprintf(why, whylen, "intset out of order at %zu", i);
			return -EINVAL;
		}
	return 0;
}

int kv_coll_validate(const struct kv_coll *c, char *why, size_t whylen)
{
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	size_t n = 0, bytes = 0;
	const struct pc_map_slot *s;

	if (c->enc == KV_ENC_LISTPACK && lp_validate(c, why, whylen))
		return -EINVAL;
	while (kv_coll_next(c, &it, &e))
		n++;
	if (n != kv_coll_len(c)) {
		snprintf(why, whylen, "%zu members walked, the count says %zu", n, kv_coll_len(c));
		return -EINVAL;
	}
	if (c->enc == KV_ENC_INTSET && is_validate(c, why, whylen))
		return -EINVAL;
	if (c->enc != KV_ENC_HASHTABLE)
		return 0;
	if (pc_map_validate(&c->u.ht->map, why, whylen))
		return -EINVAL;
	for (struct pc_map_iter mi = PC_MAP_ITER_INIT; (s = pc_map_next(&c->u.ht->map, &mi));) {
		const struct node *nd = (const struct node *)(uintptr_t)s->value;
		bytes += cost(nd);
		if (kv_keyhash(nd->data, nd->mlen) != s->key) {
			snprintf(why, whylen, "member of %u bytes under the wrong hash", nd->mlen);
			return -EINVAL;
		}
	}
	if (bytes != c->u.ht->node_bytes) {
		snprintf(why, whylen, "nodes hold %zu bytes, the count says %zu", bytes,
			 c->u.ht->node_bytes);
		return -EINVAL;
	}
	return 0;
}

/* ---- the type table's rows ----------------------------------------------- */

static void obj_free(void *obj)
{
	kv_coll_free(obj);
}

static size_t obj_mem(const void *obj)
{
	return kv_coll_mem(obj);
}

static size_t obj_len(const void *obj)
{
	return kv_coll_len(obj);
}

static const char *obj_encoding(const void *obj)
{
	static const char *const names[] = { "listpack", "intset", "hashtable" };
	const struct kv_coll *c = obj;
	/* a set's listpack is ours, not Redis 7.0's: it names the encoding
	 * 7.0 would use, as OBJECT ENCODING must answer as the oracle does */
	if (c->enc == KV_ENC_LISTPACK && !pairs(c))
		return names[KV_ENC_HASHTABLE];
	return names[c->enc];
}

/* A copy in the same encoding. */
static void *obj_clone(const void *obj)
{
	const struct kv_coll *c = obj;
	struct kv_coll *d = kv_coll_new((enum kv_type)c->type);
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	struct kv_elem e;
	struct kv_coll_limits all = { UINT32_MAX, UINT32_MAX, UINT32_MAX };

	if (!d)
		return NULL;
	if (c->enc == KV_ENC_HASHTABLE && to_hashtable(d))
		goto fail;
	if (c->enc == KV_ENC_LISTPACK && !pairs(c) && to_listpack(d))
		goto fail;
	while (kv_coll_next(c, &it, &e))
		if (kv_coll_put(d, e.m, e.mlen, e.v, e.vlen, &all) < 0)
			goto fail;
	return d;
fail:
	kv_coll_free(d);
	return NULL;
}

static const struct pc_map *obj_members(const void *obj)
{
	const struct kv_coll *c = obj;
	return c->enc == KV_ENC_HASHTABLE ? &c->u.ht->map : NULL;
}

const struct kv_type_ops kv_hash_ops = {
	obj_free, obj_mem, obj_len, obj_encoding, obj_clone, obj_members, 2,
};
const struct kv_type_ops kv_set_ops = {
	obj_free, obj_mem, obj_len, obj_encoding, obj_clone, obj_members, 2,
};
