/* SPDX-License-Identifier: MIT */
/* Commands over several shards, atomic: MSET, MSETNX, MGET, DEL, UNLINK,
 * EXISTS with keys of several shards, RENAME and RENAMENX across shards,
 * the commands computed from several keys' values (set operations,
 * SMOVE, COPY: "gather"), and the server-wide DBSIZE, FLUSHALL, FLUSHDB,
 * KEYS.
 *
 * A transaction runs on the connection's shard (its home; or on a
 * blocked client's, for a BLMOVE across shards woken by a push, block.c,
 * its end going to a function rather than a client):
 *  1. lock: it locks the shards it touches one at a time, in ascending
 *     shard order: shared for a read-only command (MGET, EXISTS, DBSIZE,
 *     KEYS: readers hold a shard together), exclusive for a writer; a
 *     held shard queues every job not compatible with its holders, and
 *     every later one behind it (server_internal.h). A writer's lock evicts as the
 *     memory policy allows and reports whether the shard is still over
 *     its limit: a DENYOOM command over it on any shard is refused whole
 *     before any part runs, as Redis refuses it before executing;
 *  2. parts: it sends each shard its part of the command (the keys it
 *     owns) and waits for every answer, in one or more stages;
 *  3. it merges the parts' replies and unlocks every shard.
 * No client sees part of it: every read or write of its keys by anyone
 * else runs before its lock or after its unlock on that key's shard, and
 * while it holds all of them no writer runs on any (readers may: they
 * change nothing). The locks are taken in one global order and each
 * shard's queue is first come first served, so no transaction waits for
 * another in a cycle; plain jobs hold no lock.
 *
 * Gather (TX_GATHER), for a command whose result depends on the values
 * of keys that may live on several shards, with its keys locked:
 *  stage 0: every shard holding keys copies what the command needs of
 *           them (ops->gather: a value cloned through the type table, or
 *           just its type and a probe) into the transaction's table;
 *  stage 1: home runs the command's compute on the copies (the code its
 *           single-shard run uses, gather.h): the reply, and its writes;
 *  then:    each write, one stage each, on its key's shard (a result
 *           built at home moves there whole: nothing is copied again).
 * A command opts in with the multi kind GATHER in commands.def and a row
 * in gather.c naming its struct kv_gather_ops: a gather function (NULL:
 * the whole value) and a compute function that replies and adds its
 * writes (kv_gather_add_put with kv_gather_replace, or a write function
 * of its own, such as SMOVE's member add and remove; list and sorted-set
 * moves and stores plug in the same way). Its single-shard function
 * calls kv_gather_run() with the same ops, so both runs share the code. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aof_shard.h"
#include "gather.h"
#include "keyhash.h"
#include "server_internal.h"
#include "txn.h"

enum tx_kind { TX_FANOUT, TX_MSETNX, TX_RENAME, TX_GATHER };

struct kv_tx {
	struct kv_client *c;
	uint64_t caller;              /* c's connection id (0: no client) */
	struct kv_shard *sh;          /* home */
	uint64_t id;
	const struct kv_cmd *cmd;
	enum tx_kind kind;
	bool nx;                      /* RENAMENX */
	bool reader;                  /* read-only: shared locks */
	bool oom;                     /* a shard was over its memory limit */
	bool keyed;                   /* locks its keys, not whole shards */
	int stage;
	struct kv_job *req;           /* the request, copied (NULL: a keyed fan-out's
	                               * parts were built from it at once) */
	unsigned nsh;                 /* shards touched, ascending in order[] */
	unsigned *order;
	int *slot;                    /* shard -> its index in order[], or -1 */
	uint64_t *key_hash;           /* per key of the request: its kv_keyhash() */
	unsigned *key_slot;           /* per key of the request: its shard's index in order[] */
	uint32_t *key_arg;            /* per key of the request: its argument's index */
	/* the keys by shard: those of order[i] are slot_keys[slot_from[i]]
	 * up to slot_keys[slot_from[i + 1]], in request order (every table
	 * lives in the transaction's own allocation, tx_alloc()) */
	uint32_t *slot_keys, *slot_from;
	uint32_t nkeys;
	unsigned locked, pending;
	struct kv_job **parts;        /* this stage's jobs, by index in order[] */
	struct kv_job *lockj;         /* the lock asked for, not granted yet */
	struct kv_reply out;
	/* TX_GATHER: the command's ops, the keys' values and the writes, and
	 * the next write to run */
	const struct kv_gather_ops *gops;
	struct kv_gather *g;          /* its own allocation: a gather's alone, and
	                               * large (a transaction without it stays
	                               * small enough for malloc's per-thread cache) */
	uint32_t put;
	/* its end, instead of the client's reply (kv_multi_start_fn,
	 * kv_multi_run_held); held: run under an EXEC's locks, so no unlocks */
	kv_multi_done_fn *done;
	void *done_arg;
	bool held;
};

