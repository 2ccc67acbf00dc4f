/* SPDX-License-Identifier: MIT */
/* Sorted-set commands over one key: ZADD, ZINCRBY, ZREM, ZCARD, ZCOUNT,
 * ZLEXCOUNT, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, the ZRANGE family,
 * ZPOPMIN, ZPOPMAX, ZRANDMEMBER, ZREMRANGEBY*, ZSCAN. Replies, errors and
 * the order of checks are Redis 7.0's (t_zset.c): arguments are read
 * before the key is looked up. */
#include "cmd_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "gather.h"
#include "glob.h"
#include "kvzset.h"
#include "num.h"

#define ERR_ZADD_NX_XX   "ERR XX and NX options at the same time are not compatible"
#define ERR_ZADD_GT_LT   "ERR GT, LT, and/or NX options at the same time are not compatible"
#define ERR_ZADD_INCR    "ERR INCR option supports a single increment-element pair"
#define ERR_ZSET_NAN     "ERR resulting score is not a number (NaN)"
#define ERR_NOT_FLOAT_RANGE "ERR min or max is not a float"
#define ERR_NOT_LEX_RANGE "ERR min or max not valid string range item"
#define ERR_LIMIT_RANK   "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
#define ERR_SCORES_LEX   "ERR syntax error, WITHSCORES not supported in combination with BYLEX"

struct kv_zset *kv_zset_new_for(const struct kv_call *c)
{
	size_t entries = KV_ZSET_MAX_LISTPACK_ENTRIES, value = KV_ZSET_MAX_LISTPACK_VALUE;
	if (c->cfg) {
		entries = c->cfg->zset_max_listpack_entries;
		value = c->cfg->zset_max_listpack_value;
	}
	return kv_zset_new(entries, value);
}

void kv_reply_zscore(struct kv_call *c, double s)
{
	char buf[KV_ZSET_SCORE_CHARS];
	kv_reply_bulk(c->out, buf, kv_zset_score_fmt(buf, s));
}

void kv_zset_reply_span(struct kv_call *c, const struct kv_zset *z, size_t first, size_t n,
		       bool rev, bool with_scores)
{
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml;
	double s;
	kv_reply_array(c->out, n * (with_scores ? 2 : 1));
	kv_zset_iter_init(z, &it, first, n, rev);
	while (kv_zset_iter_next(&it, &m, &ml, &s)) {
		kv_reply_bulk(c->out, m, ml);
		if (with_scores)
			kv_reply_zscore(c, s);
	}
}

/* ZADD's flags from argument 2 on; *scoreidx the first score. */
static int zadd_flags(struct kv_call *c, uint32_t *scoreidx, bool *ch)
{
	static const char *const names[] = { "nx", "xx", "gt", "lt", "incr" };
	int flags = 0;
	uint32_t i = 2;
	for (; i < c->argc; i++) {
		size_t k = 0;
		while (k < 5 && !kv_arg_is(c, i, names[k]))
			k++;
		if (k < 5)
			flags |= 1 << k;
		else if (kv_arg_is(c, i, "ch"))
			*ch = true;
		else
			break;
	}
	*scoreidx = i;
	return flags;
}

/* ZADD's checks of its options and pairs; false after the error. */
static bool zadd_check(struct kv_call *c, int flags, uint32_t scoreidx, double *scores)
{
	uint32_t elems = c->argc - scoreidx;
	if (elems == 0 || elems % 2) {
		kv_err(c, KV_ERR_SYNTAX);
		return false;
	}
	if ((flags & KV_ZADD_NX) && (flags & KV_ZADD_XX)) {
		kv_err(c, ERR_ZADD_NX_XX);
		return false;
	}
	if (((flags & (KV_ZADD_GT | KV_ZADD_LT)) && (flags & KV_ZADD_NX)) ||
	    ((flags & KV_ZADD_GT) && (flags & KV_ZADD_LT))) {
		kv_err(c, ERR_ZADD_GT_LT);
		return false;
	}
	if ((flags & KV_ZADD_INCR) && elems > 2) {
		kv_err(c, ERR_ZADD_INCR);
		return false;
	}
	for (uint32_t i = 0; i < elems / 2; i++)
		if (!kv_zset_score_parse(c->argv[scoreidx + 2 * i], c->argl[scoreidx + 2 * i],
					 &scores[i])) {
			kv_err(c, KV_ERR_NOT_FLOAT);
			return false;
		}
	return true;
}

