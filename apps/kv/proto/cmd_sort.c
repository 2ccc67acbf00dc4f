/* SPDX-License-Identifier: MIT */
/* SORT and SORT_RO: a list's, set's or sorted set's elements ordered by
 * their numeric value, their bytes (ALPHA), or the values other keys hold
 * (BY pattern), with the values other keys hold for each (GET pattern),
 * replied or stored as a list (STORE).
 *
 * The source and the keys its patterns name are read on the source's
 * shard: with several shards a pattern that names keys is refused as
 * Redis Cluster refuses it (the whole key is hashed, so those keys are
 * scattered). STORE's destination is a key of the request (the S flag):
 * on another shard the sorted list is built on the source's shard and
 * stored there as the gather commands store (gather.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_impl.h"
#include "gather.h"
#include "kvlist.h"
#include "kvzset.h"

#define ERR_SCORES   "ERR One or more scores can't be converted into double"
#define ERR_BY_SHARD "ERR BY option of SORT denied in Cluster mode."
#define ERR_GET_SHARD "ERR GET option of SORT denied in Cluster mode."

struct sort_opts {
	bool desc, alpha, dontsort;
	int64_t limit_start, limit_count;
	uint32_t by;                /* BY's argument index; 0: none */
	uint32_t store;             /* STORE's destination's; 0: none */
	uint32_t nget;
	uint32_t *get;              /* GET patterns' argument indexes */
};

/* The bytes before the first NUL, as Redis's C-string scans see them. */
static size_t cstr_len(const char *s, size_t n)
{
	const char *z = memchr(s, 0, n);

	return z ? (size_t)(z - s) : n;
}

/* Whether a BY or GET pattern names keys: it has a '*' ("#" and a fixed
 * name read nothing). */
static bool pattern_reads_keys(const char *p, size_t n)
{
	return memchr(p, '*', cstr_len(p, n)) != NULL;
}

/* Whether a GET pattern is "#": the element itself. */
static bool pattern_is_self(const char *p, size_t n)
{
	return cstr_len(p, n) == 1 && p[0] == '#';
}

static bool several_shards(const struct kv_call *c)
{
	return c->cfg && c->cfg->shards > 1;
}

static void opts_free(struct sort_opts *o)
{
	free(o->get);
	o->get = NULL;
}

/* Parses the options from argument 2 on, in Redis's order of checks; false
 * after the error. readonly: SORT_RO, where STORE is no option. Free o
 * with opts_free() either way. */
