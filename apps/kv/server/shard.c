/* SPDX-License-Identifier: MIT */
/* One shard of the kv server: its keyspace, its lock and wait queue for
 * multi-shard commands, jobs from other shards, active expiry. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keyhash.h"
#include "percore/outbox.h"
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
	return sh->n == 1 ? 0 : (unsigned)(kv_keyhash(key, len) % sh->n);
}

int64_t kv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct kv_job *kv_job_new(enum kv_job_kind kind, uint32_t argc, size_t bytes)
{
	size_t vec = (size_t)argc * (sizeof(char *) + sizeof(size_t));
	struct kv_job *j = malloc(sizeof(*j) + vec + bytes);

	if (!j)
		return NULL;
	memset(j, 0, sizeof(*j));
	j->kind = kind;
	j->scan_shard = -1;
	kv_reply_init(&j->out);
	kv_reply_init(&j->after);
	kv_part_init(&j->part);
	j->a.argv = (const char **)(j + 1);
	j->a.argl = (size_t *)(j->a.argv + argc);
	j->acap = argc;
	j->abuf = (char *)(j->a.argl + argc); /* the bytes follow the vectors */
	return j;
}

void kv_job_arg(struct kv_job *j, const char *p, size_t len)
{
	if (len)
		memcpy(j->abuf, p, len);
	j->a.argv[j->a.argc] = j->abuf;
	j->a.argl[j->a.argc++] = len;
	j->abuf += len;
}

void kv_job_free(struct kv_job *j)
{
	if (!j)
		return;
	kv_reply_free(&j->out);
	kv_reply_free(&j->after);
	kv_part_free(&j->part);
	free(j->val);
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
}

void kv_shard_exec(struct kv_shard *sh, struct kv_conn *conn, const struct kv_cmd *cmd,
		   int64_t now, uint32_t argc, const char *const *argv, const size_t *argl,
		   struct kv_reply *out, struct kv_part *part)
{
	struct kv_call c = {
		.db = sh->db, .out = out, .now = now,
		.max_bulk = sh->limits.max_bulk, .conn = conn, .cfg = &sh->cfg,
		.view = &sh->view, .argc = argc, .argv = argv, .argl = argl, .part = part,
	};

