/* SPDX-License-Identifier: MIT */
/* Sorted-set commands over several keys: ZUNION, ZINTER, ZDIFF, their
 * STORE forms and ZINTERCARD, with Redis 7.0's options (WEIGHTS,
 * AGGREGATE, WITHSCORES, LIMIT), replies and order of checks (t_zset.c:
 * the count, then every key's type, then the options). Sets count as
 * sorted sets whose members all score 1. The keys' values are read
 * through gather.h, so they may live on any shards. */
#include "cmd_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gather.h"
#include "kvzset.h"
#include "num.h"

#define ERR_WEIGHT "ERR weight value is not a float"

enum zop { ZOP_UNION, ZOP_INTER, ZOP_DIFF };
enum zagg { AGG_SUM, AGG_MIN, AGG_MAX };

/* One input: a sorted set, a set, or nothing (an absent key). */
struct zsrc {
	enum kv_type type;
	const void *obj;    /* NULL: absent */
	double weight;
};

struct zsrc_iter {
	struct kv_zset_iter z;
	struct kv_coll_iter c;
};

static size_t zsrc_len(const struct zsrc *s)
{
	if (!s->obj)
		return 0;
	return s->type == KV_ZSET ? kv_zset_len(s->obj) : kv_coll_len(s->obj);
}

static void zsrc_iter_init(const struct zsrc *s, struct zsrc_iter *it)
{
	struct kv_coll_iter start = KV_COLL_ITER_INIT;

	it->c = start;
	if (s->type == KV_ZSET)
		kv_zset_iter_init(s->obj, &it->z, 0, kv_zset_len(s->obj), false);
}

static bool zsrc_next(const struct zsrc *s, struct zsrc_iter *it, struct kv_elem *e,
		      double *score)
{
	const uint8_t *m;

	if (s->type == KV_ZSET) {
		if (!kv_zset_iter_next(&it->z, &m, &e->mlen, score))
			return false;
		e->m = (const char *)m;
		return true;
	}
	*score = 1.0;
	return kv_coll_next(s->obj, &it->c, e);
}

static bool zsrc_find(const struct zsrc *s, const struct kv_elem *e, double *score)
{
	if (!s->obj)
		return false;
	if (s->type == KV_ZSET)
		return kv_zset_score(s->obj, e->m, e->mlen, score);
	*score = 1.0;
	return kv_coll_find(s->obj, e->m, e->mlen, NULL);
}

/* Combines val into *acc as Redis does: a sum of +inf and -inf is 0, and
 * a NaN val leaves MIN and MAX as they were. */
static void aggregate(double *acc, double val, enum zagg agg)
{
	if (agg == AGG_SUM) {
		*acc += val;
		if (isnan(*acc))
			*acc = 0.0;
	} else if (agg == AGG_MIN) {
		*acc = val < *acc ? val : *acc;
	} else {
		*acc = val > *acc ? val : *acc;
	}
}

/* A weighted score; weight inf times 0 counts as 0. */
static double weighted(const struct zsrc *s, double score)
{
	double v = s->weight * score;

	return isnan(v) ? 0.0 : v;
}

/* The inputs smallest first, equal sizes in key order (UNION and INTER
 * walk them so, and a sum's rounding follows that order). */
static void sort_by_len(struct zsrc *src, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		struct zsrc s = src[i];
		uint32_t j = i;

		for (; j > 0 && zsrc_len(&src[j - 1]) > zsrc_len(&s); j--)
			src[j] = src[j - 1];
		src[j] = s;
	}
}

/* Sets member e's score in dst to score. Returns 0 or -ENOMEM. */
static int dst_set(struct kv_zset *dst, const struct kv_elem *e, double score)
{
	int out;
	double now;

	return kv_zset_add(dst, e->m, e->mlen, score, 0, &out, &now);
}

static int zunion(struct zsrc *src, uint32_t n, enum zagg agg, struct kv_zset *dst)
{
	for (uint32_t i = 0; i < n; i++) {
		struct zsrc_iter it;
		struct kv_elem e;
		double s, acc;

		if (!zsrc_len(&src[i]))
			continue;
		zsrc_iter_init(&src[i], &it);
		while (zsrc_next(&src[i], &it, &e, &s)) {
			double v = weighted(&src[i], s);

			if (kv_zset_score(dst, e.m, e.mlen, &acc)) {
				aggregate(&acc, v, agg);
				v = acc;
			}
			if (dst_set(dst, &e, v))
				return -ENOMEM;
		}
	}
	return 0;
}

