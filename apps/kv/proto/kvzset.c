/* SPDX-License-Identifier: MIT */
/* The sorted set: see kvzset.h.
 *
 * Every search is one primitive: the rank of the first member that is not
 * "below" a bound (a score, a member's bytes, or a whole (score, member)
 * element), found by a linear walk of the packed form or by a skip list
 * descent adding spans. Spans follow Redis's skip list: a link's span is
 * how many level-0 steps it jumps. */
#include "kvzset.h"
#include "keyhash.h"
#include "lplen.h"
#include "num.h"
#include "range.h"

#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/map.h"

#define ZSL_MAXLEVEL 32
/* Packed entry: score, member length (lplen.h), member, then the length
 * of those three mirrored (for the backwards walk). A score is a tag
 * byte then either a double (PK_DOUBLE) or, when it is an integer within
 * 56 bits, that integer in as few bytes as hold it (the tag says how
 * many), as Redis's listpack stores integral scores. Members are at most
 * max_value <= 255 bytes there. */
#define PK_DOUBLE 0u
#define PK_INT_MAX 7u                 /* bytes of the widest integer */

struct zsl_node;
/* A link keeps its target's score beside it: a descent compares with
 * the score in the node it stands on and touches the next node only to
 * move there (or on a tie), where it used to touch the node it stops
 * before too, a cache miss per level in a large set (most of ZADD's
 * time). */
struct zsl_level {
	struct zsl_node *fwd;
	double fscore;             /* fwd->score (fwd not NULL) */
	size_t span;
};
struct zsl_node {
	double score;
	struct zsl_node *back;
	uint32_t ml;
	uint8_t nlev;
	struct zsl_level lv[]; /* nlev of them, then the member's bytes */
};

/* The skip list's state, allocated when the set converts: a packed set
 * does not carry it. */
struct zsl {
	struct zsl_node *hdr, *tail;
	size_t len;
	int level;
	uint64_t rng;
	struct pc_map idx;         /* member hash -> node */
	size_t nbytes;             /* the nodes' allocations: kv_zset_mem() in O(1) */
};

/* Small while packed, as most sets stay: the buffer's pointer, its bytes
 * and entries (its capacity is what the allocator gave it), the limits. */
struct kv_zset {
	union {
		uint8_t *pk;       /* packed: the entries in order */
		struct zsl *sl;    /* skip list */
	} u;
	uint32_t used;             /* packed: bytes */
	uint32_t len;              /* packed: entries */
	uint32_t max_entries;
	uint8_t max_value;         /* a length byte in the packed form */
	bool sl;                   /* skip list encoding */
};

/* What search() compares members with. below() says whether a member lies
 * before the bound; it holds for a prefix of the set. */
enum bkind { B_NONE, B_ALL, B_SCORE, B_LEX, B_ELEM };
struct bound {
	enum bkind kind;
	bool eq;           /* equal counts as below */
	double s;
	const uint8_t *m;
	size_t ml;
};

static const uint8_t *zmember(const struct zsl_node *n)
{
	return (const uint8_t *)&n->lv[n->nlev];
}

static int lexcmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al > bl) - (al < bl);
}

static bool below(const struct bound *b, double s, const uint8_t *m, size_t ml)
{
	switch (b->kind) {
	case B_NONE:
		return false;
	case B_ALL:
		return true;
	case B_SCORE:
		return b->eq ? s <= b->s : s < b->s;
	case B_LEX: {
		int c = lexcmp(m, ml, b->m, b->ml);
		return b->eq ? c <= 0 : c < 0;
	}
	case B_ELEM:
		return s < b->s || (s == b->s && lexcmp(m, ml, b->m, b->ml) < 0);
	}
	return false;
}

/* ---- packed encoding ---- */

/* Bytes of the integer that score s is (0: not one within 56 bits). */
static size_t pk_int_bytes(double s)
{
	if (!(fabs(s) < 0x1p55) || s != (double)(int64_t)s)
		return 0;
	int64_t v = (int64_t)s;
	size_t n = 1;
	while (n < PK_INT_MAX && (v < -(INT64_C(1) << (8 * n - 1)) || v >= INT64_C(1) << (8 * n - 1)))
		n++;
	return n;
}

static size_t pk_score_size(double s)
{
	size_t n = pk_int_bytes(s);
	return 1 + (n ? n : sizeof(double));
}

static size_t pk_score_put(uint8_t *p, double s)
{
	size_t n = pk_int_bytes(s);
	if (!n) {
		p[0] = PK_DOUBLE;
		memcpy(p + 1, &s, sizeof(s));
		return 1 + sizeof(s);
	}
	uint64_t v = (uint64_t)(int64_t)s;
	p[0] = (uint8_t)n;
	for (size_t i = 0; i < n; i++)
		p[1 + i] = (uint8_t)(v >> (8 * i));
	return 1 + n;
}

