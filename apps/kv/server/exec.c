/* SPDX-License-Identifier: MIT */
/* EXEC over several shards (server_internal.h): the queue of a
 * connection whose commands (or watched keys) live on more than one
 * shard runs atomically, on the connection's shard (home):
 *  1. lock: every key of every queued command and every watched key is
 *     locked on its shard, exclusively, one shard at a time in ascending
 *     order, with the key locks multi.c's commands take (so no two
 *     transactions ever wait for each other in a cycle). A queue with a
 *     server-wide command (FLUSHALL, DBSIZE, KEYS, SCAN...) locks every
 *     shard whole instead, as does any queue while a memory limit is set
 *     (a whole lock's "over the limit" answer then holds to the end);
 *  2. watch: each shard holding watched keys looks them up (one past its
 *     expiry goes, and counts as a change), then home compares their
 *     counters with WATCH's: a moved one ends it with a null reply;
 *  3. run: the commands in queue order, in pieces. A piece is a run of
 *     commands each on one shard, sent together (a shard runs what one
 *     sender sends in order; commands on different shards touch
 *     different keys, so their relative order shows nowhere), or one
 *     command spanning shards, run by multi.c under these same locks.
 *     Commands without keys run at home with the connection's state.
 *     Each reply takes its place in EXEC's array, errors included;
 *  4. commit (with appendonly): each shard it writes on appends its
 *     records, kept apart meanwhile, as one group (aof_tx.c) and
 *     answers, with appendfsync always once they are durable;
 *  5. unlock every shard, the array to the client.
 * Without watched keys, a queue of commands each on one shard runs each
 * shard's commands within its lock step (the lock carries them as a
 * batch): one message per shard instead of two, as multi.c's fan-out
 * parts run with their locks; two-phase locking still holds, since no
 * lock goes before all are held. The last shard's lets go right after
 * its commands (no unlock message), unless its records wait for the
 * commit.
 * Nobody else sees a state between two of its commands: every other
 * access to its keys runs before the lock or after the unlock on that
 * key's shard. Shards it does not touch, and keys it does not lock, go on
 * serving meanwhile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aof_shard.h"
#include "cmd_impl.h"
#include "keyhash.h"
#include "server_internal.h"
#include "txn.h"

/* A key of the transaction, hashed once: every step that needs its
 * shard or its hash (the plan, the locks, each command's target) reads
 * them here. */
struct tx_key {
	const char *key;
	size_t len;
	uint64_t hash;
	unsigned shard;
};

struct kv_exec {
	struct kv_client *c;
	struct kv_shard *sh;          /* home */
	struct kv_conn *conn;         /* the client's: its queue and watches */
	uint64_t id;
	bool whole;                   /* whole shards locked, not keys */
	bool oom;                     /* a shard was over its memory limit */
	bool looked, checked;         /* watched keys looked up, compared */
	bool look_failed;             /* a lookup could not be sent: aborted */
	unsigned nsh, locked;         /* shards to lock, ascending in order[] */
	unsigned *order;
	struct kv_job **locks;        /* per shard of order[]: its lock, made at start */
	/* the commands ran with their locks (early()): replies in the locks */
	bool early;
	uint32_t n;                   /* queued commands */
	uint32_t next, emitted;       /* queue: the next to start, to reply */
	uint32_t pending;             /* answers awaited (+1 while sending) */
	struct kv_job **jobs;         /* per queued command: its reply's job */
	struct kv_job **looks;        /* per shard: its watched keys' lookup */
	/* every key of the queue, then the watched ones, each hashed once
	 * (plan_keys): command i's are keys[qkey[i]] up to keys[qkey[i + 1]],
	 * the watched ones from keys[qkey[n]] on */
	struct tx_key *keys;
	uint32_t nkeys;
	uint32_t *qkey;
	/* the server's shards, the length of looks[] and commits[]: read
	 * when an orphan is freed, after the home shard's memory is gone */
	unsigned nshards;
	/* the shards it writes on, whose records are kept until the commit
	 * (appendonly; a bool per shard, and how many), and their commits */
	bool *writes;
	unsigned nwrites;
	struct kv_job **commits;
	bool ran;                     /* the queue ran (or was aborted) */
	bool aborted;                 /* a watched key moved: nothing ran */
	bool committed;               /* the commits were sent */
	bool muted;                   /* it killed its own connection: no more replies */
	struct kv_tx *sub;            /* the command spanning shards running */
	struct kv_reply out;
};

