/* SPDX-License-Identifier: MIT */
/* Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
 * SRANDMEMBER, SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION,
 * SUNIONSTORE, SDIFF, SDIFFSTORE, SSCAN. Replies, errors and the order of
 * checks are Redis 7.0's (t_set.c). A store's result is built as SADD
 * would build it (intset while it can be one). */
#include "cmd_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "num.h"

/* Adds the members argv[first..argc) to pos's set s; the count added, or
 * -1 after the out-of-memory error. */
static int64_t add_members(struct kv_call *c, struct kv_pos *pos, struct kv_coll *s,
			   uint32_t first)
{
	struct kv_coll_limits lim;
	int64_t added = 0;
	kv_call_limits(c, &lim);
	size_t before = kv_db_edit_begin(pos->entry);
	for (uint32_t i = first; i < c->argc; i++) {
		int rc = kv_coll_put(s, c->argv[i], c->argl[i], NULL, 0, &lim);
		if (rc < 0) {
			kv_db_edit_end(c->db, pos, before);
			kv_err_oom(c);
			return -1;
		}
		added += rc;
	}
	kv_db_edit_end(c->db, pos, before);
	return added;
}

void kv_sadd(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_coll *s = kv_coll_for_write(c, 1, KV_SET, &pos);
	int64_t n = s ? add_members(c, &pos, s, 2) : -1;
	if (n >= 0)
		kv_reply_int(c->out, n);
}

void kv_srem(struct kv_call *c)
{
	struct kv_pos pos;
	int64_t n = 0;
	bool wrong;
	struct kv_coll *s = kv_arg_coll(c, 1, KV_SET, &pos, &wrong);
	if (wrong)
		return;
	if (s) {
		size_t before = kv_db_edit_begin(pos.entry);
		for (uint32_t i = 2; i < c->argc; i++)
			n += kv_coll_del(s, c->argv[i], c->argl[i]);
		kv_db_edit_end(c->db, &pos, before);
	}
	kv_reply_int(c->out, n);
}

void kv_sismember(struct kv_call *c)
{
	struct kv_pos pos;
	bool wrong;
	struct kv_coll *s = kv_arg_coll(c, 1, KV_SET, &pos, &wrong);
	if (!wrong)
		kv_reply_int(c->out, s && kv_coll_find(s, c->argv[2], c->argl[2], NULL));
}

void kv_smismember(struct kv_call *c)
{
	struct kv_pos pos;
	bool wrong;
	struct kv_coll *s = kv_arg_coll(c, 1, KV_SET, &pos, &wrong);
	if (wrong)
		return;
	kv_reply_array(c->out, c->argc - 2);
	for (uint32_t i = 2; i < c->argc; i++)
		kv_reply_int(c->out, s && kv_coll_find(s, c->argv[i], c->argl[i], NULL));
}

void kv_scard(struct kv_call *c)
{
	struct kv_pos pos;
	bool wrong;
	struct kv_coll *s = kv_arg_coll(c, 1, KV_SET, &pos, &wrong);
	if (!wrong)
		kv_reply_int(c->out, s ? (int64_t)kv_coll_len(s) : 0);
}

/* Removes and replies one random member of pos's set s. */
static bool pop_one(struct kv_call *c, struct kv_pos *pos, struct kv_coll *s)
{
	struct kv_elem e;
	char stack[64];
	kv_coll_random(s, kv_rng(), &e);
	/* the member's bytes go with it: copy them out first */
	char *m = e.mlen <= sizeof(stack) ? stack : malloc(e.mlen);
	if (!m) {
		kv_err_oom(c);
		return false;
	}
	memcpy(m, e.m, e.mlen);
	kv_reply_bulk(c->out, m, e.mlen);
	kv_coll_del(s, m, e.mlen);
	if (m != stack)
		free(m);
	(void)pos;
	return true;
}

/* SPOP key [count] */
void kv_spop(struct kv_call *c)
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
	struct kv_coll *s = kv_arg_coll(c, 1, KV_SET, &pos, &wrong);
	if (wrong)
		return;
	if (!s || (c->argc == 3 && count == 0)) {
		c->argc == 3 ? kv_reply_array(c->out, 0) : kv_reply_null(c->out);
		return;
	}
	if (c->argc == 3 && (uint64_t)count >= kv_coll_len(s)) {
		kv_reply_random(c, s, count, false);
		kv_db_erase(c->db, &pos);
		return;
	}
	size_t before = kv_db_edit_begin(pos.entry);
	if (c->argc == 3)
		kv_reply_array(c->out, (size_t)count);
	for (int64_t i = 0; i < count && pop_one(c, &pos, s); i++)
		;
	kv_db_edit_end(c->db, &pos, before);
}