static size_t pk_score_get(const uint8_t *p, double *s)
{
	if (p[0] == PK_DOUBLE) {
		memcpy(s, p + 1, sizeof(*s));
		return 1 + sizeof(*s);
	}
	size_t n = p[0];
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[1 + i] << (8 * i);
	if (n < 8 && (v >> (8 * n - 1)) & 1)   /* sign-extend */
		v |= ~UINT64_C(0) << (8 * n);
	*s = (double)(int64_t)v;
	return 1 + n;
}

/* Bytes of an entry before its mirrored length. */
static size_t pk_body(size_t ml, double s)
{
	return pk_score_size(s) + kv_lplen_size(ml) + ml;
}

/* Bytes the entry of an ml-byte member with score s takes. */
static size_t pk_size(size_t ml, double s)
{
	size_t body = pk_body(ml, s);
	return body + kv_lplen_size(body);
}

/* The entry at p; returns its size. */
static uint32_t pk_read(const uint8_t *p, const uint8_t **m, size_t *ml, double *s)
{
	size_t o = pk_score_get(p, s);
	o += kv_lplen_get(p + o, ml);
	*m = p + o;
	return (uint32_t)pk_size(*ml, *s);
}

static uint32_t pk_skip(const struct kv_zset *z, uint32_t off)
{
	const uint8_t *m;
	size_t ml;
	double s;
	return off + pk_read(z->u.pk + off, &m, &ml, &s);
}

static uint32_t pk_prev(const struct kv_zset *z, uint32_t off)
{
	size_t body;
	size_t n = kv_lplen_get_back(z->u.pk + off, &body);
	return off - (uint32_t)(n + body);
}

/* Offset of the entry at rank r (r == len: the end). */
static uint32_t pk_at(const struct kv_zset *z, size_t r)
{
	uint32_t off = 0;
	for (size_t k = 0; k < r; k++)
		off = pk_skip(z, off);
	return off;
}

/* Rank and offset of the first entry not below b. */
static size_t pk_search(const struct kv_zset *z, const struct bound *b, uint32_t *offp)
{
	uint32_t off = 0;
	size_t r = 0;
	while (off < z->used) {
		const uint8_t *m;
		size_t ml;
		double s;
		uint32_t sz = pk_read(z->u.pk + off, &m, &ml, &s);
		if (!below(b, s, m, ml))
			break;
		off += sz;
		r++;
	}
	if (offp)
		*offp = off;
	return r;
}

/* Offset of the member's entry, or -1. */
static long pk_find(const struct kv_zset *z, const void *m, size_t ml, double *s)
{
	for (uint32_t off = 0; off < z->used;) {
		const uint8_t *em;
		size_t eml;
		uint32_t sz = pk_read(z->u.pk + off, &em, &eml, s);
		if (eml == ml && memcmp(em, m, ml) == 0)
			return off;
		off += sz;
	}
	return -1;
}

/* Writes (m, s) at its place; the caller made room (cap >= used + size). */
static void pk_put(struct kv_zset *z, const void *m, size_t ml, double s)
{
	s += 0.0; /* -0 becomes 0, as Redis's listpack stores it */
	struct bound b = { .kind = B_ELEM, .s = s, .m = m, .ml = ml };
	uint32_t off, sz = (uint32_t)pk_size(ml, s);
	pk_search(z, &b, &off);
	uint8_t *p = z->u.pk + off;
	memmove(p + sz, p, z->used - off);
	size_t o = pk_score_put(p, s);
	o += kv_lplen_put(p + o, ml);
	memcpy(p + o, m, ml);
	kv_lplen_put_back(p + o + ml, o + ml);
	z->used += sz;
	z->len++;
}

/* Room for more bytes, grown to what it needs, as Redis's listpack: no
 * spare room. */
static int pk_reserve(struct kv_zset *z, size_t more)
{
	size_t need = (size_t)z->used + more;
	if (!z->u.pk || need > malloc_usable_size(z->u.pk)) {
		uint8_t *p = realloc(z->u.pk, need);
		if (!p)
			return -ENOMEM;
		z->u.pk = p;
	}
	return 0;
}

static int pk_insert(struct kv_zset *z, const void *m, size_t ml, double s)
{
	if (pk_reserve(z, pk_size(ml, s)))
		return -ENOMEM;
	pk_put(z, m, ml, s);
	return 0;
}

static int convert(struct kv_zset *z);

/* Room for member m's entry to take score s (a double where it was an
 * integer grows), or the skip list past the packed form's 32-bit byte
 * count. */
