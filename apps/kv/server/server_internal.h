/* SPDX-License-Identifier: MIT */
/* The kv server's insides, shared by its files: shards, jobs, connections
 * and multi-shard commands. Internal to apps/kv.
 *
 * A job is one piece of work for one shard: a command, a batch of one
 * connection's commands, a lock or an unlock of that shard for a
 * multi-shard command (a "transaction"), or a function. It is created on its home shard (where the client's
 * connection lives), runs on its target shard, and its done callback
 * runs back home. Jobs travel through the outbox (percore/outbox.h), so
 * the jobs one shard sends another run in the order they were sent.
 *
 * A transaction holds each shard it touches, exclusively (a writer) or
 * shared with other readers (a read-only command). A held shard runs its
 * holders' jobs at once; any other job waits in the shard's queue, in
 * arrival order: a lock until it is compatible with the holders (shared
 * with shared), a plain job until nothing holds the shard. */
#ifndef KV_SRV_H
#define KV_SRV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cmd.h"
#include "conn.h"
#include "db.h"
#include "flights.h"
#include "percore/service.h"
#include "resp_reply.h"
#include "resp.h"
#include "kv_server.h"

/* A request's arguments in one allocation of their own. */
struct kv_args {
	uint32_t argc;
	const char **argv;
	size_t *argl;
};

enum kv_job_kind { KV_JOB_CMD, KV_JOB_BATCH, KV_JOB_LOCK, KV_JOB_FN };

/* A batch's most requests, and the most arguments one of them may have
 * (a request with more goes as a KV_JOB_CMD of its own). */
#define KV_BATCH_MAX  32u
#define KV_BATCH_ARGS 16u

struct kv_shard;
struct kv_job;
struct kv_blocked;
struct kv_keyhold;
struct kv_keylock;
struct kv_bgsave;
struct kv_stop_part;
struct snap_chunk;
typedef void kv_job_fn(struct kv_shard *sh, struct kv_job *j);