/* SRANDMEMBER key [count] */
void kv_srandmember(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_elem e;
	int64_t count = 0;
	bool wrong;

	if (c->argc > 3) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	if (c->argc == 3) {
		if (!kv_arg_ll(c, 2, &count))
			return;
		if (count == INT64_MIN) {
			kv_reply_errorf(c->out, KV_ERR_RANGE_FMT, (long long)-INT64_MAX,
					(long long)INT64_MAX);
			return;
		}
	}
	struct kv_coll *s = kv_arg_coll(c, 1, KV_SET, &pos, &wrong);
	if (wrong)
		return;
	if (c->argc == 3) {
		kv_reply_random(c, s, count, false);
	} else if (!s) {
		kv_reply_null(c->out);
	} else {
		kv_coll_random(s, kv_rng(), &e);
		kv_reply_bulk(c->out, e.m, e.mlen);
	}
}

/* SMOVE source destination member */
void kv_smove(struct kv_call *c)
{
	struct kv_pos src, dst;
	struct kv_coll_limits lim;
	struct kv_entry *se = kv_arg_key(c, 1, &src);
	struct kv_entry *de = kv_arg_key(c, 2, &dst);

	if (!se) {
		kv_reply_int(c->out, 0);
		return;
	}
	if (kv_wrongtype(c, se, KV_SET) || kv_wrongtype(c, de, KV_SET))
		return;
	struct kv_coll *s = kv_entry_obj(se);
	if (se == de) {
		kv_reply_int(c->out, kv_coll_find(s, c->argv[3], c->argl[3], NULL));
		return;
	}
	if (!kv_coll_find(s, c->argv[3], c->argl[3], NULL)) {
		kv_reply_int(c->out, 0);
		return;
	}
	/* the destination first: when it cannot take the member, nothing
	 * has changed */
	struct kv_coll *d = kv_coll_for_write(c, 2, KV_SET, &dst);
	if (!d)
		return;
	kv_call_limits(c, &lim);
	size_t before = kv_db_edit_begin(dst.entry);
	int rc = kv_coll_put(d, c->argv[3], c->argl[3], NULL, 0, &lim);
	kv_db_edit_end(c->db, &dst, before);
	if (rc < 0) {
		kv_err_oom(c);
		return;
	}
	kv_arg_key(c, 1, &src);
	before = kv_db_edit_begin(src.entry);
	kv_coll_del(s, c->argv[3], c->argl[3]);
	kv_db_edit_end(c->db, &src, before);
	kv_reply_int(c->out, 1);
}

enum setop { OP_INTER, OP_UNION, OP_DIFF };

/* The sets named by argv[first..first+n): each key's set or NULL when
 * absent; false after WRONGTYPE (every key is checked first, as Redis
 * does). */
static bool gather(struct kv_call *c, uint32_t first, uint32_t n, const struct kv_coll **sets)
{
	for (uint32_t k = 0; k < n; k++) {
		struct kv_pos pos;
		bool wrong;
		sets[k] = kv_arg_coll(c, first + k, KV_SET, &pos, &wrong);
		if (wrong)
			return false;
	}
	return true;
}

/* Whether member e belongs to the result of op over sets[0..n): e is a
 * member of sets[from] (INTER, DIFF: of the first set; UNION: of set
 * from, and of none before it, so it comes once). */
static bool belongs(enum setop op, const struct kv_coll **sets, uint32_t n, uint32_t from,
		    const struct kv_elem *e)
{
	for (uint32_t k = 0; k < n; k++) {
		if (k == from)
			continue;
		bool in = sets[k] && kv_coll_find(sets[k], e->m, e->mlen, NULL);
		if (op == OP_INTER && !in)
			return false;
		if (op == OP_DIFF && in)
			return false;
		if (op == OP_UNION && in && k < from)
			return false;
	}
	return true;
}

/* Walks the result of op, handing each member to fn, at most limit (0:
 * no limit); returns how many. */
static size_t walk_result(enum setop op, const struct kv_coll **sets, uint32_t n, size_t limit,
			  void (*fn)(const struct kv_elem *, void *), void *arg)
{
	size_t count = 0;
	uint32_t last = op == OP_UNION ? n : 1;

	for (uint32_t k = 0; k < last; k++) {
		if (!sets[k])
			continue;
		struct kv_coll_iter it = KV_COLL_ITER_INIT;
		struct kv_elem e;
		while (kv_coll_next(sets[k], &it, &e)) {
			if (!belongs(op, sets, n, k, &e))
				continue;
			if (fn)
				fn(&e, arg);
			if (++count == limit)
				return count;
		}
	}
	return count;
}

static void reply_member(const struct kv_elem *e, void *arg)
{
	struct kv_call *c = arg;
	kv_reply_bulk(c->out, e->m, e->mlen);
}

struct build {
	struct kv_coll *dst;
	struct kv_coll_limits lim;
	bool failed;
};