bool kv_multi_joins(const struct kv_cmd *cmd)
{
	return cmd->multi == KV_MULTI_OK && cmd->first_key && (cmd->flags & KV_CMD_WRITE);
}

/* Server-wide commands but SCAN, which walks one shard at a time. */
static bool server_wide(const struct kv_cmd *cmd)
{
	return (cmd->flags & KV_CMD_ALLSHARDS) && cmd->multi != KV_MULTI_WALK;
}

bool kv_multi_needed(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
		     const char *const *argv, const size_t *argl, struct kv_key_hashes *keys)
{
	uint32_t n, first_key = (uint32_t)cmd->first_key;
	unsigned first;
	uint64_t h;
	bool spans = false;

	if (keys)
		keys->n = 0;
	if (sh->n == 1)
		return false;
	if (server_wide(cmd))
		return true;
	if (!first_key || first_key >= argc || (cmd->key_step == 2 && argc % 2 == 0))
		return false; /* no keys (OBJECT HELP has none), or MSET's argument
			       * error, replied anywhere */
	n = kv_cmd_nkeys(cmd, argc, argv, argl);
	if (n < 2)
		return false; /* one key, one shard: not hashed here */
	if (keys && n > keys->room)
		keys = NULL;
	h = kv_keyhash(argv[first_key], argl[first_key]);
	first = kv_hash_shard(sh, h);
	if (!keys) { /* up to the first key on another shard */
		for (uint32_t k = 1; k < n; k++) {
			uint32_t i = kv_cmd_key_arg(cmd, k, argc, argv, argl);

			if (kv_hash_shard(sh, kv_keyhash(argv[i], argl[i])) != first)
				return true;
		}
		return false;
	}
	/* every key hashed: the transaction needs them all */
	keys->hash[0] = h;
	for (uint32_t k = 1; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(cmd, k, argc, argv, argl);

		h = kv_keyhash(argv[i], argl[i]);
		keys->hash[k] = h;
		spans |= kv_hash_shard(sh, h) != first;
	}
	if (spans)
		keys->n = n;
	return spans;
}

void kv_multi_free(struct kv_tx *t)
{
	kv_job_free(t->lockj);
	for (unsigned i = 0; t->parts && i < t->nsh; i++)
		kv_job_free(t->parts[i]);
	kv_job_free(t->req);
	kv_reply_free(&t->out);
	if (t->g)
		kv_gather_clear(t->g);
	free(t->g);
	free(t);
}

static void tx_stage(struct kv_tx *t);

/* Sends job j of this transaction to shard `to`, as part i. */
static void send_part(struct kv_tx *t, unsigned i, struct kv_job *j, kv_job_fn *done)
{
	j->target = t->order[i];
	j->tx = t->id;
	j->owner = t;
	j->done = done;
	t->parts[i] = j;
	t->pending++;
	if (kv_job_submit(t->sh, j))
		abort(); /* replies-class sends fail only without memory */
}

static void part_done(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_tx *t = j->owner;

	(void)sh;
	if (--t->pending == 0)
		tx_stage(t);
}

/* A fan-out's values go with its keys (MSET's); MSETNX's first stage
 * asks with the keys alone. */
static bool part_values(const struct kv_tx *t)
{
	return t->kind != TX_MSETNX && t->cmd->key_step == 2;
}

/* The bytes of n keys of request a (keys: their indexes), each with the
 * step - 1 arguments after it. Always inlined, and called with MSET's
 * step as a constant (fan_part()), so that its pairs get a loop of their
 * own. */
static inline __attribute__((always_inline)) size_t
part_bytes(const struct kv_tx *t, const struct kv_args *a, const uint32_t *keys, uint32_t n,
	   uint32_t step)
{
	size_t bytes = 0;

	for (uint32_t p = 0; p < n; p++)
		for (uint32_t v = 0, at = t->key_arg[keys[p]]; v < step; v++)
			bytes += a->argl[at + v];
	return bytes;
}

/* The same keys and arguments appended to j, with the keys' hashes. */
static inline __attribute__((always_inline)) void
part_fill(const struct kv_tx *t, const struct kv_args *a, const uint32_t *keys, uint32_t n,
	  uint32_t step, struct kv_job *j)
{
	for (uint32_t p = 0; p < n; p++) {
		uint32_t at = t->key_arg[keys[p]];

		kv_job_key_hash(j, t->key_hash[keys[p]]);
		for (uint32_t v = 0; v < step; v++)
			kv_job_arg(j, a->argv[at + v], a->argl[at + v]);
	}
}

