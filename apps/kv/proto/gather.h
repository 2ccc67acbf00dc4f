/* SPDX-License-Identifier: MIT */
/* Commands whose result depends on the values of several keys (SINTER,
 * SUNIONSTORE, SMOVE, COPY, ...), written once for keys on one shard or on
 * several. Each runs in three steps:
 *  1. gather: each key's value as the command needs it, read on the key's
 *     shard (ops->gather): its type, and the value itself or only what
 *     the command asks of it (SMOVE: whether the member is there);
 *  2. compute (ops->compute): the reply, and the writes it needs, from
 *     the gathered values alone: it never reads a keyspace;
 *  3. put: each write, in order, on its key's shard (kv_gather_put).
 * kv_gather_run() does all three on one keyspace, lending the entries'
 * values rather than copying them; a transaction (server/multi.c) runs
 * step 1 on every shard holding a key, step 2 at home and step 3 on each
 * written key's shard, its keys locked throughout. Internal to apps/kv. */
#ifndef KV_GATHER_H
#define KV_GATHER_H

#include <stdbool.h>
#include <stdint.h>

#include "cmd.h"

/* One key's value as gathered. */
struct kv_gval {
	bool found;
	enum kv_type type;
	bool owned;         /* obj / str are copies this record frees */
	void *obj;          /* a typed value (NULL: not gathered) */
	char *str;          /* a string value (NULL: not gathered) */
	size_t len;
	uint8_t str_enc;    /* the string's kv_entry_str_enc() */
	int64_t expire;
	bool member;        /* a probe's answer: the value holds the member */
};

struct kv_gather;
struct kv_gput;

/* A write, run on its key's shard with c the request there (c->db that
 * shard's keyspace); arg: the key's argument index. Returns 0, or
 * -ENOMEM with nothing changed. */
typedef int kv_gput_fn(struct kv_call *c, uint32_t arg, struct kv_gput *p);

struct kv_gput {
	uint32_t key;       /* the key's number among the request's keys */
	kv_gput_fn *fn;
	struct kv_gval v;   /* kv_gather_replace's value (found false: delete) */
	uint32_t marg;      /* a member write's member: its argument index */
};

/* The most writes one command makes. */
#define KV_GATHER_PUTS 2

struct kv_gather {
	uint32_t nkeys;
	uint32_t *arg;      /* key k's argument index */
	struct kv_gval *vals;
	uint32_t nput;
	struct kv_gput put[KV_GATHER_PUTS];
	uint32_t small_arg[8];
	struct kv_gval small_vals[8];
};

/* What a command that opts in provides. */
struct kv_gather_ops {
	/* Reads key number k (argument arg) on its shard into v: a copy of
	 * what it keeps when copy is set (the value leaves the shard), else
	 * borrowed from the entry (valid until the keyspace changes). Returns
	 * 0 or -ENOMEM. NULL: kv_gather_value (the whole value). */
	int (*gather)(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v);
	/* Replies to c->out (an error, or the result) and adds its writes to
	 * g->put; c->db is not to be read (NULL across shards). */
	void (*compute)(struct kv_call *c, struct kv_gather *g);
};

/* The ops of command cmd, or NULL when it does not run this way. */
const struct kv_gather_ops *kv_gather_ops_of(const struct kv_cmd *cmd);

/* Sets g up for the request's keys (its command's key positions).
 * Returns 0 or -ENOMEM. */
int kv_gather_init(struct kv_gather *g, const struct kv_cmd *cmd, uint32_t argc,
		   const char *const *argv, const size_t *argl);
/* Frees every copy g still owns, and g's arrays. */
void kv_gather_clear(struct kv_gather *g);

/* Step 1 for key k on c's keyspace. Returns 0 or -ENOMEM. */
int kv_gather_key(struct kv_call *c, const struct kv_gather_ops *ops, struct kv_gather *g,
		  uint32_t k, bool copy);

/* Step 3: runs write p (of g) on c's keyspace. Returns 0 or -ENOMEM. */
int kv_gather_put(struct kv_call *c, struct kv_gather *g, struct kv_gput *p);

/* The three steps on c's keyspace: a command's single-shard run. */
void kv_gather_run(struct kv_call *c, const struct kv_gather_ops *ops);

/* gather: the whole value (a copy or the entry's). */
int kv_gather_value(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v);
/* gather: whether the key exists, and its type; no value. */
int kv_gather_type(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v);

/* gather: every key's whole value but the first's, a destination that
 * is replaced whatever it holds (SINTERSTORE's, ZUNIONSTORE's). */
int kv_gather_sources(struct kv_call *c, uint32_t k, uint32_t arg, bool copy, struct kv_gval *v);

/* Adds a write of key k to g; returns it (g has room: KV_GATHER_PUTS). */
struct kv_gput *kv_gather_add_put(struct kv_gather *g, uint32_t k, kv_gput_fn *fn);

/* Adds the write that makes obj, a new value of type t without expiry,
 * key k's value (the write owns it), or deletes the key (obj NULL). */
void kv_gather_put_new(struct kv_gather *g, uint32_t k, enum kv_type t, void *obj);

/* A write: the key's value becomes p->v (owned: the entry takes it), or
 * the key is deleted when p->v.found is false. */
int kv_gather_replace(struct kv_call *c, uint32_t arg, struct kv_gput *p);

/* Makes v own its value: copies a borrowed one. Returns 0 or -ENOMEM. */
int kv_gval_own(struct kv_gval *v);
/* Frees what v owns; v is then not found. */
void kv_gval_clear(struct kv_gval *v);

/* The set commands' and COPY's ops (cmd_set.c, cmd_key.c). */
extern const struct kv_gather_ops kv_sinter_ops, kv_sunion_ops, kv_sdiff_ops,
	kv_sinterstore_ops, kv_sunionstore_ops, kv_sdiffstore_ops, kv_sintercard_ops,
	kv_smove_ops, kv_copy_ops;
/* The sorted-set commands over several keys' (cmd_zsetop.c, cmd_zset.c). */
extern const struct kv_gather_ops kv_zunion_ops, kv_zinter_ops, kv_zdiff_ops,
	kv_zunionstore_ops, kv_zinterstore_ops, kv_zdiffstore_ops, kv_zintercard_ops,
	kv_zrangestore_ops, kv_zmpop_ops;
/* The list and string commands over several keys (cmd_list.c, cmd_bit.c,
 * cmd_lcs.c). */
extern const struct kv_gather_ops kv_lmove_ops, kv_lmpop_ops, kv_bitop_ops, kv_lcs_ops;
/* SORT ... STORE (cmd_sort.c). */
extern const struct kv_gather_ops kv_sort_ops;

#endif