static int pk_room_for(struct kv_zset *z, const void *m, size_t ml, double s)
{
	double old;
	uint32_t off = (uint32_t)pk_find(z, m, ml, &old);
	size_t now = pk_skip(z, off) - off, then = pk_size(ml, s);
	if (then <= now)
		return 0;
	if (then - now > UINT32_MAX - z->used)
		return convert(z);
	return pk_reserve(z, then - now);
}

static void pk_delete(struct kv_zset *z, uint32_t off, uint32_t end, size_t n)
{
	memmove(z->u.pk + off, z->u.pk + end, z->used - end);
	z->used -= end - off;
	z->len -= n;
}

/* ---- skip list encoding ---- */

struct zkey {
	const void *m;
	size_t ml;
};

static bool node_eq(uint64_t value, const void *key)
{
	const struct zsl_node *n = (const struct zsl_node *)(uintptr_t)value;
	const struct zkey *k = key;
	return n->ml == k->ml && memcmp(zmember(n), k->m, k->ml) == 0;
}

static struct zsl_node *zsl_find(const struct zsl *z, const void *m, size_t ml)
{
	struct zkey k = { m, ml };
	struct pc_map_slot *s = pc_map_find_hashed(&z->idx, kv_member_hash(m, ml), node_eq, &k);
	return s ? (struct zsl_node *)(uintptr_t)s->value : NULL;
}

static void zsl_unindex(struct zsl *z, const struct zsl_node *n)
{
	struct zkey k = { zmember(n), n->ml };
	pc_map_erase_slot(&z->idx, pc_map_find_hashed(&z->idx, kv_keyhash(k.m, k.ml), node_eq, &k));
}

/* Levels with probability 1/4 each, as Redis. */
static uint8_t zsl_level(struct zsl *z)
{
	uint8_t l = 1;
	for (;;) {
		z->rng ^= z->rng << 13;
		z->rng ^= z->rng >> 7;
		z->rng ^= z->rng << 17;
		if ((z->rng & 3) || l == ZSL_MAXLEVEL)
			return l;
		l++;
	}
}

static size_t zsl_node_bytes(const struct zsl_node *n)
{
	return sizeof(*n) + n->nlev * sizeof(struct zsl_level) + n->ml;
}

static struct zsl_node *zsl_node_new(struct zsl *z, const void *m, size_t ml, double s)
{
	uint8_t lv = zsl_level(z);
	struct zsl_node *n = malloc(sizeof(*n) + lv * sizeof(struct zsl_level) + ml);
	if (!n)
		return NULL;
	z->nbytes += sizeof(*n) + lv * sizeof(struct zsl_level) + ml;
	n->score = s;
	n->ml = (uint32_t)ml;
	n->nlev = lv;
	memcpy((uint8_t *)&n->lv[lv], m, ml);
	return n;
}

/* below() for a B_ELEM bound and node f of score s (the link's copy):
 * the member is read only on a tie. */
static inline bool elem_below(const struct bound *b, double s, const struct zsl_node *f)
{
	return s < b->s || (s == b->s && lexcmp(zmember(f), f->ml, b->m, b->ml) < 0);
}

/* below() for node f of score s, f's own bytes read only where the bound
 * needs its member. */
static inline bool node_below(const struct bound *b, double s, const struct zsl_node *f)
{
	switch (b->kind) {
	case B_SCORE:
		return b->eq ? s <= b->s : s < b->s;
	case B_ELEM:
		return elem_below(b, s, f);
	default:
		return below(b, s, zmember(f), f->ml);
	}
}

/* Descends to the last node below b at every level: update[i], with the
 * rank of each in rank[i]. */
static void zsl_descend(const struct zsl *z, const struct bound *b,
			struct zsl_node **update, size_t *rank)
{
	struct zsl_node *x = z->hdr;
	size_t r = 0;
	for (int i = z->level - 1; i >= 0; i--) {
		struct zsl_node *f;
		while ((f = x->lv[i].fwd) && node_below(b, x->lv[i].fscore, f)) {
			r += x->lv[i].span;
			x = f;
		}
		update[i] = x;
		if (rank)
			rank[i] = r;
	}
}

/* Links n (score and member set) at its place. */
static void zsl_link(struct zsl *z, struct zsl_node *n)
{
	struct zsl_node *update[ZSL_MAXLEVEL];
	size_t rank[ZSL_MAXLEVEL];
	struct bound b = { .kind = B_ELEM, .s = n->score, .m = zmember(n), .ml = n->ml };
	zsl_descend(z, &b, update, rank);
	for (int i = z->level; i < n->nlev; i++) {
		rank[i] = 0;
		update[i] = z->hdr;
		z->hdr->lv[i].span = z->len;
	}
	if (n->nlev > z->level)
		z->level = n->nlev;
	for (int i = 0; i < n->nlev; i++) {
		n->lv[i].fwd = update[i]->lv[i].fwd;
		n->lv[i].fscore = update[i]->lv[i].fscore;
		update[i]->lv[i].fwd = n;
		update[i]->lv[i].fscore = n->score;
		n->lv[i].span = update[i]->lv[i].span - (rank[0] - rank[i]);
		update[i]->lv[i].span = rank[0] - rank[i] + 1;
	}
	for (int i = n->nlev; i < z->level; i++)
		update[i]->lv[i].span++;
	n->back = update[0] == z->hdr ? NULL : update[0];
	*(n->lv[0].fwd ? &n->lv[0].fwd->back : &z->tail) = n;
	z->len++;
}