struct kv_job {
	struct kv_job *next;       /* the owner's list (connection order) */
	struct kv_job *wnext;      /* the target shard's wait queue */
	enum kv_job_kind kind;
	unsigned home, target;
	uint64_t tx;               /* the transaction it belongs to; 0: none */
	kv_job_fn *fn;             /* KV_JOB_FN: runs on the target */
	kv_job_fn *done;           /* runs on home with sh = home shard */
	void *owner;               /* connection or transaction */
	struct kv_job *nprev;      /* nobody's job: the one before in its list (pubsub.c) */
	bool finished;
	/* sent as a reply is (pc_shard_send_reply): never refused for the
	 * outbox budget, for work that must not be lost (pubsub.c) */
	bool must;
	bool block;                /* a JOB_BLOCK block (shard.c's cache) */
	bool awaited;              /* home counts its answer (pc_shard_expect) */
	/* KV_JOB_LOCK: it waited in its target's queue before the grant (the
	 * keys or the shard were held): home's measure of contention */
	bool queued;
	/* KV_JOB_LOCK: a reader's shared lock; evict, as the memory policy
	 * allows, once granted (a writer); and the answer, whether the
	 * keyspace is still over its limit then */
	bool shared, room, over;
	/* KV_JOB_LOCK of a transaction that locks keys, not the whole shard
	 * (keyed): its keys are a.argv[kfirst], then every kstep-th; with
	 * run_part, a is the transaction's part for this shard, run as soon
	 * as the keys are held (its result to part, an error to out); with
	 * nreq, the requests in reqs run then as a batch's do (an EXEC's
	 * commands for this shard, exec.c). khold:
	 * the target's record of them (keyhold in shard.c), made there.
	 * release: the transaction's last lock, let go as soon as its part
	 * ran (every other lock is held then), so no unlock follows it */
	bool keyed, run_part, release;
	uint32_t kfirst, kstep;
	struct kv_keyhold *khold;
	/* the hashes of its keys (as kfirst and kstep place them), where home
	 * knew them (a part of a command over several shards): taken for
	 * its lock and its lookups instead of hashing the keys again; in the
	 * job's own memory. NULL: none */
	uint64_t *khash;
	uint32_t nkhash;
	int scan_shard;            /* >= 0: a SCAN part whose cursor to rewrite */
	uint64_t caller;           /* a part's client connection id (kv_call.caller); 0: none */
	/* KV_JOB_CMD of a typed command (kv_multi_typed()) that is one part of
	 * a command spanning shards: its result goes to part (an error to
	 * out), merged at home; otherwise the target writes the reply to out */
	bool typed;
	struct kv_part part;
	/* A part of a write spanning shards: its writes are recorded as one
	 * marked group of tx_parts (aof_shard.h); 0: not one */
	unsigned tx_parts;
	/* KV_JOB_LOCK of an EXEC spanning shards that writes on this one:
	 * its records here are kept until its commit and recorded as one
	 * group of tx_group parts (kv_aof_tx_keep); 0: not one */
	unsigned tx_group;
	/* KV_JOB_CMD of a client: the reply bytes its jobs hold, which the
	 * target adds this reply's to (NULL: not counted); past held_max the
	 * target does not run it (skipped): the client is over its output
	 * limit and is closed when it collects this job */
	_Atomic uint64_t *held;
	uint64_t held_max;
	bool skipped;
	uint64_t u64;              /* KV_JOB_FN's input and output */
	int64_t i64;
	char *val;                 /* KV_JOB_FN's value (malloc) */
	size_t vlen;
	uint8_t vtype;             /* enum kv_type of a value moved between shards */
	uint8_t str_enc;           /* a string moved: its kv_entry_str_enc() */
	void *obj;                 /* the typed value's copy (vtype != KV_STRING) */
	struct kv_reply out;       /* the reply the target wrote */
	/* replies of the owner's requests that ran at home after this job
	 * was sent and before the next one: written out after out */
	struct kv_reply after;
	/* KV_JOB_BATCH: a connection's requests for one shard, consecutive
	 * in its stream but for requests that ran at home in between, sent
	 * as one message. reqs holds them encoded (kv_batch_add()); the
	 * target writes their replies one after another to out, request
	 * i's ending at out_end[i]; after holds the home replies that follow
	 * request i from after_mark[i] on (both tables at the end). */
	uint32_t nreq;
	bool sent;
	struct kv_reply reqs;
	struct kv_args a;          /* KV_JOB_CMD's request (in the same allocation) */
	const struct kv_cmd *cmd;  /* its command, when the sender knew it (NULL:
	                            * looked up by a.argv[0] where it runs) */
	uint32_t acap;             /* argument slots */
	char *abuf;                /* where the next argument's bytes go */
	/* Last, and not zeroed by kv_job_new() (half the job): entry i is
	 * written as request i is added (after_mark) and as it runs or
	 * fails (out_end), and read only for i < nreq once the job finished
	 * unskipped. */
	size_t out_end[KV_BATCH_MAX];
	size_t after_mark[KV_BATCH_MAX];
};

/* Figures one shard writes and anyone reads (relaxed). */
struct kv_shard_stats {
	_Atomic uint64_t keys, expires, used, expired, evicted, commands, changes;
	/* the append-only file (aof_shard.c): on, its bytes, its records not
	 * yet confirmed, its last write's -errno (0: ok), its bytes after
	 * its last rewrite or at start (the automatic rule's base) */
	_Atomic uint64_t aof_on, aof_size, aof_pending, aof_err, aof_base;
	/* a background save's key records held here (bgsave.c), the most
	 * at once since it began, and the keys copied before a change */
	_Atomic uint64_t snap_bytes, snap_peak, snap_copied;
	/* its clients waiting on keys, and all its clients (client.c) */
	_Atomic uint64_t blocked, conns;
	/* locks that commands over several shards took here (keys or the
	 * whole shard), and those of them that waited in its queue */
	_Atomic uint64_t locks, lock_waits;
};

struct kv_server;