/* Part i of a fan-out of request a: the command's name and, for a keyed
 * command, the keys (with their values) shard order[i] owns; a
 * server-wide command goes whole. name: another command's name instead
 * (MSETNX's EXISTS). */
static struct kv_job *fan_part(struct kv_tx *t, const struct kv_args *a, unsigned i,
			       const char *name, bool values)
{
	const struct kv_cmd *cmd = t->cmd;
	const uint32_t *keys;
	uint32_t n, step = values ? (uint32_t)cmd->key_step : 1;
	size_t nlen = name ? strlen(name) : a->argl[0], bytes;
	struct kv_job *j;

	if (!t->nkeys)
		return NULL;
	keys = t->slot_keys + t->slot_from[i];
	n = t->slot_from[i + 1] - t->slot_from[i];
	bytes = step == 2 ? part_bytes(t, a, keys, n, 2) : part_bytes(t, a, keys, n, step);
	j = kv_job_new_hashed(KV_JOB_CMD, 1 + n * step, nlen + bytes, n);
	if (!j)
		return NULL;
	j->kfirst = 1;
	j->kstep = step;
	j->cmd = name ? NULL : cmd; /* its shard need not look it up again */
	kv_job_arg(j, name ? name : a->argv[0], nlen);
	if (step == 2)
		part_fill(t, a, keys, n, 2, j);
	else
		part_fill(t, a, keys, n, step, j);
	return j;
}

/* The whole request, for a server-wide command's part. */
static struct kv_job *whole(const struct kv_args *a)
{
	size_t bytes = 0;
	struct kv_job *j;

	for (uint32_t i = 0; i < a->argc; i++)
		bytes += a->argl[i];
	j = kv_job_new(KV_JOB_CMD, a->argc, bytes);
	if (!j)
		return NULL;
	for (uint32_t i = 0; i < a->argc; i++)
		kv_job_arg(j, a->argv[i], a->argl[i]);
	return j;
}

static void drop_parts(struct kv_tx *t)
{
	for (unsigned i = 0; i < t->nsh; i++) {
		kv_job_free(t->parts[i]);
		t->parts[i] = NULL;
	}
}

/* Sends every shard its part; false when out of memory (nothing sent). */
static bool fan_out(struct kv_tx *t, const char *name, bool values)
{
	struct kv_job *j[t->nsh];

	for (unsigned i = 0; i < t->nsh; i++) {
		j[i] = t->nkeys ? fan_part(t, &t->req->a, i, name, values) : whole(&t->req->a);
		if (!j[i]) {
			while (i--)
				kv_job_free(j[i]);
			return false;
		}
		j[i]->typed = true;
		j[i]->caller = t->caller;
		/* a write's parts are recovered all or none */
		if (name ? !strcmp(name, "mset") : (t->cmd->flags & KV_CMD_WRITE) != 0)
			j[i]->tx_parts = t->nsh;
	}
	drop_parts(t);
	for (unsigned i = 0; i < t->nsh; i++)
		send_part(t, i, j[i], part_done);
	return true;
}

/* The first error among the parts' replies, or NULL: a typed part
 * writes its reply only to say it failed. */
static const struct kv_reply *first_error(const struct kv_tx *t)
{
	for (unsigned i = 0; i < t->nsh; i++)
		if (t->parts[i] && t->parts[i]->out.len)
			return &t->parts[i]->out;
	return NULL;
}

static int64_t sum_counts(const struct kv_tx *t)
{
	int64_t sum = 0;

	for (unsigned i = 0; i < t->nsh; i++)
		sum += t->parts[i]->part.n;
	return sum;
}

/* The parts' typed results merged as the command's record says. */
static void merge_fanout(struct kv_tx *t)
{
	const struct kv_reply *err = first_error(t);
	const struct kv_part *parts[t->nsh];

	if (err) {
		kv_reply_raw(&t->out, err->buf, err->len);
		return;
	}
	for (unsigned i = 0; i < t->nsh; i++)
		parts[i] = &t->parts[i]->part;
	if (t->cmd->multi == KV_MULTI_SAVE)
		kv_save_finish(&t->sh->cfg, &t->sh->view, parts, t->nsh, kv_now_ms(), &t->out);
	else
		kv_part_merge(t->cmd->multi, parts, t->nsh, t->key_slot, t->nkeys, &t->out);
}