/* Takes x out of the links; update[] is as zsl_descend left it for x. */
static void zsl_unlink(struct zsl *z, struct zsl_node *x, struct zsl_node **update)
{
	for (int i = 0; i < z->level; i++) {
		if (update[i]->lv[i].fwd == x) {
			update[i]->lv[i].span += x->lv[i].span - 1;
			update[i]->lv[i].fwd = x->lv[i].fwd;
			update[i]->lv[i].fscore = x->lv[i].fscore;
		} else {
			update[i]->lv[i].span--;
		}
	}
	*(x->lv[0].fwd ? &x->lv[0].fwd->back : &z->tail) = x->back;
	while (z->level > 1 && !z->hdr->lv[z->level - 1].fwd)
		z->level--;
	z->len--;
}

static void zsl_unlink_node(struct zsl *z, struct zsl_node *x)
{
	struct zsl_node *update[ZSL_MAXLEVEL];
	struct bound b = { .kind = B_ELEM, .s = x->score, .m = zmember(x), .ml = x->ml };
	zsl_descend(z, &b, update, NULL);
	zsl_unlink(z, x, update);
}

/* Descends to rank r (0-based): update[i] the last node before it. */
static void zsl_descend_rank(const struct zsl *z, size_t r, struct zsl_node **update)
{
	struct zsl_node *x = z->hdr;
	size_t t = 0;
	for (int i = z->level - 1; i >= 0; i--) {
		while (x->lv[i].fwd && t + x->lv[i].span <= r) {
			t += x->lv[i].span;
			x = x->lv[i].fwd;
		}
		update[i] = x;
	}
}

static struct zsl_node *zsl_at(const struct zsl *z, size_t r)
{
	struct zsl_node *update[ZSL_MAXLEVEL];
	zsl_descend_rank(z, r, update);
	return update[0]->lv[0].fwd;
}

static void zsl_node_free(struct zsl *z, struct zsl_node *n)
{
	z->nbytes -= zsl_node_bytes(n);
	free(n);
}

static int zsl_insert(struct zsl *z, const void *m, size_t ml, double s)
{
	struct zsl_node *n = zsl_node_new(z, m, ml, s);
	if (!n)
		return -ENOMEM;
	if (pc_map_insert_hashed(&z->idx, kv_member_hash(m, ml), (uint64_t)(uintptr_t)n)) {
		zsl_node_free(z, n);
		return -ENOMEM;
	}
	zsl_link(z, n);
	return 0;
}

static void zsl_free_nodes(struct zsl_node *n)
{
	for (struct zsl_node *next; n; n = next) {
		next = n->lv[0].fwd;
		free(n);
	}
}

/* The packed entries into a skip list, all or nothing. */
static void zsl_free(struct zsl *s)
{
	if (s->hdr)
		zsl_free_nodes(s->hdr->lv[0].fwd);
	free(s->hdr);
	pc_map_destroy(&s->idx);
	free(s);
}

static int convert(struct kv_zset *z)
{
	struct zsl *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->level = 1;
	s->rng = 0x9e3779b97f4a7c15ull;
	s->hdr = calloc(1, sizeof(struct zsl_node) + ZSL_MAXLEVEL * sizeof(struct zsl_level));
	pc_map_init(&s->idx, PC_MAP_HASHED);
	if (!s->hdr || pc_map_reserve(&s->idx, (size_t)z->len + 1))
		goto fail;
	s->hdr->nlev = ZSL_MAXLEVEL;
	for (uint32_t off = 0; off < z->used;) {
		const uint8_t *m;
		size_t ml;
		double sc;
		off += pk_read(z->u.pk + off, &m, &ml, &sc);
		if (zsl_insert(s, m, ml, sc))
			goto fail;
	}
	free(z->u.pk);
	z->u.sl = s;
	z->sl = true;
	z->used = z->len = 0;
	return 0;
fail:
	zsl_free(s);
	return -ENOMEM;
}

int kv_zset_to_skiplist(struct kv_zset *z)
{
	return z->sl ? 0 : convert(z);
}

/* ---- the set ---- */