struct kv_shard {
	struct kv_server *srv;
	struct kv_shard_stats *st;            /* the server's, outlives the shard */
	unsigned idx, n;
	struct kv_db *db;
	struct kv_pubsub *ps;                 /* its subscriptions, and every shard's counts */
	struct kv_job *ps_jobs;               /* jobs of nobody's out (pubsub.c) */
	uint32_t ps_out;                      /* messages out, theirs and PUBLISHes' */
	struct kv_ps_out *ps_q;               /* the PUBLISHes' messages for other shards */
	bool ps_task;                         /* their sending is due at the turn's end */
	uint64_t lock;                        /* the writer holding it; 0: none */
	unsigned readers;                     /* readers holding it (shared) */
	struct kv_keylock *keys;              /* keys held by transactions (keylock.h) */
	struct kv_keyhold *holds;             /* which transaction holds which */
	struct kv_flights_spare flights;      /* connections' flight tables not in use */
	struct kv_blocked *blk;               /* clients waiting on keys (block.c) */
	struct kv_job *wait_head, *wait_tail;
	struct kv_client *closing;            /* its clients closed with answers out */
	struct kv_client *conn_head, *conn_tail; /* its open connections, oldest first */
	bool kill_task;                       /* closing killed connections is due (CLIENT KILL) */
	uint64_t caller;                      /* the part run now: its client's id (run_cmd) */
	bool draining;
	/* a plain request's answer from another shard is polled for (the
	 * await idle policy), and so are locks at any contention: only by a
	 * shard with a CPU of its own. Floating or unpinned, the shards share
	 * CPUs with the clients, and the poll holds a CPU that the answering
	 * shard or a client needs (docs/BENCHMARKS.md, "Shards on every CPU") */
	bool await_plain;
	/* one bit per lock answered here, newest lowest: whether it queued.
	 * Without await_plain, a shard awaits locks and transaction parts
	 * only while one of the last KV_CONTENDED_LOCKS did: uncontended, the
	 * poll holds a CPU the answering shard needs; contended, the next
	 * transaction on the keys waits for this one's answer
	 * (docs/BENCHMARKS.md) */
	uint32_t locks_queued;
	uint64_t tx_seq;
	struct pc_periodic expiry;
	struct kv_config cfg;                 /* this shard's copy of the settings */
	struct kv_resp_limits limits;         /* the parsers', from cfg */
	struct kv_server_view view;           /* INFO's whole-server figures */
	struct kv_shard_totals *per_shard;    /* storage for view's answers */
	struct kv_aof *aof;                   /* its append-only file; NULL: off */
	struct kv_snap *snap;                 /* this shard's part of a BGSAVE (bgsave.c) */
	struct kv_bgsave *bg_fixing;          /* a save started here whose views are not all fixed */
	struct kv_bgsave *bg_claim;           /* and the command just run here started it */
	struct kv_bgsave *bg_writing;         /* the save this shard writes, until its end */
};

struct kv_server {
	struct pc_server *net;
	_Atomic(struct pc_server *) net_pub;  /* net, for the shards once started */
	struct kv_server_opts o;
	unsigned n;
	struct kv_shard_stats *stats;         /* one per shard */
	_Atomic uint64_t clients, accepted, rejected, outlimit, proto_errors, next_id;
	/* clients closed while requests were still out on other shards,
	 * freed once the last answer is back */
	_Atomic uint64_t closing;
	/* per shard: its closing clients when it stopped, freed once every
	 * shard has (kv_server_wait) */
	struct kv_client **orphans;
	/* per shard: its closed connections' pubsub changes still out when
	 * it stopped (kv_ps_free_orphans) */
	struct kv_ps_out **ps_orphans;
	/* per shard: the chunks of a save it had sent and not seen back when
	 * it stopped (kv_bgsave_free_orphans) */
	struct snap_chunk **snap_orphans;
	int64_t start_ms;
	struct aof_start *aof_start;          /* the shards' start (aof_shard.c) */
	/* the dump loaded at start (persist.c): its bytes, read once, until
	 * every shard has taken its keys; the first shard's error */
	char dump_path[600];
	uint8_t *dump;
	size_t dump_len;
	pthread_mutex_t load_lock;
	int load_err;
	char load_why[800];
	/* BGSAVE (bgsave.c): whether one runs (set by the shard that starts
	 * it, cleared by it once the file is in place or given up), when it
	 * began, the last one's outcome and length in seconds (-1: none) */
	_Atomic bool bg_running, bg_failed;
	_Atomic bool bg_scheduled;   /* BGSAVE SCHEDULE waits for a rewrite */
	_Atomic int64_t bg_start_ms, bg_last_secs;
	/* the dump at a stop (persist.c): whether SHUTDOWN stopped the
	 * server (it saved or was told not to), each shard's records as it
	 * stopped, and shard 0's settings then */
	_Atomic bool stopped_by_shutdown;
	struct kv_stop_part *stop_parts;
	struct kv_config stop_cfg;
	/* BGREWRITEAOF (aof_rewrite.c), as BGSAVE's: one runs (rw_cur: its
	 * state, the starting shard's), one waits for a BGSAVE to end, the
	 * last one failed, when it began, its length, rewrites done, failures
	 * in a row. A BGSAVE and a rewrite never run at once (one snapshot
	 * per keyspace). */
	_Atomic bool rw_running, rw_scheduled, rw_failed;
	_Atomic int64_t rw_start_ms, rw_last_secs;
	_Atomic uint64_t rw_count, rw_streak;
	struct kv_aofrw *rw_cur;
	/* appendonly as CONFIG SET switches it (aof_shard.c): enum
	 * kv_aof_state, and a count of its changes (a switch-on's rewrite
	 * whose count is no longer current gives up) */
	_Atomic int aof_state;
	_Atomic uint64_t aof_gen;
};

