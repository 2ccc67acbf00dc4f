/* SPDX-License-Identifier: MIT */
/* List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
 * LINDEX, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE, RPOPLPUSH, LMPOP.
 * Replies, errors and the order of checks are Redis 7.0's (t_list.c):
 * arguments are read before the key unless Redis looks the key up first. */
#include "cmd_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "kvlist.h"
#include "num.h"

#define ERR_INDEX     "ERR index out of range"
#define ERR_RANK_ZERO "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
#define ERR_COUNT_NEG "ERR COUNT can't be negative"
#define ERR_MAXLEN_NEG "ERR MAXLEN can't be negative"
#define ERR_COUNT_POS "ERR count should be greater than 0"

static int list_fill(const struct kv_call *c)
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
		l = kv_list_new(list_fill(c));
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

/* Moves one element from src's from end to dst's to end (both keys on
 * this shard), replying it or nil. */
static void move_cmd(struct kv_call *c, enum kv_list_end from, enum kv_list_end to)
{
	struct kv_pos spos, dpos;
	bool wrong;
	struct kv_list *src = kv_arg_obj(c, 1, KV_LIST, &spos, &wrong);
	if (wrong)
		return;
	if (!src) {
		kv_reply_null(c->out);
		return;
	}
	struct kv_list *dst = kv_arg_obj(c, 2, KV_LIST, &dpos, &wrong);
	if (wrong)
		return;
	size_t el;
	const uint8_t *e = kv_list_peek(src, from, &el);
	/* the element's bytes must outlive its pop */
	char *copy = malloc(el ? el : 1);
	if (!copy) {
		kv_err_oom(c);
		return;
	}
	memcpy(copy, e, el);
	int rc;
	if (dst) {
		size_t before = kv_db_edit_begin(c->db, dpos.entry);
		rc = kv_list_push(dst, to, copy, el);
		kv_db_edit_end(c->db, &dpos, before);
	} else {
		struct kv_list *l = kv_list_new(list_fill(c));
		rc = l ? kv_list_push(l, to, copy, el) : -ENOMEM;
		if (rc || !kv_store_new_obj(c, &dpos, KV_LIST, l)) {
			if (rc)
				kv_list_free(l), kv_err_oom(c);
			free(copy);
			return;
		}
		/* storing dst may have moved src's entry */
		src = kv_arg_obj(c, 1, KV_LIST, &spos, &wrong);
	}
	if (rc) {
		kv_err_oom(c);
		free(copy);
		return;
	}
	/* with src == dst the push went to the same list: pop the other end */
	size_t before = kv_db_edit_begin(c->db, spos.entry);
	kv_list_pop(src, from);
	kv_db_edit_end(c->db, &spos, before);
	kv_reply_bulk(c->out, copy, el);
	free(copy);
}

/* LMOVE source destination LEFT|RIGHT LEFT|RIGHT */
void kv_lmove(struct kv_call *c)
{
	enum kv_list_end from, to;
	if (arg_end(c, 3, &from) && arg_end(c, 4, &to))
		move_cmd(c, from, to);
}

void kv_rpoplpush(struct kv_call *c)
{
	move_cmd(c, KV_LIST_TAIL, KV_LIST_HEAD);
}

/* LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count] */
void kv_lmpop(struct kv_call *c)
{
	int64_t numkeys, count = -1;
	enum kv_list_end end;

	if (!kv_str2ll(c->argv[1], c->argl[1], &numkeys) || numkeys < 1) {
		kv_err(c, KV_ERR_NUMKEYS);
		return;
	}
	if ((uint64_t)numkeys >= c->argc - 2) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	uint32_t where = 2 + (uint32_t)numkeys;
	if (!arg_end(c, where, &end))
		return;
	for (uint32_t i = where + 1; i < c->argc; i++) {
		if (count == -1 && kv_arg_is(c, i, "count") && i + 1 < c->argc) {
			i++;
			if (!kv_str2ll(c->argv[i], c->argl[i], &count) || count < 1) {
				kv_err(c, ERR_COUNT_POS);
				return;
			}
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return;
		}
	}
	for (uint32_t k = 2; k < where; k++) {
		struct kv_pos pos;
		bool wrong;
		struct kv_list *l = kv_arg_obj(c, k, KV_LIST, &pos, &wrong);
		if (wrong)
			return;
		if (!l)
			continue;
		kv_reply_array(c->out, 2);
		kv_reply_bulk(c->out, c->argv[k], c->argl[k]);
		pop_reply(c, &pos, l, end, count < 0 ? 1 : (size_t)count, true);
		return;
	}
	kv_reply_null_array(c);
}
