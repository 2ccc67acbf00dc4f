/* SPDX-License-Identifier: MIT */
/* List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
 * LINDEX, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE, RPOPLPUSH, LMPOP.
 * Replies, errors and the order of checks are Redis 7.0's (t_list.c):
 * arguments are read before the key unless Redis looks the key up first. */
#include "cmd_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "gather.h"
#include "kvlist.h"
#include "num.h"

#define ERR_INDEX     "ERR index out of range"
#define ERR_RANK_ZERO "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
#define ERR_COUNT_NEG "ERR COUNT can't be negative"
#define ERR_MAXLEN_NEG "ERR MAXLEN can't be negative"
#define ERR_COUNT_POS "ERR count should be greater than 0"

int kv_call_list_fill(const struct kv_call *c)
{
	return c->cfg ? c->cfg->list_max_listpack_size : KV_LIST_FILL_DEFAULT;
}

/* Pushes argv[first..argc) at end; false after the out-of-memory error
 * (the elements pushed before it stay, as a partial LPUSH would). */
static bool push_args(struct kv_call *c, struct kv_list *l, enum kv_list_end end, uint32_t first)
{
	for (uint32_t i = first; i < c->argc; i++)
		if (kv_list_push(l, end, c->argv[i], c->argl[i])) {
			kv_err_oom(c);
			return false;
		}
	return true;
}

/* LPUSH, RPUSH, and with only_existing LPUSHX, RPUSHX. */
static void push_cmd(struct kv_call *c, enum kv_list_end end, bool only_existing)
{
	struct kv_pos pos;
	bool wrong;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (!l && only_existing) {
		kv_reply_int(c->out, 0);
		return;
	}
	if (!l) {
		l = kv_list_new(kv_call_list_fill(c));
		if (!l || !push_args(c, l, end, 2)) {
			kv_list_free(l);
			if (!l)
				kv_err_oom(c);
			return;
		}
		if (kv_store_new_obj(c, &pos, KV_LIST, l))
			kv_reply_int(c->out, (int64_t)kv_list_len(l));
		return;
	}
	size_t before = kv_db_edit_begin(c->db, pos.entry);
	bool ok = push_args(c, l, end, 2);
	int64_t len = (int64_t)kv_list_len(l);
	kv_db_edit_end(c->db, &pos, before);
	if (ok)
		kv_reply_int(c->out, len);
}

void kv_lpush(struct kv_call *c) { push_cmd(c, KV_LIST_HEAD, false); }
void kv_rpush(struct kv_call *c) { push_cmd(c, KV_LIST_TAIL, false); }
void kv_lpushx(struct kv_call *c) { push_cmd(c, KV_LIST_HEAD, true); }
void kv_rpushx(struct kv_call *c) { push_cmd(c, KV_LIST_TAIL, true); }

/* Replies and removes up to n elements from end of pos's list l (n > 0),
 * as an array when as_array, else the one element. Deletes the key when
 * it empties. */
static void pop_reply(struct kv_call *c, struct kv_pos *pos, struct kv_list *l,
		      enum kv_list_end end, size_t n, bool as_array)
{
	size_t len = kv_list_len(l);
	if (n > len)
		n = len;
	size_t before = kv_db_edit_begin(c->db, pos->entry);
	if (as_array)
		kv_reply_array(c->out, n);
	for (size_t i = 0; i < n; i++) {
		size_t el;
		const uint8_t *e = kv_list_peek(l, end, &el);
		kv_reply_bulk(c->out, e, el);
		kv_list_pop(l, end);
	}
	kv_db_edit_end(c->db, pos, before);
}

/* LPOP / RPOP key [count] */
static void pop_cmd(struct kv_call *c, enum kv_list_end end)
{
	struct kv_pos pos;
	int64_t count = 1;
	bool wrong, has_count = c->argc == 3;

	if (c->argc > 3) {
		kv_err_arity(c);
		return;
	}
	if (has_count && (!kv_str2ll(c->argv[2], c->argl[2], &count) || count < 0)) {
		kv_err(c, KV_ERR_NOT_POSITIVE);
		return;
	}
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (!l) {
		has_count ? kv_reply_null_array(c) : kv_reply_null(c->out);
		return;
	}
	if (has_count && count == 0) {
		kv_reply_array(c->out, 0);
		return;
	}
	pop_reply(c, &pos, l, end, (size_t)count, has_count);
}