/* The append-only files: off, switching on (their first rewrite runs),
 * on. */
enum kv_aof_state { KV_AOF_OFF, KV_AOF_WAIT, KV_AOF_ON };

/* ---- shard.c -------------------------------------------------------------- */

/* The owner of a key whose kv_keyhash() is hash (inline: once per key of
 * every request over several shards, a dozen times for an MSET). */
static inline unsigned kv_hash_shard(const struct kv_shard *sh, uint64_t hash)
{
	return (unsigned)(hash % sh->n);
}
/* The owner of a key. */
unsigned kv_key_shard(const struct kv_shard *sh, const char *key, size_t len);

/* A new transaction id, unique over the whole server (never 0). */
uint64_t kv_shard_tx_id(struct kv_shard *sh);

/* ms since the epoch. */
int64_t kv_now_ms(void);

/* A job with room for argc arguments of `bytes` bytes in all (appended
 * with kv_job_arg()). NULL when out of memory. */
struct kv_job *kv_job_new(enum kv_job_kind kind, uint32_t argc, size_t bytes);
/* The same with room for the hashes of nkeys keys besides (khash),
 * appended with kv_job_key_hash(). */
struct kv_job *kv_job_new_hashed(enum kv_job_kind kind, uint32_t argc, size_t bytes,
				 uint32_t nkeys);
/* Inline, as kv_job_arg: called once per key or argument of every
 * request that leaves its shard. */
static inline void kv_job_key_hash(struct kv_job *j, uint64_t hash)
{
	j->khash[j->nkhash++] = hash;
}

/* Copies len bytes; up to 16 with two overlapping moves and no call:
 * most keys and values a job carries are that short. */
static inline void kv_copy_bytes(char *to, const char *from, size_t len)
{
	if (len >= 8 && len <= 16) {
		memcpy(to, from, 8);
		memcpy(to + len - 8, from + len - 8, 8);
	} else if (len >= 4 && len < 8) {
		memcpy(to, from, 4);
		memcpy(to + len - 4, from + len - 4, 4);
	} else if (len && len < 4) {
		to[0] = from[0];
		to[len / 2] = from[len / 2];
		to[len - 1] = from[len - 1];
	} else if (len) {
		memcpy(to, from, len);
	}
}

/* Appends the next argument to a job (at most argc, bytes in all). The
 * job's fields are read before the copy, which could alias them. */
static inline void kv_job_arg(struct kv_job *j, const char *p, size_t len)
{
	char *to = j->abuf;
	uint32_t n = j->a.argc;

	kv_copy_bytes(to, p, len);
	j->a.argv[n] = to;
	j->a.argl[n] = len;
	j->a.argc = n + 1;
	j->abuf = to + len;
}
/* A KV_JOB_CMD for the request, its arguments copied; for a SCAN part
 * (scan_shard >= 0) the cursor argument becomes that shard's own. NULL
 * when out of memory. */
struct kv_job *kv_job_request(const struct kv_resp_req *r, int scan_shard, uint64_t cursor);
/* An empty KV_JOB_BATCH. NULL when out of memory. */
struct kv_job *kv_batch_new(void);
/* Gives a new job's requests (reqs), their replies (out) and after the
 * room its block has left past it, as kv_batch_new() does, so that a
 * lock carrying a few short requests allocates nothing more. Nothing when
 * the job has no such room or holds anything already. */
