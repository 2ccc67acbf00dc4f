/* SPDX-License-Identifier: MIT */
/* Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HGETALL, HKEYS, HVALS,
 * HDEL, HEXISTS, HLEN, HSTRLEN, HINCRBY, HINCRBYFLOAT, HRANDFIELD, HSCAN.
 * Replies, errors and the order of checks are Redis 7.0's (t_hash.c). */
#include "cmd_impl.h"

#include <math.h>

#include "num.h"

/* HSET and HMSET: field value pairs; returns the fields added, or -1
 * after an error. */
static int64_t hset_generic(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_coll_limits lim;
	int64_t added = 0;

	if (c->argc % 2) {
		kv_err_arity(c);
		return -1;
	}
	struct kv_coll *h = kv_coll_for_write(c, 1, KV_HASH, &pos);
	if (!h)
		return -1;
	kv_call_limits(c, &lim);
	size_t before = kv_db_edit_begin(c->db, pos.entry);
	for (uint32_t i = 2; i < c->argc; i += 2) {
		int rc = kv_coll_put(h, c->argv[i], c->argl[i], c->argv[i + 1], c->argl[i + 1], &lim);
		if (rc < 0) {
			kv_db_edit_end(c->db, &pos, before);
			kv_err_oom(c);
			return -1;
		}
		added += rc;
	}
	kv_db_edit_end(c->db, &pos, before);
	return added;
}

void kv_hset(struct kv_call *c)
{
	int64_t n = hset_generic(c);
	if (n >= 0)
		kv_reply_int(c->out, n);
}

void kv_hmset(struct kv_call *c)
{
	if (hset_generic(c) >= 0)
		kv_reply_status(c->out, "OK");
}

void kv_hsetnx(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_coll_limits lim;
	struct kv_coll *h = kv_coll_for_write(c, 1, KV_HASH, &pos);
	if (!h)
		return;
	if (kv_coll_find(h, c->argv[2], c->argl[2], NULL)) {
		kv_reply_int(c->out, 0);
		return;
	}
	kv_call_limits(c, &lim);
	size_t before = kv_db_edit_begin(c->db, pos.entry);
	int rc = kv_coll_put(h, c->argv[2], c->argl[2], c->argv[3], c->argl[3], &lim);
	kv_db_edit_end(c->db, &pos, before);
	if (rc < 0)
		kv_err_oom(c);
	else
		kv_reply_int(c->out, 1);
}

/* Field argument i's value into *e; false when the hash or field is
 * absent. */
static bool field(const struct kv_coll *h, struct kv_call *c, uint32_t i, struct kv_elem *e)
{
	return h && kv_coll_find(h, c->argv[i], c->argl[i], e);
}

void kv_hget(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_elem e;
	bool wrong;
	struct kv_coll *h = kv_arg_coll(c, 1, KV_HASH, &pos, &wrong);
	if (wrong)
		return;
	if (field(h, c, 2, &e))
		kv_reply_bulk(c->out, e.v, e.vlen);
	else
		kv_reply_null(c->out);
}

void kv_hmget(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_elem e;
	bool wrong;
	struct kv_coll *h = kv_arg_coll(c, 1, KV_HASH, &pos, &wrong);
	if (wrong)
		return;
	kv_reply_array(c->out, c->argc - 2);
	for (uint32_t i = 2; i < c->argc; i++) {
		if (field(h, c, i, &e))
			kv_reply_bulk(c->out, e.v, e.vlen);
		else
			kv_reply_null(c->out);
	}
}

/* HGETALL, HKEYS, HVALS: members and/or values, in the hash's order. */
static void hget_all(struct kv_call *c, bool keys, bool vals)
{
	struct kv_pos pos;
	struct kv_elem e;
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	bool wrong;
	struct kv_coll *h = kv_arg_coll(c, 1, KV_HASH, &pos, &wrong);
	if (wrong)
		return;
	if (!h) {
		kv_reply_array(c->out, 0);
		return;
	}
	kv_reply_array(c->out, kv_coll_len(h) * (keys + vals));
	while (kv_coll_next(h, &it, &e)) {
		if (keys)
			kv_reply_bulk(c->out, e.m, e.mlen);
		if (vals)
			kv_reply_bulk(c->out, e.v, e.vlen);
	}
}

void kv_hgetall(struct kv_call *c)
{
	hget_all(c, true, true);
}

void kv_hkeys(struct kv_call *c)
{
	hget_all(c, true, false);
}

void kv_hvals(struct kv_call *c)
{
	hget_all(c, false, true);
}

void kv_hdel(struct kv_call *c)
{
	kv_del_members(c, KV_HASH, kv_coll_del_member);
}

/* HEXISTS, HLEN, HSTRLEN: a count from the hash (0 when absent). */
static void hcount(struct kv_call *c, int64_t (*of)(struct kv_call *, const struct kv_coll *))
{
	struct kv_pos pos;
	bool wrong;
	struct kv_coll *h = kv_arg_coll(c, 1, KV_HASH, &pos, &wrong);
	if (!wrong)
		kv_reply_int(c->out, h ? of(c, h) : 0);
}

