/* SPDX-License-Identifier: MIT */
/* What the hash and set commands share: typed lookups, the thresholds,
 * random members, and the SCAN form (HSCAN, SSCAN), as Redis 7.0 does
 * them (t_hash.c, t_set.c, db.c's scanGenericCommand). */
#include "cmd_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "glob.h"
#include "keyhash.h"

void *kv_arg_obj(struct kv_call *c, uint32_t i, enum kv_type t, struct kv_pos *pos, bool *wrong)
{
	struct kv_entry *e = kv_arg_key(c, i, pos);
	*wrong = kv_wrongtype(c, e, t);
	return e && !*wrong ? kv_entry_obj(e) : NULL;
}

struct kv_coll *kv_arg_coll(struct kv_call *c, uint32_t i, enum kv_type t, struct kv_pos *pos,
			    bool *wrong)
{
	return kv_arg_obj(c, i, t, pos, wrong);
}

bool kv_coll_del_member(void *obj, const void *m, size_t ml)
{
	return kv_coll_del(obj, m, ml);
}

void kv_del_members(struct kv_call *c, enum kv_type t, kv_member_del_fn *del)
{
	struct kv_pos pos;
	int64_t n = 0;
	bool wrong;
	void *obj = kv_arg_obj(c, 1, t, &pos, &wrong);
	if (wrong)
		return;
	if (obj) {
		size_t before = kv_db_edit_begin(c->db, pos.entry);
		for (uint32_t i = 2; i < c->argc; i++)
			n += del(obj, c->argv[i], c->argl[i]);
		kv_db_edit_end(c->db, &pos, before);
	}
	kv_reply_int(c->out, n);
}

struct kv_coll *kv_coll_for_write(struct kv_call *c, uint32_t i, enum kv_type t,
				  struct kv_pos *pos)
{
	bool wrong;
	struct kv_coll *coll = kv_arg_coll(c, i, t, pos, &wrong);
	if (coll || wrong)
		return coll;
	coll = kv_coll_new(t);
	if (!coll || kv_db_store_obj(c->db, pos, t, coll, KV_NO_EXPIRE)) {
		kv_coll_free(coll);
		kv_err_oom(c);
		return NULL;
	}
	return coll;
}

bool kv_store_new_obj(struct kv_call *c, struct kv_pos *pos, enum kv_type t, void *obj)
{
	if (obj && !kv_db_store_obj(c->db, pos, t, obj, KV_NO_EXPIRE))
		return true;
	if (obj)
		kv_types[t]->free(obj);
	kv_err_oom(c);
	return false;
}

void kv_reply_null_array(struct kv_call *c)
{
	kv_reply_raw(c->out, "*-1\r\n", 5);
}

bool kv_arg_timeout(struct kv_call *c)
{
	int64_t ms;
	const char *err = kv_cmd_timeout(c->cmd, c->argc, c->argv, c->argl, &ms);

	if (err)
		kv_reply_errorf(c->out, "%s", err);
	return !err;
}

void kv_call_quiet(const struct kv_call *c, struct kv_call *q, struct kv_reply *scratch)
{
	kv_reply_init(scratch);
	*q = *c;
	q->out = scratch;
}

void kv_call_limits(const struct kv_call *c, struct kv_coll_limits *lim)
{
	*lim = kv_coll_default_limits;
	if (!c->cfg)
		return;
	lim->lp_entries = c->cfg->hash_max_listpack_entries;
	lim->lp_value = c->cfg->hash_max_listpack_value > UINT32_MAX ?
			UINT32_MAX : (uint32_t)c->cfg->hash_max_listpack_value;
	lim->intset_entries = c->cfg->set_max_intset_entries;
}

uint64_t *kv_rng(void)
{
	static __thread uint64_t state;
	if (!state)
		state = kv_keyhash(&state, sizeof(state)) | 1;
	return &state;
}

void kv_reply_elem(struct kv_call *c, const struct kv_elem *e, bool with_value)
{
	kv_reply_bulk(c->out, e->m, e->mlen);
	if (with_value)
		kv_reply_bulk(c->out, e->v, e->vlen);
}