void kv_job_batch_room(struct kv_job *j);
/* Adds a request (argc at most KV_BATCH_ARGS) to a batch not yet sent
 * with fewer than KV_BATCH_MAX; key_hash: its first key's kv_keyhash()
 * when the sender has it (the target then need not hash it), or NULL.
 * Returns 0, or -ENOMEM with the batch unchanged. */
int kv_batch_add(struct kv_job *j, const struct kv_cmd *cmd, uint32_t argc,
		 const char *const *argv, const size_t *argl, const uint64_t *key_hash);
/* A job held until its writes were durable (kv_aof_hold's fn, arg the
 * job): finished now, its replies the MISCONF error when err. */
void kv_job_durable(struct kv_shard *sh, void *arg, int err);
/* Frees a job: on its home shard's thread (or once every shard stopped). */
void kv_job_free(struct kv_job *j);
/* The calling thread's cache of job blocks: kept from start (a shard's
 * start) until stop, which frees it; jobs freed outside that span go
 * straight back to the allocator. */
void kv_job_cache_start(void);
void kv_job_cache_stop(void);

/* Sends j from shard sh to j->target (running it there, or queueing it
 * while that shard is held). Its done runs on sh later, or inside this
 * call when the target is sh and it could run at once. Returns 0, or
 * -ENOBUFS / -ENOMEM when it could not be sent (done never runs). The
 * job stays its sender's: a target never frees one. */
int kv_job_submit(struct kv_shard *sh, struct kv_job *j);

/* Transaction tx of shard sh releases shard `target`: the keys it
 * locked there (keyed), else its lock of the whole shard (shared or
 * not). A message without allocation: one the engine's stop leaves
 * unrun loses nothing. */
void kv_shard_unlock(struct kv_shard *sh, unsigned target, uint64_t tx, bool keyed, bool shared);

/* Every shard held at once, for work that needs one instant over the
 * whole server (BGSAVE's and BGREWRITEAOF's views): a writer's lock of
 * each whole shard, taken in ascending order as every transaction takes
 * them, so none waits for another in a cycle; then fn runs on each shard
 * while all are held (a KV_JOB_FN job whose owner is h->owner) and its
 * answer comes to done on home. The caller releases them
 * (kv_hold_all_release) once every answer is in. h lives until then. */
struct kv_hold_all {
	struct kv_shard *home;
	uint64_t tx;
	unsigned n;
	void *owner;
	void (*fn)(struct kv_shard *sh, struct kv_job *j);
	void (*done)(struct kv_shard *sh, struct kv_job *j);
	unsigned locked;          /* shards held so far (kv_hold_all's) */
};
void kv_hold_all(struct kv_hold_all *h);
void kv_hold_all_release(struct kv_hold_all *h);

/* Runs a parsed command on sh's keyspace, the reply into out; conn: the
 * client's state when it runs on the client's shard, else NULL; cmd:
 * kv_cmd_lookup()'s answer for argv[0] when the caller has it, else NULL;
 * now: the time it runs at (kv_now_ms()); part: where a typed command's
 * result goes (out then gets only an error), or NULL for its reply. */
void kv_shard_exec(struct kv_shard *sh, struct kv_conn *conn, const struct kv_cmd *cmd,
		   int64_t now, uint32_t argc, const char *const *argv, const size_t *argl,
		   struct kv_reply *out, struct kv_part *part);
/* Adds n to the commands sh counts as run (kv_shard_exec counts its own;
 * requests run as one, a run of MSETs, count the others). */
void kv_shard_count_commands(struct kv_shard *sh, uint64_t n);

/* True when the request (cmd: its command, or NULL), submitted to sh now,
 * would run at once: nothing holds the shard or waits there, and no
 * transaction holds its keys. */
bool kv_shard_runs_now(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
		       const char *const *argv, const size_t *argl);

/* Whether a request's keys are free of every transaction's locks here
 * (a served blocked request runs beside whatever waits). */
bool kv_shard_keys_free(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
			const char *const *argv, const size_t *argl);

/* view.totals: the whole server's figures (server.c). */
void kv_view_totals(void *arg, struct kv_totals *t);

/* Shard start and stop (the server's hooks). */
void kv_shard_start(unsigned idx, void *user);
void kv_shard_stop(unsigned idx, void *user);

/* ---- client.c ------------------------------------------------------------- */

struct kv_client;
void kv_client_open(struct pc_session *s, void *user);
void kv_client_close(struct pc_session *s, enum pc_close_reason why, void *user);
/* A client moved here from another shard (pc_session_move): state holds
 * its struct kv_client pointer. */
