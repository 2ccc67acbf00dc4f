/* SPDX-License-Identifier: MIT */
/* LCS: the longest common subsequence of two string values, with Redis
 * 7.0's table, options, walk back and reply shapes (t_string.c), so that
 * ties between equally long subsequences resolve as Redis resolves them. */
#include "cmd_impl.h"
#include "gather.h"

#include <stdlib.h>

#define ERR_LCS_TYPE  "ERR The specified keys must contain string values"
#define ERR_LCS_BOTH  "ERR If you want both the length and indexes, please just use IDX."
#define ERR_LCS_LONG  "ERR String too long for LCS"
#define ERR_LCS_NOMEM "ERR Insufficient memory, failed allocating transient memory for LCS"

struct lcs_opts {
	bool len, idx, withlen;
	int64_t minlen;
};

struct lcs_match {
	uint32_t a0, a1, b0, b1;
};

/* The options from argument 3 on; false after the error. */
static bool lcs_options(struct kv_call *c, struct lcs_opts *o)
{
	memset(o, 0, sizeof(*o));
	for (uint32_t j = 3; j < c->argc; j++) {
		if (kv_arg_is(c, j, "idx"))
			o->idx = true;
		else if (kv_arg_is(c, j, "len"))
			o->len = true;
		else if (kv_arg_is(c, j, "withmatchlen"))
			o->withlen = true;
		else if (kv_arg_is(c, j, "minmatchlen") && j + 1 < c->argc) {
			if (!kv_arg_ll(c, ++j, &o->minlen))
				return false;
			if (o->minlen < 0)
				o->minlen = 0;
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	if (o->idx && o->len) {
		kv_err(c, ERR_LCS_BOTH);
		return false;
	}
	return true;
}

/* A gathered key's string ("" when absent); false when it holds another
 * type. */
static bool lcs_value(const struct kv_gval *g, const char **v, size_t *n)
{
	*v = "";
	*n = 0;
	if (g->found && g->type != KV_STRING)
		return false;
	if (g->found) {
		*v = g->str;
		*n = g->len;
	}
	return true;
}

/* The table: t[i * (bl + 1) + j] is the LCS length of a[0..i), b[0..j). */
static void lcs_fill(uint32_t *t, const char *a, uint32_t al, const char *b, uint32_t bl)
{
	for (uint32_t i = 0; i <= al; i++)
		for (uint32_t j = 0; j <= bl; j++) {
			uint32_t *x = &t[(size_t)i * (bl + 1) + j];
			if (i == 0 || j == 0)
				*x = 0;
			else if (a[i - 1] == b[j - 1])
				*x = x[-(ptrdiff_t)(bl + 1) - 1] + 1;
			else
				*x = x[-(ptrdiff_t)(bl + 1)] > x[-1] ? x[-(ptrdiff_t)(bl + 1)] : x[-1];
		}
}

struct lcs_walk {
	char *str;               /* the subsequence, filled back to front */
	struct lcs_match *m;     /* the matching ranges, last first */
	size_t nm;
};

/* Walks the table back from the end as Redis does, collecting the
 * subsequence and the ranges at least minlen long. */
static void lcs_walk(const uint32_t *t, const char *a, uint32_t al, const char *b, uint32_t bl,
		     int64_t minlen, struct lcs_walk *w)
{
	uint32_t i = al, j = bl, k = t[(size_t)al * (bl + 1) + bl];
	struct lcs_match cur = { al, 0, 0, 0 };
	w->nm = 0;
	while (i > 0 && j > 0) {
		bool emit = false;
		if (a[i - 1] == b[j - 1]) {
			w->str[--k] = a[i - 1];
			if (cur.a0 == al)
				cur = (struct lcs_match){ i - 1, i - 1, j - 1, j - 1 };
			else if (cur.a0 == i && cur.b0 == j) {
				cur.a0--;
				cur.b0--;
			} else
				emit = true;
			emit |= cur.a0 == 0 || cur.b0 == 0;
			i--;
			j--;
		} else {
			if (t[(size_t)(i - 1) * (bl + 1) + j] > t[(size_t)i * (bl + 1) + j - 1])
				i--;
			else
				j--;
			emit = cur.a0 != al;
		}
		if (emit) {
			if (minlen == 0 || (int64_t)(cur.a1 - cur.a0 + 1) >= minlen)
				w->m[w->nm++] = cur;
			cur.a0 = al;
		}
	}
}

static void lcs_reply_idx(struct kv_call *c, const struct lcs_walk *w, bool withlen, uint32_t len)
{
	kv_reply_array(c->out, 4);
	kv_reply_bulk(c->out, "matches", 7);
	kv_reply_array(c->out, w->nm);
	for (size_t k = 0; k < w->nm; k++) {
		const struct lcs_match *m = &w->m[k];
		kv_reply_array(c->out, withlen ? 3 : 2);
		kv_reply_array(c->out, 2);
		kv_reply_int(c->out, m->a0);
		kv_reply_int(c->out, m->a1);
		kv_reply_array(c->out, 2);
		kv_reply_int(c->out, m->b0);
		kv_reply_int(c->out, m->b1);
		if (withlen)
			kv_reply_int(c->out, m->a1 - m->a0 + 1);
	}
	kv_reply_bulk(c->out, "len", 3);
	kv_reply_int(c->out, len);
}

/* LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN], over the
 * keys' values gathered (gather.h): they may live on any shards. */
static void lcs_compute(struct kv_call *c, struct kv_gather *g)
{
	const char *a, *b;
	size_t al, bl;
	struct lcs_opts o;
	if (!lcs_value(&g->vals[0], &a, &al) || !lcs_value(&g->vals[1], &b, &bl)) {
		kv_err(c, ERR_LCS_TYPE);
		return;
	}
	if (!lcs_options(c, &o))
		return;
	if (al >= UINT32_MAX - 1 || bl >= UINT32_MAX - 1) {
		kv_err(c, ERR_LCS_LONG);
		return;
	}
	size_t cells;
	uint32_t *t = NULL;
	struct lcs_walk w = { NULL, NULL, 0 };
	if (!__builtin_mul_overflow(al + 1, bl + 1, &cells) && cells <= SIZE_MAX / sizeof(*t))
		t = malloc(cells * sizeof(*t));
	if (!t) {
		kv_err(c, ERR_LCS_NOMEM);
		return;
	}
	lcs_fill(t, a, (uint32_t)al, b, (uint32_t)bl);
	uint32_t len = t[cells - 1];
	if (o.len && !o.idx) {
		kv_reply_int(c->out, len);
		goto out;
	}
	w.str = malloc(len + 1);
	w.m = malloc(((size_t)len + 1) * sizeof(*w.m));
	if (!w.str || !w.m) {
		kv_err_oom(c);
		goto out;
	}
	lcs_walk(t, a, (uint32_t)al, b, (uint32_t)bl, o.minlen, &w);
	if (o.idx)
		lcs_reply_idx(c, &w, o.withlen, len);
	else
		kv_reply_bulk(c->out, w.str, len);
out:
	free(w.m);
	free(w.str);
	free(t);
}

const struct kv_gather_ops kv_lcs_ops = { NULL, lcs_compute };

void kv_lcs(struct kv_call *c)
{
	kv_gather_run(c, &kv_lcs_ops);
}