/* INTER into dst, or (dst NULL) only counted into *card, stopping at
 * limit (0: none). */
static int zinter(struct zsrc *src, uint32_t n, enum zagg agg, struct kv_zset *dst,
		  int64_t limit, int64_t *card)
{
	struct zsrc_iter it;
	struct kv_elem e;
	double s;

	*card = 0;
	if (!zsrc_len(&src[0]))
		return 0;
	zsrc_iter_init(&src[0], &it);
	while (zsrc_next(&src[0], &it, &e, &s)) {
		double acc = weighted(&src[0], s), v;
		uint32_t j = 1;

		for (; j < n && zsrc_find(&src[j], &e, &v); j++)
			aggregate(&acc, v * src[j].weight, agg);
		if (j < n)
			continue;
		if (dst && dst_set(dst, &e, acc))
			return -ENOMEM;
		if (++*card == limit)
			break;
	}
	return 0;
}

/* The first input's members that no other has, with their scores. */
static int zdiff(struct zsrc *src, uint32_t n, struct kv_zset *dst)
{
	struct zsrc_iter it;
	struct kv_elem e;
	double s, v;

	if (!zsrc_len(&src[0]))
		return 0;
	zsrc_iter_init(&src[0], &it);
	while (zsrc_next(&src[0], &it, &e, &s)) {
		uint32_t j = 1;

		while (j < n && !zsrc_find(&src[j], &e, &v))
			j++;
		if (j == n && dst_set(dst, &e, s))
			return -ENOMEM;
	}
	return 0;
}

/* A request as read: its inputs, options and what it makes. */
struct zop_req {
	enum zop op;
	bool store, card_only, with_scores;
	enum zagg agg;
	int64_t limit;
	uint32_t n;
	struct zsrc *src;
};

/* The count at argument idx and the inputs (gathered values from vals
 * on), in Redis's order of checks; false after the error. */
static bool read_inputs(struct kv_call *c, struct kv_gather *g, uint32_t idx, struct zop_req *r)
{
	int64_t n;

	if (!kv_str2ll(c->argv[idx], c->argl[idx], &n)) {
		kv_err(c, KV_ERR_NOT_INT);
		return false;
	}
	if (n < 1) {
		kv_reply_errorf(c->out, "ERR at least 1 input key is needed for '%s' command",
				c->cmd->name);
		return false;
	}
	if (n > (int64_t)c->argc - (int64_t)idx - 1) {
		kv_err(c, KV_ERR_SYNTAX);
		return false;
	}
	r->n = (uint32_t)n;
	r->src = calloc(r->n, sizeof(*r->src));
	if (!r->src) {
		kv_err_oom(c);
		return false;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		const struct kv_gval *v = &g->vals[g->nkeys - r->n + i];

		if (v->found && v->type != KV_ZSET && v->type != KV_SET) {
			kv_err(c, KV_ERR_WRONGTYPE);
			return false;
		}
		r->src[i] = (struct zsrc){ v->type, v->found ? v->obj : NULL, 1.0 };
	}
	return true;
}

static bool read_aggregate(struct kv_call *c, uint32_t i, enum zagg *agg)
{
	if (kv_arg_is(c, i, "sum"))
		*agg = AGG_SUM;
	else if (kv_arg_is(c, i, "min"))
		*agg = AGG_MIN;
	else if (kv_arg_is(c, i, "max"))
		*agg = AGG_MAX;
	else
		return false;
	return true;
}