void kv_client_moved(struct pc_session *s, const void *state, size_t len, void *user);
size_t kv_client_data(struct pc_session *s, const uint8_t *data, size_t len, void *user);
/* A transaction of c ended with its reply in out (moved from). */
void kv_client_tx_done(struct kv_client *c, struct kv_reply *out);
/* c's blocked request answered (block.c), with out as its reply. */
void kv_client_unblocked(struct kv_client *c, struct kv_reply *out);
/* view.clients: fn for each open connection of shard arg, oldest first
 * (one another's CLIENT KILL closes is gone already, as in Redis). */
void kv_clients_each(void *arg, void (*fn)(void *ctx, const struct kv_conn *conn), void *ctx);
/* view.client_unblock: ends the wait of shard arg's client id, when it
 * waits on keys (kv_block_unblock). */
bool kv_clients_unblock(void *arg, uint64_t id, bool error);
/* view.client_kill: closes shard arg's connection id, in a task of its
 * own; the caller's own (self) once its reply is written. */
bool kv_clients_kill(void *arg, uint64_t id, bool self);
/* The id of c's connection (CLIENT ID). */
uint64_t kv_client_conn_id(const struct kv_client *c);
/* After every shard stopped (no thread runs any more): frees the clients
 * that were still waiting for answers, with their jobs and transaction.
 * Returns how many. */
uint64_t kv_client_free_orphans(struct kv_client *list);

/* A message for a subscriber of this shard (the tables' deliver): queued
 * behind the replies it is owed; a subscriber whose unsent output passes
 * client-output-buffer-limit pubsub is closed. */
void kv_client_deliver(struct kv_conn *conn, const char *buf, size_t len);

/* ---- pubsub.c ------------------------------------------------------------- */

struct kv_pubsub;
struct kv_ps_out;
/* A shard's tables, made at its start and freed at its stop. */
void kv_ps_start(struct kv_shard *sh);
void kv_ps_stop(struct kv_shard *sh);
/* Messages a shard's PUBLISHes may have out unanswered: past them, a
 * PUBLISH answers once its messages were delivered, so a publisher
 * cannot outrun the subscribers' shards (memory stays bounded). */
#define KV_PS_OUT_MAX 1024u

/* What the commands run here since the last call left for other shards
 * and the caller must wait for: the changes of subscriptions, one job
 * for each other shard, and, past KV_PS_OUT_MAX, one job for each shard
 * with messages out, which runs there once they were delivered (the
 * turn's messages are sent first; below the limit they go unanswered at
 * the turn's end); linked by next, in order (NULL: none), to be
 * submitted with a done of the caller's. */
struct kv_job *kv_ps_pending(struct kv_shard *sh);
/* One job for each other shard, run there once everything this shard
 * sent it before has run (the jobs one shard sends another run in
 * order): what an EXEC that subscribed waits for, its changes having
 * gone as nobody's from a transaction's job. Linked as kv_ps_pending's. */
struct kv_job *kv_ps_barrier(struct kv_shard *sh);
/* Sends the pending jobs as nobody's (a close's changes, a PUBLISH run
 * inside a transaction's job). */
void kv_ps_flush(struct kv_shard *sh);
/* A connection closed: its subscriptions go, here and on every shard. */
void kv_ps_conn_gone(struct kv_shard *sh, struct kv_conn *conn);
/* After every shard stopped: frees what a shard's kv_ps_stop left, the
 * messages and changes it had out. */
void kv_ps_free_orphans(struct kv_ps_out *q);

/* ---- multi.c -------------------------------------------------------------- */

/* A request's keys' hashes, in key order, filled by kv_multi_needed()
 * for the checks and the transaction after it (each key hashed once). */
struct kv_key_hashes {
	uint32_t n;                   /* keys hashed: 0, or every key of the request */
	uint32_t room;                /* hash[]'s size */
	uint64_t *hash;               /* kv_keyhash() of each */
};

/* Whether the command spans shards (or the whole server) and so needs
 * a transaction. keys: NULL, or a table that receives every key's hash
 * when it returns true for a request of at most keys->room keys (else
 * keys->n is 0). */
bool kv_multi_needed(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
		     const char *const *argv, const size_t *argl, struct kv_key_hashes *keys);