	if (cmd)
		kv_cmd_exec_as(&c, cmd);
	else
		kv_cmd_exec(&c);
	atomic_store_explicit(&sh->st->commands,
			      atomic_load_explicit(&sh->st->commands, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	publish(sh);
}

static void home_done(void *arg)
{
	struct kv_job *j = arg;
	struct kv_shard *sh = pc_shard_user();

	j->finished = true;
	j->done(sh, j);
}

/* The job ran: its done runs at home, where alone `finished` is written
 * (home reads it to write replies in order). */
static void finish(struct kv_shard *sh, struct kv_job *j)
{
	if (j->home == sh->idx) {
		j->finished = true;
		j->done(sh, j);
	}
	else if (pc_shard_send_reply(j->home, home_done, j))
		abort(); /* -ENOMEM for a 64-byte chunk: nothing can go on */
}

static void drain(struct kv_shard *sh);

/* A lock granted: shared with the other readers, or the writer's alone.
 * A writer evicts first (allkeys-lru) and says whether the keyspace is
 * still over its limit: from here until the unlock only its own jobs
 * (and active expiry, which only frees) run here, so that answer holds
 * until its parts ran. */
static void grant(struct kv_shard *sh, struct kv_job *j)
{
	if (j->shared)
		sh->readers++;
	else
		sh->lock = j->tx;
	j->over = j->room && !kv_db_make_room(sh->db);
}

/* A client's request. Once the replies its earlier jobs hold pass its
 * output limit it will be closed: the rest are not run, so a client that
 * does not read cannot make other shards build replies without bound. */
static void run_cmd(struct kv_shard *sh, struct kv_job *j)
{
	if (j->held && atomic_load_explicit(j->held, memory_order_relaxed) > j->held_max) {
		j->skipped = true;
		return;
	}
	kv_shard_exec(sh, NULL, NULL, kv_now_ms(), j->a.argc, j->a.argv, j->a.argl, &j->out,
		      j->typed ? &j->part : NULL);
	if (j->held)
		atomic_fetch_add_explicit(j->held, j->out.len, memory_order_relaxed);
}

static void run(struct kv_shard *sh, struct kv_job *j)
{
	switch (j->kind) {
	case KV_JOB_CMD:
		run_cmd(sh, j);
		break;
	case KV_JOB_LOCK:
		grant(sh, j);
		break;
	case KV_JOB_FN:
		j->fn(sh, j);
		publish(sh); /* a part of a multi-shard command */
		break;
	}
	finish(sh, j);
	if (sh->wait_head)
		drain(sh);
}

/* Whether j may run beside what holds sh now: a shared lock beside
 * readers, anything else only when nothing holds it. */
static bool compatible(const struct kv_shard *sh, const struct kv_job *j)
{
	return !sh->lock && (!sh->readers || (j->kind == KV_JOB_LOCK && j->shared));
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

/* A job arrives on its target. A part of a transaction runs at once: its
 * transaction holds the shard (parts are sent only once every lock is
 * granted). Anything else runs now when it is compatible with the
 * holders and no older job waits (a reader never overtakes a waiting
 * writer, so writers are not starved), else it waits its turn. */
static void take(struct kv_shard *sh, struct kv_job *j)
{
	if ((j->tx && j->kind != KV_JOB_LOCK) || (!sh->wait_head && compatible(sh, j))) {
		run(sh, j);
		return;
	}
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
	j->home = sh->idx;
	if (j->target == sh->idx) {
		take(sh, j);
		return 0;
	}
	return pc_shard_send(j->target, remote_take, j);
}

static void unlock(struct kv_shard *sh, bool shared)
{
	if (shared)
		sh->readers--;
	else
		sh->lock = 0;
	publish(sh);
	if (sh->wait_head)
		drain(sh);
}

static void remote_unlock(void *arg)
{
	unlock(pc_shard_user(), arg != NULL);
}

void kv_shard_unlock(struct kv_shard *sh, unsigned target, bool shared)
{
	if (target == sh->idx)
		unlock(sh, shared);
	/* An unlock completes accepted work: never refused for the budget. */
	else if (pc_shard_send_reply(target, remote_unlock, (void *)(uintptr_t)shared))
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
}

/* New settings on this shard: the keyspace's share of maxmemory, the
 * parsers' limits (each connection takes them before it parses). */
static void apply(struct kv_shard *sh, const struct kv_config *cfg)
{
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
 * everywhere: its later requests to a shard travel behind that message. */
static int config_set(void *arg, const struct kv_config *next)
{
	struct kv_shard *sh = arg;

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
	return 0;
}

void kv_shard_start(unsigned idx, void *user)
{
	struct kv_server *k = user;
	struct kv_shard *sh = calloc(1, sizeof(*sh));

	if (!sh || !(sh->db = kv_db_new()))
		abort(); /* a shard without its keyspace cannot serve */
	sh->srv = k;
	sh->idx = idx;
	sh->n = k->n;
	sh->st = &k->stats[idx];
	sh->per_shard = calloc(k->n, sizeof(*sh->per_shard));
	if (!sh->per_shard)
		abort();
	sh->view = (struct kv_server_view){ .totals = kv_view_totals, .config_set = config_set,
					    .arg = sh };
	apply(sh, &k->o.cfg);
	pc_shard_set_user(sh);
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
	/* The jobs still waiting here are their senders' (freed with them);
	 * this shard's clients still waiting for answers are freed once every
	 * shard has stopped, when no thread can touch their jobs. */
	sh->srv->orphans[sh->idx] = sh->closing;
	kv_db_free(sh->db);
	free(sh->per_shard);
	free(sh);
	pc_shard_set_user(NULL);
}
