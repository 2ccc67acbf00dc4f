/* SPDX-License-Identifier: MIT */
/* Keyspace commands: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN, RENAME, RENAMENX,
 * TOUCH, RANDOMKEY, COPY, and expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT
 * (NX, XX, GT, LT), TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST. Replies and
 * checks in Redis 7.0's order (db.c,
 * expire.c). */
#include "cmd_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "gather.h"
#include "glob.h"
#include "num.h"

/* DEL and UNLINK: entries are freed at once either way. */
void kv_del(struct kv_call *c)
{
	int64_t n = 0;
	for (uint32_t i = 1; i < c->argc; i++) {
		struct kv_pos pos;
		if (kv_arg_key(c, i, &pos)) {
			kv_db_erase(c->db, &pos);
			n++;
		}
	}
	c->part->n = n;
}

/* A key named twice counts twice, as in Redis. The lookup marks each key
 * used, which is all TOUCH does. */
void kv_exists(struct kv_call *c)
{
	int64_t n = 0;
	for (uint32_t i = 1; i < c->argc; i++) {
		struct kv_pos pos;
		n += kv_arg_key(c, i, &pos) != NULL;
	}
	c->part->n = n;
}

/* This shard's random key, with a random draw for the merge to pick the
 * shard by (typed: KV_MULTI_RANDOM). */
void kv_randomkey(struct kv_call *c)
{
	const struct kv_entry *e = kv_db_random(c->db, c->now);
	size_t n;
	if (!e)
		return;
	const char *k = kv_entry_key(e, &n);
	kv_part_add(c->part, k, n);
	c->part->n = (int64_t)(*kv_rng() >> 1);
}

void kv_type(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	kv_reply_status(c->out, e ? kv_type_names[kv_entry_type(e)] : "none");
}

struct keys_walk {
	const char *pat;
	size_t plen;
	bool all;
	int type;               /* SCAN ... TYPE: the one kept; -1 any, KV_NTYPES none */
	struct kv_part *found;
	size_t count;
};

static void keys_one(const struct kv_entry *e, void *arg)
{
	struct keys_walk *w = arg;
	size_t n;
	const char *k = kv_entry_key(e, &n);
	if (w->all || kv_glob_match(w->pat, w->plen, k, n)) {
		if (w->type < 0 || w->type == (int)kv_entry_type(e))
			kv_part_add(w->found, k, n);
		w->count++;
	}
}

/* Every key not expired that matches; "*" alone takes every key, the
 * empty one too (Redis's shortcut). The table does not change during
 * the walk, so each key comes out once. */
void kv_keys(struct kv_call *c)
{
	struct keys_walk w = { .pat = c->argv[1], .plen = c->argl[1], .type = -1, .found = c->part };
	uint64_t cursor = 0;
	w.all = w.plen == 1 && w.pat[0] == '*';
	do
		cursor = kv_db_scan(c->db, cursor, c->now, keys_one, &w);
	while (cursor);
}

bool kv_arg_cursor(struct kv_call *c, uint32_t i, uint64_t *cursor)
{
	char buf[64];
	size_t n = c->argl[i];
	if (n >= sizeof(buf) || (n && (c->argv[i][0] == ' ' ||
				       (c->argv[i][0] >= '\t' && c->argv[i][0] <= '\r')))) {
		kv_err(c, KV_ERR_CURSOR);
		return false;
	}
	memcpy(buf, c->argv[i], n);
	buf[n] = '\0';
	char *end;
	errno = 0;
	*cursor = strtoull(buf, &end, 10);
	if (*end != '\0' || errno == ERANGE) {
		kv_err(c, KV_ERR_CURSOR);
		return false;
	}
	return true;
}