/* Whether consecutive requests of this command may run as one
 * transaction of their arguments in turn: a keyed write whose reply is OK
 * whatever it found (MSET), so each request's reply is the whole one's,
 * and a later pair overwriting an earlier one is what running them one
 * after another would leave. */
bool kv_multi_joins(const struct kv_cmd *cmd);

/* Starts the transaction for a request (copied): its reply goes to
 * kv_client_tx_done(c, ...) later. Returns 0 or -ENOMEM. */
struct kv_tx;
int kv_multi_start(struct kv_shard *sh, struct kv_client *c, const struct kv_cmd *cmd,
		   uint32_t argc, const char *const *argv, const size_t *argl, struct kv_tx **out);
/* Frees a transaction and every job it owns (kv_client_free_orphans). */
void kv_multi_free(struct kv_tx *t);

/* A transaction's end under someone else's locks: its reply in out. */
typedef void kv_multi_done_fn(void *arg, struct kv_reply *out);

/* Starts the transaction for a request (copied) of connection caller
 * (0: none): its reply goes to done(arg, reply) on sh once it ended and
 * let go of its locks; *out (when out is not NULL) is the transaction,
 * for kv_multi_free() should the server stop first. hash: its keys'
 * kv_keyhash() in order, where the caller has them, or NULL. Returns 0,
 * or -ENOMEM with done never run. */
int kv_multi_start_fn(struct kv_shard *sh, uint64_t caller, const struct kv_cmd *cmd,
		      uint32_t argc, const char *const *argv, const size_t *argl,
		      const uint64_t *hash, kv_multi_done_fn *done, void *arg,
		      struct kv_tx **out);

/* Runs a request (copied) spanning shards inside transaction id, whose
 * locks already hold every shard and key it touches (an EXEC's): its
 * parts run at once and nothing is locked or unlocked; caller: the
 * client connection's id (CLIENT KILL's "itself"; 0: none); oom: a shard
 * was over its memory limit when locked. *out is the transaction until
 * done(arg, reply) runs (maybe inside this call), which frees it.
 * Returns 0, or -ENOMEM with done never run. */
int kv_multi_run_held(struct kv_shard *sh, uint64_t id, uint64_t caller, bool oom,
		      const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
		      const size_t *argl, kv_multi_done_fn *done, void *arg, struct kv_tx **out);

/* ---- txn.c ---------------------------------------------------------------- */

/* The shard owning every key of the connection's queued commands and
 * watched keys (sh's own when there is none), or a negative number when
 * they live on several. */
int kv_txn_shard(const struct kv_shard *sh, const struct kv_conn *conn);

enum kv_txn_route {
	KV_TXN_ROUTE, /* not a transaction's request: route it as any */
	KV_TXN_DONE,  /* run (or refused) here, its reply in out */
	KV_TXN_SHIP,  /* an EXEC to run whole on kv_txn_shard()'s shard */
	KV_TXN_SPAN,  /* an EXEC whose keys live on several shards (exec.c) */
};

/* With several shards, runs here a request of a connection inside MULTI
 * (queued, or MULTI's own commands) or a WATCH, once nothing of the
 * connection is outstanding; an EXEC runs here when its keys are this
 * shard's and free, goes to the one shard that owns them all, or, its
 * keys living on several shards, runs over all of them (exec.c). */
enum kv_txn_route kv_txn_dispatch(struct kv_shard *sh, struct kv_conn *conn,
				  const struct kv_cmd *cmd, int64_t now,
				  const struct kv_resp_req *r, struct kv_reply *out);

/* ---- exec.c --------------------------------------------------------------- */

/* Starts the EXEC of a connection whose queue (or watched keys) spans
 * shards, atomically over all of them (exec.c); its reply goes to
 * kv_client_tx_done(c, ...) later, and the connection's transaction
 * state is reset then. Returns 0 or -ENOMEM (nothing started). */
struct kv_exec;
int kv_exec_start(struct kv_shard *sh, struct kv_client *c, struct kv_conn *conn,
		  struct kv_exec **out);
/* Frees an EXEC and what it owns (kv_client_free_orphans). */
void kv_exec_free(struct kv_exec *x);

/* ---- persist.c ------------------------------------------------------------ */

/* Reads the dump the settings name (dir, dbfilename) into k->dump, for
 * the shards to load as they start; none there is no error. Returns 0,
 * or a negative errno with err saying why. */