/* Whether a queued command needs every shard locked whole. */
static bool server_wide(const struct kv_txn_req *q)
{
	return q->cmd->flags & KV_CMD_ALLSHARDS;
}

/* Whether a queued command names keys (OBJECT HELP names none). */
static bool keyed(const struct kv_txn_req *q)
{
	return q->cmd->first_key && (uint32_t)q->cmd->first_key < q->argc;
}

/* The shard of queued command i's first key. */
static unsigned shard_of(const struct kv_exec *x, uint32_t i)
{
	return x->keys[x->qkey[i]].shard;
}

/* The keys of the transaction to walk: its commands' and the watched
 * ones, or (watched) the watched ones alone. */
static uint32_t keys_from(const struct kv_exec *x, bool watched)
{
	return watched ? x->qkey[x->n] : 0;
}

/* A job whose arguments are name and then the keys of the transaction
 * (watched: the watched keys alone) that shard s owns, a lock with their
 * hashes besides (its shard need not hash them again); NULL when out of
 * memory. */
static struct kv_job *keys_job(const struct kv_exec *x, unsigned s, enum kv_job_kind kind,
			       const char *name, bool watched)
{
	size_t bytes = strlen(name), nlen = bytes;
	uint32_t n = 0, from = keys_from(x, watched);
	bool hashed = kind == KV_JOB_LOCK;
	struct kv_job *j;

	for (uint32_t k = from; k < x->nkeys; k++)
		if (x->keys[k].shard == s) {
			n++;
			bytes += x->keys[k].len;
		}
	j = kv_job_new_hashed(kind, n + 1, bytes, hashed ? n : 0);
	if (!j)
		return NULL;
	kv_job_arg(j, name, nlen);
	for (uint32_t k = from; k < x->nkeys; k++)
		if (x->keys[k].shard == s) {
			kv_job_arg(j, x->keys[k].key, x->keys[k].len);
			if (hashed)
				kv_job_key_hash(j, x->keys[k].hash);
		}
	return j;
}

static void locked(struct kv_shard *sh, struct kv_job *j);

/* Whether each shard's commands can run in the step its keys are
 * locked, before the other shards' locks are held, as multi.c's fan-out
 * parts do (strict two-phase locking allows it: nothing is released
 * before everything is held): with no watched key to check first, and
 * every command one shard's that fits a batch. */
static bool early(const struct kv_exec *x)
{
	const struct kv_txn *t = x->conn->txn;
	uint32_t per_shard[x->sh->n];

	if (t->nwatch || x->whole)
		return false;
	memset(per_shard, 0, sizeof(per_shard));
	for (uint32_t i = 0; i < t->n; i++) {
		const struct kv_txn_req *q = t->q[i];

		if (!keyed(q) || q->argc > KV_BATCH_ARGS ||
		    kv_multi_needed(x->sh, q->cmd, q->argc, q->argv, q->argl, NULL) ||
		    ++per_shard[shard_of(x, i)] > KV_BATCH_MAX)
			return false;
	}
	return true;
}

/* Lock i (of order[]): the whole shard, or its keys, carrying that
 * shard's commands when they run early. Returns 0 or -ENOMEM. */
static int make_lock(struct kv_exec *x, unsigned i)
{
	const struct kv_txn *t = x->conn->txn;
	unsigned s = x->order[i];
	struct kv_job *j = x->whole ? kv_job_new(KV_JOB_LOCK, 0, 0) :
				      keys_job(x, s, KV_JOB_LOCK, "lock", false);

	if (!j)
		return -ENOMEM;
	x->locks[i] = j;
	j->keyed = !x->whole;
	j->kfirst = 1;
	j->kstep = 1;
	j->room = x->whole;
	j->target = s;
	j->tx = x->id;
	j->owner = x;
	j->done = locked;
	j->tx_group = x->writes[s] ? x->nwrites : 0;
	/* The last lock, taken once every other is held, lets go right after
	 * its commands, as multi.c's last part does (no unlock message);
	 * not while its records wait for the commit. */
	j->release = x->early && i + 1 == x->nsh && !x->writes[s];
	if (x->early)
		kv_job_batch_room(j);
	for (uint32_t k = 0; x->early && k < t->n; k++) {
		const struct kv_txn_req *q = t->q[k];

		if (shard_of(x, k) == s &&
		    kv_batch_add(j, q->cmd, q->argc, (const char *const *)q->argv, q->argl,
				 &x->keys[x->qkey[k]].hash))
			return -ENOMEM;
	}
	return 0;
}