struct kv_zset *kv_zset_new(size_t max_entries, size_t max_value)
{
	if (kv_keyhash_init())
		return NULL;
	struct kv_zset *z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	z->max_entries = max_entries > UINT32_MAX ? UINT32_MAX : (uint32_t)max_entries;
	z->max_value = max_value > 255 ? 255 : (uint8_t)max_value; /* a length byte when packed */
	return z;
}

void kv_zset_free(struct kv_zset *z)
{
	if (!z)
		return;
	if (z->sl)
		zsl_free(z->u.sl);
	else
		free(z->u.pk);
	free(z);
}

size_t kv_zset_len(const struct kv_zset *z)
{
	return z->sl ? z->u.sl->len : z->len;
}

/* Rank of the first member not below b. */
static size_t search(const struct kv_zset *z, const struct bound *b)
{
	if (!z->sl)
		return pk_search(z, b, NULL);
	struct zsl_node *update[ZSL_MAXLEVEL];
	size_t rank[ZSL_MAXLEVEL];
	zsl_descend(z->u.sl, b, update, rank);
	return rank[0];
}

bool kv_zset_score(const struct kv_zset *z, const void *m, size_t ml, double *score)
{
	if (z->sl) {
		const struct zsl_node *n = zsl_find(z->u.sl, m, ml);
		if (n)
			*score = n->score;
		return n != NULL;
	}
	return pk_find(z, m, ml, score) >= 0;
}

long long kv_zset_rank(const struct kv_zset *z, const void *m, size_t ml, bool rev)
{
	double s;
	if (!kv_zset_score(z, m, ml, &s))
		return -1;
	struct bound b = { .kind = B_ELEM, .s = s, .m = m, .ml = ml };
	size_t r = search(z, &b);
	return (long long)(rev ? kv_zset_len(z) - 1 - r : r);
}

/* Moves an existing member to score s; 0 or -ENOMEM (unchanged). */
/* Gives node n score s: in place when n has one level (one link to it,
 * its predecessor's, holds its score) and s keeps it between its
 * neighbours (as Redis's zslUpdateScore), which a small ZINCRBY usually
 * does; else out of the links and back in at its new place. */
static void zsl_rescore(struct zsl *z, struct zsl_node *n, double s)
{
	struct zsl_node *prev = n->back, *next = n->lv[0].fwd;
	struct bound b = { .kind = B_ELEM, .s = s, .m = zmember(n), .ml = n->ml };
	if (n->nlev == 1 && (!prev || elem_below(&b, prev->score, prev)) &&
	    (!next || !elem_below(&b, next->score, next))) {
		n->score = s;
		(prev ? prev : z->hdr)->lv[0].fscore = s;
		return;
	}
	zsl_unlink_node(z, n);
	n->score = s;
	zsl_link(z, n);
}

static int rescore(struct kv_zset *z, const void *m, size_t ml, double s)
{
	uint8_t copy[256];
	if (!z->sl) {
		memcpy(copy, m, ml); /* m may point into the buffer, which may move */
		m = copy;
		int rc = pk_room_for(z, m, ml, s);
		if (rc)
			return rc;
	}
	if (z->sl) {
		zsl_rescore(z->u.sl, zsl_find(z->u.sl, m, ml), s);
		return 0;
	}
	double old;
	uint32_t off = (uint32_t)pk_find(z, m, ml, &old);
	pk_delete(z, off, pk_skip(z, off), 1);
	pk_put(z, m, ml, s);
	return 0;
}

static int insert(struct kv_zset *z, const void *m, size_t ml, double s)
{
	/* past the limits, or past the packed form's 32-bit byte count */
	if (!z->sl && ((size_t)z->len + 1 > z->max_entries || ml > z->max_value ||
		       pk_size(ml, s) > UINT32_MAX - z->used)) {
		int rc = convert(z);
		if (rc)
			return rc;
	}
	return z->sl ? zsl_insert(z->u.sl, m, ml, s) : pk_insert(z, m, ml, s);
}

int kv_zset_add(struct kv_zset *z, const void *m, size_t ml, double score, int flags, int *out,
		double *newscore)
{
	double cur;
	*out = 0;
	if (isnan(score)) {
		*out = KV_ZADD_NAN;
		return 0;
	}
	/* a skip list's node found once, for the score and the update */
	struct zsl_node *node = z->sl ? zsl_find(z->u.sl, m, ml) : NULL;
	if (node)
		cur = node->score;
	if (!node && (z->sl || pk_find(z, m, ml, &cur) < 0)) {
		if (flags & KV_ZADD_XX) {
			*out = KV_ZADD_NOP;
			return 0;
		}
		int rc = insert(z, m, ml, score);
		if (rc)
			return rc;
		*out = KV_ZADD_ADDED;
		*newscore = score; /* as Redis replies it, -0 included */
		return 0;
	}
	if (flags & KV_ZADD_NX) {
		*out = KV_ZADD_NOP;
		return 0;
	}
	if (flags & KV_ZADD_INCR) {
		score += cur;
		if (isnan(score)) {
			*out = KV_ZADD_NAN;
			return 0;
		}
	}
	if (((flags & KV_ZADD_LT) && score >= cur) || ((flags & KV_ZADD_GT) && score <= cur)) {
		*out = KV_ZADD_NOP;
		return 0;
	}
	*newscore = score;
	if (score != cur) {
		int rc = 0;
		if (node)
			zsl_rescore(z->u.sl, node, score);
		else
			rc = rescore(z, m, ml, score);
		if (rc)
			return rc;
		*out = KV_ZADD_UPDATED;
	}
	return 0;
}