static bool parse_opts(struct kv_call *c, bool readonly, struct sort_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->limit_count = -1;
	o->get = malloc(c->argc * sizeof(*o->get));
	if (!o->get) {
		kv_err_oom(c);
		return false;
	}
	for (uint32_t j = 2; j < c->argc; j++) {
		uint32_t left = c->argc - j - 1;

		if (kv_arg_is(c, j, "asc")) {
			o->desc = false;
		} else if (kv_arg_is(c, j, "desc")) {
			o->desc = true;
		} else if (kv_arg_is(c, j, "alpha")) {
			o->alpha = true;
		} else if (kv_arg_is(c, j, "limit") && left >= 2) {
			if (!kv_arg_ll(c, j + 1, &o->limit_start) ||
			    !kv_arg_ll(c, j + 2, &o->limit_count))
				return false;
			j += 2;
		} else if (!readonly && kv_arg_is(c, j, "store") && left >= 1) {
			o->store = ++j;
		} else if (kv_arg_is(c, j, "by") && left >= 1) {
			o->by = ++j;
			/* a pattern without '*' names no key: nothing to sort by */
			if (!pattern_reads_keys(c->argv[j], c->argl[j]))
				o->dontsort = true;
			else if (several_shards(c)) {
				kv_err(c, ERR_BY_SHARD);
				return false;
			}
		} else if (kv_arg_is(c, j, "get") && left >= 1) {
			j++;
			if (several_shards(c) && pattern_reads_keys(c->argv[j], c->argl[j]) &&
			    !pattern_is_self(c->argv[j], c->argl[j])) {
				kv_err(c, ERR_GET_SHARD);
				return false;
			}
			o->get[o->nget++] = j;
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* One element being sorted. */
struct sort_item {
	uint32_t elem;              /* its string in sort_ctx.elems */
	uint32_t cmp;               /* ALPHA BY: its BY value in sort_ctx.cmps */
	double score;
};

struct sort_ctx {
	struct kv_call *c;
	const struct sort_opts *o;
	struct kv_part elems, cmps;  /* the elements and BY values, copied */
	struct sort_item *items;
	size_t n;
	char *key;                   /* a pattern's key, built */
	size_t key_room;
	bool bypattern, binary;      /* compare BY values; bytes, not C strings */
};

static const char *part_str(const struct kv_part *p, uint32_t i, size_t *len)
{
	*len = p->strs[i].len;
	return p->bytes ? p->bytes + p->strs[i].off : ""; /* only empty strings so far */
}

/* A value found by a pattern (e: a hash field's, when it is one). */
struct pat_val {
	const char *p;
	size_t len;
	struct kv_elem e;
};

/* The value pattern pat names for element el, as Redis's SORT reads it:
 * "#" the element itself; else the string key the first '*' replaced by
 * the element makes, or with "->field" after the '*' that field of the
 * hash it names. Returns 1 with *out set, 0 when there is none (no '*',
 * no key, the wrong type, no field), or -ENOMEM. */
static int pattern_value(struct sort_ctx *x, uint32_t arg, const char *el, size_t ell,
			 struct pat_val *out)
{
	struct kv_call *c = x->c;
	const char *pat = c->argv[arg];
	size_t patl = c->argl[arg], scan = cstr_len(pat, patl), fieldlen = 0;
	const char *star, *field = NULL;
	struct kv_pos pos;
	struct kv_entry *e;

	if (pattern_is_self(pat, patl)) {
		out->p = el;
		out->len = ell;
		return 1;
	}
	star = memchr(pat, '*', scan);
	if (!star)
		return 0;
	for (const char *f = star + 1; f + 1 < pat + scan; f++) {
		if (f[0] == '-' && f[1] == '>') {
			if (f + 2 < pat + scan) {
				field = f + 2;
				fieldlen = patl - (size_t)(field - pat);
			}
			break;
		}
	}
	size_t prefix = (size_t)(star - pat);
	size_t postfix = patl - prefix - 1 - (fieldlen ? fieldlen + 2 : 0);
	size_t klen = prefix + ell + postfix;

	if (!x->key || klen > x->key_room) {
		char *k = realloc(x->key, klen + 1); /* + 1: never a 0-byte allocation */

		if (!k)
			return -ENOMEM;
		x->key = k;
		x->key_room = klen;
	}
	memcpy(x->key, pat, prefix);
	memcpy(x->key + prefix, el, ell);
	memcpy(x->key + prefix + ell, star + 1, postfix);
	e = kv_db_lookup(c->db, x->key, klen, c->now, &pos);
	if (!e)
		return 0;
	if (!field) {
		if (kv_entry_type(e) != KV_STRING)
			return 0;
		out->p = kv_entry_value(e, &out->len);
		return 1;
	}
	if (kv_entry_type(e) != KV_HASH ||
	    !kv_coll_find(kv_entry_obj(e), field, fieldlen, &out->e))
		return 0;
	out->p = out->e.v;
	out->len = out->e.vlen;
	return 1;
}

static int add_elem(struct sort_ctx *x, const void *m, size_t ml)
{
	x->items[x->n] = (struct sort_item){ .elem = x->elems.count };
	kv_part_add(&x->elems, m, ml);
	if (x->elems.failed)
		return -ENOMEM;
	x->n++;
	return 0;
}

/* The elements to sort, into x->items: all of them, or with nothing to
 * sort (BY a fixed name) only the range LIMIT keeps of a list's or sorted
 * set's own order, desc from the far end. *start and *end: the range of
 * x->items to output, adjusted to what was loaded. */
static int load(struct sort_ctx *x, enum kv_type t, void *obj, int64_t *start, int64_t *end)
{
	const struct sort_opts *o = x->o;
	size_t len = t == KV_LIST ? kv_list_len(obj) : t == KV_SET ? kv_coll_len(obj) :
		     kv_zset_len(obj);
	size_t want = len;
	int64_t s, e;
	bool ranged;

	s = o->limit_start < 0 ? 0 : o->limit_start;
	/* wrapping as Redis's long arithmetic does on a huge count */
	e = o->limit_count < 0 ? (int64_t)len - 1 :
	    (int64_t)((uint64_t)s + (uint64_t)o->limit_count - 1);
	if (s >= (int64_t)len) {
		s = (int64_t)len - 1;
		e = (int64_t)len - 2;
	}
	if (e >= (int64_t)len)
		e = (int64_t)len - 1;
	ranged = t != KV_SET && o->dontsort && (s != 0 || e != (int64_t)len - 1);
	if (ranged)
		want = e >= s ? (size_t)(e - s + 1) : 0;
	x->items = malloc((want ? want : 1) * sizeof(*x->items));
	if (!x->items)
		return -ENOMEM;
	*start = s;
	*end = e;
	if (t == KV_LIST) {
		struct kv_list_iter it;
		const uint8_t *p;
		size_t pl, from = 0;

		if (o->dontsort) {
			if (e < s)
				return 0;
			from = o->desc ? len - (size_t)s - 1 : (size_t)s;
			*end = e - s;
			*start = 0;
		}
		kv_list_iter_init(obj, &it, from, !(o->dontsort && o->desc));
		while (x->n < want && (p = kv_list_iter_next(&it, &pl)))
			if (add_elem(x, p, pl))
				return -ENOMEM;
	} else if (t == KV_SET) {
		struct kv_coll_iter it = KV_COLL_ITER_INIT;
		struct kv_elem el;

		while (kv_coll_next(obj, &it, &el))
			if (add_elem(x, el.m, el.mlen))
				return -ENOMEM;
	} else {
		struct kv_zset_iter it;
		const uint8_t *m;
		size_t ml;
		double sc;
		bool rev = o->dontsort && o->desc;

		if (o->dontsort && !want) {
			return 0;
		} else if (o->dontsort) {
			kv_zset_iter_init(obj, &it, rev ? len - (size_t)s - want : (size_t)s, want,
					  rev);
			*end = e - s;
			*start = 0;
		} else {
			kv_zset_iter_init(obj, &it, 0, len, false);
		}
		while (kv_zset_iter_next(&it, &m, &ml, &sc))
			if (add_elem(x, m, ml))
				return -ENOMEM;
	}
	return 0;
}

/* strtod as Redis's SORT applies it to a value: false when text follows
 * the number, it is out of range or not a number. */
static bool parse_score(const char *s, size_t n, double *out)
{
	char buf[128], *heap = NULL, *z = buf, *end;

	if (n >= sizeof(buf)) {
		heap = malloc(n + 1);
		if (!heap)
			return false;
		z = heap;
	}
	memcpy(z, s, n);
	z[n] = 0;
	errno = 0;
	*out = strtod(z, &end);
	bool ok = end[0] == 0 && errno != ERANGE && !isnan(*out);
	free(heap);
	return ok;
}

/* Fills each item's score or BY value; returns 1 when a score is not a
 * number (the command's error), 0, or -ENOMEM. */
static int load_keys(struct sort_ctx *x)
{
	const struct sort_opts *o = x->o;
	bool bad = false;

	for (size_t i = 0; i < x->n; i++) {
		struct sort_item *it = &x->items[i];
		struct pat_val v = { 0 };
		size_t ell;
		const char *el = part_str(&x->elems, it->elem, &ell);

		it->score = 0;
		if (o->by) {
			int rc = pattern_value(x, o->by, el, ell, &v);

			if (rc < 0)
				return rc;
			if (o->alpha) {
				it->cmp = x->cmps.count;
				if (rc)
					kv_part_add(&x->cmps, v.p, v.len);
				else
					kv_part_add_nil(&x->cmps);
				if (x->cmps.failed)
					return -ENOMEM;
				continue;
			}
			if (!rc)
				continue; /* no value: scored 0 */
		} else {
			v.p = el;
			v.len = ell;
		}
		if (!o->alpha && !parse_score(v.p, v.len, &it->score))
			bad = true;
	}
	return bad ? 1 : 0;
}

static int bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
	int r = memcmp(a, b, al < bl ? al : bl);

	return r ? r : (al > bl) - (al < bl);
}

/* Redis collates without STORE (strcoll in the C locale: the bytes up
 * to a NUL), and compares all the bytes with it. */
static int text_cmp(const struct sort_ctx *x, const char *a, size_t al, const char *b, size_t bl)
{
	if (x->binary)
		return bytes_cmp(a, al, b, bl);
	return bytes_cmp(a, cstr_len(a, al), b, cstr_len(b, bl));
}

static int item_cmp(const void *pa, const void *pb, void *arg)
{
	const struct sort_ctx *x = arg;
	const struct sort_item *a = pa, *b = pb;
	size_t al, bl;
	const char *as = part_str(&x->elems, a->elem, &al), *bs = part_str(&x->elems, b->elem, &bl);
	int r;

	if (!x->o->alpha) {
		r = a->score > b->score ? 1 : a->score < b->score ? -1 : bytes_cmp(as, al, bs, bl);
	} else if (x->bypattern) {
		bool an = x->cmps.strs[a->cmp].len == KV_PART_NIL;
		bool bn = x->cmps.strs[b->cmp].len == KV_PART_NIL;

		if (an || bn) {
			r = an == bn ? 0 : an ? -1 : 1;
		} else {
			as = part_str(&x->cmps, a->cmp, &al);
			bs = part_str(&x->cmps, b->cmp, &bl);
			r = text_cmp(x, as, al, bs, bl);
		}
	} else {
		r = text_cmp(x, as, al, bs, bl);
	}
	if (x->o->desc)
		r = -r;
	/* equal keys keep the order they were loaded in */
	return r ? r : (a->elem > b->elem) - (a->elem < b->elem);
}

/* What a sort produces: items[start..end], each element or its GET
 * values. */
typedef int sort_emit_fn(struct sort_ctx *x, const char *p, size_t len, bool found, void *arg);

static int emit_range(struct sort_ctx *x, int64_t start, int64_t end, sort_emit_fn *emit,
		      void *arg)
{
	const struct sort_opts *o = x->o;

	for (int64_t j = start; j <= end; j++) {
		size_t ell;
		const char *el = part_str(&x->elems, x->items[j].elem, &ell);

		if (!o->nget && emit(x, el, ell, true, arg))
			return -ENOMEM;
		for (uint32_t g = 0; g < o->nget; g++) {
			struct pat_val v = { 0 };
			int rc = pattern_value(x, o->get[g], el, ell, &v);

			if (rc < 0 || emit(x, v.p, v.len, rc > 0, arg))
				return -ENOMEM;
		}
	}
	return 0;
}

static int emit_reply(struct sort_ctx *x, const char *p, size_t len, bool found, void *arg)
{
	(void)arg;
	if (found)
		kv_reply_bulk(x->c->out, p, len);
	else
		kv_reply_null(x->c->out);
	return 0;
}

static int emit_list(struct sort_ctx *x, const char *p, size_t len, bool found, void *arg)
{
	(void)x;
	return kv_list_push(arg, KV_LIST_TAIL, found ? p : "", found ? len : 0);
}

static void ctx_free(struct sort_ctx *x)
{
	kv_part_free(&x->elems);
	kv_part_free(&x->cmps);
	free(x->items);
	free(x->key);
}

/* Sorts the value obj of type t (NULL: absent) with options o, then
 * replies the result, or (to: not NULL) pushes it to *to, a new list.
 * Returns 0, 1 when a score is not a number (nothing replied), or
 * -ENOMEM. */
static int sort_value(struct kv_call *c, const struct sort_opts *o, enum kv_type t, void *obj,
		      struct kv_list **to)
{
	struct sort_opts eff = *o;
	struct sort_ctx x = { .c = c, .o = &eff };
	int64_t start = 0, end = -1;
	int rc;

	/* a set has no order of its own: a stored one is sorted by its bytes,
	 * so the stored list does not depend on how the set is laid out */
	if (eff.dontsort && t == KV_SET && to) {
		eff.dontsort = false;
		eff.alpha = true;
		eff.by = 0;
	}
	x.bypattern = eff.by != 0;
	x.binary = to != NULL;
	kv_part_init(&x.elems);
	kv_part_init(&x.cmps);
	rc = obj ? load(&x, t, obj, &start, &end) : 0;
	if (!rc && !eff.dontsort && x.n) {
		rc = load_keys(&x);
		if (!rc)
			qsort_r(x.items, x.n, sizeof(*x.items), item_cmp, &x);
	}
	if (rc)
		goto out;
	size_t per = eff.nget ? eff.nget : 1;
	size_t count = end >= start ? (size_t)(end - start + 1) : 0;

	if (to) {
		*to = kv_list_new(kv_call_list_fill(c));
		rc = *to ? emit_range(&x, start, end, emit_list, *to) : -ENOMEM;
	} else {
		kv_reply_array(c->out, count * per);
		rc = emit_range(&x, start, end, emit_reply, NULL);
	}
out:
	ctx_free(&x);
	return rc;
}

static bool sortable(enum kv_type t)
{
	return t == KV_LIST || t == KV_SET || t == KV_ZSET;
}

/* Redis converts a packed sorted set to its skip list before it sorts
 * (OBJECT ENCODING shows it after): done the same. Returns 0 or
 * -ENOMEM. */
static int sort_prepare(struct kv_call *c, struct kv_pos *pos)
{
	size_t before;
	int rc;

	if (kv_entry_type(pos->entry) != KV_ZSET)
		return 0;
	before = kv_db_edit_begin(c->db, pos->entry);
	rc = kv_zset_to_skiplist(kv_entry_obj(pos->entry));
	kv_db_edit_end(c->db, pos, before);
	return rc;
}

/* SORT without STORE, and SORT_RO: the reply of the source's sort. */
static void sort_reply(struct kv_call *c, bool readonly)
{
	struct sort_opts o;
	struct kv_pos pos;
	struct kv_entry *e;
	size_t mark = c->out->len;
	int rc;

	if (!parse_opts(c, readonly, &o)) {
		opts_free(&o);
		return;
	}
	e = kv_arg_key(c, 1, &pos);
	if (e && !sortable(kv_entry_type(e))) {
		opts_free(&o);
		kv_err(c, KV_ERR_WRONGTYPE);
		return;
	}
	rc = e ? sort_prepare(c, &pos) : 0;
	if (!rc)
		rc = sort_value(c, &o, e ? kv_entry_type(e) : KV_LIST, e ? kv_entry_obj(e) : NULL,
				NULL);
	opts_free(&o);
	if (rc) {
		kv_reply_truncate(c->out, mark);
		if (rc > 0)
			kv_err(c, ERR_SCORES);
		else
			kv_err_oom(c);
	}
}

/* STORE's gather, on the source's shard: the sorted list itself (type
 * KV_LIST, owned), or the source's type and no object when it cannot be
 * sorted (the wrong type, or a score that is not a number); nothing when
 * the source is absent or the options are wrong (compute replies why). */
static int sort_gather(struct kv_call *c, uint32_t k, uint32_t arg, bool copy,
		       struct kv_gval *v)
{
	struct kv_reply scratch;
	struct sort_opts o;
	struct kv_call q;
	struct kv_pos pos;
	struct kv_entry *e;
	struct kv_list *l = NULL;
	bool ok;
	int rc;

	(void)copy;
	if (k)
		return 0; /* the destination: replaced whatever it holds */
	kv_call_quiet(c, &q, &scratch);
	ok = parse_opts(&q, false, &o);
	kv_reply_free(&scratch);
	e = ok ? kv_arg_key(c, arg, &pos) : NULL;
	if (!e) {
		opts_free(&o);
		return 0;
	}
	v->found = true;
	v->type = kv_entry_type(e);
	rc = !sortable(v->type) ? 1 : sort_prepare(c, &pos);
	if (!rc)
		rc = sort_value(c, &o, v->type, kv_entry_obj(e), &l);
	opts_free(&o);
	if (rc) {
		kv_list_free(l);
		return rc < 0 ? rc : 0;
	}
	v->type = KV_LIST;
	v->obj = l;
	v->owned = true;
	return 0;
}

static void sort_compute(struct kv_call *c, struct kv_gather *g)
{
	struct sort_opts o;
	struct kv_gval *v = &g->vals[0];
	size_t n;
	bool ok = parse_opts(c, false, &o);

	opts_free(&o);
	if (!ok)
		return;
	if (v->found && !v->obj) {
		if (sortable(v->type))
			kv_err(c, ERR_SCORES);
		else
			kv_err(c, KV_ERR_WRONGTYPE);
		return;
	}
	n = v->found ? kv_list_len(v->obj) : 0;
	/* an empty result deletes the destination */
	kv_gather_put_new(g, 1, KV_LIST, n ? v->obj : NULL);
	if (n)
		v->obj = NULL; /* the write's now */
	kv_reply_int(c->out, (int64_t)n);
}

const struct kv_gather_ops kv_sort_ops = { sort_gather, sort_compute };

/* SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
 *      [ALPHA] [STORE destination] */
void kv_sort(struct kv_call *c)
{
	if (kv_cmd_nkeys(c->cmd, c->argc, c->argv, c->argl) > 1)
		kv_gather_run(c, &kv_sort_ops);
	else
		sort_reply(c, false);
}

/* SORT_RO: SORT without STORE. */
void kv_sort_ro(struct kv_call *c)
{
	sort_reply(c, true);
}