/* With appendonly: the shards the queue's writes may touch (those of
 * its writers' keys, every shard for a server-wide writer), each of
 * which records its part of the EXEC as one group. */
static void plan_writes(struct kv_exec *x)
{
	const struct kv_txn *t = x->conn->txn;

	if (!kv_aof_log(x->sh))
		return;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct kv_txn_req *q = t->q[i];

		if (!(q->cmd->flags & KV_CMD_WRITE))
			continue;
		if (server_wide(q))
			memset(x->writes, 1, x->sh->n * sizeof(*x->writes));
		for (uint32_t k = x->qkey[i]; k < x->qkey[i + 1]; k++)
			x->writes[x->keys[k].shard] = true;
	}
	for (unsigned s = 0; s < x->sh->n; s++)
		x->nwrites += x->writes[s];
}

/* The transaction's tables in one allocation, its keys among them: the
 * pointer tables first, then the keys, then the 4-byte and 1-byte ones,
 * so that each is aligned. Zeroed but the keys (plan_keys writes them). */
static int tx_alloc(struct kv_exec *x, uint32_t nkeys)
{
	const struct kv_txn *t = x->conn->txn;
	size_t n = x->sh->n, nq = t->n ? t->n : 1;
	size_t ptrs = (3 * n + nq) * sizeof(struct kv_job *);
	size_t keys = nkeys * sizeof(struct tx_key);
	size_t rest = n * sizeof(unsigned) + (t->n + 1) * sizeof(uint32_t) + n * sizeof(bool);
	char *b = malloc(ptrs + keys + rest);

	if (!b)
		return -ENOMEM;
	memset(b, 0, ptrs);
	memset(b + ptrs + keys, 0, rest);
	x->locks = (struct kv_job **)b;
	x->looks = x->locks + n;
	x->commits = x->looks + n;
	x->jobs = x->commits + n;
	x->keys = (struct tx_key *)(b + ptrs);
	x->order = (unsigned *)(b + ptrs + keys);
	x->qkey = (uint32_t *)(x->order + n);
	x->writes = (bool *)(x->qkey + t->n + 1);
	x->nshards = (unsigned)n;
	x->n = t->n;
	x->nkeys = nkeys;
	return 0;
}

static void add_key(struct kv_exec *x, uint32_t *k, const char *key, size_t len)
{
	uint64_t h = kv_keyhash(key, len);

	x->keys[(*k)++] = (struct tx_key){ key, len, h, kv_hash_shard(x->sh, h) };
}

/* Every key of the queue and every watched key, hashed once, with the
 * tables: one SipHash a key where each step used to hash it again. */
static int plan_keys(struct kv_exec *x)
{
	const struct kv_txn *t = x->conn->txn;
	uint32_t nkeys = t->nwatch, k = 0;

	for (uint32_t i = 0; i < t->n; i++)
		if (keyed(t->q[i]))
			nkeys += kv_cmd_nkeys(t->q[i]->cmd, t->q[i]->argc, t->q[i]->argv,
					      t->q[i]->argl);
	if (tx_alloc(x, nkeys))
		return -ENOMEM;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct kv_txn_req *q = t->q[i];
		uint32_t n = keyed(q) ? kv_cmd_nkeys(q->cmd, q->argc, q->argv, q->argl) : 0;

		x->qkey[i] = k;
		for (uint32_t j = 0; j < n; j++) {
			uint32_t at = kv_cmd_key_arg(q->cmd, j, q->argc, q->argv, q->argl);

			add_key(x, &k, q->argv[at], q->argl[at]);
		}
	}
	x->qkey[t->n] = k;
	for (uint32_t i = 0; i < t->nwatch; i++)
		add_key(x, &k, t->w[i].key, t->w[i].len);
	return 0;
}