/* ---- RENAME across shards: take the source, store it, delete it -------- */

/* On the source's shard: its value (a typed one copied whole: the copy
 * becomes the destination's) and expiry, or u64 0 when absent. */
static void rename_take(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_db_lookup(sh->db, j->a.argv[0], j->a.argl[0], kv_now_ms(), &pos);
	const char *v;

	if (!e)
		return;
	j->vtype = (uint8_t)kv_entry_type(e);
	j->i64 = kv_entry_expire(e);
	if (j->vtype != KV_STRING) {
		j->obj = kv_types[j->vtype]->clone(kv_entry_obj(e));
		if (!j->obj)
			KV_REPLY_ERR(&j->out, KV_ERR_NOMEM);
		else
			j->u64 = 1;
		return;
	}
	v = kv_entry_value(e, &j->vlen);
	j->str_enc = (uint8_t)kv_entry_str_enc(e);
	j->val = malloc(j->vlen ? j->vlen : 1);
	if (!j->val) {
		KV_REPLY_ERR(&j->out, KV_ERR_NOMEM);
		return;
	}
	memcpy(j->val, v, j->vlen);
	j->u64 = 1;
}

/* Frees a moved value's copy that no entry took. */
static void drop_moved(struct kv_job *j)
{
	if (j->obj)
		kv_types[j->vtype]->free(j->obj);
	j->obj = NULL;
}

/* On the destination's shard: stores the value under the new name and
 * answers u64 2, unless the job asked NX (u64 1 on the way in) and the
 * name exists: then u64 stays as it came. */
static void rename_put(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_db_lookup(sh->db, j->a.argv[0], j->a.argl[0], kv_now_ms(), &pos);

	int rc;

	if (e && j->u64) /* NX and there */
		return;
	if (j->vtype == KV_STRING)
		rc = kv_db_store(sh->db, &pos, j->val, j->vlen, j->i64);
	else
		rc = kv_db_store_obj(sh->db, &pos, (enum kv_type)j->vtype, j->obj, j->i64);
	if (rc) {
		KV_REPLY_ERR(&j->out, KV_ERR_NOMEM);
		return;
	}
	j->obj = NULL; /* the entry's now */
	kv_entry_set_str_enc(pos.entry, j->str_enc);
	j->u64 = 2;
	kv_aof_touched(sh, j->a.argv[0], j->a.argl[0]);
}

static void rename_drop(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_pos pos;

	if (kv_db_lookup(sh->db, j->a.argv[0], j->a.argl[0], kv_now_ms(), &pos))
		kv_db_erase(sh->db, &pos);
	kv_aof_touched(sh, j->a.argv[0], j->a.argl[0]);
}

static struct kv_job *key_job(struct kv_tx *t, uint32_t arg, kv_job_fn *fn)
{
	const struct kv_args *a = &t->req->a;
	struct kv_job *j = kv_job_new(KV_JOB_FN, 1, a->argl[arg]);

	if (j) {
		kv_job_arg(j, a->argv[arg], a->argl[arg]);
		j->fn = fn;
	}
	return j;
}

/* Stages: 0 take the source; 1 put it at the destination; 2 delete the
 * source. Returns true when the transaction is over (reply in t->out). */
static bool rename_stage(struct kv_tx *t)
{
	unsigned src = t->key_slot[0], dst = t->key_slot[1];
	struct kv_job *j;

	switch (t->stage) {
	case 0:
		j = key_job(t, 1, rename_take);
		break;
	case 1: {
		struct kv_job *got = t->parts[src];

		if (got->out.len) {
			kv_reply_raw(&t->out, got->out.buf, got->out.len);
			return true;
		}
		if (!got->u64) {
			KV_REPLY_ERR(&t->out, KV_ERR_NO_KEY);
			return true;
		}
		j = key_job(t, 2, rename_put);
		if (j) {
			j->val = got->val;
			j->vlen = got->vlen;
			j->vtype = got->vtype;
			j->str_enc = got->str_enc;
			j->obj = got->obj;
			j->i64 = got->i64;
			j->u64 = t->nx;
			got->val = NULL;
			got->obj = NULL;
		} else {
			drop_moved(got);
		}
		break;
	}
	case 2: {
		struct kv_job *put = t->parts[dst];

		drop_moved(put);
		if (put->out.len || put->u64 != 2) {
			if (put->out.len)
				kv_reply_raw(&t->out, put->out.buf, put->out.len);
			else
				kv_reply_int(&t->out, 0);
			return true;
		}
		j = key_job(t, 1, rename_drop);
		break;
	}
	default:
		if (t->nx)
			kv_reply_int(&t->out, 1);
		else
			kv_reply_status(&t->out, "OK");
		return true;
	}
	if (!j) {
		KV_REPLY_ERR(&t->out, KV_ERR_NOMEM);
		return true;
	}
	unsigned i = t->stage == 1 ? dst : src;

	if (t->stage >= 1)
		j->tx_parts = 2; /* the put and the drop: recovered both or neither */
	kv_job_free(t->parts[i]);
	t->stage++;
	send_part(t, i, j, part_done);
	return false;
}

