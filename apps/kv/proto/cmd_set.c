/* SPDX-License-Identifier: MIT */
/* Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
 * SRANDMEMBER, SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION,
 * SUNIONSTORE, SDIFF, SDIFFSTORE, SSCAN. Replies, errors and the order of
 * checks are Redis 7.0's (t_set.c). A store's result is built as SADD
 * would build it (intset while it can be one). The commands over several
 * sets read them through gather.h, so their keys may live on any shards. */
#include "cmd_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "gather.h"
#include "num.h"

/* Adds the members argv[first..argc) to pos's set s; the count added, or
 * -1 after the out-of-memory error. */
static int64_t add_members(struct kv_call *c, struct kv_pos *pos, struct kv_coll *s,
			   uint32_t first)
{
	struct kv_coll_limits lim;
	int64_t added = 0;
	kv_call_limits(c, &lim);
	size_t before = kv_db_edit_begin(c->db, pos->entry);
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
	kv_del_members(c, KV_SET, kv_coll_del_member);
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
	size_t before = kv_db_edit_begin(c->db, pos.entry);
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

/* ---- commands over several sets: gathered, computed, put (gather.h) ---- */

/* SMOVE's gather: the key's type, and whether it holds the member. */
static int probe_member(struct kv_call *c, uint32_t k, uint32_t arg, bool copy,
			struct kv_gval *v)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, arg, &pos);

	(void)k;
	(void)copy;
	if (!e)
		return 0;
	v->found = true;
	v->type = kv_entry_type(e);
	v->member = v->type == KV_SET &&
		    kv_coll_find(kv_entry_obj(e), c->argv[3], c->argl[3], NULL);
	return 0;
}

/* SMOVE's writes: the member added to the destination (made when
 * absent), removed from the source (deleted when emptied). */
static int put_member(struct kv_call *c, uint32_t arg, struct kv_gput *p)
{
	struct kv_pos pos;
	struct kv_coll_limits lim;
	struct kv_coll *s = kv_coll_for_write(c, arg, KV_SET, &pos);
	size_t before;
	int rc;

	if (!s)
		return -ENOMEM; /* the type was checked when gathered */
	kv_call_limits(c, &lim);
	before = kv_db_edit_begin(c->db, pos.entry);
	rc = kv_coll_put(s, c->argv[p->marg], c->argl[p->marg], NULL, 0, &lim);
	kv_db_edit_end(c->db, &pos, before);
	return rc < 0 ? rc : 0;
}

static int drop_member(struct kv_call *c, uint32_t arg, struct kv_gput *p)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, arg, &pos);

	if (e && kv_entry_type(e) == KV_SET) {
		size_t before = kv_db_edit_begin(c->db, e);

		kv_coll_del(kv_entry_obj(e), c->argv[p->marg], c->argl[p->marg]);
		kv_db_edit_end(c->db, &pos, before);
	}
	return 0;
}

static bool wrong_set(struct kv_call *c, const struct kv_gval *v)
{
	if (v->found && v->type != KV_SET) {
		kv_err(c, KV_ERR_WRONGTYPE);
		return true;
	}
	return false;
}

/* SMOVE source destination member, in Redis's order of checks. The
 * destination's write goes first: when it cannot take the member,
 * nothing has changed. */
static void smove_compute(struct kv_call *c, struct kv_gather *g)
{
	const struct kv_gval *src = &g->vals[0], *dst = &g->vals[1];

	if (!src->found) {
		kv_reply_int(c->out, 0);
		return;
	}
	if (wrong_set(c, src) || wrong_set(c, dst))
		return;
	if (c->argl[1] == c->argl[2] && !memcmp(c->argv[1], c->argv[2], c->argl[1])) {
		kv_reply_int(c->out, src->member);
		return;
	}
	if (!src->member) {
		kv_reply_int(c->out, 0);
		return;
	}
	kv_gather_add_put(g, 1, put_member)->marg = 3;
	kv_gather_add_put(g, 0, drop_member)->marg = 3;
	kv_reply_int(c->out, 1);
}

void kv_smove(struct kv_call *c)
{
	kv_gather_run(c, &kv_smove_ops);
}

enum setop { OP_INTER, OP_UNION, OP_DIFF };

/* The sets gathered for keys from..from+n: each key's set or NULL when
 * absent; false after WRONGTYPE (every key is checked first, as Redis
 * does). */