struct zadd_result {
	int64_t added, updated;
	bool processed, failed;
	double score;
};

/* Adds the pairs to z; stops at a NaN or out of memory (after the error),
 * keeping what was added before, as Redis does. */
static void zadd_apply(struct kv_call *c, struct kv_zset *z, int flags, uint32_t scoreidx,
		       const double *scores, struct zadd_result *r)
{
	for (uint32_t i = 0; scoreidx + 2 * i < c->argc; i++) {
		uint32_t a = scoreidx + 2 * i + 1;
		int out = 0;
		if (kv_zset_add(z, c->argv[a], c->argl[a], scores[i], flags, &out, &r->score)) {
			kv_err_oom(c);
			r->failed = true;
			return;
		}
		if (out & KV_ZADD_NAN) {
			kv_err(c, ERR_ZSET_NAN);
			r->failed = true;
			return;
		}
		r->added += !!(out & KV_ZADD_ADDED);
		r->updated += !!(out & KV_ZADD_UPDATED);
		r->processed = !(out & KV_ZADD_NOP);
	}
}

/* ZADD and ZINCRBY over the pairs from scoreidx on. */
static void zadd_generic(struct kv_call *c, int flags, uint32_t scoreidx, bool ch)
{
	struct zadd_result r = { 0 };
	struct kv_pos pos;
	bool wrong;
	double *scores = malloc(((c->argc - scoreidx) / 2 + 1) * sizeof(*scores));

	if (!scores) {
		kv_err_oom(c);
		return;
	}
	if (!zadd_check(c, flags, scoreidx, scores))
		goto out;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		goto out;
	if (!z && (flags & KV_ZADD_XX)) {
		flags & KV_ZADD_INCR ? kv_reply_null(c->out) : kv_reply_int(c->out, 0);
		goto out;
	}
	if (!z) {
		if (!(z = kv_zset_new_for(c))) {
			kv_err_oom(c);
			goto out;
		}
		zadd_apply(c, z, flags, scoreidx, scores, &r);
		if (!kv_zset_len(z))
			kv_zset_free(z);
		else if (!kv_store_new_obj(c, &pos, KV_ZSET, z))
			goto out;
	} else {
		size_t before = kv_db_edit_begin(c->db, pos.entry);
		zadd_apply(c, z, flags, scoreidx, scores, &r);
		kv_db_edit_end(c->db, &pos, before);
	}
	if (r.failed)
		goto out;
	if (flags & KV_ZADD_INCR)
		r.processed ? kv_reply_zscore(c, r.score) : kv_reply_null(c->out);
	else
		kv_reply_int(c->out, r.added + (ch ? r.updated : 0));
out:
	free(scores);
}

/* ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...] */
void kv_zadd(struct kv_call *c)
{
	uint32_t scoreidx;
	bool ch = false;
	int flags = zadd_flags(c, &scoreidx, &ch);
	zadd_generic(c, flags, scoreidx, ch);
}

/* ZINCRBY key increment member */
void kv_zincrby(struct kv_call *c)
{
	zadd_generic(c, KV_ZADD_INCR, 2, false);
}

/* one member's removal, as kv_del_members() calls it */
static bool kv_zrem_one(void *obj, const void *m, size_t ml)
{
	return kv_zset_rem(obj, m, ml);
}

void kv_zrem(struct kv_call *c)
{
	kv_del_members(c, KV_ZSET, kv_zrem_one);
}

void kv_zcard(struct kv_call *c)
{
	struct kv_pos pos;
	bool wrong;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (!wrong)
		kv_reply_int(c->out, z ? (int64_t)kv_zset_len(z) : 0);
}