/* Which shards to lock, ascending, and whether whole. */
static int plan(struct kv_exec *x)
{
	const struct kv_txn *t = x->conn->txn;
	unsigned n = x->sh->n;
	bool used[n];

	if (plan_keys(x))
		return -ENOMEM;
	memset(used, 0, sizeof(used));
	x->whole = x->sh->cfg.maxmemory != 0;
	for (uint32_t i = 0; i < t->n; i++)
		if (server_wide(t->q[i])) {
			x->whole = true;
			memset(used, 1, sizeof(used));
		}
	for (uint32_t k = 0; k < x->nkeys; k++)
		used[x->keys[k].shard] = true;
	plan_writes(x);
	for (unsigned s = 0; s < n; s++)
		if (used[s])
			x->order[x->nsh++] = s;
	x->early = early(x);
	for (unsigned i = 0; i < x->nsh; i++)
		if (make_lock(x, i))
			return -ENOMEM;
	return 0;
}

void kv_exec_free(struct kv_exec *x)
{
	for (unsigned i = 0; x->locks && i < x->nsh; i++)
		kv_job_free(x->locks[i]);
	for (uint32_t i = 0; x->jobs && i < x->n; i++)
		kv_job_free(x->jobs[i]);
	for (unsigned s = 0; x->looks && s < x->nshards; s++)
		kv_job_free(x->looks[s]);
	for (unsigned s = 0; x->commits && s < x->nshards; s++)
		kv_job_free(x->commits[s]);
	if (x->sub)
		kv_multi_free(x->sub);
	kv_reply_free(&x->out);
	free(x->locks); /* every table (tx_alloc) */
	free(x);
}

/* ---- 3. run: pieces of the queue ------------------------------------------ */

static void go(struct kv_exec *x);

static void answered(struct kv_exec *x)
{
	if (--x->pending == 0)
		go(x);
}

static void job_answered(struct kv_shard *sh, struct kv_job *j)
{
	(void)sh;
	answered(j->owner);
}

/* Sends j (a part of this transaction: it runs at once there); done
 * runs at home when it answered. Refused (past the outbox budget), its
 * reply is the error and false is returned. */
static bool send_part(struct kv_exec *x, struct kv_job *j, unsigned target, kv_job_fn *done)
{
	j->target = target;
	j->tx = x->id;
	j->owner = x;
	j->done = done;
	x->pending++;
	if (!kv_job_submit(x->sh, j))
		return true;
	KV_REPLY_ERR(&j->out, KV_ERR_BUSY);
	x->pending--;
	return false;
}

/* A SCAN part answered: on to the next shard when it found nothing,
 * else its reply under the server-wide cursor. */
static void scan_answered(struct kv_shard *sh, struct kv_job *j)
{
	if (kv_scan_hop(sh, j))
		return;
	kv_scan_reply(sh, j);
	answered(j->owner);
}

/* SCAN: on the shard its cursor names (every shard is held whole), as a
 * SCAN outside MULTI runs; a cursor that is no number goes to home's
 * SCAN, which refuses it. */
static void start_scan(struct kv_exec *x, uint32_t i)
{
	const struct kv_txn_req *q = x->conn->txn->q[i];
	struct kv_resp_req r = { q->argc, q->argv, q->argl };
	uint64_t cursor = 0;
	unsigned t = x->sh->idx;
	bool routed = kv_scan_route(q->argv[1], q->argl[1], x->sh->n, &t, &cursor);
	struct kv_job *j = x->jobs[i] = kv_job_request(&r, routed ? (int)t : -1, cursor);

	if (!j)
		return;
	send_part(x, j, routed ? t : x->sh->idx, routed ? scan_answered : job_answered);
}

/* Starts queued command i, a command of one shard or none: its reply
 * goes to a job of its own, moved into the array in turn. */
static void start_one(struct kv_exec *x, uint32_t i)
{
	const struct kv_txn_req *q = x->conn->txn->q[i];
	struct kv_resp_req r = { q->argc, q->argv, q->argl };
	struct kv_job *j;

	if (q->cmd->multi == KV_MULTI_WALK) {
		start_scan(x, i);
		return;
	}
	if (!keyed(q)) { /* PING, ECHO, CLIENT...: the connection's, at home */
		j = x->jobs[i] = kv_job_new(KV_JOB_CMD, 0, 0);
		if (j)
			kv_shard_exec(x->sh, x->conn, q->cmd, kv_now_ms(), q->argc, q->argv,
				      q->argl, &j->out, NULL);
		return;
	}
	j = x->jobs[i] = kv_job_request(&r, -1, 0);
	if (j)
		send_part(x, j, shard_of(x, i), job_answered);
}

/* Adds a queued command's reply to the array. Once a CLIENT KILL closed
 * the connection itself (KV_CONN_CLOSE: the replies so far go out, then
 * the close), the later commands still run but their replies are not
 * written, as Redis writes nothing more to a client it is closing. */
