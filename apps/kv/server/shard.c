/* SPDX-License-Identifier: MIT */
/* One shard of the kv server: its keyspace, its lock and wait queue for
 * multi-shard commands, jobs from other shards, active expiry. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aof_rewrite.h"
#include "aof_shard.h"
#include "block.h"
#include "keyhash.h"
#include "keylock.h"
#include "percore/outbox.h"
#include "percore/place.h"
#include "server_internal.h"

/* Keys a step of active expiry looks at, and steps a period at most: a
 * step that finds a quarter of its keys expired is followed by another
 * at once, as Redis's active expiry cycle does. */
#define EXPIRE_BUDGET 512
#define EXPIRE_STEPS  32
/* An empty keyspace whose table holds more than this is reset. */
#define EMPTY_TABLE_KEEP (64u << 10)

unsigned kv_key_shard(const struct kv_shard *sh, const char *key, size_t len)
{
	return sh->n == 1 ? 0 : kv_hash_shard(sh, kv_keyhash(key, len));
}

uint64_t kv_shard_tx_id(struct kv_shard *sh)
{
	return ((uint64_t)(sh->idx + 1) << 48) | ++sh->tx_seq;
}

int64_t kv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Jobs are made and freed on their home shard's thread, many per
 * request stream: a block of JOB_BLOCK bytes serves any job whose
 * arguments fit, and freed blocks wait in a small per-thread cache for
 * the next one. What a block's arguments leave free holds its reply
 * (kv_reply_init_in), so a short reply written on the target needs no
 * allocation there that home would have to free. */
#define JOB_BLOCK      4096u
#define JOB_CACHE_MAX  256u
#define JOB_REPLY_MIN  32u

static __thread struct kv_job *job_cache;
static __thread unsigned job_cached;
static __thread bool job_cache_on;

void kv_job_cache_start(void)
{
	job_cache_on = true;
}

void kv_job_cache_stop(void)
{
	job_cache_on = false;
	while (job_cache) {
		struct kv_job *j = job_cache;

		job_cache = j->next;
		free(j);
	}
	job_cached = 0;
}

static struct kv_job *job_alloc(size_t need, bool *block)
{
	struct kv_job *j;

	*block = need <= JOB_BLOCK;
	if (!*block)
		return malloc(need);
	j = job_cache;
	if (!j)
		return malloc(JOB_BLOCK);
	job_cache = j->next;
	job_cached--;
	return j;
}

struct kv_job *kv_job_new(enum kv_job_kind kind, uint32_t argc, size_t bytes)
{
	return kv_job_new_hashed(kind, argc, bytes, 0);
}

struct kv_job *kv_job_new_hashed(enum kv_job_kind kind, uint32_t argc, size_t bytes,
				 uint32_t nkeys)
{
	size_t vec = (size_t)argc * (sizeof(char *) + sizeof(size_t)) + nkeys * sizeof(uint64_t);
	size_t need = sizeof(struct kv_job) + vec + bytes;
	bool block;
	struct kv_job *j = job_alloc(need, &block);

	if (!j)
		return NULL;
	memset(j, 0, offsetof(struct kv_job, out_end));
	j->kind = kind;
	j->scan_shard = -1;
	j->block = block;
	if (block && JOB_BLOCK - need >= JOB_REPLY_MIN)
		kv_reply_init_in(&j->out, (char *)j + need, JOB_BLOCK - need);
	else
		kv_reply_init(&j->out);
	kv_reply_init(&j->after);
	kv_part_init(&j->part);
	j->a.argv = (const char **)(j + 1);
	j->a.argl = (size_t *)(j->a.argv + argc);
	j->acap = argc;
	j->khash = nkeys ? (uint64_t *)(j->a.argl + argc) : NULL;
	j->abuf = (char *)(j->a.argl + argc) + nkeys * sizeof(uint64_t); /* the bytes follow */
	return j;
}

/* A job for the request, its arguments copied; for a SCAN part the
 * cursor argument becomes the shard's own. */
struct kv_job *kv_job_request(const struct kv_resp_req *r, int scan_shard, uint64_t cursor)
{
	char text[24];
	size_t bytes = 0, clen = 0;
	struct kv_job *j;

	if (scan_shard >= 0)
		clen = (size_t)snprintf(text, sizeof(text), "%llu", (unsigned long long)cursor);
	for (uint32_t i = 0; i < r->argc; i++)
		bytes += r->argl[i];
	j = kv_job_new(KV_JOB_CMD, r->argc, bytes + clen);
	if (!j)
		return NULL;
	for (uint32_t i = 0; i < r->argc; i++) {
		if (i == 1 && scan_shard >= 0)
			kv_job_arg(j, text, clen);
		else
			kv_job_arg(j, r->argv[i], r->argl[i]);
	}
	j->scan_shard = scan_shard;
	j->typed = scan_shard >= 0;
	return j;
}

