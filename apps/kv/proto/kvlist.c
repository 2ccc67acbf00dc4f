/* SPDX-License-Identifier: MIT */
/* The chunked list of byte strings: see kvlist.h.
 *
 * An entry in a node's buffer: its length as a varint (7 bits a byte, low
 * bits first, top bit "more"), the bytes, then the same varint written in
 * reverse so the last byte holds the low bits; a backwards walk reads that
 * one to find the entry's start. A small entry costs 2 bytes over its
 * length, as in a listpack. */
#include "kvlist.h"
#include "range.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Entries longer than this are refused (-EMSGSIZE): node sizes are 32-bit
 * and Redis's own bulk limit is 512 MiB. */
#define ENTRY_MAX (1u << 30)
/* A node of a count-limited list still stays below this many bytes,
 * as Redis's SIZE_SAFETY_LIMIT. */
#define SAFETY_BYTES 8192u

struct kv_list_node {
	struct kv_list_node *prev, *next;
	uint32_t count;   /* entries */
	uint32_t used;    /* bytes of entries, from buf + head on */
	uint32_t cap;     /* bytes of buf allocated */
	/* bytes of buf before the first entry: a push at the front writes
	 * there, and a pop from it only moves head, so neither moves the
	 * node's other entries (a listpack moves them all, each time) */
	uint32_t head;
	uint8_t buf[];
};

struct kv_list {
	struct kv_list_node *head, *tail;
	size_t len;
	size_t nodes;
	uint32_t max_bytes;  /* a node with more than one entry stays within */
	uint32_t max_count;
	size_t bytes;        /* the linked nodes' allocations: kv_list_mem() in O(1) */
};

/* The node's first entry. */
static inline uint8_t *ents(const struct kv_list_node *n)
{
	return (uint8_t *)n->buf + n->head;
}