static bool sets_of(struct kv_call *c, const struct kv_gather *g, uint32_t from, uint32_t n,
		    const struct kv_coll **sets)
{
	for (uint32_t k = 0; k < n; k++) {
		const struct kv_gval *v = &g->vals[from + k];

		if (wrong_set(c, v))
			return false;
		sets[k] = v->found ? v->obj : NULL;
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

/* SINTER, SUNION, SDIFF (and SMEMBERS, one key): every key gathered. */
static void setop_reply(struct kv_call *c, struct kv_gather *g, enum setop op)
{
	uint32_t n = g->nkeys;
	const struct kv_coll **sets = malloc(n * sizeof(*sets));
	if (!sets) {
		kv_err_oom(c);
		return;
	}
	if (sets_of(c, g, 0, n, sets)) {
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
static void setop_store(struct kv_call *c, struct kv_gather *g, enum setop op)
{
	uint32_t n = g->nkeys - 1;
	const struct kv_coll **sets = malloc(n * sizeof(*sets));
	struct build b = { .dst = kv_coll_new(KV_SET) };

	if (!sets || !b.dst) {
		kv_err_oom(c);
		goto out;
	}
	if (!sets_of(c, g, 1, n, sets))
		goto out;
	kv_call_limits(c, &b.lim);
	if (!empty_inter(op, sets, n))
		walk_result(op, sets, n, 0, add_member, &b);
	if (b.failed) {
		kv_err_oom(c);
		goto out;
	}
	size_t len = kv_coll_len(b.dst);
	kv_gather_put_new(g, 0, KV_SET, len ? b.dst : NULL);
	if (len)
		b.dst = NULL;
	kv_reply_int(c->out, (int64_t)len);
out:
	kv_coll_free(b.dst);
	free(sets);
}

static void sinter_compute(struct kv_call *c, struct kv_gather *g)
{
	setop_reply(c, g, OP_INTER);
}

static void sunion_compute(struct kv_call *c, struct kv_gather *g)
{
	setop_reply(c, g, OP_UNION);
}

static void sdiff_compute(struct kv_call *c, struct kv_gather *g)
{
	setop_reply(c, g, OP_DIFF);
}

static void sinterstore_compute(struct kv_call *c, struct kv_gather *g)
{
	setop_store(c, g, OP_INTER);
}

static void sunionstore_compute(struct kv_call *c, struct kv_gather *g)
{
	setop_store(c, g, OP_UNION);
}

static void sdiffstore_compute(struct kv_call *c, struct kv_gather *g)
{
	setop_store(c, g, OP_DIFF);
}

/* SINTERCARD numkeys key [key ...] [LIMIT limit] */
static void sintercard_compute(struct kv_call *c, struct kv_gather *g)
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
	if (sets_of(c, g, 0, n, sets))
		kv_reply_int(c->out, empty_inter(OP_INTER, sets, n) ? 0 :
			     (int64_t)walk_result(OP_INTER, sets, n, (size_t)limit, NULL, NULL));
	free(sets);
}

const struct kv_gather_ops kv_sinter_ops = { NULL, sinter_compute };
const struct kv_gather_ops kv_sunion_ops = { NULL, sunion_compute };
const struct kv_gather_ops kv_sdiff_ops = { NULL, sdiff_compute };
const struct kv_gather_ops kv_sinterstore_ops = { kv_gather_sources, sinterstore_compute };
const struct kv_gather_ops kv_sunionstore_ops = { kv_gather_sources, sunionstore_compute };
const struct kv_gather_ops kv_sdiffstore_ops = { kv_gather_sources, sdiffstore_compute };
const struct kv_gather_ops kv_sintercard_ops = { NULL, sintercard_compute };
const struct kv_gather_ops kv_smove_ops = { probe_member, smove_compute };

void kv_smembers(struct kv_call *c)
{
	kv_gather_run(c, &kv_sinter_ops);
}

void kv_sinter(struct kv_call *c)
{
	kv_gather_run(c, &kv_sinter_ops);
}

void kv_sunion(struct kv_call *c)
{
	kv_gather_run(c, &kv_sunion_ops);
}

void kv_sdiff(struct kv_call *c)
{
	kv_gather_run(c, &kv_sdiff_ops);
}

void kv_sinterstore(struct kv_call *c)
{
	kv_gather_run(c, &kv_sinterstore_ops);
}

void kv_sunionstore(struct kv_call *c)
{
	kv_gather_run(c, &kv_sunionstore_ops);
}

void kv_sdiffstore(struct kv_call *c)
{
	kv_gather_run(c, &kv_sdiffstore_ops);
}

void kv_sintercard(struct kv_call *c)
{
	kv_gather_run(c, &kv_sintercard_ops);
}

void kv_sscan(struct kv_call *c)
{
	kv_coll_scan_cmd(c, KV_SET);
}