/* count distinct elements of coll (fewer than it has): the whole of it
 * shuffled in part (Fisher-Yates), the first count replied. */
static void reply_distinct(struct kv_call *c, const struct kv_coll *coll, size_t count,
			   bool with_value)
{
	size_t n = kv_coll_len(coll);
	struct kv_elem *all = malloc(n * sizeof(*all));
	struct kv_coll_iter it = KV_COLL_ITER_INIT;
	uint64_t *rng = kv_rng();

	if (!all) {
		kv_err_oom(c);
		return;
	}
	for (size_t i = 0; i < n && kv_coll_next(coll, &it, &all[i]); i++)
		;
	kv_reply_array(c->out, count * (with_value ? 2 : 1));
	for (size_t i = 0; i < count; i++) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		size_t j = i + *rng % (n - i);
		struct kv_elem t = all[i];
		all[i] = all[j];
		all[j] = t;
		/* an intset member's text moved with its element */
		if (kv_coll_encoding(coll) == KV_ENC_INTSET)
			all[i].m = all[i].num;
		kv_reply_elem(c, &all[i], with_value);
	}
	free(all);
}

void kv_reply_random(struct kv_call *c, const struct kv_coll *coll, int64_t count,
		     bool with_value)
{
	struct kv_elem e;
	size_t len = coll ? kv_coll_len(coll) : 0;

	if (!coll || count == 0) {
		kv_reply_array(c->out, 0);
		return;
	}
	if (count < 0) {
		uint64_t n = (uint64_t)-count;
		kv_reply_array(c->out, n * (with_value ? 2 : 1));
		while (n--) {
			kv_coll_random(coll, kv_rng(), &e);
			kv_reply_elem(c, &e, with_value);
		}
		return;
	}
	if ((uint64_t)count >= len) {
		struct kv_coll_iter it = KV_COLL_ITER_INIT;
		kv_reply_array(c->out, len * (with_value ? 2 : 1));
		while (kv_coll_next(coll, &it, &e))
			kv_reply_elem(c, &e, with_value);
		return;
	}
	reply_distinct(c, coll, (size_t)count, with_value);
}

struct scan_walk {
	struct kv_call *c;
	const char *pat;
	size_t plen;
	bool all, pairs;
	struct kv_part found;
};

static void scan_one(const struct kv_elem *e, void *arg)
{
	struct scan_walk *w = arg;
	if (!w->all && !kv_glob_match(w->pat, w->plen, e->m, e->mlen))
		return;
	kv_part_add(&w->found, e->m, e->mlen);
	if (w->pairs)
		kv_part_add(&w->found, e->v, e->vlen);
}

/* MATCH and COUNT; false after Redis's error. */
static bool coll_scan_options(struct kv_call *c, struct scan_walk *w, int64_t *count)
{
	for (uint32_t i = 3; i < c->argc; i += 2) {
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
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

void kv_coll_scan_cmd(struct kv_call *c, enum kv_type t)
{
	struct scan_walk w = { .c = c, .all = true, .pairs = t == KV_HASH };
	struct kv_pos pos;
	uint64_t cursor;
	int64_t count = 10;
	bool wrong;

	if (!kv_arg_cursor(c, 2, &cursor))
		return;
	struct kv_coll *coll = kv_arg_coll(c, 1, t, &pos, &wrong);
	if (wrong)
		return;
	if (!coll) {
		kv_reply_array(c->out, 2);
		kv_reply_bulk(c->out, "0", 1);
		kv_reply_array(c->out, 0);
		return;
	}
	if (!coll_scan_options(c, &w, &count))
		return;
	kv_part_init(&w.found);
	int64_t groups = count > INT64_MAX / 10 ? INT64_MAX : count * 10;
	size_t want = (size_t)count * (w.pairs ? 2 : 1);
	do
		cursor = kv_coll_scan(coll, cursor, scan_one, &w);
	while (cursor && --groups > 0 && w.found.count < want);
	if (w.found.failed)
		kv_err_oom(c);
	else
		kv_part_reply_walk(&w.found, cursor, c->out);
	kv_part_free(&w.found);
}