/* A request in a batch: this header, then per argument its length (a
 * uint32_t) and bytes, unaligned. */
struct batch_req {
	const struct kv_cmd *cmd;
	uint32_t argc;
	bool hashed;    /* hash is its first key's */
	uint64_t hash;
};

void kv_job_batch_room(struct kv_job *j)
{
	size_t room;

	if (!j->out.borrowed || j->out.len || j->reqs.cap || j->after.cap)
		return;
	/* the block's room after the job: half for the requests, a quarter
	 * for their replies, a quarter for the home replies between them
	 * (after), so that a batch of short requests allocates nothing */
	room = j->out.cap / 4;
	kv_reply_init_in(&j->reqs, j->out.buf, 2 * room);
	kv_reply_init_in(&j->after, j->out.buf + 2 * room, room);
	kv_reply_init_in(&j->out, j->out.buf + 3 * room, j->out.cap - 3 * room);
}

struct kv_job *kv_batch_new(void)
{
	struct kv_job *j = kv_job_new(KV_JOB_BATCH, 0, 0);

	if (j)
		kv_job_batch_room(j);
	return j;
}

int kv_batch_add(struct kv_job *j, const struct kv_cmd *cmd, uint32_t argc,
		 const char *const *argv, const size_t *argl, const uint64_t *key_hash)
{
	struct batch_req h = { .cmd = cmd, .argc = argc, .hashed = key_hash != NULL };
	size_t len = j->reqs.len, need = sizeof(h) + argc * sizeof(uint32_t);
	char *d;

	if (key_hash)
		h.hash = *key_hash;
	for (uint32_t i = 0; i < argc; i++)
		need += argl[i];
	d = kv_reply_reserve(&j->reqs, need);
	if (!d) {
		j->reqs.failed = false; /* this request is refused, the batch stands */
		return -ENOMEM;
	}
	memcpy(d, &h, sizeof(h));
	d += sizeof(h);
	for (uint32_t i = 0; i < argc; i++) {
		uint32_t l = (uint32_t)argl[i];

		memcpy(d, &l, sizeof(l));
		memcpy(d + sizeof(l), argv[i], argl[i]);
		d += sizeof(l) + argl[i];
	}
	j->reqs.len = len + need;
	j->after_mark[j->nreq++] = j->after.len;
	return 0;
}

/* A batch's request, decoded: argv points into the batch. */
struct batch_item {
	const struct kv_cmd *cmd;
	uint32_t argc;
	const char *argv[KV_BATCH_ARGS];
	size_t argl[KV_BATCH_ARGS];
};

/* Decodes the request at *p of a batch into it, moving *p past it.
 * Returns whether the header carried its first key's hash (in *hash). */
static bool batch_next(const char **p, struct batch_item *it, uint64_t *hash)
{
	struct batch_req h;
	const char *q = *p;

	memcpy(&h, q, sizeof(h));
	q += sizeof(h);
	for (uint32_t i = 0; i < h.argc; i++) {
		uint32_t l;

		memcpy(&l, q, sizeof(l));
		it->argv[i] = q + sizeof(l);
		it->argl[i] = l;
		q += sizeof(l) + l;
	}
	it->cmd = h.cmd;
	it->argc = h.argc;
	*hash = h.hash;
	*p = q;
	return h.hashed;
}

/* The item's first key, when its command has one. */
static bool batch_key(const struct batch_item *it)
{
	return it->cmd && it->cmd->first_key > 0 && (uint32_t)it->cmd->first_key < it->argc;
}

void kv_job_free(struct kv_job *j)
{
	if (!j)
		return;
	kv_reply_free(&j->reqs);
	kv_reply_free(&j->out);
	kv_reply_free(&j->after);
	kv_part_free(&j->part);
	free(j->val);
	free(j->khold);
	if (j->block && job_cache_on && job_cached < JOB_CACHE_MAX) {
		j->next = job_cache;
		job_cache = j;
		job_cached++;
		return;
	}
	free(j);
}

/* Counts the keyspace for readers on other threads (totals, SIGUSR1,
 * metrics, INFO), after every change: a figure read is never older than
 * the last command. Relaxed stores of figures the keyspace keeps. */
static void publish(struct kv_shard *sh)
{
	struct kv_db_stats s;

	kv_db_stats(sh->db, &s);
	atomic_store_explicit(&sh->st->keys, s.keys, memory_order_relaxed);
	atomic_store_explicit(&sh->st->expires, s.expires, memory_order_relaxed);
	atomic_store_explicit(&sh->st->used, s.used, memory_order_relaxed);
	atomic_store_explicit(&sh->st->expired, s.expired, memory_order_relaxed);
	atomic_store_explicit(&sh->st->evicted, s.evicted, memory_order_relaxed);
	atomic_store_explicit(&sh->st->changes, s.changes, memory_order_relaxed);
}