bool kv_zset_rem(struct kv_zset *z, const void *m, size_t ml)
{
	if (z->sl) {
		struct zsl *sl = z->u.sl;
		struct zsl_node *n = zsl_find(sl, m, ml);
		if (!n)
			return false;
		zsl_unindex(sl, n);
		zsl_unlink_node(sl, n);
		zsl_node_free(sl, n);
		return true;
	}
	double s;
	long off = pk_find(z, m, ml, &s);
	if (off < 0)
		return false;
	pk_delete(z, (uint32_t)off, pk_skip(z, (uint32_t)off), 1);
	return true;
}

size_t kv_zset_del_span(struct kv_zset *z, size_t first, size_t n)
{
	size_t len = kv_zset_len(z);
	if (first >= len)
		return 0;
	if (n > len - first)
		n = len - first;
	if (!z->sl) {
		uint32_t off = pk_at(z, first), end = off;
		for (size_t k = 0; k < n; k++)
			end = pk_skip(z, end);
		pk_delete(z, off, end, n);
		return n;
	}
	struct zsl *sl = z->u.sl;
	struct zsl_node *update[ZSL_MAXLEVEL];
	zsl_descend_rank(sl, first, update);
	struct zsl_node *x = update[0]->lv[0].fwd;
	for (size_t k = 0; k < n; k++) {
		struct zsl_node *next = x->lv[0].fwd;
		zsl_unindex(sl, x);
		zsl_unlink(sl, x, update); /* update[] stays right for the next one */
		zsl_node_free(sl, x);
		x = next;
	}
	return n;
}

bool kv_zset_span_rank(const struct kv_zset *z, long long start, long long stop, size_t *first,
		       size_t *n)
{
	if (kv_range_clamp(kv_zset_len(z), start, stop, first, n))
		return true;
	*n = 0;
	return false;
}

/* [rank of lo, rank of hi) as a span. */
static bool span(const struct kv_zset *z, const struct bound *lo, const struct bound *hi,
		 size_t *first, size_t *n)
{
	size_t a = search(z, lo), b = search(z, hi);
	*first = a;
	*n = b > a ? b - a : 0;
	return *n > 0;
}

bool kv_zset_span_score(const struct kv_zset *z, const struct kv_zscore_range *r, size_t *first,
			size_t *n)
{
	struct bound lo = { .kind = B_SCORE, .s = r->min, .eq = r->minex };
	struct bound hi = { .kind = B_SCORE, .s = r->max, .eq = !r->maxex };
	return span(z, &lo, &hi, first, n);
}

/* The bound below which members lie before (hi: up to) a lex item. */
static struct bound lex_bound(enum kv_zlex_kind k, const uint8_t *m, size_t ml, bool hi)
{
	struct bound b = { .kind = B_LEX, .m = m, .ml = ml };
	if (k == KV_ZLEX_MIN)
		b.kind = B_NONE;
	else if (k == KV_ZLEX_MAX)
		b.kind = B_ALL;
	else
		b.eq = (k == KV_ZLEX_EXCL) != hi;
	return b;
}

bool kv_zset_span_lex(const struct kv_zset *z, const struct kv_zlex_range *r, size_t *first,
		      size_t *n)
{
	struct bound lo = lex_bound(r->mink, r->min, r->minl, false);
	struct bound hi = lex_bound(r->maxk, r->max, r->maxl, true);
	return span(z, &lo, &hi, first, n);
}

void kv_zset_span_limit(size_t *first, size_t *n, bool rev, long long offset, long long count)
{
	if (offset < 0 || (unsigned long long)offset >= *n) {
		*n = 0;
		return;
	}
	size_t left = *n - (size_t)offset;
	size_t take = count < 0 || (unsigned long long)count > left ? left : (size_t)count;
	if (!rev)
		*first += (size_t)offset;
	else
		*first += left - take;
	*n = take;
}

void kv_zset_iter_init(const struct kv_zset *z, struct kv_zset_iter *it, size_t first, size_t n,
		       bool rev)
{
	it->_z = z;
	it->_rev = rev;
	size_t len = kv_zset_len(z);
	it->_left = first < len ? (n < len - first ? n : len - first) : 0;
	if (!it->_left)
		return;
	size_t start = rev ? first + it->_left - 1 : first;
	if (z->sl)
		it->_node = zsl_at(z->u.sl, start);
	else
		it->_off = pk_at(z, start);
}