/* ---- gather, compute at home, put ------------------------------------------ */

/* The request as a part sees it on shard sh: the transaction's copy,
 * which no one changes while the transaction waits for its parts, and
 * the key tables (each part writes only its own keys' entries, and home
 * reads them once every part has answered). */
static void part_call(struct kv_shard *sh, struct kv_job *j, struct kv_call *c)
{
	struct kv_tx *t = j->owner;

	*c = (struct kv_call){
		.db = sh->db, .out = &j->out, .now = kv_now_ms(),
		.max_bulk = sh->limits.max_bulk, .cfg = &sh->cfg, .argc = t->req->a.argc,
		.argv = t->req->a.argv, .argl = t->req->a.argl, .cmd = t->cmd,
	};
}

/* On a shard holding keys: copies of what the command needs of them. */
static void gather_part(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_tx *t = j->owner;
	struct kv_call c;

	part_call(sh, j, &c);
	for (uint32_t k = 0; k < t->g->nkeys; k++)
		if (t->key_slot[k] == j->u64 && kv_gather_key(&c, t->gops, t->g, k, true)) {
			KV_REPLY_ERR(&j->out, KV_ERR_NOMEM);
			return;
		}
}

/* On a written key's shard: the write j->u64. */
static void put_part(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_tx *t = j->owner;
	struct kv_call c;

	uint32_t arg = t->g->arg[t->g->put[j->u64].key];

	part_call(sh, j, &c);
	if (kv_gather_put(&c, t->g, &t->g->put[j->u64]))
		KV_REPLY_ERR(&j->out, KV_ERR_NOMEM);
	kv_aof_touched(sh, t->req->a.argv[arg], t->req->a.argl[arg]);
}

static struct kv_job *fn_job(kv_job_fn *fn, uint64_t arg)
{
	struct kv_job *j = kv_job_new(KV_JOB_FN, 0, 0);

	if (j) {
		j->fn = fn;
		j->u64 = arg;
	}
	return j;
}

/* Stage 0: every shard gathers its keys. */
static bool gather_all(struct kv_tx *t)
{
	struct kv_job *j[t->nsh];

	for (unsigned i = 0; i < t->nsh; i++) {
		j[i] = fn_job(gather_part, i);
		if (!j[i]) {
			while (i--)
				kv_job_free(j[i]);
			return false;
		}
	}
	drop_parts(t);
	for (unsigned i = 0; i < t->nsh; i++)
		send_part(t, i, j[i], part_done);
	return true;
}

/* The command's own compute, at home, on the gathered copies. */
static void compute_home(struct kv_tx *t)
{
	struct kv_call c = {
		.out = &t->out, .now = kv_now_ms(), .max_bulk = t->sh->limits.max_bulk,
		.cfg = &t->sh->cfg, .argc = t->req->a.argc, .argv = t->req->a.argv,
		.argl = t->req->a.argl, .cmd = t->cmd,
	};

	t->gops->compute(&c, t->g);
}

/* Stages: 0 gather; 1 compute, then each write in turn, one stage each
 * (SMOVE's add runs before its remove: a failed add leaves nothing
 * changed). Returns true when the transaction is over. */
static bool gather_stage(struct kv_tx *t)
{
	const struct kv_reply *err = t->stage ? first_error(t) : NULL;
	struct kv_job *j;
	unsigned i;

	if (err) {
		kv_reply_truncate(&t->out, 0); /* a write failed: the error instead */
		kv_reply_raw(&t->out, err->buf, err->len);
		return true;
	}
	if (t->stage++ == 0) {
		if (gather_all(t))
			return false;
		KV_REPLY_ERR(&t->out, KV_ERR_NOMEM);
		return true;
	}
	if (t->stage == 2)
		compute_home(t);
	if (t->put == t->g->nput)
		return true;
	i = t->key_slot[t->g->put[t->put].key];
	j = fn_job(put_part, t->put);
	if (!j) {
		kv_reply_truncate(&t->out, 0);
		KV_REPLY_ERR(&t->out, KV_ERR_NOMEM);
		return true;
	}
	j->tx_parts = t->g->nput; /* every write recovered, or none */
	t->put++;
	kv_job_free(t->parts[i]);
	send_part(t, i, j, part_done);
	return false;
}