static void put_reply(struct kv_exec *x, const char *buf, size_t len)
{
	if (!x->muted)
		kv_reply_raw(&x->out, buf, len);
	x->muted |= (x->conn->flags & KV_CONN_CLOSE) != 0;
}

/* The reply of a command spanning shards (in turn: it is a piece alone). */
static void spanning_done(void *arg, struct kv_reply *out)
{
	struct kv_exec *x = arg;

	x->sub = NULL;
	put_reply(x, out->buf, out->len);
	x->emitted++;
	answered(x);
}

static void start_spanning(struct kv_exec *x, uint32_t i)
{
	const struct kv_txn_req *q = x->conn->txn->q[i];

	x->pending++;
	if (kv_multi_run_held(x->sh, x->id, x->conn->id, x->oom, q->cmd, q->argc, q->argv,
			      q->argl, spanning_done, x, &x->sub)) {
		x->pending--;
		KV_REPLY_ERR(&x->out, KV_ERR_NOMEM);
		x->emitted++;
	}
}

/* Whether queued command q spans shards (or the whole server, but SCAN,
 * which walks one shard at a time). */
static bool spans(const struct kv_exec *x, const struct kv_txn_req *q)
{
	return kv_multi_needed(x->sh, q->cmd, q->argc, q->argv, q->argl, NULL);
}

/* Moves the replies of the commands started and answered, in order. */
static void emit(struct kv_exec *x)
{
	for (; x->emitted < x->next; x->emitted++) {
		struct kv_job *j = x->jobs[x->emitted];

		if (!j) {
			KV_REPLY_ERR(&x->out, KV_ERR_NOMEM);
			continue;
		}
		put_reply(x, j->out.buf, j->out.len);
		kv_job_free(j);
		x->jobs[x->emitted] = NULL;
	}
}

/* The replies of commands that ran with their locks, in queue order:
 * each shard's in the order its batch ran them. */
static void emit_early(struct kv_exec *x)
{
	const struct kv_txn *t = x->conn->txn;
	uint32_t taken[x->nsh];

	memset(taken, 0, sizeof(taken));
	for (uint32_t i = 0; i < t->n; i++) {
		unsigned s = shard_of(x, i), o = 0;

		while (x->order[o] != s)
			o++;
		const struct kv_job *j = x->locks[o];
		uint32_t k = taken[o]++;
		size_t from = k ? j->out_end[k - 1] : 0;

		kv_reply_raw(&x->out, j->out.buf + from, j->out_end[k] - from);
	}
}

/* ---- 2. watch ------------------------------------------------------------- */

/* On a shard: looks its watched keys up, so one past its expiry goes
 * and moves its counter before home compares. */
static void look(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_pos pos;
	int64_t now = kv_now_ms();

	for (uint32_t i = 1; i < j->a.argc; i++)
		kv_db_lookup(sh->db, j->a.argv[i], j->a.argl[i], now, &pos);
}

/* Sends each shard holding watched keys its lookup. Returns false when
 * there is none to wait for. One that cannot be made or sent fails the
 * watch: an expired key could otherwise pass unseen (the client
 * retries, as after any conflict). */
static bool look_watched(struct kv_exec *x)
{
	bool sent = false;

	for (unsigned i = 0; i < x->nsh && x->conn->txn->nwatch; i++) {
		unsigned s = x->order[i];
		struct kv_job *j = keys_job(x, s, KV_JOB_FN, "look", true);

		if (!j) {
			x->look_failed = true;
			continue;
		}
		if (j->a.argc == 1) { /* none watched here */
			kv_job_free(j);
			continue;
		}
		x->looks[s] = j;
		j->fn = look;
		if (send_part(x, j, s, job_answered))
			sent = true;
		else
			x->look_failed = true;
	}
	return sent;
}

/* The next step; false once there is none left (the reply is ready). */
static bool step(struct kv_exec *x)
{
	struct kv_txn *t = x->conn->txn;

	if (!x->looked) {
		x->looked = true;
		if (look_watched(x))
			return true;
	}
	if (!x->checked) {
		x->checked = true;
		if (x->look_failed || !kv_txn_watch_ok(t)) {
			struct kv_call c = { .out = &x->out };

			kv_reply_null_array(&c);
			x->aborted = true;
			return false;
		}
		kv_reply_array(&x->out, t->n);
	}
	if (x->early) {
		emit_early(x);
		return false;
	}
	emit(x);
	if (x->next == t->n)
		return false;
	if (spans(x, t->q[x->next])) {
		start_spanning(x, x->next++);
		return true;
	}
	while (x->next < t->n && !spans(x, t->q[x->next]))
		start_one(x, x->next++);
	return true;
}