static void add_member(const struct kv_elem *e, void *arg)
{
	struct build *b = arg;
	if (!b->failed && kv_coll_put(b->dst, e->m, e->mlen, NULL, 0, &b->lim) < 0)
		b->failed = true;
}

/* An INTERsection with a missing set is empty whatever the others hold. */
static bool empty_inter(enum setop op, const struct kv_coll **sets, uint32_t n)
{
	for (uint32_t k = 0; op == OP_INTER && k < n; k++)
		if (!sets[k])
			return true;
	return (op == OP_DIFF && !sets[0]);
}

/* SINTER, SUNION, SDIFF: keys from argument 1. */
static void setop_reply(struct kv_call *c, enum setop op)
{
	uint32_t n = c->argc - 1;
	const struct kv_coll **sets = malloc(n * sizeof(*sets));
	if (!sets) {
		kv_err_oom(c);
		return;
	}
	if (gather(c, 1, n, sets)) {
		if (empty_inter(op, sets, n)) {
			kv_reply_array(c->out, 0);
		} else {
			kv_reply_array(c->out, walk_result(op, sets, n, 0, NULL, NULL));
			walk_result(op, sets, n, 0, reply_member, c);
		}
	}
	free(sets);
}

/* SINTERSTORE, SUNIONSTORE, SDIFFSTORE destination key [key ...]: the
 * result replaces the destination (deleted when it is empty). */
static void setop_store(struct kv_call *c, enum setop op)
{
	uint32_t n = c->argc - 2;
	const struct kv_coll **sets = malloc(n * sizeof(*sets));
	struct build b = { .dst = kv_coll_new(KV_SET) };
	struct kv_pos pos;

	if (!sets || !b.dst) {
		kv_err_oom(c);
		goto out;
	}
	if (!gather(c, 2, n, sets))
		goto out;
	kv_call_limits(c, &b.lim);
	if (!empty_inter(op, sets, n))
		walk_result(op, sets, n, 0, add_member, &b);
	if (b.failed) {
		kv_err_oom(c);
		goto out;
	}
	size_t len = kv_coll_len(b.dst);
	if (kv_arg_key(c, 1, &pos) && !len)
		kv_db_erase(c->db, &pos);
	if (len) {
		if (kv_db_store_obj(c->db, &pos, KV_SET, b.dst, KV_NO_EXPIRE)) {
			kv_err_oom(c);
			goto out;
		}
		b.dst = NULL;
	}
	kv_reply_int(c->out, (int64_t)len);
out:
	kv_coll_free(b.dst);
	free(sets);
}

void kv_smembers(struct kv_call *c)
{
	setop_reply(c, OP_INTER);
}

void kv_sinter(struct kv_call *c)
{
	setop_reply(c, OP_INTER);
}

void kv_sunion(struct kv_call *c)
{
	setop_reply(c, OP_UNION);
}

void kv_sdiff(struct kv_call *c)
{
	setop_reply(c, OP_DIFF);
}

void kv_sinterstore(struct kv_call *c)
{
	setop_store(c, OP_INTER);
}

void kv_sunionstore(struct kv_call *c)
{
	setop_store(c, OP_UNION);
}

void kv_sdiffstore(struct kv_call *c)
{
	setop_store(c, OP_DIFF);
}

/* SINTERCARD numkeys key [key ...] [LIMIT limit] */
void kv_sintercard(struct kv_call *c)
{
	int64_t numkeys, limit = 0;

	if (!kv_str2ll(c->argv[1], c->argl[1], &numkeys) || numkeys < 1) {
		kv_err(c, KV_ERR_NUMKEYS);
		return;
	}
	if (numkeys > (int64_t)c->argc - 2) {
		kv_err(c, KV_ERR_NUMKEYS_ARGS);
		return;
	}
	for (uint32_t i = 2 + (uint32_t)numkeys; i < c->argc; i++) {
		if (kv_arg_is(c, i, "limit") && i + 1 < c->argc) {
			i++;
			if (!kv_str2ll(c->argv[i], c->argl[i], &limit) || limit < 0) {
				kv_err(c, KV_ERR_LIMIT_NEG);
				return;
			}
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return;
		}
	}
	uint32_t n = (uint32_t)numkeys;
	const struct kv_coll **sets = malloc(n * sizeof(*sets));
	if (!sets) {
		kv_err_oom(c);
		return;
	}
	if (gather(c, 2, n, sets))
		kv_reply_int(c->out, empty_inter(OP_INTER, sets, n) ? 0 :
			     (int64_t)walk_result(OP_INTER, sets, n, (size_t)limit, NULL, NULL));
	free(sets);
}

void kv_sscan(struct kv_call *c)
{
	kv_coll_scan_cmd(c, KV_SET);
}