static int64_t exists_of(struct kv_call *c, const struct kv_coll *h)
{
	return field(h, c, 2, NULL);
}

static int64_t len_of(struct kv_call *c, const struct kv_coll *h)
{
	(void)c;
	return (int64_t)kv_coll_len(h);
}

static int64_t strlen_of(struct kv_call *c, const struct kv_coll *h)
{
	struct kv_elem e;
	return field(h, c, 2, &e) ? (int64_t)e.vlen : 0;
}

void kv_hexists(struct kv_call *c)
{
	hcount(c, exists_of);
}

void kv_hlen(struct kv_call *c)
{
	hcount(c, len_of);
}

void kv_hstrlen(struct kv_call *c)
{
	hcount(c, strlen_of);
}

/* Stores text as field argument 2's value of pos's hash h. */
static bool put_field(struct kv_call *c, struct kv_pos *pos, struct kv_coll *h, const char *text,
		      size_t n)
{
	struct kv_coll_limits lim;
	kv_call_limits(c, &lim);
	size_t before = kv_db_edit_begin(c->db, pos->entry);
	int rc = kv_coll_put(h, c->argv[2], c->argl[2], text, n, &lim);
	kv_db_edit_end(c->db, pos, before);
	if (rc < 0)
		kv_err_oom(c);
	return rc >= 0;
}

void kv_hincrby(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_elem e;
	int64_t by, v = 0;
	if (!kv_arg_ll(c, 3, &by))
		return;
	struct kv_coll *h = kv_coll_for_write(c, 1, KV_HASH, &pos);
	if (!h)
		return;
	if (field(h, c, 2, &e) && !kv_str2ll(e.v, e.vlen, &v)) {
		kv_err(c, KV_ERR_HASH_NOT_INT);
		return;
	}
	if ((by < 0 && v < 0 && by < INT64_MIN - v) || (by > 0 && v > 0 && by > INT64_MAX - v)) {
		kv_db_edit_end(c->db, &pos, kv_db_edit_begin(c->db, pos.entry)); /* a new hash goes */
		kv_err(c, KV_ERR_OVERFLOW);
		return;
	}
	v += by;
	char text[24];
	if (put_field(c, &pos, h, text, kv_ll2str(text, v)))
		kv_reply_int(c->out, v);
}

void kv_hincrbyfloat(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_elem e;
	long double by, v = 0;
	if (!kv_str2ld(c->argv[3], c->argl[3], &by)) {
		kv_err(c, KV_ERR_NOT_FLOAT);
		return;
	}
	if (!isfinite(by)) {
		kv_err(c, KV_ERR_NAN_INF);
		return;
	}
	struct kv_coll *h = kv_coll_for_write(c, 1, KV_HASH, &pos);
	if (!h)
		return;
	if (field(h, c, 2, &e) && !kv_str2ld(e.v, e.vlen, &v)) {
		kv_err(c, KV_ERR_HASH_NOT_FLOAT);
		return;
	}
	v += by;
	if (!isfinite(v)) {
		kv_db_edit_end(c->db, &pos, kv_db_edit_begin(c->db, pos.entry));
		kv_err(c, KV_ERR_NAN);
		return;
	}
	char text[KV_LD_MAX_CHARS + 1];
	size_t n = kv_ld2str(text, v);
	if (put_field(c, &pos, h, text, n))
		kv_reply_bulk(c->out, text, n);
}

/* HRANDFIELD key [count [WITHVALUES]] */
void kv_hrandfield(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_elem e;
	int64_t count;
	bool wrong, with = false;

	if (c->argc >= 3) {
		if (!kv_arg_ll(c, 2, &count))
			return;
		if (count == INT64_MIN) {
			kv_reply_errorf(c->out, KV_ERR_RANGE_FMT, (long long)-INT64_MAX,
					(long long)INT64_MAX);
			return;
		}
		if (c->argc > 4 || (c->argc == 4 && !kv_arg_is(c, 3, "withvalues"))) {
			kv_err(c, KV_ERR_SYNTAX);
			return;
		}
		with = c->argc == 4;
		if (with && (count < -INT64_MAX / 2 || count > INT64_MAX / 2)) {
			kv_err(c, KV_ERR_OUT_OF_RANGE);
			return;
		}
	}
	struct kv_coll *h = kv_arg_coll(c, 1, KV_HASH, &pos, &wrong);
	if (wrong)
		return;
	if (c->argc >= 3) {
		kv_reply_random(c, h, count, with);
	} else if (!h) {
		kv_reply_null(c->out);
	} else {
		kv_coll_random(h, kv_rng(), &e);
		kv_reply_bulk(c->out, e.m, e.mlen);
	}
}

void kv_hscan(struct kv_call *c)
{
	kv_coll_scan_cmd(c, KV_HASH);
}