/* ---- stages --------------------------------------------------------------- */

/* WATCH sees every key a writer changed: the writes of its parts that
 * do not go through the command table (a value moved by RENAME, a result
 * gather stored) count no key themselves. Before the unlocks, so an EXEC
 * that locks one of these keys next finds its counter moved. */
static void touch_written(struct kv_tx *t)
{
	if (!t->req)
		return; /* a keyed fan-out: its parts ran through the table */
	struct kv_call c = { .out = &t->out, .cmd = t->cmd, .argc = t->req->a.argc,
			     .argv = t->req->a.argv, .argl = t->req->a.argl };

	kv_txn_touch_cmd(&c, 0);
}

/* Whether each shard's part runs in the step its keys are locked: a
 * keyed fan-out's (a command refused across shards has none). */
static bool part_with_lock(const struct kv_tx *t)
{
	return t->keyed && t->kind == TX_FANOUT && t->cmd->multi != KV_MULTI_SAMESHARD;
}

static void tx_end(struct kv_tx *t)
{
	touch_written(t);
	/* a keyed fan-out's last shard let go after its part (keyed_lock) */
	for (unsigned i = 0; !t->held && i < t->nsh - part_with_lock(t); i++)
		kv_shard_unlock(t->sh, t->order[i], t->id, t->keyed, t->reader);
	if (t->done)
		t->done(t->done_arg, &t->out);
	else
		kv_client_tx_done(t->c, &t->out);
	kv_multi_free(t);
}

/* The next stage: sends its parts, or writes the reply. Returns true
 * when the transaction is over. */
static bool advance(struct kv_tx *t)
{
	const struct kv_reply *err;

	if (t->oom && (t->cmd->flags & KV_CMD_DENYOOM)) {
		KV_REPLY_ERR(&t->out, KV_ERR_OOM);
		return true; /* nothing ran */
	}
	if (t->cmd->multi == KV_MULTI_SAMESHARD) {
		KV_REPLY_ERR(&t->out, KV_ERR_CROSSSLOT);
		return true; /* nothing ran */
	}
	if (t->kind == TX_RENAME)
		return rename_stage(t);
	if (t->kind == TX_GATHER)
		return gather_stage(t);
	switch (t->stage++) {
	case 0:
		if (fan_out(t, t->kind == TX_MSETNX ? "exists" : NULL, part_values(t)))
			return false;
		KV_REPLY_ERR(&t->out, KV_ERR_NOMEM);
		return true;
	case 1:
		if (t->kind != TX_MSETNX)
			break;
		err = first_error(t);
		if (err)
			kv_reply_raw(&t->out, err->buf, err->len);
		else if (sum_counts(t))
			kv_reply_int(&t->out, 0);
		else if (fan_out(t, "mset", true))
			return false;
		else
			KV_REPLY_ERR(&t->out, KV_ERR_NOMEM);
		return true;
	}
	if (t->kind == TX_MSETNX && !first_error(t))
		kv_reply_int(&t->out, 1);
	else
		merge_fanout(t);
	return true;
}

/* Every part of the stage answered (or the locks are all held): the
 * next stage, or the end. pending holds one extra count while parts go
 * out, so a part that answers at once (this shard's own) cannot start
 * the next stage before its siblings were sent. */
static void tx_stage(struct kv_tx *t)
{
	for (;;) {
		t->pending = 1;
		if (advance(t)) {
			tx_end(t);
			return;
		}
		if (--t->pending)
			return; /* the last part's answer comes back here */
	}
}

static void locked(struct kv_shard *sh, struct kv_job *j);

/* The keyed lock of the next shard: for a fan-out, that shard's part
 * (built by tx_new), run once its keys are held; else its keys alone. */
static struct kv_job *keyed_lock(struct kv_tx *t)
{
	bool fan = part_with_lock(t);
	struct kv_job *j;

	if (fan) {
		j = t->parts[t->locked];
		t->parts[t->locked] = NULL; /* the lock's now; back in locked() */
	} else {
		j = fan_part(t, &t->req->a, t->locked, "lock", false);
	}
	if (!j)
		return NULL;
	j->kind = KV_JOB_LOCK;
	j->keyed = true;
	j->run_part = fan;
	/* the last shard's part runs with every other lock held: it can let
	 * go at once, and no unlock message follows (grant_keys) */
	j->release = fan && t->locked + 1 == t->nsh;
	if (fan && (t->cmd->flags & KV_CMD_WRITE))
		j->tx_parts = t->nsh; /* recovered all or none */
	j->typed = fan;
	return j;
}