void kv_shard_count_commands(struct kv_shard *sh, uint64_t n)
{
	/* only this shard writes it: a plain add, read by INFO anywhere */
	atomic_store_explicit(&sh->st->commands,
			      atomic_load_explicit(&sh->st->commands, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

void kv_shard_exec(struct kv_shard *sh, struct kv_conn *conn, const struct kv_cmd *cmd,
		   int64_t now, uint32_t argc, const char *const *argv, const size_t *argl,
		   struct kv_reply *out, struct kv_part *part)
{
	struct kv_call c = {
		.db = sh->db, .out = out, .now = now,
		.max_bulk = sh->limits.max_bulk, .conn = conn, .cfg = &sh->cfg,
		.caller = conn ? conn->id : sh->caller,
		.view = &sh->view, .argc = argc, .argv = argv, .argl = argl, .part = part,
		.log = kv_aof_log(sh),
		.ps = sh->ps,
	};

	sh->bg_claim = NULL; /* a claim is the last command's only */
	if (cmd)
		kv_cmd_exec_as(&c, cmd);
	else
		kv_cmd_exec(&c);
	kv_shard_count_commands(sh, 1);
	kv_block_serve(sh); /* the clients waiting on what it wrote */
	publish(sh);
}

/* The locks whose contention decides whether a shard without a CPU of
 * its own awaits (kv_shard.locks_queued). */
#define KV_CONTENDED_LOCKS 16

/* Whether a lock of the last KV_CONTENDED_LOCKS answered here queued. */
static bool locks_contended(const struct kv_shard *sh)
{
	return (sh->locks_queued & ((1u << KV_CONTENDED_LOCKS) - 1)) != 0;
}

/* A job's answer at home: a lock's tells whether it had to queue. */
static void answered(struct kv_shard *sh, struct kv_job *j)
{
	if (j->kind == KV_JOB_LOCK)
		sh->locks_queued = sh->locks_queued << 1 | j->queued;
	j->finished = true;
	j->done(sh, j);
}

static void home_done(void *arg)
{
	struct kv_job *j = arg;

	if (j->awaited)
		pc_shard_expect(-1);
	answered(pc_shard_user(), j);
}

/* The job ran: its done runs at home, where alone `finished` is written
 * (home reads it to write replies in order). */
static void finish(struct kv_shard *sh, struct kv_job *j)
{
	if (j->home == sh->idx) {
		answered(sh, j);
	}
	else if (pc_shard_send_reply(j->home, home_done, j))
		abort(); /* -ENOMEM for a 64-byte chunk: nothing can go on */
}

static void drain(struct kv_shard *sh);

/* The keys a keyed lock takes, their hashes, held by the target from
 * the lock's first look until its transaction's unlock. */
struct kv_keyhold {
	struct kv_keyhold *next;
	uint64_t tx;
	bool shared;
	bool owed;      /* for another shard's transaction: its unlock comes by message */
	bool polled;    /* and is awaited (pc_shard_expect) */
	size_t n;
	uint64_t h[];
};

/* How many keys keyed lock j takes. */
static size_t lock_nkeys(const struct kv_job *j)
{
	size_t n = 0;

	for (uint32_t i = j->kfirst; i < j->a.argc; i += j->kstep)
		n++;
	return n;
}

/* j's keyhold, made on its first look. NULL when out of memory. */
static struct kv_keyhold *keyhold_of(struct kv_job *j)
{
	size_t n;

	if (j->khold)
		return j->khold;
	n = lock_nkeys(j);
	j->khold = malloc(sizeof(*j->khold) + n * sizeof(uint64_t));
	if (!j->khold)
		return NULL;
	*j->khold = (struct kv_keyhold){ .tx = j->tx, .shared = j->shared, .n = n };
	if (j->khash && j->nkhash == n) {
		memcpy(j->khold->h, j->khash, n * sizeof(uint64_t)); /* hashed at home */
		return j->khold;
	}
	n = 0;
	for (uint32_t i = j->kfirst; i < j->a.argc; i += j->kstep)
		j->khold->h[n++] = kv_keyhash(j->a.argv[i], j->a.argl[i]);
	return j->khold;
}

static void run_batch(struct kv_shard *sh, struct kv_job *j);
static void exec_part(struct kv_shard *sh, struct kv_job *j);

static void unlock_keys(struct kv_shard *sh, uint64_t tx);

/* A keyed lock granted: its keys are held until the unlock (the
 * shard's holds remember them), and its part or its batch of requests,
 * when it carries one, runs now: nobody else can see those keys before
 * the unlock. A transaction's last lock (release) lets go right after
 * its part: the transaction holds every other shard's keys until its
 * end, so whoever sees this part's writes from now on waits there for
 * the rest (two-phase locking: all taken before any is let go), and
 * home sends no unlock here. */
static void grant_keys(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_keyhold *kh;

	if (j->release && (j->run_part || j->nreq == 1)) {
		/* One command, run now and let go at once: nothing runs in
		 * between, so the keys (free, as compatible() found) need no
		 * entry in the table; the clients blocked on them are served
		 * after the command, as after any. Not for an EXEC's batch of
		 * several: a client blocked on one of its keys would be served
		 * between two of them (kv_shard_exec serves after each). */
		if (j->run_part)
			exec_part(sh, j);
		else
			run_batch(sh, j);
		return;
	}
	kh = keyhold_of(j);
	if (!kh || kv_keylock_take(sh->keys, kh->h, kh->n, j->shared, j->tx))
		abort(); /* a lock half granted would stop the server */
	j->khold = NULL;
	kh->next = sh->holds;
	sh->holds = kh;
	/* Held for another shard, the unlock is a round trip away: the
	 * shard polls for it (the await policy) rather than paying a wake-up
	 * on the path of the next transaction waiting for these keys; a
	 * shard without a CPU of its own only once a job waits for it
	 * (poll_owed()). */
	kh->owed = j->home != sh->idx;
	if (kh->owed && (sh->await_plain || sh->wait_head)) {
		kh->polled = true;
		pc_shard_expect(1);
	}
	if (j->run_part)
		exec_part(sh, j); /* typed: its result to part */
	else if (j->nreq)
		run_batch(sh, j);
	if (j->release)
		unlock_keys(sh, j->tx);
}

/* A lock granted: shared with the other readers, or the writer's alone.
 * A writer evicts first (allkeys-lru) and says whether the keyspace is
 * still over its limit: from here until the unlock only its own jobs
 * (and active expiry, which only frees) run here, so that answer holds
 * until its parts ran. */
static void grant(struct kv_shard *sh, struct kv_job *j)
{
	if (j->keyed) {
		grant_keys(sh, j);
		return;
	}
	if (j->shared)
		sh->readers++;
	else
		sh->lock = j->tx;
	j->over = j->room && !kv_db_make_room(sh->db);
}

/* Whether the client the job is for is past its output limit with
 * extra bytes more of replies. */
static bool held_over(const struct kv_job *j, size_t extra)
{
	return j->held && atomic_load_explicit(j->held, memory_order_relaxed) + extra > j->held_max;
}

/* Runs part j (its keys from kfirst, every kstep-th) with the hashes
 * home gave its keys, when it gave them: the lookups take them. */
static void exec_part(struct kv_shard *sh, struct kv_job *j)
{
	bool one = j->khash && j->nkhash == 1, some = j->khash && j->nkhash > 1;

	if (one)
		kv_db_known_hash(sh->db, j->a.argv[j->kfirst], j->a.argl[j->kfirst], j->khash[0]);
	else if (some)
		kv_db_known_keys(sh->db, j->a.argv, j->kfirst, j->kstep, j->nkhash, j->khash);
	kv_shard_exec(sh, NULL, j->cmd, kv_now_ms(), j->a.argc, j->a.argv, j->a.argl, &j->out,
		      j->typed ? &j->part : NULL);
	if (one)
		kv_db_known_hash(sh->db, NULL, 0, 0);
	else if (some)
		kv_db_known_keys(sh->db, NULL, 0, 0, 0, NULL);
}

/* A client's request. Once the replies its earlier jobs hold pass its
 * output limit it will be closed: the rest are not run, so a client that
 * does not read cannot make other shards build replies without bound. */
static void run_cmd(struct kv_shard *sh, struct kv_job *j)
{
	if (held_over(j, 0)) {
		j->skipped = true;
		return;
	}
	sh->caller = j->caller;
	exec_part(sh, j);
	sh->caller = 0;
	if (j->held)
		atomic_fetch_add_explicit(j->held, j->out.len, memory_order_relaxed);
}

/* A batch's requests decoded once, for its look ahead and its run:
 * argv points into the batch; hash holds each first key's hash where
 * hashed says it is known (from home, or hashed here). */
struct batch_items {
	struct batch_item it[KV_BATCH_MAX];
	uint64_t hash[KV_BATCH_MAX];
	bool hashed[KV_BATCH_MAX];
	struct kv_hash_memo memo;      /* the members prefetch_batch() hashed */
};

static void batch_decode(const struct kv_job *j, struct batch_items *b)
{
	const char *p = j->reqs.buf;

	for (uint32_t i = 0; i < j->nreq; i++)
		b->hashed[i] = batch_next(&p, &b->it[i], &b->hash[i]);
}

/* A batch's first keys asked of memory before its requests run, as a
 * pipeline's are (client.c), then the members they name: their cache
 * misses overlap. The keys hashed here stay hashed for the run. */
static void prefetch_batch(struct kv_shard *sh, uint32_t nreq, struct batch_items *b)
{
	uint64_t hash[KV_BATCH_MAX];
	struct kv_member_ahead member[KV_BATCH_MAX];
	size_t n = 0, nm = 0;

	b->memo.n = 0;
	if (nreq < 2)
		return;
	for (uint32_t i = 0; i < nreq; i++) {
		const struct batch_item *it = &b->it[i];

		if (!batch_key(it))
			continue;
		if (!b->hashed[i]) {
			b->hash[i] = kv_keyhash(it->argv[it->cmd->first_key],
						it->argl[it->cmd->first_key]);
			b->hashed[i] = true;
		}
		hash[n++] = b->hash[i];
		if (it->cmd->first_key == 1 && kv_may_name_member(it->argv[0], it->argl[0], it->argc))
			member[nm++] = (struct kv_member_ahead){
				.key_hash = b->hash[i], .argv = it->argv, .argl = it->argl,
				.argc = it->argc, .nargs = it->argc, /* all decoded */
			};
	}
	kv_db_prefetch(sh->db, hash, n);
	kv_db_prefetch_members(sh->db, member, nm, &b->memo);
}

/* A batch: its requests in order, as run_cmd() runs one, under one
 * reading of the clock as they arrived together. */
static void run_batch(struct kv_shard *sh, struct kv_job *j)
{
	struct batch_items b;
	struct kv_hash_memo *outer;
	int64_t now = kv_now_ms();

	batch_decode(j, &b);
	prefetch_batch(sh, j->nreq, &b);
	outer = kv_keyhash_memo(&b.memo); /* a client's read may be running here */
	for (uint32_t i = 0; i < j->nreq; i++) {
		const struct batch_item *it = &b.it[i];

		if (held_over(j, j->out.len)) {
			j->skipped = true;
			break;
		}
		if (b.hashed[i] && batch_key(it))
			kv_db_known_hash(sh->db, it->argv[it->cmd->first_key],
					 it->argl[it->cmd->first_key], b.hash[i]);
		kv_shard_exec(sh, NULL, it->cmd, now, it->argc, it->argv, it->argl, &j->out, NULL);
		kv_db_known_hash(sh->db, NULL, 0, 0);
		j->out_end[i] = j->out.len;
	}
	kv_keyhash_memo(outer);
	if (j->held)
		atomic_fetch_add_explicit(j->held, j->out.len, memory_order_relaxed);
}

/* A job whose writes failed to reach the append-only file: each of its
 * replies becomes the MISCONF error (the reply bytes counted for the
 * client's limit follow). */
static void job_fail(struct kv_job *j, int err)
{
	size_t before = j->out.len;

	kv_reply_clear(&j->out);
	/* one error per request: a batch's, or an EXEC lock's that carries
	 * its commands (exec.c reads their replies by out_end) */
	for (uint32_t i = 0; i < (j->nreq ? j->nreq : 1); i++) {
		kv_reply_errorf(&j->out, KV_ERR_MISCONF_AOF_FMT, strerror(-err));
		j->out_end[i] = j->out.len;
	}
	if (j->held) {
		atomic_fetch_add_explicit(j->held, j->out.len, memory_order_relaxed);
		atomic_fetch_sub_explicit(j->held, before, memory_order_relaxed);
	}
}

void kv_job_durable(struct kv_shard *sh, void *arg, int err)
{
	struct kv_job *j = arg;

	if (err)
		job_fail(j, err);
	finish(sh, j);
}

static void run(struct kv_shard *sh, struct kv_job *j)
{
	uint64_t mark = kv_aof_mark(sh);
	/* one shard's file never holds a marker: redis-server loads it */
	bool part = j->tx_parts && sh->n > 1;
	bool kept;

	if (j->tx_group)
		kv_aof_tx_keep(sh, j->tx, j->tx_group);
	kept = kv_aof_tx_enter(sh, j->tx); /* a spanning EXEC's job: its records kept */
	if (part)
		kv_aof_part_begin(sh, j->tx, j->tx_parts);
	switch (j->kind) {
	case KV_JOB_CMD:
		run_cmd(sh, j);
		break;
	case KV_JOB_BATCH:
		run_batch(sh, j);
		break;
	case KV_JOB_LOCK:
		grant(sh, j);
		break;
	case KV_JOB_FN:
		j->fn(sh, j);
		kv_block_serve(sh);
		publish(sh); /* a part of a multi-shard command */
		kv_ps_flush(sh); /* what a PUBLISH in it sent */
		break;
	}
	if (part)
		kv_aof_part_end(sh);
	if (kept)
		kv_aof_tx_leave(sh);
	if (!kv_aof_hold(sh, mark, kv_job_durable, j))
		finish(sh, j);
	if (sh->wait_head)
		drain(sh);
}

/* Whether a request may run beside the key locks: none of its keys held
 * by a writer, and, for a command that writes, by readers. */
static bool keys_free(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
		      const char *const *argv, const size_t *argl)
{
	uint32_t n;

	if (kv_keylock_empty(sh->keys) || !cmd || !cmd->first_key || !kv_cmd_arity_ok(cmd, argc))
		return true;
	n = kv_cmd_nkeys(cmd, argc, argv, argl);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(cmd, k, argc, argv, argl);
		enum kv_keylock_state st = kv_keylock_state(sh->keys, kv_keyhash(argv[i], argl[i]));

		if (st == KV_KEY_EXCLUSIVE || (st == KV_KEY_SHARED && (cmd->flags & KV_CMD_WRITE)))
			return false;
	}
	return true;
}

bool kv_shard_keys_free(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
			const char *const *argv, const size_t *argl)
{
	return !sh->lock && !sh->readers && keys_free(sh, cmd, argc, argv, argl);
}

bool kv_shard_runs_now(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
		       const char *const *argv, const size_t *argl)
{
	return !sh->lock && !sh->readers && !sh->wait_head && keys_free(sh, cmd, argc, argv, argl);
}

/* Whether a plain job's requests may run beside the key locks. */
static bool plain_free(const struct kv_shard *sh, const struct kv_job *j)
{
	const char *p = j->reqs.buf;

	if (kv_keylock_empty(sh->keys))
		return true;
	if (j->kind == KV_JOB_FN) /* an EXEC shipped whole: no key of it may be held */
		return false;
	if (j->kind == KV_JOB_CMD)
		return !j->a.argc ||
		       keys_free(sh, j->cmd ? j->cmd : kv_cmd_lookup(j->a.argv[0], j->a.argl[0]),
				 j->a.argc, j->a.argv, j->a.argl);
	for (uint32_t i = 0; i < j->nreq; i++) {
		struct batch_item it;
		uint64_t hash;

		batch_next(&p, &it, &hash);
		if (!keys_free(sh, it.cmd, it.argc, it.argv, it.argl))
			return false;
	}
	return true;
}

/* Whether j may run beside what holds sh now: a lock of the whole shard
 * exclusive when nothing else holds any of it, shared beside readers and
 * keys held shared; a keyed lock when its keys are free for it (and no
 * reader holds the whole shard, for a writer); anything else when the
 * shard is not held and its keys are free. */
static bool compatible(struct kv_shard *sh, struct kv_job *j)
{
	if (sh->lock)
		return false;
	if (j->kind == KV_JOB_LOCK && j->keyed) {
		size_t n = lock_nkeys(j);
		const uint64_t *h = j->khash && j->nkhash == n ? j->khash : NULL; /* hashed at home */

		if (!h) {
			struct kv_keyhold *kh = keyhold_of(j);

			if (!kh)
				abort(); /* a lock that cannot be looked at stops the server */
			h = kh->h;
		}
		return (j->shared || !sh->readers) &&
		       kv_keylock_can(sh->keys, h, n, j->shared, j->tx);
	}
	if (j->kind == KV_JOB_LOCK)
		return j->shared ? !kv_keylock_any_writer(sh->keys) :
				   !sh->readers && kv_keylock_empty(sh->keys);
	return !sh->readers && plain_free(sh, j);
}

/* Runs the waiting jobs in their order until the oldest must wait again.
 * Not nested: a job that unlocks inside leaves the rest to this loop. */
static void drain(struct kv_shard *sh)
{
	if (sh->draining)
		return;
	sh->draining = true;
	while (sh->wait_head && compatible(sh, sh->wait_head)) {
		struct kv_job *j = sh->wait_head;

		sh->wait_head = j->wnext;
		if (!sh->wait_head)
			sh->wait_tail = NULL;
		run(sh, j);
	}
	sh->draining = false;
}

/* A job waits here now: the unlocks owed by other shards are awaited
 * from here on, as a pinned shard awaits them from the grant. */
static void poll_owed(struct kv_shard *sh)
{
	for (struct kv_keyhold *kh = sh->holds; kh; kh = kh->next)
		if (kh->owed && !kh->polled) {
			kh->polled = true;
			pc_shard_expect(1);
		}
}

/* One more on a counter only this shard writes (readers load it
 * relaxed): no locked add on the request path. */
static void bump(_Atomic uint64_t *v)
{
	atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* A job arrives on its target. A part of a transaction runs at once: its
 * transaction holds the shard (parts are sent only once every lock is
 * granted). Anything else runs now when it is compatible with the
 * holders and no older job waits (a reader never overtakes a waiting
 * writer, so writers are not starved), else it waits its turn. */
static void take(struct kv_shard *sh, struct kv_job *j)
{
	bool lock = j->kind == KV_JOB_LOCK;

	if (lock)
		bump(&sh->st->locks);
	if ((j->tx && !lock) || (!sh->wait_head && compatible(sh, j))) {
		run(sh, j);
		return;
	}
	if (lock)
		bump(&sh->st->lock_waits);
	j->queued = true;
	poll_owed(sh);
	j->wnext = NULL;
	if (sh->wait_tail)
		sh->wait_tail->wnext = j;
	else
		sh->wait_head = j;
	sh->wait_tail = j;
}

static void remote_take(void *arg)
{
	take(pc_shard_user(), arg);
}

int kv_job_submit(struct kv_shard *sh, struct kv_job *j)
{
	int rc;

	j->home = sh->idx;
	if (j->target == sh->idx) {
		take(sh, j);
		return 0;
	}
	rc = j->must ? pc_shard_send_reply(j->target, remote_take, j) :
		       pc_shard_send(j->target, remote_take, j);
	/* locks and parts of transactions are awaited by a shard without a
	 * CPU of its own while locks contend: other transactions wait on
	 * their answers */
	j->awaited = !rc && (sh->await_plain || ((j->kind == KV_JOB_LOCK || j->kind == KV_JOB_FN) &&
						 locks_contended(sh)));
	if (j->awaited)
		pc_shard_expect(1); /* home_done() comes back */
	return rc;
}

static void unlock(struct kv_shard *sh, bool shared)
{
	if (shared)
		sh->readers--;
	else
		sh->lock = 0;
	publish(sh);
	kv_block_serve(sh); /* keys a transaction wrote, served once it let go */
	if (sh->wait_head)
		drain(sh);
}

static void unlock_keys(struct kv_shard *sh, uint64_t tx)
{
	struct kv_keyhold **p = &sh->holds, *kh;

	while (*p && (*p)->tx != tx)
		p = &(*p)->next;
	kh = *p;
	if (!kh)
		return;
	*p = kh->next;
	kv_keylock_release(sh->keys, kh->h, kh->n);
	if (kh->polled)
		pc_shard_expect(-1);
	free(kh);
	kv_block_serve(sh);
	if (sh->wait_head)
		drain(sh);
}

static void remote_unlock(void *arg)
{
	unlock(pc_shard_user(), arg != NULL);
}

static void remote_unlock_keys(void *arg)
{
	unlock_keys(pc_shard_user(), (uint64_t)(uintptr_t)arg);
}

_Static_assert(sizeof(uintptr_t) >= sizeof(uint64_t), "a transaction id travels as a pointer");

void kv_shard_unlock(struct kv_shard *sh, unsigned target, uint64_t tx, bool keyed, bool shared)
{
	int rc;

	if (target == sh->idx) {
		if (keyed)
			unlock_keys(sh, tx);
		else
			unlock(sh, shared);
		return;
	}
	/* An unlock completes accepted work: never refused for the budget. */
	rc = keyed ? pc_shard_send_reply(target, remote_unlock_keys, (void *)(uintptr_t)tx) :
		     pc_shard_send_reply(target, remote_unlock, (void *)(uintptr_t)shared);
	if (rc)
		abort(); /* a shard left locked would stop the server */
}

/* Active expiry: every period, steps of EXPIRE_BUDGET keys while a
 * quarter or more of those looked at had expired. */
static void expire_tick(struct pc_periodic *p, void *arg)
{
	struct kv_shard *sh = arg;
	int64_t now = kv_now_ms();

	(void)p;
	for (int i = 0; i < EXPIRE_STEPS; i++)
		if (kv_db_expire_step(sh->db, now, EXPIRE_BUDGET) < EXPIRE_BUDGET / 4)
			break;
	/* The table does not shrink as keys go; once none is left, its
	 * memory goes back too. */
	if (!kv_db_size(sh->db) && kv_db_used(sh->db) > EMPTY_TABLE_KEEP)
		kv_db_flush(sh->db);
	publish(sh);
	kv_persist_tick(sh, now);
	if (!sh->aof) /* else the file's own tick looks */
		kv_aofrw_due(sh);
}

/* New settings on this shard: the keyspace's share of maxmemory, the
 * parsers' limits (each connection takes them before it parses). */
static void apply(struct kv_shard *sh, const struct kv_config *cfg)
{
	kv_aof_apply(sh, cfg);
	sh->cfg = *cfg;
	sh->limits = kv_config_resp_limits(cfg);
	/* rounded up: a limit is never 0, which would mean none */
	kv_db_set_maxmemory(sh->db, (cfg->maxmemory + sh->n - 1) / sh->n,
			    cfg->maxmemory_policy, cfg->maxmemory_samples);
}

static void apply_msg(void *arg)
{
	apply(pc_shard_user(), arg);
	free(arg);
}

/* CONFIG SET: here at once, on the other shards a message later (each
 * takes its copy in its own turn). The client that set them sees them
 * everywhere: its later requests to a shard travel behind that message.
 * appendonly switched on starts its rewrite once every shard has been
 * told (aof_shard.h). */
static int config_set(void *arg, const struct kv_config *next, char *why, size_t whylen)
{
	struct kv_shard *sh = arg;
	int rc = kv_aof_config(sh, next, why, whylen);

	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < sh->n; i++) {
		struct kv_config *copy;

		if (i == sh->idx)
			continue;
		copy = malloc(sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		*copy = *next;
		if (pc_shard_send_reply(i, apply_msg, copy)) {
			free(copy);
			return -ENOMEM;
		}
	}
	apply(sh, next);
	if (rc)
		kv_aof_switched_on(sh);
	return 0;
}

/* view.shutdown (SHUTDOWN): the engine stops every shard. */
static void shutdown_server(void *arg)
{
	struct kv_shard *sh = arg;

	atomic_store_explicit(&sh->srv->stopped_by_shutdown, true, memory_order_relaxed);
	pc_server_stop(atomic_load_explicit(&sh->srv->net_pub, memory_order_acquire));
}

void kv_shard_start(unsigned idx, void *user)
{
	struct kv_server *k = user;
	struct kv_shard *sh = calloc(1, sizeof(*sh));

	if (!sh || !(sh->db = kv_db_new()) || !(sh->keys = kv_keylock_new()) ||
	    kv_block_start(sh))
		abort(); /* a shard without its keyspace cannot serve */
	sh->srv = k;
	sh->idx = idx;
	sh->n = k->n;
	/* a CPU of its own: pinned alone to it, not floating, not unpinned */
	const struct pc_placement *pl = pc_engine_placement(pc_shard_engine());

	sh->await_plain = pl->pinned && !pl->floating;
	sh->st = &k->stats[idx];
	sh->per_shard = calloc(k->n, sizeof(*sh->per_shard));
	if (!sh->per_shard)
		abort();
	sh->view = (struct kv_server_view){ .totals = kv_view_totals, .config_set = config_set,
					    .shutdown = shutdown_server, .bgsave = kv_bgsave_view,
					    .bgrewriteaof = kv_aofrw_view, .clients = kv_clients_each,
					    .client_unblock = kv_clients_unblock,
					    .client_kill = kv_clients_kill, .arg = sh };
	apply(sh, &k->o.cfg);
	kv_ps_start(sh);
	kv_persist_load_rdb(sh);
	publish(sh);
	kv_job_cache_start();
	pc_shard_set_user(sh);
	kv_aof_start(sh); /* replays its file before any client is served */
	kv_db_on_gone(sh->db, kv_aof_gone, sh); /* expired and evicted keys: DEL */
	pc_periodic_start(&sh->expiry, pc_shard_reactor(),
			  k->o.expire_ms ? k->o.expire_ms : KV_SERVER_EXPIRE_MS, expire_tick, sh);
}

void kv_shard_stop(unsigned idx, void *user)
{
	struct kv_shard *sh = pc_shard_user();

	(void)idx;
	(void)user;
	if (!sh)
		return;
	pc_periodic_stop(&sh->expiry);
	kv_aof_stop(sh);
	/* The jobs still waiting here are their senders' (freed with them);
	 * this shard's clients still waiting for answers are freed once every
	 * shard has stopped, when no thread can touch their jobs. */
	sh->srv->orphans[sh->idx] = sh->closing;
	kv_block_stop(sh);
	kv_bgsave_stop(sh);
	kv_persist_stop_part(sh);
	kv_db_free(sh->db);
	kv_ps_stop(sh);
	kv_keylock_free(sh->keys);
	kv_flights_spare_free(&sh->flights);
	while (sh->holds) {
		struct kv_keyhold *kh = sh->holds;

		sh->holds = kh->next;
		free(kh);
	}
	free(sh->per_shard);
	free(sh);
	pc_shard_set_user(NULL);
	kv_job_cache_stop();
}

/* ---- every shard held at once ------------------------------------------------ */

static void hold_next(struct kv_hold_all *h);

static void run_all(struct kv_hold_all *h)
{
	for (unsigned i = 0; i < h->n; i++) {
		struct kv_job *j = kv_job_new(KV_JOB_FN, 0, 0);

		if (!j)
			abort(); /* every shard is held: nothing could go on */
		j->fn = h->fn;
		j->target = i;
		j->tx = h->tx;
		j->owner = h->owner;
		j->done = h->done;
		if (kv_job_submit(h->home, j))
			abort();
	}
}

static void held(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_hold_all *h = j->owner;

	(void)sh;
	kv_job_free(j);
	if (++h->locked < h->n)
		hold_next(h);
	else
		run_all(h);
}

static void hold_next(struct kv_hold_all *h)
{
	struct kv_job *j = kv_job_new(KV_JOB_LOCK, 0, 0);

	if (!j)
		abort(); /* the shards held so far would stay held */
	j->target = h->locked;
	j->tx = h->tx;
	j->owner = h;
	j->done = held;
	if (kv_job_submit(h->home, j))
		abort();
}

void kv_hold_all(struct kv_hold_all *h)
{
	h->locked = 0;
	hold_next(h);
}

void kv_hold_all_release(struct kv_hold_all *h)
{
	for (unsigned i = 0; i < h->n; i++)
		kv_shard_unlock(h->home, i, h->tx, false, false);
}