/* The kinds of range ZRANGE and ZREMRANGEBY* take. */
enum zrange_by { BY_RANK, BY_SCORE, BY_LEX };

/* Reads the range at arguments lo and hi and finds its span in z (NULL:
 * only the parse). False after the error. *empty: the span is empty. */
struct zspan {
	enum zrange_by by;
	int64_t start, stop;
	struct kv_zscore_range score;
	struct kv_zlex_range lex;
};

static bool zspan_parse(struct kv_call *c, struct zspan *s, uint32_t lo, uint32_t hi)
{
	switch (s->by) {
	case BY_RANK:
		return kv_arg_ll(c, lo, &s->start) && kv_arg_ll(c, hi, &s->stop);
	case BY_SCORE:
		if (kv_zset_score_range_parse(c->argv[lo], c->argl[lo], c->argv[hi], c->argl[hi],
					      &s->score))
			return true;
		kv_err(c, ERR_NOT_FLOAT_RANGE);
		return false;
	case BY_LEX:
		if (kv_zset_lex_range_parse(c->argv[lo], c->argl[lo], c->argv[hi], c->argl[hi],
					    &s->lex))
			return true;
		kv_err(c, ERR_NOT_LEX_RANGE);
		return false;
	}
	return false;
}

/* The ranks the range covers in z (rev: a rank range counted from the
 * top); false when none. */
static bool zspan_find(const struct kv_zset *z, const struct zspan *s, bool rev, size_t *first,
		       size_t *n)
{
	*n = 0;
	switch (s->by) {
	case BY_RANK:
		if (!kv_zset_span_rank(z, s->start, s->stop, first, n))
			return false;
		if (rev)
			*first = kv_zset_len(z) - (*first + *n);
		return true;
	case BY_SCORE:
		return kv_zset_span_score(z, &s->score, first, n);
	case BY_LEX:
		return kv_zset_span_lex(z, &s->lex, first, n);
	}
	return false;
}

/* ZCOUNT and ZLEXCOUNT */
static void zcount_generic(struct kv_call *c, enum zrange_by by)
{
	struct zspan s = { .by = by };
	struct kv_pos pos;
	size_t first, n = 0;
	bool wrong;
	if (!zspan_parse(c, &s, 2, 3))
		return;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	if (z)
		zspan_find(z, &s, false, &first, &n);
	kv_reply_int(c->out, (int64_t)n);
}

void kv_zcount(struct kv_call *c) { zcount_generic(c, BY_SCORE); }
void kv_zlexcount(struct kv_call *c) { zcount_generic(c, BY_LEX); }

void kv_zscore(struct kv_call *c)
{
	struct kv_pos pos;
	double s;
	bool wrong;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	if (z && kv_zset_score(z, c->argv[2], c->argl[2], &s))
		kv_reply_zscore(c, s);
	else
		kv_reply_null(c->out);
}

void kv_zmscore(struct kv_call *c)
{
	struct kv_pos pos;
	double s;
	bool wrong;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	kv_reply_array(c->out, c->argc - 2);
	for (uint32_t i = 2; i < c->argc; i++)
		if (z && kv_zset_score(z, c->argv[i], c->argl[i], &s))
			kv_reply_zscore(c, s);
		else
			kv_reply_null(c->out);
}

static void zrank_generic(struct kv_call *c, bool rev)
{
	struct kv_pos pos;
	bool wrong;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	long long r = z ? kv_zset_rank(z, c->argv[2], c->argl[2], rev) : -1;
	r < 0 ? kv_reply_null(c->out) : kv_reply_int(c->out, r);
}

void kv_zrank(struct kv_call *c) { zrank_generic(c, false); }
void kv_zrevrank(struct kv_call *c) { zrank_generic(c, true); }

/* How a ZRANGE-family command reads its options: which of BY and REV it
 * may still be given (fixed by the command's name otherwise). */