void kv_lpop(struct kv_call *c) { pop_cmd(c, KV_LIST_HEAD); }
void kv_rpop(struct kv_call *c) { pop_cmd(c, KV_LIST_TAIL); }

void kv_llen(struct kv_call *c)
{
	struct kv_pos pos;
	bool wrong;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (!wrong)
		kv_reply_int(c->out, l ? (int64_t)kv_list_len(l) : 0);
}

/* LRANGE key start stop */
void kv_lrange(struct kv_call *c)
{
	struct kv_pos pos;
	int64_t start, stop;
	size_t first, n;
	bool wrong;

	if (!kv_arg_ll(c, 2, &start) || !kv_arg_ll(c, 3, &stop))
		return;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (!l || !kv_list_range(l, start, stop, &first, &n)) {
		kv_reply_array(c->out, 0);
		return;
	}
	struct kv_list_iter it;
	kv_list_iter_init(l, &it, first, true);
	kv_reply_array(c->out, n);
	while (n--) {
		size_t el;
		const uint8_t *e = kv_list_iter_next(&it, &el);
		kv_reply_bulk(c->out, e, el);
	}
}

/* LINDEX key index */
void kv_lindex(struct kv_call *c)
{
	struct kv_pos pos;
	int64_t idx;
	bool wrong;

	if (!kv_arg_ll(c, 2, &idx))
		return;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	size_t el;
	const uint8_t *e = l ? kv_list_index(l, idx, &el) : NULL;
	e ? kv_reply_bulk(c->out, e, el) : kv_reply_null(c->out);
}

/* LSET key index element: the key first, as Redis looks it up first. */
void kv_lset(struct kv_call *c)
{
	struct kv_pos pos;
	int64_t idx;
	bool wrong;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (!l) {
		kv_err(c, KV_ERR_NO_KEY);
		return;
	}
	if (!kv_arg_ll(c, 2, &idx))
		return;
	size_t before = kv_db_edit_begin(c->db, pos.entry);
	int rc = kv_list_set(l, idx, c->argv[3], c->argl[3]);
	kv_db_edit_end(c->db, &pos, before);
	if (rc == -ERANGE)
		kv_err(c, ERR_INDEX);
	else if (rc)
		kv_err_oom(c);
	else
		kv_reply_status(c->out, "OK");
}

/* LINSERT key BEFORE|AFTER pivot element */
void kv_linsert(struct kv_call *c)
{
	struct kv_pos pos;
	bool wrong, after = kv_arg_is(c, 2, "after");

	if (!after && !kv_arg_is(c, 2, "before")) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (!l) {
		kv_reply_int(c->out, 0);
		return;
	}
	size_t before = kv_db_edit_begin(c->db, pos.entry);
	long long rc = kv_list_insert_pivot(l, after, c->argv[3], c->argl[3], c->argv[4],
					    c->argl[4]);
	kv_db_edit_end(c->db, &pos, before);
	if (rc == -ENOMEM)
		kv_err_oom(c);
	else
		kv_reply_int(c->out, rc == -ENOENT ? -1 : rc);
}

/* LREM key count element */
void kv_lrem(struct kv_call *c)
{
	struct kv_pos pos;
	int64_t count;
	bool wrong;

	if (!kv_arg_ll(c, 2, &count))
		return;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (!l) {
		kv_reply_int(c->out, 0);
		return;
	}
	size_t before = kv_db_edit_begin(c->db, pos.entry);
	size_t n = kv_list_rem(l, count, c->argv[3], c->argl[3]);
	kv_db_edit_end(c->db, &pos, before);
	kv_reply_int(c->out, (int64_t)n);
}

/* LTRIM key start stop */
void kv_ltrim(struct kv_call *c)
{
	struct kv_pos pos;
	int64_t start, stop;
	bool wrong;

	if (!kv_arg_ll(c, 2, &start) || !kv_arg_ll(c, 3, &stop))
		return;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (l) {
		size_t before = kv_db_edit_begin(c->db, pos.entry);
		kv_list_trim(l, start, stop);
		kv_db_edit_end(c->db, &pos, before);
	}
	kv_reply_status(c->out, "OK");
}

struct lpos_opts {
	int64_t rank, count, maxlen;
	bool has_count;
};