/* Bytes of the varint of v. */
static uint32_t vsz(size_t v)
{
	uint32_t n = 1;
	while (v >= 128) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint32_t ent_size(size_t vl)
{
	return 2 * vsz(vl) + (uint32_t)vl;
}

static void ent_write(uint8_t *p, const void *v, size_t vl)
{
	uint32_t n = vsz(vl);
	size_t x = vl;
	for (uint32_t i = 0; i < n; i++, x >>= 7) {
		uint8_t b = (uint8_t)((x & 127) | (i + 1 < n ? 128 : 0));
		p[i] = b;
		p[2 * n + vl - 1 - i] = b; /* mirrored: the low bits come last */
	}
	memcpy(p + n, v, vl);
}

/* The entry starting at p: its body and length; returns its size. */
static uint32_t ent_read(const uint8_t *p, const uint8_t **body, size_t *vl)
{
	size_t x = 0;
	uint32_t n = 0;
	do {
		x |= (size_t)(p[n] & 127) << (7 * n);
	} while (p[n++] & 128);
	*body = p + n;
	*vl = x;
	return 2 * n + (uint32_t)x;
}

/* Offset of the entry that ends at offset end in data. */
static uint32_t ent_prev(const uint8_t *data, uint32_t end)
{
	size_t x = 0;
	uint32_t n = 0;
	do {
		x |= (size_t)(data[end - 1 - n] & 127) << (7 * n);
	} while (data[end - 1 - n++] & 128);
	return end - 2 * n - (uint32_t)x;
}

struct kv_list *kv_list_new(int fill)
{
	struct kv_list *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	if (fill >= 0) {
		l->max_count = fill < 1 ? 1 : fill > 65535 ? 65535 : (uint32_t)fill;
		l->max_bytes = SAFETY_BYTES;
	} else {
		int k = fill < -5 ? 5 : -fill; /* -1..-5: 4, 8, 16, 32, 64 KiB */
		l->max_count = UINT32_MAX;
		l->max_bytes = 4096u << (k - 1);
	}
	return l;
}

void kv_list_free(struct kv_list *l)
{
	if (!l)
		return;
	for (struct kv_list_node *n = l->head, *next; n; n = next) {
		next = n->next;
		free(n);
	}
	free(l);
}

size_t kv_list_len(const struct kv_list *l)
{
	return l->len;
}

static bool fits(const struct kv_list *l, const struct kv_list_node *n, uint32_t sz)
{
	return n->count < l->max_count && (uint64_t)n->used + sz <= l->max_bytes;
}

static struct kv_list_node *node_new(uint32_t cap)
{
	struct kv_list_node *n = malloc(sizeof(*n) + cap);
	if (n) {
		n->prev = n->next = NULL;
		n->count = n->used = n->head = 0;
		n->cap = cap;
	}
	return n;
}

/* Reallocates n to cap bytes of data and points its neighbours (and the
 * list's ends) at the new address. NULL (n untouched) without memory. */
static struct kv_list_node *node_resize(struct kv_list *l, struct kv_list_node *n, uint32_t cap)
{
	struct kv_list_node *m = realloc(n, sizeof(*n) + cap);
	if (!m)
		return NULL;
	l->bytes += (size_t)cap - m->cap;
	m->cap = cap;
	*(m->prev ? &m->prev->next : &l->head) = m;
	*(m->next ? &m->next->prev : &l->tail) = m;
	return m;
}

/* Links m after a (a NULL: at the head). */
static void link_after(struct kv_list *l, struct kv_list_node *a, struct kv_list_node *m)
{
	m->prev = a;
	m->next = a ? a->next : l->head;
	*(m->next ? &m->next->prev : &l->tail) = m;
	*(a ? &a->next : &l->head) = m;
	l->nodes++;
	l->bytes += sizeof(*m) + m->cap;
}

static void unlink_free(struct kv_list *l, struct kv_list_node *n)
{
	*(n->prev ? &n->prev->next : &l->head) = n->next;
	*(n->next ? &n->next->prev : &l->tail) = n->prev;
	l->nodes--;
	l->bytes -= sizeof(*n) + n->cap;
	free(n);
}

/* Room for sz bytes at off in n, the node's entries moved apart there
 * (n grown first, doubling up to the node limit, when it lacks the room
 * in all): the spare room goes before the first entry for an entry at
 * the front, where the next is likely to go too, else after the last.
 * Returns n, perhaps moved, or NULL without memory (n unchanged). */
static struct kv_list_node *node_make_room(struct kv_list *l, struct kv_list_node *n, uint32_t off,
					   uint32_t sz)
{
	uint32_t need = n->used + sz, head;
	uint8_t *from;

	if (need > n->cap) {
		uint32_t cap = n->cap * 2 < l->max_bytes ? n->cap * 2 : l->max_bytes;
		n = node_resize(l, n, need > cap ? need : cap);
		if (!n)
			return NULL;
	}
	head = off == 0 ? n->cap - need : 0;
	from = ents(n);
	/* the entries before off, and those from off on, each moved by
	 * memmove; the one that moves right first, so that neither
	 * overwrites the other before it moved */
	if (head >= n->head) {
		memmove(n->buf + head + off + sz, from + off, n->used - off);
		memmove(n->buf + head, from, off);
	} else {
		memmove(n->buf + head, from, off);
		memmove(n->buf + head + off + sz, from + off, n->used - off);
	}
	n->head = head;
	return n;
}

/* Writes an entry at off in n: at the front into the room before the
 * first entry where there is some, else moving the entries after off
 * (or, short of room behind them, all of them: node_make_room). Returns 0
 * or -ENOMEM (n unchanged). */
static int node_insert(struct kv_list *l, struct kv_list_node *n, uint32_t off, const void *v,
		       size_t vl)
{
	uint32_t sz = ent_size(vl);

	if (off == 0 && n->head >= sz) {
		n->head -= sz;
	} else if ((uint64_t)n->head + n->used + sz <= n->cap) {
		memmove(ents(n) + off + sz, ents(n) + off, n->used - off);
	} else {
		n = node_make_room(l, n, off, sz);
		if (!n)
			return -ENOMEM;
	}
	ent_write(ents(n) + off, v, vl);
	n->used += sz;
	n->count++;
	l->len++;
	return 0;
}

/* Removes the entry of sz bytes at off in n (the first by moving the
 * node's start past it); frees n when it empties. */
static void node_delete(struct kv_list *l, struct kv_list_node *n, uint32_t off, uint32_t sz)
{
	if (off == 0)
		n->head += sz;
	else
		memmove(ents(n) + off, ents(n) + off + sz, n->used - off - sz);
	n->used -= sz;
	n->count--;
	l->len--;
	if (n->count == 0)
		unlink_free(l, n);
}

/* Node, entry offset and index in it for list position idx <= len; idx ==
 * len is the tail's end. Walks from the nearer end of the list, then of the
 * node. */
static struct kv_list_node *locate(const struct kv_list *l, size_t idx, uint32_t *off, uint32_t *i)
{
	struct kv_list_node *n;
	if (idx >= l->len) {
		n = l->tail;
		*off = n ? n->used : 0;
		*i = n ? n->count : 0;
		return n;
	}
	if (idx < l->len / 2) {
		for (n = l->head; idx >= n->count; n = n->next)
			idx -= n->count;
	} else {
		size_t back = l->len - 1 - idx;
		for (n = l->tail; back >= n->count; n = n->prev)
			back -= n->count;
		idx = n->count - 1 - back;
	}
	uint32_t o;
	if (idx < n->count / 2) {
		o = 0;
		for (size_t k = 0; k < idx; k++) {
			const uint8_t *b;
			size_t vl;
			o += ent_read(ents(n) + o, &b, &vl);
		}
	} else {
		o = n->used;
		for (size_t k = n->count; k > idx; k--)
			o = ent_prev(ents(n), o);
	}
	*off = o;
	*i = (uint32_t)idx;
	return n;
}

/* A node holding just v, linked after a. */
static int insert_new_node(struct kv_list *l, struct kv_list_node *a, const void *v, size_t vl)
{
	struct kv_list_node *m = node_new(ent_size(vl));
	if (!m)
		return -ENOMEM;
	link_after(l, a, m);
	return node_insert(l, m, 0, v, vl); /* room is there: cannot fail */
}

/* Splits n at off (entries from off on move to a new node after it) and
 * puts v in a node of its own between the two halves. */
static int insert_split(struct kv_list *l, struct kv_list_node *n, uint32_t off, uint32_t i,
			const void *v, size_t vl)
{
	uint32_t rest = n->used - off;
	struct kv_list_node *t = node_new(rest), *m = node_new(ent_size(vl));
	if (!t || !m) {
		free(t);
		free(m);
		return -ENOMEM;
	}
	memcpy(ents(t), ents(n) + off, rest);
	t->used = rest;
	t->count = n->count - i;
	n->used = off;
	n->count = i;
	link_after(l, n, t);
	link_after(l, n, m);
	return node_insert(l, m, 0, v, vl);
}

static int insert_pos(struct kv_list *l, struct kv_list_node *n, uint32_t off, uint32_t i,
		      const void *v, size_t vl)
{
	if (vl > ENTRY_MAX)
		return -EMSGSIZE;
	uint32_t sz = ent_size(vl);
	if (!n)
		return insert_new_node(l, NULL, v, vl);
	if (fits(l, n, sz))
		return node_insert(l, n, off, v, vl);
	if (off == n->used && n->next && fits(l, n->next, sz))
		return node_insert(l, n->next, 0, v, vl);
	if (off == 0 && n->prev && fits(l, n->prev, sz))
		return node_insert(l, n->prev, n->prev->used, v, vl);
	if (off == n->used)
		return insert_new_node(l, n, v, vl);
	if (off == 0)
		return insert_new_node(l, n->prev, v, vl);
	return insert_split(l, n, off, i, v, vl);
}

int kv_list_push(struct kv_list *l, enum kv_list_end end, const void *v, size_t vl)
{
	if (end == KV_LIST_HEAD)
		return insert_pos(l, l->head, 0, 0, v, vl);
	struct kv_list_node *t = l->tail;
	return insert_pos(l, t, t ? t->used : 0, t ? t->count : 0, v, vl);
}

int kv_list_insert_at(struct kv_list *l, size_t idx, const void *v, size_t vl)
{
	if (idx > l->len)
		return -ERANGE;
	uint32_t off, i;
	struct kv_list_node *n = locate(l, idx, &off, &i);
	return insert_pos(l, n, off, i, v, vl);
}

const uint8_t *kv_list_peek(const struct kv_list *l, enum kv_list_end end, size_t *len)
{
	const struct kv_list_node *n = end == KV_LIST_HEAD ? l->head : l->tail;
	if (!n)
		return NULL;
	const uint8_t *b;
	ent_read(ents(n) + (end == KV_LIST_HEAD ? 0 : ent_prev(ents(n), n->used)), &b, len);
	return b;
}

int kv_list_pop(struct kv_list *l, enum kv_list_end end)
{
	struct kv_list_node *n = end == KV_LIST_HEAD ? l->head : l->tail;
	if (!n)
		return -ENOENT;
	uint32_t off = end == KV_LIST_HEAD ? 0 : ent_prev(ents(n), n->used);
	const uint8_t *b;
	size_t vl;
	node_delete(l, n, off, ent_read(ents(n) + off, &b, &vl));
	return 0;
}

/* Redis's index: negative counts from the tail. False when out of range. */
static bool norm_index(const struct kv_list *l, long long idx, size_t *out)
{
	if (idx < 0)
		idx += (long long)l->len;
	if (idx < 0 || (unsigned long long)idx >= l->len)
		return false;
	*out = (size_t)idx;
	return true;
}

const uint8_t *kv_list_index(const struct kv_list *l, long long idx, size_t *len)
{
	size_t k;
	if (!norm_index(l, idx, &k))
		return NULL;
	uint32_t off, i;
	const struct kv_list_node *n = locate(l, k, &off, &i);
	const uint8_t *b;
	ent_read(ents(n) + off, &b, len);
	return b;
}

int kv_list_set(struct kv_list *l, long long idx, const void *v, size_t vl)
{
	size_t k;
	if (!norm_index(l, idx, &k))
		return -ERANGE;
	if (vl > ENTRY_MAX)
		return -EMSGSIZE;
	uint32_t off, i;
	struct kv_list_node *n = locate(l, k, &off, &i);
	const uint8_t *b;
	size_t ol;
	uint32_t osz = ent_read(ents(n) + off, &b, &ol), nsz = ent_size(vl);
	if (n->count == 1 || (uint64_t)n->used - osz + nsz <= l->max_bytes) {
		uint32_t need = n->used - osz + nsz;
		if ((uint64_t)n->head + need > n->cap && !(n = node_resize(l, n, n->head + need)))
			return -ENOMEM;
		memmove(ents(n) + off + nsz, ents(n) + off + osz, n->used - off - osz);
		ent_write(ents(n) + off, v, vl);
		n->used = need;
		return 0;
	}
	/* too big for its node: insert the new entry after the old one (the
	 * step that may fail), then drop the old one */
	int rc = insert_pos(l, n, off + osz, i + 1, v, vl);
	if (rc)
		return rc;
	n = locate(l, k, &off, &i);
	node_delete(l, n, off, osz);
	return 0;
}

/* Index of the first entry equal to v, or -1. */
static long long find(const struct kv_list *l, const void *v, size_t vl)
{
	struct kv_list_iter it;
	const uint8_t *b;
	size_t bl;
	kv_list_iter_init(l, &it, 0, true);
	for (long long k = 0; (b = kv_list_iter_next(&it, &bl)); k++)
		if (bl == vl && memcmp(b, v, vl) == 0)
			return k;
	return -1;
}

long long kv_list_insert_pivot(struct kv_list *l, bool after, const void *pivot, size_t pl,
			       const void *v, size_t vl)
{
	long long k = find(l, pivot, pl);
	if (k < 0)
		return -ENOENT;
	int rc = kv_list_insert_at(l, (size_t)k + (after ? 1 : 0), v, vl);
	return rc ? rc : (long long)l->len;
}

void kv_list_del_range(struct kv_list *l, size_t idx, size_t cnt)
{
	if (idx >= l->len)
		return;
	if (cnt > l->len - idx)
		cnt = l->len - idx;
	uint32_t off, i;
	struct kv_list_node *n = locate(l, idx, &off, &i);
	while (cnt > 0) {
		struct kv_list_node *next = n->next;
		if (off == 0 && cnt >= n->count) {  /* the whole node goes */
			cnt -= n->count;
			l->len -= n->count;
			unlink_free(l, n);
		} else {
			uint32_t end = off, k = 0;
			for (; k < cnt && i + k < n->count; k++) {
				const uint8_t *b;
				size_t vl;
				end += ent_read(ents(n) + end, &b, &vl);
			}
			memmove(ents(n) + off, ents(n) + end, n->used - end);
			n->used -= end - off;
			n->count -= k;
			l->len -= k;
			cnt -= k;
		}
		n = next;
		off = i = 0;
	}
}

void kv_list_trim(struct kv_list *l, long long start, long long stop)
{
	size_t first, n;
	if (!kv_list_range(l, start, stop, &first, &n)) {
		kv_list_del_range(l, 0, l->len);
		return;
	}
	kv_list_del_range(l, first + n, l->len - first - n);
	kv_list_del_range(l, 0, first);
}

bool kv_list_range(const struct kv_list *l, long long start, long long stop, size_t *first,
		   size_t *n)
{
	return kv_range_clamp(l->len, start, stop, first, n);
}

/* LREM towards the tail: deletes in place, so the offset stays put. */
static size_t rem_fwd(struct kv_list *l, size_t limit, const void *v, size_t vl)
{
	size_t done = 0;
	for (struct kv_list_node *n = l->head, *next; n && done < limit; n = next) {
		next = n->next;
		uint32_t off = 0;
		while (off < n->used && done < limit) {
			const uint8_t *b;
			size_t bl;
			uint32_t sz = ent_read(ents(n) + off, &b, &bl);
			if (bl != vl || memcmp(b, v, vl) != 0) {
				off += sz;
				continue;
			}
			done++;
			bool last = n->count == 1;
			node_delete(l, n, off, sz);
			if (last)
				break;
		}
	}
	return done;
}

/* LREM towards the head: entries before the one deleted do not move. */
static size_t rem_back(struct kv_list *l, size_t limit, const void *v, size_t vl)
{
	size_t done = 0;
	for (struct kv_list_node *n = l->tail, *prev; n && done < limit; n = prev) {
		prev = n->prev;
		uint32_t end = n->used;
		while (end > 0 && done < limit) {
			uint32_t off = ent_prev(ents(n), end);
			const uint8_t *b;
			size_t bl;
			uint32_t sz = ent_read(ents(n) + off, &b, &bl);
			end = off;
			if (bl != vl || memcmp(b, v, vl) != 0)
				continue;
			done++;
			bool last = n->count == 1;
			node_delete(l, n, off, sz);
			if (last)
				break;
		}
	}
	return done;
}

size_t kv_list_rem(struct kv_list *l, long long count, const void *v, size_t vl)
{
	if (count < 0)
		return rem_back(l, count == LLONG_MIN ? SIZE_MAX : (size_t)-count, v, vl);
	return rem_fwd(l, count == 0 ? SIZE_MAX : (size_t)count, v, vl);
}

size_t kv_list_pos(const struct kv_list *l, const void *v, size_t vl, long long rank,
		   size_t count, size_t maxlen, kv_list_pos_fn *fn, void *arg)
{
	bool fwd = rank > 0;
	/* matches to skip before the first one reported */
	unsigned long long skip = fwd ? (unsigned long long)rank - 1 : 0ull - (unsigned long long)rank - 1;
	size_t found = 0, len = l->len;
	struct kv_list_iter it;
	const uint8_t *b;
	size_t bl;
	kv_list_iter_init(l, &it, fwd ? 0 : len - 1, fwd);
	for (size_t k = 0; (maxlen == 0 || k < maxlen) && (b = kv_list_iter_next(&it, &bl)); k++) {
		if (bl != vl || memcmp(b, v, vl) != 0)
			continue;
		if (skip > 0) {
			skip--;
			continue;
		}
		fn(fwd ? k : len - 1 - k, arg);
		if (++found == count)
			break;
	}
	return found;
}

void kv_list_iter_init(const struct kv_list *l, struct kv_list_iter *it, size_t idx, bool fwd)
{
	it->_fwd = fwd;
	if (idx >= l->len) {
		it->_node = NULL;
		return;
	}
	it->_node = locate(l, idx, &it->_off, &it->_i);
}

const uint8_t *kv_list_iter_next(struct kv_list_iter *it, size_t *len)
{
	const struct kv_list_node *n = it->_node;
	if (!n)
		return NULL;
	const uint8_t *b;
	uint32_t sz = ent_read(ents(n) + it->_off, &b, len);
	if (it->_fwd) {
		it->_off += sz;
		if (++it->_i == n->count) {
			it->_node = n->next;
			it->_off = it->_i = 0;
		}
	} else if (it->_i == 0) {
		it->_node = n = n->prev;
		if (n) {
			it->_i = n->count - 1;
			it->_off = ent_prev(ents(n), n->used);
		}
	} else {
		it->_i--;
		it->_off = ent_prev(ents(n), it->_off);
	}
	return b;
}

const char *kv_list_encoding(const struct kv_list *l)
{
	(void)l;
	return "quicklist";
}

size_t kv_list_mem(const struct kv_list *l)
{
	return sizeof(*l) + l->bytes;
}

struct kv_list *kv_list_clone(const struct kv_list *l)
{
	struct kv_list *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max_bytes = l->max_bytes;
	c->max_count = l->max_count;
	for (const struct kv_list_node *n = l->head; n; n = n->next) {
		struct kv_list_node *m = node_new(n->cap);
		if (!m) {
			kv_list_free(c);
			return NULL;
		}
		memcpy(ents(m), ents(n), n->used);
		m->used = n->used;
		m->count = n->count;
		link_after(c, c->tail, m);
		c->len += n->count;
	}
	return c;
}

/* Checks one node's entries: framing both ways and the fill limit. */
static int validate_node(const struct kv_list *l, const struct kv_list_node *n, size_t k,
			 char *why, size_t wl)
{
	if (n->count == 0 || (uint64_t)n->head + n->used > n->cap) {
		snprintf(why, wl, "node %zu: count %u head %u used %u cap %u", k, n->count, n->head,
			 n->used, n->cap);
		return -EINVAL;
	}
	if (n->count > 1 && (n->count > l->max_count || n->used > l->max_bytes)) {
		snprintf(why, wl, "node %zu: %u entries in %u bytes past the fill (%u, %u)", k,
			 n->count, n->used, l->max_count, l->max_bytes);
		return -EINVAL;
	}
	uint32_t off = 0, c = 0;
	while (off < n->used) {
		const uint8_t *b;
		size_t vl;
		uint32_t sz = ent_read(ents(n) + off, &b, &vl);
		if (sz > n->used - off || ent_prev(ents(n), off + sz) != off) {
			snprintf(why, wl, "node %zu entry %u at %u: bad framing (size %u of %u)", k, c,
				 off, sz, n->used);
			return -EINVAL;
		}
		off += sz;
		c++;
	}
	if (c != n->count) {
		snprintf(why, wl, "node %zu: %u entries found, count says %u", k, c, n->count);
		return -EINVAL;
	}
	return 0;
}

int kv_list_validate(const struct kv_list *l, char *why, size_t wl)
{
	size_t len = 0, k = 0, bytes = 0;
	const struct kv_list_node *prev = NULL;
	for (const struct kv_list_node *n = l->head; n; prev = n, n = n->next, k++) {
		bytes += sizeof(*n) + n->cap;
		if (n->prev != prev) {
			snprintf(why, wl, "node %zu: prev link broken", k);
			return -EINVAL;
		}
		int rc = validate_node(l, n, k, why, wl);
		if (rc)
			return rc;
		len += n->count;
	}
	if (l->tail != prev || len != l->len || k != l->nodes) {
		snprintf(why, wl, "list: tail %s, %zu entries in nodes vs len %zu, %zu nodes vs %zu",
			 l->tail == prev ? "ok" : "wrong", len, l->len, k, l->nodes);
		return -EINVAL;
	}
	if (bytes != l->bytes) {
		snprintf(why, wl, "list: nodes hold %zu bytes, counted %zu", bytes, l->bytes);
		return -EINVAL;
	}
	return 0;
}