/* ---- 4. commit --------------------------------------------------------------- */

/* On a shard it writes on: the EXEC's records there as one group (none
 * when it was aborted); with appendfsync always, the answer comes once
 * they are durable, or as the MISCONF error. */
static void commit_part(struct kv_shard *sh, struct kv_job *j)
{
	kv_aof_tx_commit(sh, j->tx, j->u64 != 0);
}

/* Sends each shard it writes on its commit, once. Returns whether any
 * answer is to wait for. A commit is sent as a reply is (never refused):
 * the shard's kept records must not be left behind. */
static bool commit(struct kv_exec *x)
{
	bool sent = false;

	if (x->committed)
		return false;
	x->committed = true;
	for (unsigned s = 0; s < x->sh->n; s++) {
		struct kv_job *j;

		if (!x->writes[s])
			continue;
		j = x->commits[s] = kv_job_new(KV_JOB_FN, 0, 0);
		if (!j)
			abort(); /* a shard's kept records would stay behind its unlock */
		j->fn = commit_part;
		j->u64 = x->aborted;
		j->must = true;
		send_part(x, j, s, job_answered);
		sent = true;
	}
	return sent;
}

/* A commit that failed (the file could not take it): its error is the
 * reply, as a write's is. */
static void commit_errors(struct kv_exec *x)
{
	for (unsigned s = 0; s < x->sh->n; s++) {
		const struct kv_job *j = x->commits[s];

		if (j && j->out.len) {
			kv_reply_truncate(&x->out, 0);
			kv_reply_raw(&x->out, j->out.buf, j->out.len);
			return;
		}
	}
}

/* ---- 5. the end ------------------------------------------------------------ */

/* Unlocks, frees, then replies: the reply may run the connection's next
 * requests (a new EXEC among them), or free a closed connection. */
static void finish(struct kv_exec *x)
{
	struct kv_client *c = x->c;
	struct kv_reply out;

	commit_errors(x);
	out = x->out;

	for (unsigned i = 0; i < x->nsh; i++)
		if (!x->locks[i]->release)
			kv_shard_unlock(x->sh, x->order[i], x->id, !x->whole, false);
	kv_txn_reset(x->conn);
	kv_reply_init(&x->out); /* the reply is out's now */
	kv_exec_free(x);
	kv_client_tx_done(c, &out);
	kv_reply_free(&out);
}

/* Steps until one must wait for answers, or the end. pending holds one
 * extra count while a step sends, so an answer that comes at once (this
 * shard's own) cannot start the next step inside it. */
static void go(struct kv_exec *x)
{
	for (;;) {
		x->pending = 1;
		if (!x->ran && !step(x))
			x->ran = true;
		if (x->ran && !commit(x)) {
			finish(x);
			return;
		}
		if (--x->pending)
			return; /* the last answer comes back to answered() */
	}
}

/* ---- 1. lock -------------------------------------------------------------- */

static void lock_next(struct kv_exec *x)
{
	if (kv_job_submit(x->sh, x->locks[x->locked]))
		abort(); /* as multi.c's: locks half taken cannot be undone */
}

static void locked(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_exec *x = j->owner;

	(void)sh;
	x->oom |= j->over;
	if (++x->locked < x->nsh)
		lock_next(x);
	else
		go(x);
}

int kv_exec_start(struct kv_shard *sh, struct kv_client *c, struct kv_conn *conn,
		  struct kv_exec **out)
{
	/* malloc, not calloc: glibc's calloc skips the per-thread cache */
	struct kv_exec *x = malloc(sizeof(*x));

	if (!x)
		return -ENOMEM;
	*x = (struct kv_exec){ .c = c, .sh = sh, .conn = conn, .id = kv_shard_tx_id(sh) };
	kv_reply_init(&x->out);
	if (plan(x)) {
		kv_exec_free(x);
		return -ENOMEM;
	}
	conn->txn->multi = false; /* the queue runs now, nothing joins it */
	*out = x;
	lock_next(x);
	return 0;
}