struct zrange_opts {
	enum zrange_by by;
	bool by_fixed, rev, rev_fixed, with_scores, has_limit;
	bool store;         /* ZRANGESTORE: no WITHSCORES */
	uint32_t key;       /* the source key's argument */
	int64_t offset, count;
};

/* The options after key min max; false after the error. */
static bool zrange_options(struct kv_call *c, struct zrange_opts *o)
{
	for (uint32_t i = o->key + 3; i < c->argc; i++) {
		if (!o->store && kv_arg_is(c, i, "withscores")) {
			o->with_scores = true;
		} else if (kv_arg_is(c, i, "limit") && c->argc - i - 1 >= 2) {
			if (!kv_arg_ll(c, i + 1, &o->offset) || !kv_arg_ll(c, i + 2, &o->count))
				return false;
			o->has_limit = true;
			i += 2;
		} else if (!o->rev_fixed && kv_arg_is(c, i, "rev")) {
			o->rev = true;
		} else if (!o->by_fixed && kv_arg_is(c, i, "bylex")) {
			o->by = BY_LEX;
			o->by_fixed = true;
		} else if (!o->by_fixed && kv_arg_is(c, i, "byscore")) {
			o->by = BY_SCORE;
			o->by_fixed = true;
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	if (o->has_limit && o->count != -1 && o->by == BY_RANK) {
		kv_err(c, ERR_LIMIT_RANK);
		return false;
	}
	if (o->with_scores && o->by == BY_LEX) {
		kv_err(c, ERR_SCORES_LEX);
		return false;
	}
	return true;
}

/* The options, then the range; false after the error. */
static bool zrange_read(struct kv_call *c, struct zrange_opts *o, struct zspan *s)
{
	uint32_t lo = o->key + 1, hi = o->key + 2;

	o->count = -1;
	if (!zrange_options(c, o))
		return false;
	s->by = o->by;
	/* a reversed score or lex range is given max first */
	if (o->rev && o->by != BY_RANK)
		return zspan_parse(c, s, hi, lo);
	return zspan_parse(c, s, lo, hi);
}

/* The ranks the read range covers in z (a LIMIT applied); false when
 * none. */
static bool zrange_span(const struct kv_zset *z, const struct zrange_opts *o,
			const struct zspan *s, size_t *first, size_t *n)
{
	if (!zspan_find(z, s, o->rev, first, n))
		return false;
	if (o->by != BY_RANK)
		kv_zset_span_limit(first, n, o->rev, o->has_limit ? o->offset : 0, o->count);
	return true;
}

static void zrange_generic(struct kv_call *c, struct zrange_opts o)
{
	struct zspan s;
	struct kv_pos pos;
	size_t first, n;
	bool wrong;

	o.key = 1;
	if (!zrange_read(c, &o, &s))
		return;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	if (!z || !zrange_span(z, &o, &s, &first, &n)) {
		kv_reply_array(c->out, 0);
		return;
	}
	kv_zset_reply_span(c, z, first, n, o.rev, o.with_scores);
}

/* A copy of ranks [first, first + n) of z; NULL without memory. exact:
 * scores as z holds them, -0 included (a copy to reply from), else as a
 * new set stores them (the compact form makes -0 0, as Redis's does). */
static struct kv_zset *zset_of_span(const struct kv_call *c, const struct kv_zset *z,
				    size_t first, size_t n, bool exact)
{
	struct kv_zset *dst = exact ? kv_zset_new(0, 0) : kv_zset_new_for(c);
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml;
	double s, now;
	int out;

	if (!dst)
		return NULL;
	kv_zset_iter_init(z, &it, first, n, false);
	while (kv_zset_iter_next(&it, &m, &ml, &s))
		if (kv_zset_add(dst, m, ml, s, 0, &out, &now)) {
			kv_zset_free(dst);
			return NULL;
		}
	return dst;
}

/* ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]:
 * the range replaces dst (deleted when empty); src gathered (gather.h). */
static void zrangestore_compute(struct kv_call *c, struct kv_gather *g)
{
	struct zrange_opts o = { .by = BY_RANK, .store = true, .key = 2 };
	const struct kv_gval *src = &g->vals[1];
	struct kv_zset *dst = NULL;
	struct zspan s;
	size_t first, n = 0;

	if (!zrange_read(c, &o, &s))
		return;
	if (src->found && src->type != KV_ZSET) {
		kv_err(c, KV_ERR_WRONGTYPE);
		return;
	}
	if (src->found && zrange_span(src->obj, &o, &s, &first, &n) && n &&
	    !(dst = zset_of_span(c, src->obj, first, n, false))) {
		kv_err_oom(c);
		return;
	}
	kv_gather_put_new(g, 0, KV_ZSET, dst);
	kv_reply_int(c->out, (int64_t)n);
}

const struct kv_gather_ops kv_zrangestore_ops = { kv_gather_sources, zrangestore_compute };

void kv_zrangestore(struct kv_call *c)
{
	kv_gather_run(c, &kv_zrangestore_ops);
}

void kv_zrange(struct kv_call *c)
{
	zrange_generic(c, (struct zrange_opts){ .by = BY_RANK });
}

void kv_zrevrange(struct kv_call *c)
{
	zrange_generic(c, (struct zrange_opts){ .by = BY_RANK, .by_fixed = true, .rev = true,
						.rev_fixed = true });
}

void kv_zrangebyscore(struct kv_call *c)
{
	zrange_generic(c, (struct zrange_opts){ .by = BY_SCORE, .by_fixed = true, .rev_fixed = true });
}

void kv_zrevrangebyscore(struct kv_call *c)
{
	zrange_generic(c, (struct zrange_opts){ .by = BY_SCORE, .by_fixed = true, .rev = true,
						.rev_fixed = true });
}

void kv_zrangebylex(struct kv_call *c)
{
	zrange_generic(c, (struct zrange_opts){ .by = BY_LEX, .by_fixed = true, .rev_fixed = true });
}

void kv_zrevrangebylex(struct kv_call *c)
{
	zrange_generic(c, (struct zrange_opts){ .by = BY_LEX, .by_fixed = true, .rev = true,
						.rev_fixed = true });
}

/* ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX */
static void zremrange_generic(struct kv_call *c, enum zrange_by by)
{
	struct zspan s = { .by = by };
	struct kv_pos pos;
	size_t first, n = 0;
	bool wrong;
	if (!zspan_parse(c, &s, 2, 3))
		return;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	if (z && zspan_find(z, &s, false, &first, &n)) {
		size_t before = kv_db_edit_begin(c->db, pos.entry);
		kv_zset_del_span(z, first, n);
		kv_db_edit_end(c->db, &pos, before);
	}
	kv_reply_int(c->out, (int64_t)n);
}

void kv_zremrangebyrank(struct kv_call *c) { zremrange_generic(c, BY_RANK); }
void kv_zremrangebyscore(struct kv_call *c) { zremrange_generic(c, BY_SCORE); }
void kv_zremrangebylex(struct kv_call *c) { zremrange_generic(c, BY_LEX); }

/* Replies ranks [first, first + n) of z as popped, the highest first
 * when max: member, score pairs flat (ZPOPMIN) or, nested, each pair an
 * array (ZMPOP); header: in an array of their own. */
static void zpop_reply_span(struct kv_call *c, const struct kv_zset *z, size_t first, size_t n,
			    bool max, bool nested, bool header)
{
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml;
	double s;

	if (header)
		kv_reply_array(c->out, nested ? n : 2 * n);
	kv_zset_iter_init(z, &it, first, n, max);
	while (kv_zset_iter_next(&it, &m, &ml, &s)) {
		if (nested)
			kv_reply_array(c->out, 2);
		kv_reply_bulk(c->out, m, ml);
		kv_reply_zscore(c, s);
	}
}

/* Replies and removes the count lowest (or, max, highest) members of
 * pos's set z, flat (ZPOPMIN). */
static void zpop_reply(struct kv_call *c, struct kv_pos *pos, struct kv_zset *z, bool max,
		       size_t count)
{
	size_t len = kv_zset_len(z), n = count < len ? count : len;
	size_t first = max ? len - n : 0;

	zpop_reply_span(c, z, first, n, max, false, true);
	size_t before = kv_db_edit_begin(c->db, pos->entry);
	kv_zset_del_span(z, first, n);
	kv_db_edit_end(c->db, pos, before);
}

/* ZPOPMIN / ZPOPMAX key [count] */
static void zpop_cmd(struct kv_call *c, bool max)
{
	struct kv_pos pos;
	int64_t count = 1;
	bool wrong;

	if (c->argc > 3) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	if (c->argc == 3) {
		if (!kv_str2ll(c->argv[2], c->argl[2], &count) || count < 0) {
			kv_err(c, KV_ERR_NOT_POSITIVE);
			return;
		}
	}
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	if (!z || count == 0) {
		kv_reply_array(c->out, 0);
		return;
	}
	zpop_reply(c, &pos, z, max, (size_t)count);
}

void kv_zpopmin(struct kv_call *c) { zpop_cmd(c, false); }
void kv_zpopmax(struct kv_call *c) { zpop_cmd(c, true); }

/* ZMPOP's arguments from the key count (argument at) on: which end
 * (max: the highest) and the count (1 when not given); false after the
 * error. */
static bool zmpop_args(struct kv_call *c, uint32_t at, bool *max, size_t *n)
{
	int64_t numkeys, count = -1;

	if (!kv_str2ll(c->argv[at], c->argl[at], &numkeys) || numkeys < 1) {
		kv_err(c, KV_ERR_NUMKEYS);
		return false;
	}
	if ((uint64_t)numkeys >= c->argc - at - 1) {
		kv_err(c, KV_ERR_SYNTAX);
		return false;
	}
	uint32_t where = at + 1 + (uint32_t)numkeys;
	*max = kv_arg_is(c, where, "max");
	if (!*max && !kv_arg_is(c, where, "min")) {
		kv_err(c, KV_ERR_SYNTAX);
		return false;
	}
	for (uint32_t i = where + 1; i < c->argc; i++) {
		if (count == -1 && kv_arg_is(c, i, "count") && i + 1 < c->argc) {
			i++;
			if (!kv_str2ll(c->argv[i], c->argl[i], &count) || count < 1) {
				kv_err(c, "ERR count should be greater than 0");
				return false;
			}
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	*n = count < 0 ? 1 : (size_t)count;
	return true;
}

/* The pop a request asks for: ZMPOP's and BZMPOP's arguments, or
 * BZPOPMIN's and BZPOPMAX's one member; a blocking command's timeout
 * checked after them, as Redis does. False after the error. */
static bool zmpop_args_of(struct kv_call *c, bool *max, size_t *n)
{
	if (c->cmd->fn == kv_zmpop)
		return zmpop_args(c, 1, max, n);
	if (c->cmd->fn == kv_bzmpop)
		return zmpop_args(c, 2, max, n) && kv_arg_timeout(c);
	*max = c->cmd->fn == kv_bzpopmax;
	*n = 1;
	return kv_arg_timeout(c);
}

/* zmpop_args_of() without a reply (a gather's or a write's reread). */
static bool zmpop_args_quiet(const struct kv_call *c, bool *max, size_t *n)
{
	struct kv_reply scratch;
	struct kv_call q;
	bool ok;

	kv_call_quiet(c, &q, &scratch);
	ok = zmpop_args_of(&q, max, n);
	kv_reply_free(&scratch);
	return ok;
}

/* ZMPOP's gather: each key's type and, for a sorted set, a copy of the
 * members it would give. */
static int probe_zpops(struct kv_call *c, uint32_t k, uint32_t arg, bool copy,
		       struct kv_gval *v)
{
	size_t n, len;
	bool max;

	kv_gather_type(c, k, arg, copy, v);
	if (!zmpop_args_quiet(c, &max, &n) || !v->found || v->type != KV_ZSET)
		return 0;
	struct kv_pos pos;
	const struct kv_zset *z = kv_entry_obj(kv_arg_key(c, arg, &pos));

	len = kv_zset_len(z);
	if (n > len)
		n = len;
	v->obj = zset_of_span(c, z, max ? len - n : 0, n, true);
	v->owned = true;
	return v->obj ? 0 : -ENOMEM;
}

/* ZMPOP's write: the members given, from the key's end (held since). */
static int zpop_members(struct kv_call *c, uint32_t arg, struct kv_gput *p)
{
	struct kv_pos pos;
	size_t n, len;
	bool wrong, max;
	struct kv_zset *z = kv_arg_obj(c, arg, KV_ZSET, &pos, &wrong);

	(void)p;
	if (!z || !zmpop_args_quiet(c, &max, &n))
		return 0;
	len = kv_zset_len(z);
	if (n > len)
		n = len;
	size_t before = kv_db_edit_begin(c->db, pos.entry);

	kv_zset_del_span(z, max ? len - n : 0, n);
	kv_db_edit_end(c->db, &pos, before);
	return 0;
}

/* ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]: the first key
 * holding a sorted set gives its members, each with its score; BZMPOP,
 * BZPOPMIN and BZPOPMAX as they answer when they do not block (BZPOPMIN:
 * the key, the member and its score, flat). */
static void zmpop_compute(struct kv_call *c, struct kv_gather *g)
{
	size_t n;
	bool max;

	if (!zmpop_args_of(c, &max, &n))
		return;
	for (uint32_t k = 0; k < g->nkeys; k++) {
		const struct kv_gval *v = &g->vals[k];

		if (!v->found)
			continue;
		if (v->type != KV_ZSET) {
			kv_err(c, KV_ERR_WRONGTYPE);
			return;
		}
		bool flat = c->cmd->fn == kv_bzpopmin || c->cmd->fn == kv_bzpopmax;

		kv_reply_array(c->out, flat ? 3 : 2);
		kv_reply_bulk(c->out, c->argv[g->arg[k]], c->argl[g->arg[k]]);
		zpop_reply_span(c, v->obj, 0, kv_zset_len(v->obj), max, !flat, !flat);
		kv_gather_add_put(g, k, zpop_members);
		return;
	}
	kv_reply_null_array(c);
}

const struct kv_gather_ops kv_zmpop_ops = { probe_zpops, zmpop_compute };

void kv_zmpop(struct kv_call *c)
{
	kv_gather_run(c, &kv_zmpop_ops);
}

void kv_bzmpop(struct kv_call *c)
{
	kv_gather_run(c, &kv_zmpop_ops);
}

void kv_bzpopmin(struct kv_call *c)
{
	kv_gather_run(c, &kv_zmpop_ops);
}

void kv_bzpopmax(struct kv_call *c)
{
	kv_gather_run(c, &kv_zmpop_ops);
}

static uint64_t rng_next(void)
{
	uint64_t *r = kv_rng();
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* Replies the member at rank r (with its score when with_scores). */
static void reply_rank(struct kv_call *c, const struct kv_zset *z, size_t r, bool with_scores)
{
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml;
	double s;
	kv_zset_iter_init(z, &it, r, 1, false);
	kv_zset_iter_next(&it, &m, &ml, &s);
	kv_reply_bulk(c->out, m, ml);
	if (with_scores)
		kv_reply_zscore(c, s);
}

/* count distinct members of z (fewer than it has), in random order. */
static void zrand_distinct(struct kv_call *c, const struct kv_zset *z, size_t count,
			   bool with_scores)
{
	size_t n = kv_zset_len(z);
	size_t *ranks = malloc(n * sizeof(*ranks));
	if (!ranks) {
		kv_err_oom(c);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ranks[i] = i;
	kv_reply_array(c->out, count * (with_scores ? 2 : 1));
	for (size_t i = 0; i < count; i++) {
		size_t j = i + rng_next() % (n - i), t = ranks[i];
		ranks[i] = ranks[j];
		ranks[j] = t;
		reply_rank(c, z, ranks[i], with_scores);
	}
	free(ranks);
}

/* ZRANDMEMBER key [count [WITHSCORES]] */
void kv_zrandmember(struct kv_call *c)
{
	struct kv_pos pos;
	int64_t count = 1;
	bool wrong, with_scores = c->argc == 4;

	if (c->argc >= 3) {
		if (!kv_arg_ll(c, 2, &count))
			return;
		if (count == INT64_MIN) {
			kv_reply_errorf(c->out, KV_ERR_RANGE_FMT, -9223372036854775807LL,
					9223372036854775807LL);
			return;
		}
		if (c->argc > 4 || (with_scores && !kv_arg_is(c, 3, "withscores"))) {
			kv_err(c, KV_ERR_SYNTAX);
			return;
		}
		if (with_scores && (count < -INT64_MAX / 2 || count > INT64_MAX / 2)) {
			kv_err(c, KV_ERR_OUT_OF_RANGE);
			return;
		}
	}
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	if (c->argc == 2) {
		z ? reply_rank(c, z, rng_next() % kv_zset_len(z), false) : kv_reply_null(c->out);
		return;
	}
	size_t len = z ? kv_zset_len(z) : 0;
	if (!z || count == 0) {
		kv_reply_array(c->out, 0);
	} else if (count < 0) {
		uint64_t k = (uint64_t)-count;
		kv_reply_array(c->out, k * (with_scores ? 2 : 1));
		while (k--)
			reply_rank(c, z, rng_next() % len, with_scores);
	} else if ((uint64_t)count >= len) {
		kv_zset_reply_span(c, z, 0, len, false, with_scores);
	} else {
		zrand_distinct(c, z, (size_t)count, with_scores);
	}
}

/* ZSCAN key cursor [MATCH pattern] [COUNT count]: the whole set in one
 * reply (cursor 0), which SCAN's guarantees allow for any size. */
void kv_zscan(struct kv_call *c)
{
	struct kv_pos pos;
	uint64_t cursor;
	int64_t count;
	const char *pat = NULL;
	size_t plen = 0;
	bool wrong;

	if (!kv_arg_cursor(c, 2, &cursor))
		return;
	struct kv_zset *z = kv_arg_obj(c, 1, KV_ZSET, &pos, &wrong);
	if (wrong)
		return;
	if (!z) {
		kv_reply_array(c->out, 2);
		kv_reply_bulk(c->out, "0", 1);
		kv_reply_array(c->out, 0);
		return;
	}
	{
		for (uint32_t i = 3; i < c->argc; i += 2) {
			bool arg = i + 1 < c->argc;
			if (arg && kv_arg_is(c, i, "count")) {
				if (!kv_arg_ll(c, i + 1, &count))
					return;
				if (count < 1) {
					kv_err(c, KV_ERR_SYNTAX);
					return;
				}
			} else if (arg && kv_arg_is(c, i, "match")) {
				pat = c->argv[i + 1];
				plen = c->argl[i + 1];
			} else {
				kv_err(c, KV_ERR_SYNTAX);
				return;
			}
		}
	}
	struct kv_part found;
	struct kv_zset_iter it;
	const uint8_t *m;
	size_t ml;
	double s;
	char buf[KV_ZSET_SCORE_CHARS];

	kv_part_init(&found);
	kv_zset_iter_init(z, &it, 0, kv_zset_len(z), false);
	while (kv_zset_iter_next(&it, &m, &ml, &s)) {
		if (pat && !kv_glob_match(pat, plen, (const char *)m, ml))
			continue;
		kv_part_add(&found, (const char *)m, ml);
		kv_part_add(&found, buf, kv_zset_score_fmt(buf, s));
	}
	if (found.failed)
		kv_err_oom(c);
	else
		kv_part_reply_walk(&found, 0, c->out);
	kv_part_free(&found);
}