/* LPOS's RANK, COUNT and MAXLEN; false after Redis's error. */
static bool lpos_options(struct kv_call *c, struct lpos_opts *o)
{
	for (uint32_t i = 3; i < c->argc; i += 2) {
		bool arg = i + 1 < c->argc;
		if (arg && kv_arg_is(c, i, "rank")) {
			if (!kv_arg_ll(c, i + 1, &o->rank))
				return false;
			if (o->rank == 0) {
				kv_err(c, ERR_RANK_ZERO);
				return false;
			}
		} else if (arg && kv_arg_is(c, i, "count")) {
			if (!kv_str2ll(c->argv[i + 1], c->argl[i + 1], &o->count) || o->count < 0) {
				kv_err(c, ERR_COUNT_NEG);
				return false;
			}
			o->has_count = true;
		} else if (arg && kv_arg_is(c, i, "maxlen")) {
			if (!kv_str2ll(c->argv[i + 1], c->argl[i + 1], &o->maxlen) || o->maxlen < 0) {
				kv_err(c, ERR_MAXLEN_NEG);
				return false;
			}
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

static void lpos_one(size_t idx, void *arg)
{
	struct kv_call *c = arg;
	kv_reply_int(c->out, (int64_t)idx);
}

static void lpos_none(size_t idx, void *arg)
{
	(void)idx;
	(void)arg;
}

static void lpos_first(size_t idx, void *arg)
{
	*(int64_t *)arg = (int64_t)idx;
}

/* LPOS key element [RANK rank] [COUNT num] [MAXLEN len] */
void kv_lpos(struct kv_call *c)
{
	struct lpos_opts o = { .rank = 1 };
	struct kv_pos pos;
	bool wrong;

	if (!lpos_options(c, &o))
		return;
	struct kv_list *l = kv_arg_obj(c, 1, KV_LIST, &pos, &wrong);
	if (wrong)
		return;
	if (!l) {
		o.has_count ? kv_reply_array(c->out, 0) : kv_reply_null(c->out);
		return;
	}
	if (!o.has_count) {
		int64_t at = -1;
		kv_list_pos(l, c->argv[2], c->argl[2], o.rank, 1, (size_t)o.maxlen, lpos_first, &at);
		at < 0 ? kv_reply_null(c->out) : kv_reply_int(c->out, at);
		return;
	}
	/* the array's length comes first: count the matches, then reply them */
	kv_reply_array(c->out, kv_list_pos(l, c->argv[2], c->argl[2], o.rank, (size_t)o.count,
					   (size_t)o.maxlen, lpos_none, NULL));
	kv_list_pos(l, c->argv[2], c->argl[2], o.rank, (size_t)o.count, (size_t)o.maxlen,
		    lpos_one, c);
}

/* Whether argument i is LEFT (*end: the head) or RIGHT (the tail); false
 * after the syntax error. */
static bool arg_end(struct kv_call *c, uint32_t i, enum kv_list_end *end)
{
	if (kv_arg_is(c, i, "left"))
		*end = KV_LIST_HEAD;
	else if (kv_arg_is(c, i, "right"))
		*end = KV_LIST_TAIL;
	else {
		kv_err(c, KV_ERR_SYNTAX);
		return false;
	}
	return true;
}

/* ---- commands over several lists: gathered, computed, put (gather.h) ---- */

/* LMOVE's and BLMOVE's ends (RPOPLPUSH, BRPOPLPUSH: from the tail to
 * the head), read without a reply: false when they are not LEFT or RIGHT. */
static bool move_ends(const struct kv_call *c, enum kv_list_end *from, enum kv_list_end *to)
{
	struct kv_reply scratch;
	struct kv_call q;
	bool ok = true;

	*from = KV_LIST_TAIL;
	*to = KV_LIST_HEAD;
	if (c->argc >= 5) {
		kv_call_quiet(c, &q, &scratch);
		ok = arg_end(&q, 3, from) && arg_end(&q, 4, to);
		kv_reply_free(&scratch);
	}
	return ok;
}

/* LMOVE's gather: the source's type and the element it would give (its
 * bytes lent, or copied when the value leaves the shard); the
 * destination's type. */
static int probe_end(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v)
{
	enum kv_list_end from, to;
	const uint8_t *e;

	if (k || !move_ends(c, &from, &to))
		return kv_gather_type(c, k, arg, copy, v);
	kv_gather_type(c, k, arg, copy, v);
	if (!v->found || v->type != KV_LIST)
		return 0;
	struct kv_pos pos;
	struct kv_list *l = kv_entry_obj(kv_arg_key(c, arg, &pos));

	e = kv_list_peek(l, from, &v->len);
	v->str = (char *)e;
	if (copy) {
		v->str = malloc(v->len ? v->len : 1);
		if (!v->str)
			return -ENOMEM;
		memcpy(v->str, e, v->len);
		v->owned = true;
	}
	return 0;
}

/* LMOVE's writes: the element pushed at the destination (made when
 * absent), then popped from the source (deleted when emptied); with one
 * key for both, the push and the pop work at its two ends. */
static int push_elem(struct kv_call *c, uint32_t arg, struct kv_gput *p)
{
	enum kv_list_end from, to;
	struct kv_pos pos;
	bool wrong;
	struct kv_list *l = kv_arg_obj(c, arg, KV_LIST, &pos, &wrong);
	int rc;

	move_ends(c, &from, &to);
	if (l) {
		size_t before = kv_db_edit_begin(c->db, pos.entry);

		rc = kv_list_push(l, to, p->v.str, p->v.len);
		kv_db_edit_end(c->db, &pos, before);
		return rc;
	}
	l = kv_list_new(kv_call_list_fill(c));
	if (!l || kv_list_push(l, to, p->v.str, p->v.len) ||
	    kv_db_store_obj(c->db, &pos, KV_LIST, l, KV_NO_EXPIRE)) {
		kv_list_free(l);
		return -ENOMEM;
	}
	return 0;
}

static int pop_elem(struct kv_call *c, uint32_t arg, struct kv_gput *p)
{
	enum kv_list_end from, to;
	struct kv_pos pos;
	bool wrong;
	struct kv_list *l = kv_arg_obj(c, arg, KV_LIST, &pos, &wrong);

	(void)p;
	move_ends(c, &from, &to);
	if (l) {
		size_t before = kv_db_edit_begin(c->db, pos.entry);

		kv_list_pop(l, from);
		kv_db_edit_end(c->db, &pos, before);
	}
	return 0;
}

/* LMOVE source destination LEFT|RIGHT LEFT|RIGHT, RPOPLPUSH, and BLMOVE
 * and BRPOPLPUSH as they answer when they do not block, in Redis's order
 * of checks; the push goes first, so a destination that cannot take the
 * element leaves both lists as they were. */
static void lmove_compute(struct kv_call *c, struct kv_gather *g)
{
	const struct kv_gval *src = &g->vals[0], *dst = &g->vals[1];
	enum kv_list_end from, to;
	struct kv_gput *p;

	if (c->argc >= 5 && (!arg_end(c, 3, &from) || !arg_end(c, 4, &to)))
		return;
	if ((c->cmd->flags & KV_CMD_BLOCKING) && !kv_arg_timeout(c))
		return;
	if (!src->found) {
		kv_reply_null(c->out);
		return;
	}
	if (src->type != KV_LIST || (dst->found && dst->type != KV_LIST)) {
		kv_err(c, KV_ERR_WRONGTYPE);
		return;
	}
	p = kv_gather_add_put(g, 1, push_elem);
	p->v = (struct kv_gval){ .found = true, .type = KV_STRING, .str = src->str,
				 .len = src->len };
	if (kv_gval_own(&p->v)) {
		g->nput = 0;
		kv_err_oom(c);
		return;
	}
	kv_gather_add_put(g, 0, pop_elem);
	kv_reply_bulk(c->out, src->str, src->len);
}

const struct kv_gather_ops kv_lmove_ops = { probe_end, lmove_compute };

void kv_lmove(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmove_ops);
}

void kv_rpoplpush(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmove_ops);
}

void kv_blmove(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmove_ops);
}