/* The options from argument i on; false after the error. */
static bool read_options(struct kv_call *c, uint32_t i, struct zop_req *r)
{
	bool weighs = r->op != ZOP_DIFF && !r->card_only;

	while (i < c->argc) {
		uint32_t left = c->argc - i;

		if (weighs && left >= r->n + 1 && kv_arg_is(c, i, "weights")) {
			for (uint32_t k = 0; k < r->n; k++)
				if (!kv_zset_score_parse(c->argv[i + 1 + k], c->argl[i + 1 + k],
							 &r->src[k].weight)) {
					kv_err(c, ERR_WEIGHT);
					return false;
				}
			i += r->n + 1;
		} else if (weighs && left >= 2 && kv_arg_is(c, i, "aggregate")) {
			if (!read_aggregate(c, i + 1, &r->agg)) {
				kv_err(c, KV_ERR_SYNTAX);
				return false;
			}
			i += 2;
		} else if (!r->store && !r->card_only && kv_arg_is(c, i, "withscores")) {
			r->with_scores = true;
			i++;
		} else if (r->card_only && left >= 2 && kv_arg_is(c, i, "limit")) {
			if (!kv_str2ll(c->argv[i + 1], c->argl[i + 1], &r->limit) || r->limit < 0) {
				kv_err(c, KV_ERR_LIMIT_NEG);
				return false;
			}
			i += 2;
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* The result as the command gives it: replied, counted, or stored in the
 * destination (key 0; deleted when the result is empty). */
static void finish(struct kv_call *c, struct kv_gather *g, struct zop_req *r, struct kv_zset *dst)
{
	size_t len = kv_zset_len(dst);

	if (!r->store) {
		kv_zset_reply_span(c, dst, 0, len, false, r->with_scores);
		kv_zset_free(dst);
		return;
	}
	if (!len) {
		kv_zset_free(dst);
		dst = NULL;
	}
	kv_gather_put_new(g, 0, KV_ZSET, dst);
	kv_reply_int(c->out, (int64_t)len);
}

static void zop_compute(struct kv_call *c, struct kv_gather *g, struct zop_req *r)
{
	uint32_t idx = r->store ? 2 : 1;
	struct kv_zset *dst = NULL;
	int64_t card = 0;
	int rc = 0;

	if (!read_inputs(c, g, idx, r) || !read_options(c, idx + 1 + r->n, r))
		goto out;
	if (r->op != ZOP_DIFF)
		sort_by_len(r->src, r->n);
	if (!r->card_only && !(dst = kv_zset_new_for(c))) {
		kv_err_oom(c);
		goto out;
	}
	if (r->op == ZOP_UNION)
		rc = zunion(r->src, r->n, r->agg, dst);
	else if (r->op == ZOP_INTER)
		rc = zinter(r->src, r->n, r->agg, dst, r->limit, &card);
	else
		rc = zdiff(r->src, r->n, dst);
	if (rc) {
		kv_err_oom(c);
	} else if (r->card_only) {
		kv_reply_int(c->out, card);
	} else {
		finish(c, g, r, dst);
		dst = NULL;
	}
out:
	if (dst)
		kv_zset_free(dst);
	free(r->src);
}

#define ZOP(name, op_, store_, card_)                                              \
	static void name##_compute(struct kv_call *c, struct kv_gather *g)        \
	{                                                                          \
		struct zop_req r = { .op = op_, .store = store_, .card_only = card_ }; \
		zop_compute(c, g, &r);                                             \
	}

ZOP(zunion, ZOP_UNION, false, false)
ZOP(zinter, ZOP_INTER, false, false)
ZOP(zdiff, ZOP_DIFF, false, false)
ZOP(zunionstore, ZOP_UNION, true, false)
ZOP(zinterstore, ZOP_INTER, true, false)
ZOP(zdiffstore, ZOP_DIFF, true, false)
ZOP(zintercard, ZOP_INTER, false, true)

const struct kv_gather_ops kv_zunion_ops = { NULL, zunion_compute };
const struct kv_gather_ops kv_zinter_ops = { NULL, zinter_compute };
const struct kv_gather_ops kv_zdiff_ops = { NULL, zdiff_compute };
const struct kv_gather_ops kv_zunionstore_ops = { kv_gather_sources, zunionstore_compute };
const struct kv_gather_ops kv_zinterstore_ops = { kv_gather_sources, zinterstore_compute };
const struct kv_gather_ops kv_zdiffstore_ops = { kv_gather_sources, zdiffstore_compute };
const struct kv_gather_ops kv_zintercard_ops = { NULL, zintercard_compute };

void kv_zunion(struct kv_call *c) { kv_gather_run(c, &kv_zunion_ops); }
void kv_zinter(struct kv_call *c) { kv_gather_run(c, &kv_zinter_ops); }
void kv_zdiff(struct kv_call *c) { kv_gather_run(c, &kv_zdiff_ops); }
void kv_zunionstore(struct kv_call *c) { kv_gather_run(c, &kv_zunionstore_ops); }
void kv_zinterstore(struct kv_call *c) { kv_gather_run(c, &kv_zinterstore_ops); }
void kv_zdiffstore(struct kv_call *c) { kv_gather_run(c, &kv_zdiffstore_ops); }
void kv_zintercard(struct kv_call *c) { kv_gather_run(c, &kv_zintercard_ops); }