/* SCAN's options: MATCH pattern, COUNT n (at least 1), TYPE name. */
static bool scan_options(struct kv_call *c, struct keys_walk *w, int64_t *count)
{
	for (uint32_t i = 2; i < c->argc; i += 2) {
		bool arg = i + 1 < c->argc;
		if (arg && kv_arg_is(c, i, "count")) {
			if (!kv_arg_ll(c, i + 1, count))
				return false;
			if (*count < 1) {
				kv_err(c, KV_ERR_SYNTAX);
				return false;
			}
		} else if (arg && kv_arg_is(c, i, "match")) {
			w->pat = c->argv[i + 1];
			w->plen = c->argl[i + 1];
			w->all = w->plen == 1 && w->pat[0] == '*';
		} else if (arg && kv_arg_is(c, i, "type")) {
			/* a name Redis does not know matches nothing (7.0) */
			w->type = KV_NTYPES;
			for (int t = 0; t < KV_NTYPES; t++)
				if (kv_arg_is(c, i + 1, kv_type_names[t]))
					w->type = t;
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* SCAN cursor [MATCH pattern] [COUNT n] [TYPE t] on this shard: walks
 * home groups until count keys came out, 10 x count groups were seen or
 * the walk ended (Redis's bounds). Every key present for the whole walk
 * comes out (kv_db_scan). The cursor uses only the table's group bits, so
 * a cross-shard SCAN can keep the shard's number above them. */
void kv_scan(struct kv_call *c)
{
	struct keys_walk w = { .all = true, .type = -1, .found = c->part };
	uint64_t cursor;
	int64_t count = 10;
	if (!kv_arg_cursor(c, 1, &cursor) || !scan_options(c, &w, &count))
		return;
	int64_t groups = count > INT64_MAX / 10 ? INT64_MAX : count * 10;
	do
		cursor = kv_db_scan(c->db, cursor, c->now, keys_one, &w);
	while (cursor && --groups > 0 && w.count < (uint64_t)count);
	c->part->n = (int64_t)cursor;
}

/* Moves src's value and expiry to dst (replacing dst unless nx). A
 * string is copied into dst's entry before src's is freed; a typed
 * value's object changes owner. */
static void rename_generic(struct kv_call *c, bool nx)
{
	struct kv_pos src, dst;
	bool same = c->argl[1] == c->argl[2] && memcmp(c->argv[1], c->argv[2], c->argl[1]) == 0;
	struct kv_entry *e = kv_arg_key(c, 1, &src);
	if (!e) {
		kv_err(c, KV_ERR_NO_KEY);
		return;
	}
	if (same) {
		nx ? kv_reply_int(c->out, 0) : kv_reply_status(c->out, "OK");
		return;
	}
	if (kv_arg_key(c, 2, &dst) && nx) {
		kv_reply_int(c->out, 0);
		return;
	}
	size_t n;
	const char *v = kv_entry_value(e, &n);
	enum kv_type t = kv_entry_type(e);
	int rc = t == KV_STRING ? kv_db_store(c->db, &dst, v, n, kv_entry_expire(e)) :
		 kv_db_store_obj(c->db, &dst, t, kv_entry_obj(e), kv_entry_expire(e));
	if (rc) {
		kv_err_oom(c);
		return;
	}
	if (t == KV_STRING)
		kv_entry_set_str_enc(dst.entry, kv_entry_str_enc(e));
	if (t == KV_STRING)
		kv_db_erase(c->db, &src);
	else
		kv_db_detach(c->db, &src);
	nx ? kv_reply_int(c->out, 1) : kv_reply_status(c->out, "OK");
}

void kv_rename(struct kv_call *c)
{
	rename_generic(c, false);
}

void kv_renamenx(struct kv_call *c)
{
	rename_generic(c, true);
}

/* COPY's options; false after replying the error. One database: DB
 * names it, 0. */
static bool copy_options(struct kv_call *c, bool *replace)
{
	int64_t db;

	for (uint32_t i = 3; i < c->argc; i++) {
		if (kv_arg_is(c, i, "replace")) {
			*replace = true;
		} else if (kv_arg_is(c, i, "db") && i + 1 < c->argc) {
			if (!kv_arg_ll(c, ++i, &db))
				return false;
			if (db < INT32_MIN || db > INT32_MAX) {
				kv_err(c, KV_ERR_DB_RANGE);
				return false;
			}
			if (db != 0) {
				kv_err(c, KV_ERR_DB_INDEX);
				return false;
			}
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* COPY source destination [DB destination-db] [REPLACE]: the source's
 * value and expiry under the destination's name. */
static void copy_compute(struct kv_call *c, struct kv_gather *g)
{
	bool replace = false;
	struct kv_gval v;

	if (!copy_options(c, &replace))
		return;
	if (c->argl[1] == c->argl[2] && !memcmp(c->argv[1], c->argv[2], c->argl[1])) {
		kv_err(c, KV_ERR_SAME_OBJECT);
		return;
	}
	if (!g->vals[0].found || (g->vals[1].found && !replace)) {
		kv_reply_int(c->out, 0);
		return;
	}
	v = g->vals[0]; /* the put takes it, a copy of its own */
	memset(&g->vals[0], 0, sizeof(g->vals[0]));
	if (kv_gval_own(&v)) {
		kv_gval_clear(&v);
		kv_err_oom(c);
		return;
	}
	kv_gather_add_put(g, 1, kv_gather_replace)->v = v;
	kv_reply_int(c->out, 1);
}

/* The source whole; of the destination, whether it exists. */
static int copy_gather(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v)
{
	return (k ? kv_gather_type : kv_gather_value)(c, k, arg, copy, v);
}

const struct kv_gather_ops kv_copy_ops = { copy_gather, copy_compute };

void kv_copy(struct kv_call *c)
{
	kv_gather_run(c, &kv_copy_ops);
}

#define X_NX 1u
#define X_XX 2u
#define X_GT 4u
#define X_LT 8u

/* NX, XX, GT, LT after the time; false after Redis's error. */
static bool expire_flags(struct kv_call *c, unsigned *flags)
{
	static const char *const words[] = { "nx", "xx", "gt", "lt" };
	*flags = 0;
	for (uint32_t i = 3; i < c->argc; i++) {
		unsigned f = 0;
		for (unsigned w = 0; w < 4 && !f; w++)
			f = kv_arg_is(c, i, words[w]) ? 1u << w : 0;
		if (!f) {
			int n = (int)strnlen(c->argv[i], c->argl[i]);
			kv_reply_errorf(c->out, KV_ERR_OPTION_FMT, n, c->argv[i]);
			return false;
		}
		*flags |= f;
	}
	if ((*flags & X_NX) && (*flags & (X_XX | X_GT | X_LT))) {
		kv_err(c, KV_ERR_NX_XX_GT_LT);
		return false;
	}
	if ((*flags & X_GT) && (*flags & X_LT)) {
		kv_err(c, KV_ERR_GT_LT);
		return false;
	}
	return true;
}

/* Whether the flags let the new time replace the current one (-1: none,
 * which GT takes as infinite). */
static bool expire_allowed(unsigned flags, int64_t cur, int64_t when)
{
	if ((flags & X_NX) && cur != KV_NO_EXPIRE)
		return false;
	if ((flags & X_XX) && cur == KV_NO_EXPIRE)
		return false;
	if ((flags & X_GT) && (cur == KV_NO_EXPIRE || when <= cur))
		return false;
	if ((flags & X_LT) && cur != KV_NO_EXPIRE && when >= cur)
		return false;
	return true;
}

/* The four EXPIRE commands: base is now for the relative ones, 0 for the
 * absolute; a time at or before now deletes the key. */
static void expire_generic(struct kv_call *c, int64_t base, int64_t unit)
{
	unsigned flags;
	int64_t when;
	struct kv_pos pos;
	if (!expire_flags(c, &flags) || !kv_arg_ll(c, 2, &when))
		return;
	if (unit == 1000 && (when > INT64_MAX / 1000 || when < INT64_MIN / 1000)) {
		kv_err_expire(c);
		return;
	}
	when *= unit;
	if (when > INT64_MAX - base) {
		kv_err_expire(c);
		return;
	}
	when += base;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (!e || !expire_allowed(flags, kv_entry_expire(e), when)) {
		kv_reply_int(c->out, 0);
		return;
	}
	if (when <= c->now)
		kv_db_erase(c->db, &pos);
	else if (kv_db_set_expire(c->db, &pos, when)) {
		kv_err_oom(c);
		return;
	}
	kv_reply_int(c->out, 1);
}

void kv_expire(struct kv_call *c)
{
	expire_generic(c, c->now, 1000);
}

void kv_pexpire(struct kv_call *c)
{
	expire_generic(c, c->now, 1);
}

void kv_expireat(struct kv_call *c)
{
	expire_generic(c, 0, 1000);
}

void kv_pexpireat(struct kv_call *c)
{
	expire_generic(c, 0, 1);
}

/* -2 no key, -1 no expiry, else the time left (never below 0), or with
 * abs the expiry time itself; seconds round to nearest, as Redis does. */
static void ttl_generic(struct kv_call *c, bool ms, bool abs)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (!e) {
		kv_reply_int(c->out, -2);
		return;
	}
	int64_t when = kv_entry_expire(e);
	if (when == KV_NO_EXPIRE) {
		kv_reply_int(c->out, -1);
		return;
	}
	int64_t left = abs ? when : when - c->now;
	if (left < 0)
		left = 0;
	kv_reply_int(c->out, ms ? left : (left + 500) / 1000);
}

void kv_ttl(struct kv_call *c)
{
	ttl_generic(c, false, false);
}

void kv_pttl(struct kv_call *c)
{
	ttl_generic(c, true, false);
}

void kv_expiretime(struct kv_call *c)
{
	ttl_generic(c, false, true);
}

void kv_pexpiretime(struct kv_call *c)
{
	ttl_generic(c, true, true);
}

void kv_persist(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (!e || kv_entry_expire(e) == KV_NO_EXPIRE) {
		kv_reply_int(c->out, 0);
		return;
	}
	if (kv_db_set_expire(c->db, &pos, KV_NO_EXPIRE))
		kv_err_oom(c);
	else
		kv_reply_int(c->out, 1);
}
