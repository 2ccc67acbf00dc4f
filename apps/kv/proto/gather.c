/* SPDX-License-Identifier: MIT */
/* Gather, compute, put: the commands over several keys' values (gather.h). */
#include "gather.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_impl.h"

/* Opting in: a row here, and the multi kind GATHER in commands.def. */
static const struct {
	kv_cmd_fn *fn;
	const struct kv_gather_ops *ops;
} gather_rows[] = {
	{ kv_bitop, &kv_bitop_ops },
	{ kv_blmove, &kv_lmove_ops },
	{ kv_blmpop, &kv_lmpop_ops },
	{ kv_blpop, &kv_lmpop_ops },
	{ kv_brpop, &kv_lmpop_ops },
	{ kv_brpoplpush, &kv_lmove_ops },
	{ kv_bzmpop, &kv_zmpop_ops },
	{ kv_bzpopmax, &kv_zmpop_ops },
	{ kv_bzpopmin, &kv_zmpop_ops },
	{ kv_copy, &kv_copy_ops },
	{ kv_lcs, &kv_lcs_ops },
	{ kv_lmove, &kv_lmove_ops },
	{ kv_lmpop, &kv_lmpop_ops },
	{ kv_rpoplpush, &kv_lmove_ops },
	{ kv_sdiff, &kv_sdiff_ops },
	{ kv_sdiffstore, &kv_sdiffstore_ops },
	{ kv_sinter, &kv_sinter_ops },
	{ kv_sintercard, &kv_sintercard_ops },
	{ kv_sinterstore, &kv_sinterstore_ops },
	{ kv_smove, &kv_smove_ops },
	{ kv_sort, &kv_sort_ops },
	{ kv_sunion, &kv_sunion_ops },
	{ kv_sunionstore, &kv_sunionstore_ops },
	{ kv_zdiff, &kv_zdiff_ops },
	{ kv_zdiffstore, &kv_zdiffstore_ops },
	{ kv_zinter, &kv_zinter_ops },
	{ kv_zintercard, &kv_zintercard_ops },
	{ kv_zinterstore, &kv_zinterstore_ops },
	{ kv_zmpop, &kv_zmpop_ops },
	{ kv_zrangestore, &kv_zrangestore_ops },
	{ kv_zunion, &kv_zunion_ops },
	{ kv_zunionstore, &kv_zunionstore_ops },
};

const struct kv_gather_ops *kv_gather_ops_of(const struct kv_cmd *cmd)
{
	for (size_t i = 0; i < sizeof(gather_rows) / sizeof(gather_rows[0]); i++)
		if (gather_rows[i].fn == cmd->fn)
			return gather_rows[i].ops;
	return NULL;
}

int kv_gather_init(struct kv_gather *g, const struct kv_cmd *cmd, uint32_t argc,
		   const char *const *argv, const size_t *argl)
{
	memset(g, 0, sizeof(*g));
	g->nkeys = kv_cmd_nkeys(cmd, argc, argv, argl);
	if (g->nkeys <= sizeof(g->small_arg) / sizeof(g->small_arg[0])) {
		g->arg = g->small_arg;
		g->vals = g->small_vals;
	} else {
		g->arg = malloc(g->nkeys * sizeof(*g->arg));
		g->vals = calloc(g->nkeys, sizeof(*g->vals));
		if (!g->arg || !g->vals) {
			kv_gather_clear(g);
			return -ENOMEM;
		}
	}
	for (uint32_t k = 0; k < g->nkeys; k++)
		g->arg[k] = kv_cmd_key_arg(cmd, k, argc, argv, argl);
	return 0;
}

void kv_gval_clear(struct kv_gval *v)
{
	if (v->owned) {
		if (v->obj)
			kv_types[v->type]->free(v->obj);
		free(v->str);
	}
	memset(v, 0, sizeof(*v));
}

void kv_gather_clear(struct kv_gather *g)
{
	for (uint32_t k = 0; g->vals && k < g->nkeys; k++)
		kv_gval_clear(&g->vals[k]);
	for (uint32_t p = 0; p < g->nput; p++)
		kv_gval_clear(&g->put[p].v);
	if (g->arg != g->small_arg)
		free(g->arg);
	if (g->vals != g->small_vals)
		free(g->vals);
	g->arg = NULL;
	g->vals = NULL;
	g->nput = 0;
}