/* Locks the next shard in ascending order. */
static void lock_next(struct kv_tx *t)
{
	struct kv_job *j = t->keyed ? keyed_lock(t) : kv_job_new(KV_JOB_LOCK, 0, 0);

	if (!j)
		abort();
	j->target = t->order[t->locked];
	j->tx = t->id;
	j->owner = t;
	j->done = locked;
	j->shared = t->reader;
	j->room = !t->keyed && (t->cmd->flags & KV_CMD_WRITE);
	t->lockj = j;
	if (kv_job_submit(t->sh, j))
		abort();
}

/* A shard's lock granted: the next, or, with all held, the stages. A
 * keyed fan-out's parts ran with their locks: only the merge is left. */
static void locked(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_tx *t = j->owner;

	(void)sh;
	t->oom |= j->over;
	t->lockj = NULL;
	if (j->run_part)
		t->parts[t->locked] = j;
	else
		kv_job_free(j);
	if (++t->locked < t->nsh) {
		lock_next(t);
	} else if (part_with_lock(t)) {
		merge_fanout(t);
		tx_end(t);
	} else {
		tx_stage(t);
	}
}

/* A transaction and its tables in one allocation: per shard of the
 * server its part, slot and order; per key (nkeys) its hash, shard,
 * argument and place among its shard's keys, and where each shard's
 * keys start. The 8-byte tables first, so that each is aligned. The
 * transaction and its parts are zeroed; plan() writes every other table
 * before it is read (zeroing a run's key tables cost more than planning
 * it). */
static struct kv_tx *tx_alloc(const struct kv_shard *sh, uint32_t nkeys)
{
	size_t n = sh->n;
	struct kv_tx *t = malloc(sizeof(*t) + n * sizeof(*t->parts) +
				 nkeys * sizeof(*t->key_hash) +
				 n * (sizeof(*t->slot) + sizeof(*t->order)) +
				 nkeys * (sizeof(*t->key_slot) + sizeof(*t->key_arg) +
					  sizeof(*t->slot_keys)) +
				 (n + 1) * sizeof(*t->slot_from));

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t) + n * sizeof(*t->parts));
	t->parts = (struct kv_job **)(t + 1);
	t->key_hash = (uint64_t *)(t->parts + n);
	t->slot = (int *)(t->key_hash + nkeys);
	t->order = (unsigned *)(t->slot + n);
	t->key_slot = t->order + n;
	t->key_arg = (uint32_t *)(t->key_slot + nkeys);
	t->slot_keys = t->key_arg + nkeys;
	t->slot_from = t->slot_keys + nkeys;
	t->nkeys = nkeys;
	return t;
}

/* Which shards the request touches, in ascending order, and each key's
 * (its shard's index in that order), argument and hash (from hash, when
 * given); then the keys by shard: a stable counting sort, so that each
 * part is built from its own keys alone (fan_part()). Three passes: the
 * keys (counted per shard as they are placed), the shards, the keys
 * again into their shard's place. */
static void plan(struct kv_tx *t, const struct kv_args *a, const uint64_t *hash)
{
	struct kv_shard *sh = t->sh;
	uint32_t count[sh->n], *from = t->slot_from;

	if (server_wide(t->cmd)) {
		for (unsigned s = 0; s < sh->n; s++) {
			t->slot[s] = (int)s;
			t->order[s] = s;
		}
		t->nsh = sh->n;
		return;
	}
	memset(count, 0, sizeof(count));
	for (uint32_t k = 0; k < t->nkeys; k++) {
		uint32_t at = kv_cmd_key_arg(t->cmd, k, a->argc, a->argv, a->argl);
		uint64_t h = hash ? hash[k] : kv_keyhash(a->argv[at], a->argl[at]);
		unsigned s = kv_hash_shard(sh, h);

		t->key_arg[k] = at;
		t->key_hash[k] = h;
		t->key_slot[k] = s; /* the shard, for now */
		count[s]++;
	}
	from[0] = 0;
	for (unsigned s = 0; s < sh->n; s++) {
		t->slot[s] = count[s] ? (int)t->nsh : -1;
		if (count[s]) {
			from[t->nsh + 1] = from[t->nsh] + count[s];
			t->order[t->nsh++] = s;
		}
	}
	for (uint32_t k = 0; k < t->nkeys; k++) { /* from[i] moves to the end of i's keys */
		unsigned i = (unsigned)t->slot[t->key_slot[k]];

		t->key_slot[k] = i;
		t->slot_keys[from[i]++] = k;
	}
	for (unsigned i = t->nsh; i > 0; i--) /* and back to their start */
		from[i] = from[i - 1];
	from[0] = 0;
}