bool kv_zset_iter_next(struct kv_zset_iter *it, const uint8_t **m, size_t *ml, double *score)
{
	if (!it->_left)
		return false;
	it->_left--;
	const struct kv_zset *z = it->_z;
	if (z->sl) {
		const struct zsl_node *n = it->_node;
		*m = zmember(n);
		*ml = n->ml;
		*score = n->score;
		it->_node = it->_rev ? n->back : n->lv[0].fwd;
		return true;
	}
	uint32_t sz = pk_read(z->u.pk + it->_off, m, ml, score);
	if (it->_left)
		it->_off = it->_rev ? pk_prev(z, it->_off) : it->_off + sz;
	return true;
}

const char *kv_zset_encoding(const struct kv_zset *z)
{
	return z->sl ? "skiplist" : "listpack";
}

const struct pc_map *kv_zset_members(const struct kv_zset *z)
{
	return z->sl ? &z->u.sl->idx : NULL;
}

size_t kv_zset_mem(const struct kv_zset *z)
{
	size_t m = sizeof(*z);
	if (!z->sl)
		return m + (z->u.pk ? malloc_usable_size(z->u.pk) : 0);
	const struct zsl *sl = z->u.sl;
	m += sizeof(*sl) + sizeof(struct zsl_node) + ZSL_MAXLEVEL * sizeof(struct zsl_level);
	m += pc_map_capacity(&sl->idx) * (sizeof(struct pc_map_slot) + 1);
	return m + sl->nbytes;
}

struct kv_zset *kv_zset_clone(const struct kv_zset *z)
{
	struct kv_zset *c = kv_zset_new(z->max_entries, z->max_value);
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml;
	double s;
	int out;

	if (!c)
		return NULL;
	kv_zset_iter_init(z, &it, 0, kv_zset_len(z), false);
	while (kv_zset_iter_next(&it, &m, &ml, &s))
		if (kv_zset_add(c, m, ml, s, 0, &out, &s))
			goto fail;
	/* keep the encoding: a set that once converted stays converted */
	if (z->sl && !c->sl && convert(c))
		goto fail;
	return c;
fail:
	kv_zset_free(c);
	return NULL;
}

/* ---- scores and bounds as Redis reads and writes them ---- */

size_t kv_zset_score_fmt(char *buf, double v)
{
	if (isinf(v))
		return (size_t)snprintf(buf, KV_ZSET_SCORE_CHARS, "%s", v > 0 ? "inf" : "-inf");
	return (size_t)snprintf(buf, KV_ZSET_SCORE_CHARS, "%.17g", v);
}

/* strtod over s[0..n): all of it, no NaN; strict adds ZADD's checks (no
 * leading space, no overflow, no underflow to 0) that the range parser
 * lacks. */
static bool to_double(const char *s, size_t n, bool strict, double *out)
{
	char buf[KV_LD_MAX_CHARS];
	if (n >= sizeof(buf) || (strict && n == 0))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *end;
	errno = 0;
	double v = strtod(buf, &end);
	if ((size_t)(end - buf) != n || isnan(v))
		return false;
	if (strict && (isspace((unsigned char)buf[0]) || (errno == ERANGE && (isinf(v) || v == 0))))
		return false;
	*out = v;
	return true;
}

bool kv_zset_score_parse(const char *s, size_t n, double *out)
{
	return to_double(s, n, true, out);
}

static bool score_item(const char *s, size_t n, double *v, bool *ex)
{
	*ex = n > 0 && s[0] == '(';
	return *ex ? to_double(s + 1, n - 1, false, v) : to_double(s, n, false, v);
}

bool kv_zset_score_range_parse(const char *min, size_t minl, const char *max, size_t maxl,
			       struct kv_zscore_range *r)
{
	return score_item(min, minl, &r->min, &r->minex) && score_item(max, maxl, &r->max, &r->maxex);
}

static bool lex_item(const char *s, size_t n, const uint8_t **m, size_t *ml,
		     enum kv_zlex_kind *k)
{
	if (n == 0)
		return false;
	*m = (const uint8_t *)s + 1;
	*ml = n - 1;
	switch (s[0]) {
	case '+':
		*k = KV_ZLEX_MAX;
		return n == 1;
	case '-':
		*k = KV_ZLEX_MIN;
		return n == 1;
	case '(':
		*k = KV_ZLEX_EXCL;
		return true;
	case '[':
		*k = KV_ZLEX_INCL;
		return true;
	}
	return false;
}