int kv_gval_own(struct kv_gval *v)
{
	if (v->owned || !v->found)
		return 0;
	if (v->type != KV_STRING) {
		void *copy = kv_types[v->type]->clone(v->obj);

		if (!copy)
			return -ENOMEM;
		v->obj = copy;
	} else {
		char *copy = malloc(v->len ? v->len : 1);

		if (!copy)
			return -ENOMEM;
		memcpy(copy, v->str, v->len);
		v->str = copy;
	}
	v->owned = true;
	return 0;
}

int kv_gather_type(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, arg, &pos);

	(void)k;
	(void)copy;
	v->found = e != NULL;
	v->type = e ? kv_entry_type(e) : KV_STRING;
	return 0;
}

int kv_gather_value(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, arg, &pos);

	(void)k;
	if (!e)
		return 0;
	v->found = true;
	v->type = kv_entry_type(e);
	v->expire = kv_entry_expire(e);
	if (v->type == KV_STRING) {
		/* the entry's bytes, lent: its string is never changed in place
		 * by the command that borrows it */
		v->str = (char *)kv_entry_value(e, &v->len);
		v->str_enc = (uint8_t)kv_entry_str_enc(e);
	} else {
		v->obj = kv_entry_obj(e);
	}
	return copy ? kv_gval_own(v) : 0;
}

int kv_gather_key(struct kv_call *c, const struct kv_gather_ops *ops, struct kv_gather *g,
		  uint32_t k, bool copy)
{
	int (*fn)(struct kv_call *, uint32_t, uint32_t, bool, struct kv_gval *) =
		ops->gather ? ops->gather : kv_gather_value;

	kv_gval_clear(&g->vals[k]);
	return fn(c, k, g->arg[k], copy, &g->vals[k]);
}

int kv_gather_sources(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v)
{
	return k ? kv_gather_value(c, k, arg, copy, v) : 0;
}

struct kv_gput *kv_gather_add_put(struct kv_gather *g, uint32_t k, kv_gput_fn *fn)
{
	struct kv_gput *p = &g->put[g->nput++];

	memset(p, 0, sizeof(*p));
	p->key = k;
	p->fn = fn;
	return p;
}

void kv_gather_put_new(struct kv_gather *g, uint32_t k, enum kv_type t, void *obj)
{
	struct kv_gput *p = kv_gather_add_put(g, k, kv_gather_replace);

	if (obj)
		p->v = (struct kv_gval){ .found = true, .type = t, .owned = true, .obj = obj,
					 .expire = KV_NO_EXPIRE };
}

int kv_gather_replace(struct kv_call *c, uint32_t arg, struct kv_gput *p)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, arg, &pos);
	struct kv_gval *v = &p->v;
	int rc;

	if (!v->found) {
		if (e)
			kv_db_erase(c->db, &pos);
		return 0;
	}
	if (kv_gval_own(v))
		return -ENOMEM;
	if (v->type == KV_STRING)
		rc = kv_db_store(c->db, &pos, v->str, v->len, v->expire);
	else
		rc = kv_db_store_obj(c->db, &pos, v->type, v->obj, v->expire);
	if (rc)
		return rc;
	if (v->type == KV_STRING)
		kv_entry_set_str_enc(pos.entry, v->str_enc);
	if (v->type != KV_STRING)
		v->obj = NULL; /* the entry's now */
	kv_gval_clear(v);
	return 0;
}

int kv_gather_put(struct kv_call *c, struct kv_gather *g, struct kv_gput *p)
{
	return p->fn(c, g->arg[p->key], p);
}

void kv_gather_run(struct kv_call *c, const struct kv_gather_ops *ops)
{
	struct kv_gather g;
	size_t mark = c->out->len; /* out may hold earlier replies */
	uint32_t k;

	if (kv_gather_init(&g, c->cmd, c->argc, c->argv, c->argl)) {
		kv_err_oom(c);
		return;
	}
	for (k = 0; k < g.nkeys; k++)
		if (kv_gather_key(c, ops, &g, k, false))
			break;
	if (k < g.nkeys) {
		kv_err_oom(c);
	} else {
		ops->compute(c, &g);
		/* the borrowed values are stale once a write ran */
		for (k = 0; k < g.nkeys; k++)
			kv_gval_clear(&g.vals[k]);
		for (uint32_t p = 0; p < g.nput; p++) {
			if (kv_gather_put(c, &g, &g.put[p])) {
				kv_reply_truncate(c->out, mark);
				kv_err_oom(c);
				break;
			}
		}
	}
	kv_gather_clear(&g);
}