/* Each shard's part of a keyed fan-out, built from the caller's request
 * at once: every part travels with its shard's lock (keyed_lock), so the
 * request needs no copy of its own. */
static int build_parts(struct kv_tx *t, const struct kv_args *a)
{
	for (unsigned i = 0; i < t->nsh; i++) {
		t->parts[i] = fan_part(t, a, i, NULL, part_values(t));
		if (!t->parts[i])
			return -ENOMEM;
	}
	return 0;
}

/* A transaction for the request (copied, or cut into its parts),
 * planned, with no lock yet; hash: its keys' hashes, or NULL; held: it
 * runs under an EXEC's locks (kv_multi_run_held). */
static struct kv_tx *tx_new(struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
			    const char *const *argv, const size_t *argl, const uint64_t *hash,
			    bool held)
{
	struct kv_args a = { argc, (const char **)argv, (size_t *)argl };
	struct kv_tx *t = tx_alloc(sh, server_wide(cmd) ? 0 : kv_cmd_nkeys(cmd, argc, argv, argl));

	if (!t)
		return NULL;
	t->sh = sh;
	t->cmd = cmd;
	t->kind = cmd->multi == KV_MULTI_MSETNX ? TX_MSETNX :
		  cmd->multi == KV_MULTI_RENAME || cmd->multi == KV_MULTI_RENAMENX ? TX_RENAME :
		  TX_FANOUT;
	if (cmd->multi == KV_MULTI_GATHER) {
		t->kind = TX_GATHER;
		t->gops = kv_gather_ops_of(cmd);
		t->g = calloc(1, sizeof(*t->g));
		if (!t->gops || !t->g || kv_gather_init(t->g, cmd, argc, argv, argl)) {
			kv_multi_free(t);
			return NULL;
		}
	}
	t->nx = cmd->multi == KV_MULTI_RENAMENX;
	t->reader = cmd->flags & KV_CMD_READONLY;
	kv_reply_init(&t->out);
	/* Keys, not shards, are locked unless a memory limit needs every
	 * shard's answer (over it or not) to hold until the parts ran. */
	t->keyed = !held && !server_wide(cmd) && !sh->cfg.maxmemory;
	plan(t, &a, hash);
	if (part_with_lock(t) ? build_parts(t, &a) : !(t->req = whole(&a))) {
		kv_multi_free(t);
		return NULL;
	}
	return t;
}

/* Starts t: its locks, then its stages. */
static void tx_start(struct kv_shard *sh, struct kv_tx *t)
{
	t->id = kv_shard_tx_id(sh);
	lock_next(t);
}

int kv_multi_start(struct kv_shard *sh, struct kv_client *c, const struct kv_cmd *cmd,
		   uint32_t argc, const char *const *argv, const size_t *argl, struct kv_tx **out)
{
	struct kv_tx *t = tx_new(sh, cmd, argc, argv, argl, NULL, false);

	if (!t)
		return -ENOMEM;
	t->c = c;
	t->caller = kv_client_conn_id(c);
	*out = t;
	tx_start(sh, t);
	return 0;
}

int kv_multi_start_fn(struct kv_shard *sh, uint64_t caller, const struct kv_cmd *cmd,
		      uint32_t argc, const char *const *argv, const size_t *argl,
		      const uint64_t *hash, kv_multi_done_fn *done, void *arg,
		      struct kv_tx **out)
{
	struct kv_tx *t = tx_new(sh, cmd, argc, argv, argl, hash, false);

	if (!t)
		return -ENOMEM;
	t->caller = caller;
	t->done = done;
	t->done_arg = arg;
	if (out)
		*out = t;
	tx_start(sh, t);
	return 0;
}

int kv_multi_run_held(struct kv_shard *sh, uint64_t id, uint64_t caller, bool oom,
		      const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
		      const size_t *argl, kv_multi_done_fn *done, void *arg, struct kv_tx **out)
{
	struct kv_tx *t = tx_new(sh, cmd, argc, argv, argl, NULL, true);

	if (!t)
		return -ENOMEM;
	t->caller = caller;
	t->id = id; /* its parts are the holder's: they run at once */
	t->oom = oom;
	t->done = done;
	t->done_arg = arg;
	t->held = true;
	t->locked = t->nsh;
	*out = t;
	tx_stage(t);
	return 0;
}