int kv_persist_read_rdb(struct kv_server *k, char *err, size_t errlen);

/* On shard sh as it starts: loads its keys from k->dump; an error goes
 * to k->load_err and k->load_why, and the start fails. */
void kv_persist_load_rdb(struct kv_shard *sh);

/* Shard sh's timer: on shard 0, starts a save when a save rule is met. */
void kv_persist_tick(struct kv_shard *sh, int64_t now);

/* Starts a background save of the whole server, unless one is under way. */
void kv_persist_background_save(struct kv_shard *sh);

/* Room for the shards' parts of the dump at a stop (save_on_stop):
 * 0 or -ENOMEM. Freed, with any part left, by kv_persist_stop_free. */
int kv_persist_stop_init(struct kv_server *k);
void kv_persist_stop_free(struct kv_server *k);

/* A stopping shard's part of the dump at a stop (save_on_stop, save rules
 * set, not SHUTDOWN): its keys' records. On the shard, before its
 * keyspace goes. */
void kv_persist_stop_part(struct kv_shard *sh);

/* Once every shard stopped: writes the dump from their parts when each
 * gave one, and frees them. Returns 0 or the save's negative errno. */
int kv_persist_stop_save(struct kv_server *k);

/* ---- bgsave.c ------------------------------------------------------------ */

/* Starts a background save from shard sh, which writes the file while
 * every shard walks its keys (a point-in-time view, taken with every
 * shard held at once) and keeps serving. Returns 0 (the outcome is in
 * the server's bg_* fields and LASTSAVE when it ends), -EBUSY while one
 * runs, or -ENOMEM. The entry point for BGSAVE and for save rules. */
int kv_bgsave_start(struct kv_shard *sh);

/* The shard stops: its part of a save still running goes (the save
 * never ends; its temporary file stays, as a killed Redis child's does). */
void kv_bgsave_stop(struct kv_shard *sh);
/* Once every shard has stopped: the chunks of a save still out then
 * (their messages never ran). */
void kv_bgsave_free_orphans(struct kv_server *k);

/* view.bgsave: kv_bgsave_start() of the shard arg. The command that
 * started it leaves a claim for its reply (kv_bgsave_hold). schedule,
 * while a rewrite runs: the save is scheduled (bg_scheduled) and 1
 * returned; kv_bgsave_tick() starts it once the rewrite ended. */
int kv_bgsave_view(void *arg, bool schedule);

/* Shard 0, periodically: a scheduled save starts when no rewrite runs. */
void kv_bgsave_tick(struct kv_shard *sh);

/* Whether the command just run on sh started a save whose views are not
 * all fixed yet; if so fn(sh, arg, 0) runs once every shard fixed its
 * view, so BGSAVE answers after the save's instant, as Redis answers
 * after its fork. Returns false (fn never runs) otherwise. */
bool kv_bgsave_hold(struct kv_shard *sh, void (*fn)(struct kv_shard *, void *, int), void *arg);

/* Whether kv_bgsave_hold would take a reply now. */
bool kv_bgsave_claimed(const struct kv_shard *sh);

/* BGSAVE's figures into INFO's totals. Any shard. */
void kv_bgsave_totals(const struct kv_server *k, struct kv_totals *t);

/* ---- scan.c --------------------------------------------------------------- */

/* The shard and the shard's cursor a server-wide SCAN cursor names;
 * false when the text is not a cursor (the shard's SCAN then says so). */
bool kv_scan_route(const char *p, size_t len, unsigned n, unsigned *shard, uint64_t *cursor);

/* The server-wide cursor after shard s of n answered with its own cursor
 * next: the next shard's start when s's walk ended, 0 after the last. */
uint64_t kv_scan_cursor(uint64_t next, unsigned s, unsigned n);

/* A SCAN part (kv_job_request()) answered on its home shard sh: one that
 * found nothing and ended its shard's walk goes on to the next shard at
 * once, as Redis's SCAN of an empty keyspace answers cursor 0 in one
 * call; returns true when it was sent on (it answers again). */
bool kv_scan_hop(struct kv_shard *sh, struct kv_job *j);
/* A SCAN part's reply: its keys under the server-wide cursor. */
void kv_scan_reply(struct kv_shard *sh, struct kv_job *j);

#endif