bool kv_zset_lex_range_parse(const char *min, size_t minl, const char *max, size_t maxl,
			     struct kv_zlex_range *r)
{
	return lex_item(min, minl, &r->min, &r->minl, &r->mink) &&
	       lex_item(max, maxl, &r->max, &r->maxl, &r->maxk);
}

/* ---- validation ---- */

static int pk_validate(const struct kv_zset *z, char *why, size_t wl)
{
	size_t c = 0;
	const uint8_t *pm = NULL;
	size_t pml = 0;
	double ps = 0;
	for (uint32_t off = 0; off < z->used; c++) {
		const uint8_t *m;
		size_t ml, back = SIZE_MAX;
		double s = NAN;
		uint32_t sz = 0, left = z->used - off;
		const uint8_t *p = z->u.pk + off;
		size_t ssz = p[0] == PK_DOUBLE ? 1 + sizeof(double) : (size_t)1 + p[0];
		if (p[0] <= PK_INT_MAX && ssz < left && kv_lplen_valid(p + ssz, left - ssz))
			sz = pk_read(p, &m, &ml, &s);
		/* the score in its shortest form, the mirrored length right */
		if (sz && sz <= left && pk_score_size(s) == ssz)
			kv_lplen_get_back(p + sz, &back);
		if (!sz || sz > left || back != pk_body(ml, s) || isnan(s)) {
			snprintf(why, wl, "packed entry %zu at %u: bad framing or NaN", c, off);
			return -EINVAL;
		}
		struct bound b = { .kind = B_ELEM, .s = s, .m = m, .ml = ml };
		if (pm && !below(&b, ps, pm, pml)) {
			snprintf(why, wl, "packed entry %zu (score %g) not after the one before", c, s);
			return -EINVAL;
		}
		pm = m, pml = ml, ps = s;
		off += sz;
	}
	size_t cap = z->u.pk ? malloc_usable_size(z->u.pk) : 0;
	if (c != z->len || c > z->max_entries || z->used > cap) {
		snprintf(why, wl, "packed: %zu entries, len %u, limit %u, used %u cap %zu", c,
			 z->len, z->max_entries, z->used, cap);
		return -EINVAL;
	}
	return 0;
}

/* Each link at level i jumps span level-0 steps. */
static int zsl_validate_spans(const struct zsl *z, char *why, size_t wl)
{
	for (int i = 0; i < z->level; i++) {
		for (const struct zsl_node *x = z->hdr; x->lv[i].fwd; x = x->lv[i].fwd) {
			size_t steps = 0;
			const struct zsl_node *y = x;
			while (y != x->lv[i].fwd && y) {
				y = y->lv[0].fwd;
				steps++;
			}
			if (x->lv[i].fscore != x->lv[i].fwd->score) {
				snprintf(why, wl, "level %d: a link's score is stale", i);
				return -EINVAL;
			}
			if (!y || steps != x->lv[i].span) {
				snprintf(why, wl, "level %d: span %zu where %zu steps", i,
					 x->lv[i].span, steps);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static int zsl_validate(const struct zsl *z, char *why, size_t wl)
{
	size_t c = 0;
	const struct zsl_node *prev = NULL;
	for (const struct zsl_node *n = z->hdr->lv[0].fwd; n; prev = n, n = n->lv[0].fwd, c++) {
		struct bound b = { .kind = B_ELEM, .s = n->score, .m = zmember(n), .ml = n->ml };
		if (n->back != prev || (prev && !below(&b, prev->score, zmember(prev), prev->ml))) {
			snprintf(why, wl, "node %zu: back link or order broken", c);
			return -EINVAL;
		}
		if (zsl_find(z, zmember(n), n->ml) != n || n->nlev > z->level) {
			snprintf(why, wl, "node %zu: not indexed, or level %u over %d", c, n->nlev,
				 z->level);
			return -EINVAL;
		}
	}
	if (c != z->len || z->tail != prev || pc_map_size(&z->idx) != c) {
		snprintf(why, wl, "skiplist: %zu nodes, len %zu, index %zu, tail %s", c, z->len,
			 pc_map_size(&z->idx), z->tail == prev ? "ok" : "wrong");
		return -EINVAL;
	}
	return zsl_validate_spans(z, why, wl);
}

int kv_zset_validate(const struct kv_zset *z, char *why, size_t wl)
{
	if (!z->sl)
		return pk_validate(z, why, wl);
	const struct zsl *sl = z->u.sl;
	size_t bytes = 0;
	for (const struct zsl_node *n = sl->hdr->lv[0].fwd; n; n = n->lv[0].fwd)
		bytes += zsl_node_bytes(n);
	if (bytes != sl->nbytes) {
		snprintf(why, wl, "nodes hold %zu bytes, counted %zu", bytes, sl->nbytes);
		return -EINVAL;
	}
	return zsl_validate(sl, why, wl);
}