void kv_brpoplpush(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmove_ops);
}

/* LMPOP's arguments from the key count (argument at) on: the end and
 * the count (1 when not given); false after the error. */
static bool lmpop_args(struct kv_call *c, uint32_t at, enum kv_list_end *end, size_t *n)
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
	if (!arg_end(c, where, end))
		return false;
	for (uint32_t i = where + 1; i < c->argc; i++) {
		if (count == -1 && kv_arg_is(c, i, "count") && i + 1 < c->argc) {
			i++;
			if (!kv_str2ll(c->argv[i], c->argl[i], &count) || count < 1) {
				kv_err(c, ERR_COUNT_POS);
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

/* The pop a request asks for: LMPOP's and BLMPOP's arguments, or BLPOP's
 * and BRPOP's one element; a blocking command's timeout checked after
 * them, as Redis does. False after the error. */
static bool pop_args(struct kv_call *c, enum kv_list_end *end, size_t *n)
{
	if (c->cmd->fn == kv_lmpop)
		return lmpop_args(c, 1, end, n);
	if (c->cmd->fn == kv_blmpop)
		return lmpop_args(c, 2, end, n) && kv_arg_timeout(c);
	*end = c->cmd->fn == kv_blpop ? KV_LIST_HEAD : KV_LIST_TAIL;
	*n = 1;
	return kv_arg_timeout(c);
}

/* LMPOP's gather: each key's type and, for a list, a copy of the
 * elements it would give, in the order it gives them. */
static int probe_pops(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v)
{
	struct kv_reply scratch;
	struct kv_call q;
	enum kv_list_end end;
	size_t n;
	bool ok;

	kv_gather_type(c, k, arg, copy, v);
	kv_call_quiet(c, &q, &scratch);
	ok = pop_args(&q, &end, &n);
	kv_reply_free(&scratch);
	if (!ok || !v->found || v->type != KV_LIST)
		return 0;
	struct kv_pos pos;
	const struct kv_list *l = kv_entry_obj(kv_arg_key(c, arg, &pos));
	struct kv_list *got = kv_list_new(kv_call_list_fill(c));
	struct kv_list_iter it;
	const uint8_t *e;
	size_t el;

	if (!got)
		return -ENOMEM;
	v->obj = got;
	v->owned = true;
	kv_list_iter_init(l, &it, end == KV_LIST_HEAD ? 0 : kv_list_len(l) - 1,
			  end == KV_LIST_HEAD);
	while (n-- && (e = kv_list_iter_next(&it, &el)))
		if (kv_list_push(got, KV_LIST_TAIL, e, el))
			return -ENOMEM;
	return 0;
}

/* LMPOP's write: the elements given, from the key's end (held since). */
static int pop_elems(struct kv_call *c, uint32_t arg, struct kv_gput *p)
{
	enum kv_list_end end;
	size_t n;
	struct kv_pos pos;
	bool wrong;
	struct kv_list *l = kv_arg_obj(c, arg, KV_LIST, &pos, &wrong);

	(void)p;
	pop_args(c, &end, &n);
	if (l) {
		size_t before = kv_db_edit_begin(c->db, pos.entry);

		while (n-- && kv_list_len(l))
			kv_list_pop(l, end);
		kv_db_edit_end(c->db, &pos, before);
	}
	return 0;
}

/* LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: the first key
 * holding a list gives its elements; BLMPOP, BLPOP and BRPOP as they
 * answer when they do not block (BLPOP: the key and one element, flat). */
static void lmpop_compute(struct kv_call *c, struct kv_gather *g)
{
	struct kv_list_iter it;
	enum kv_list_end end;
	const uint8_t *e;
	size_t n, el;

	if (!pop_args(c, &end, &n))
		return;
	for (uint32_t k = 0; k < g->nkeys; k++) {
		const struct kv_gval *v = &g->vals[k];

		if (!v->found)
			continue;
		if (v->type != KV_LIST) {
			kv_err(c, KV_ERR_WRONGTYPE);
			return;
		}
		kv_reply_array(c->out, 2);
		kv_reply_bulk(c->out, c->argv[g->arg[k]], c->argl[g->arg[k]]);
		if (c->cmd->fn == kv_lmpop || c->cmd->fn == kv_blmpop)
			kv_reply_array(c->out, kv_list_len(v->obj));
		kv_list_iter_init(v->obj, &it, 0, true);
		while ((e = kv_list_iter_next(&it, &el)))
			kv_reply_bulk(c->out, e, el);
		kv_gather_add_put(g, k, pop_elems);
		return;
	}
	kv_reply_null_array(c);
}

const struct kv_gather_ops kv_lmpop_ops = { probe_pops, lmpop_compute };

void kv_lmpop(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmpop_ops);
}

void kv_blmpop(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmpop_ops);
}

void kv_blpop(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmpop_ops);
}

void kv_brpop(struct kv_call *c)
{
	kv_gather_run(c, &kv_lmpop_ops);
}
