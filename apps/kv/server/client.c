/* SPDX-License-Identifier: MIT */
/* A client connection of the kv server: input, parsing, routing each
 * request to the shard that owns its key, and the replies in request
 * order.
 *
 * Order. Each shard runs a connection's requests for its keys in the
 * order they came (the jobs one shard sends another run in the order
 * they were sent, a shard's wait queue keeps them in order too, and a
 * request for this shard's keys runs here only while nothing waits
 * here). Requests for keys of different shards may run at the same time,
 * as in a Redis Cluster pipeline across nodes: the connection itself
 * always reads its own writes, since one key is one shard. A command
 * without keys and a QUIT wait until nothing is outstanding. A command
 * over several shards runs as a transaction (multi.c) under way while
 * later requests go on, up to KV_FLIGHT_MAX of them at once, unless a later
 * one touches its keys (or has none, or is server-wide): that one and
 * all after it wait until it is done, so no request overtakes an earlier
 * one on the same key. A blocking request and an EXEC hold every later
 * one until they are done. Replies join the connection's output in request
 * order: a job's reply waits in its job until every older one has been
 * written, and a reply written here while jobs are out waits behind the
 * last of them (its `after`). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "aof_shard.h"
#include "percore/listener.h"
#include "percore/log.h"
#include "percore/outbox.h"
#include "percore/reply.h"
#include "percore/session.h"
#include "block.h"
#include "flights.h"
#include "keyhash.h"
#include "pubsub.h"
#include "server_internal.h"
#include "txn.h"

/* Jobs one connection may have outstanding; past it, reading waits. */
#define MAX_INFLIGHT 512
/* Unparsed input held while requests wait: past it the socket is not
 * read until they answered. */
#define IN_HOLD (1u << 20)
/* An input buffer emptied goes back when larger than this, so a client
 * that once sent a large value does not keep its room. */
#define IN_KEEP (64u << 10)
/* One-key requests in a row for one other shard after which the
 * connection moves there (kv_server_opts.move_clients). Random keys
 * over two shards go the same way 64 times in a row once in 2^63 runs;
 * a client working on one key (a queue, a counter, a hash) gets there
 * within a few pipelines. */
#define KV_MOVE_AFTER 64
/* Nor does it move to a shard already holding more than this many times
 * its share of the clients (and a few): a key every client uses must not
 * pile every connection onto one shard, whose requests' parsing the other
 * shards would otherwise share. */
#define KV_MOVE_CROWD 2
#define KV_MOVE_SLACK 8
/* Ready replies are held back, up to this many bytes, while requests
 * of the same connection are out on other shards: their answers come
 * within a turn or two, and one write then carries them all, where
 * writing at once would cost a send per shard a pipeline touches. */
#define OUT_HOLD (64u << 10)

/* MSETs over several shards read one after another, to run as one
 * transaction (run_join()): their arguments in turn, pointing into the
 * read, so the run starts before the read is done with (run_input()). */
struct kv_run {
	const char **argv;
	size_t *argl;
	uint64_t *hash;               /* its keys' hashes, in order (room for cap) */
	uint32_t argc, cap;
	uint32_t nkeys;
	bool unhashed;                /* a request came without its keys' hashes */
	uint32_t requests;            /* taken; 0: no run open */
	size_t bytes;                 /* the reads their arguments span */
	const struct kv_cmd *cmd;
	int64_t now;
};

struct kv_client {
	struct kv_conn conn;          /* what the commands know of it */
	struct pc_session *s;         /* NULL once the session closed */
	struct kv_shard *sh;
	/* while it waits on keys (KV_CONN_BLOCKED): its shard's count of
	 * blocked clients, which outlives the shard (an orphan's release) */
	_Atomic uint64_t *blocked_count;
	struct kv_parser p;
	char *in;                     /* received, not yet run: in[off..len) */
	size_t off, len, cap;
	struct kv_reply out;          /* replies ready to write, in order */
	struct kv_job *head, *tail;   /* outstanding jobs, in request order */
	struct kv_tx *tx;             /* its blocking or EXEC transaction running, or NULL */
	struct kv_flights *fl;        /* its commands over several shards under way, or NULL */
	struct kv_run run;
	struct kv_exec *ex;           /* its EXEC spanning shards, or NULL */
	struct kv_bwait *blk;         /* its blocking request, first run or waiting */
	struct kv_client *cnext, *cprev; /* its shard's closing list, while closing */
	struct kv_client *lnext, *lprev; /* its shard's connections, while open */
	uint32_t inflight;            /* jobs, and 1 while a transaction runs */
	uint32_t ticket;              /* the reply slot held while owed */
	/* reply bytes its answered jobs hold, not yet collected (added by the
	 * shards that ran them) */
	_Atomic uint64_t job_bytes;
	/* reply bytes of requests run here, waiting behind outstanding jobs
	 * (their `after`) */
	uint64_t after_bytes;
	/* a subscriber's output over its soft limit since (monotonic ms; 0:
	 * not over) */
	uint64_t soft_since;
	bool owed;                    /* a reply slot held (owe()) */
	bool in_tx, busy, paused, ending;
	/* its last input run stopped at a request that had to wait (behind a
	 * flight, or every answer): the next run tries that one first */
	bool stopped;
	bool quit, proto;             /* a QUIT, a protocol error, to answer in turn */
	bool closing;                 /* counted in the server's closing */
	bool killed;                  /* CLIENT KILL closes it (kill_task) */
	/* the shard of its latest one-key requests, and how many in a row
	 * (tally) */
	unsigned away_shard;
	uint32_t away_run;
	size_t in_peak;               /* the most input held in `in` at once (rbp) */
	char proto_msg[sizeof(((struct kv_parser *)0)->error)];
};

/* The client whose state conn is. */
static struct kv_client *client_of(const struct kv_conn *conn)
{
	return (struct kv_client *)(void *)((char *)conn - offsetof(struct kv_client, conn));
}

/* Marks the client waiting on keys or not (CLIENT LIST's b), counted for
 * INFO's blocked_clients. */
static void set_blocked(struct kv_client *c, bool on)
{
	if (!(c->conn.flags & KV_CONN_BLOCKED) == !on)
		return;
	c->conn.flags ^= KV_CONN_BLOCKED;
	if (on) {
		c->blocked_count = &c->sh->st->blocked;
		atomic_fetch_add_explicit(c->blocked_count, 1, memory_order_relaxed);
	} else {
		atomic_fetch_sub_explicit(c->blocked_count, 1, memory_order_relaxed);
	}
}

/* The client's own memory (its jobs are gone or freed by the caller). */
static void release(struct kv_client *c)
{
	set_blocked(c, false);
	kv_conn_fini(&c->conn);
	kv_resp_free(&c->p);
	kv_reply_free(&c->out);
	free(c->run.argv);
	free(c->run.argl);
	free(c->run.hash);
	free(c->fl);
	free(c->in);
	free(c);
}

static void conn_free(struct kv_client *c)
{
	if (c->closing) {
		if (c->cprev)
			c->cprev->cnext = c->cnext;
		else
			c->sh->closing = c->cnext;
		if (c->cnext)
			c->cnext->cprev = c->cprev;
		atomic_fetch_sub_explicit(&c->sh->srv->closing, 1, memory_order_relaxed);
	}
	release(c);
}

uint64_t kv_client_free_orphans(struct kv_client *list)
{
	uint64_t n = 0;

	while (list) {
		struct kv_client *c = list;

		list = c->cnext;
		while (c->head) {
			struct kv_job *j = c->head;

			c->head = j->next;
			kv_job_free(j);
		}
		if (c->tx)
			kv_multi_free(c->tx);
		for (uint32_t i = 0; c->fl && i < c->fl->n; i++) {
			kv_multi_free(c->fl->f[i]->tx);
			free(c->fl->f[i]);
		}
		if (c->ex)
			kv_exec_free(c->ex);
		if (c->blk)
			kv_block_drop(c->blk);
		release(c);
		n++;
	}
	return n;
}

/* Added to a closing client's job_bytes: past any limit for good, so the
 * shards holding its jobs run none of them any more (its answers would
 * be dropped). */
#define HELD_CLOSED (1ull << 62)

static void stop_jobs(struct kv_client *c)
{
	atomic_fetch_add_explicit(&c->job_bytes, HELD_CLOSED, memory_order_relaxed);
}

/* The most unsent reply bytes a client may have: the setting, else the
 * session's own bound. */
static uint64_t out_limit(const struct kv_client *c)
{
	uint64_t lim = kv_pubsub_conn_subs(&c->conn) ? c->sh->cfg.pubsub_output_limit :
						       c->sh->cfg.client_output_limit;

	return lim ? lim : KV_SERVER_OUTPUT_BOUND;
}

/* The client's unsent replies: queued, ready, and held by its answered
 * jobs. */
static uint64_t unsent(const struct kv_client *c)
{
	return pc_session_queued(c->s) + c->out.len + c->after_bytes +
	       atomic_load_explicit(&c->job_bytes, memory_order_relaxed);
}

/* Whether the client's unsent replies pass its limit. */
static bool over_limit(const struct kv_client *c)
{
	return c->s && unsent(c) > out_limit(c);
}

static void drop_subs(void *arg);

/* Closes a client over its output limit, as Redis does, its replies not
 * yet queued dropped. */
static void overflow(struct kv_client *c)
{
	if (c->s && !c->ending) {
		if (kv_pubsub_conn_subs(&c->conn)) {
			pc_log(PC_LOG_WARN, "kv: closed subscriber id=%llu addr=%s: %llu bytes of "
			       "messages unsent, over client-output-buffer-limit pubsub",
			       (unsigned long long)c->conn.id, c->conn.addr,
			       (unsigned long long)unsent(c));
			/* counted and sent to no more, while its session ends:
			 * in a later turn, as this may be one of its deliveries */
			if (!pc_shard_send_reply(c->sh->idx, drop_subs, c))
				c->inflight++;
		}
		atomic_fetch_add_explicit(&c->sh->srv->outlimit, 1, memory_order_relaxed);
		pc_session_close(c->s);
		stop_jobs(c);
	}
	c->ending = true;
	kv_reply_clear(&c->out);
}

/* After queueing output: a client over a limit (kv's or the session's
 * own, -ENOBUFS) is closed as overflow() says, one refused otherwise
 * closed too. */
static void queued(struct kv_client *c, int rc)
{
	if (rc == -ENOBUFS) {
		overflow(c);
	} else if (rc) {
		pc_session_close(c->s);
		c->ending = true;
	}
}

/* Queues the replies ready. A client whose unsent replies would pass
 * the output limit is closed. */
static void flush(struct kv_client *c)
{
	if (!c->out.len || !c->s || c->ending)
		goto out; /* nothing, or the client is being closed: dropped */
	if (c->inflight && c->out.len < OUT_HOLD && !c->quit && !c->proto)
		return; /* written with the outstanding answers */
	queued(c, over_limit(c) ? -ENOBUFS :
		  kv_reply_failed(&c->out) ? -ENOMEM :
		  pc_session_write(c->s, c->out.buf, c->out.len));
out:
	kv_reply_clear(&c->out);
}

/* A batch's replies, each followed by the home replies behind it: the
 * batch's replies with none between them go in one copy. */
static void collect_batch(struct kv_client *c, const struct kv_job *j)
{
	size_t o = 0;

	for (uint32_t i = 0; i < j->nreq; i++) {
		size_t a = j->after_mark[i];
		size_t a_end = i + 1 < j->nreq ? j->after_mark[i + 1] : j->after.len;

		if (a == a_end)
			continue;
		kv_reply_raw(&c->out, j->out.buf + o, j->out_end[i] - o);
		kv_reply_raw(&c->out, j->after.buf + a, a_end - a);
		o = j->out_end[i];
	}
	if (j->nreq && j->out_end[j->nreq - 1] > o)
		kv_reply_raw(&c->out, j->out.buf + o, j->out_end[j->nreq - 1] - o);
}

/* Moves the replies of the oldest finished jobs to the output. */
static void collect(struct kv_client *c)
{
	while (c->head && c->head->finished) {
		struct kv_job *j = c->head;

		c->head = j->next;
		if (!c->head)
			c->tail = NULL;
		if (j->held)
			atomic_fetch_sub_explicit(j->held, j->out.len, memory_order_relaxed);
		c->after_bytes -= j->after.len;
		if (j->skipped)
			overflow(c);
		else if (!c->ending && j->kind == KV_JOB_BATCH)
			collect_batch(c, j);
		else if (!c->ending) {
			kv_reply_raw(&c->out, j->out.buf, j->out.len);
			kv_reply_raw(&c->out, j->after.buf, j->after.len);
		}
		kv_job_free(j);
		c->inflight--;
	}
}

static void process(struct kv_client *c);

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Whether a subscriber's unsent messages, with `more` bytes added,
 * passed its pubsub limits: the hard one, or the soft one for its
 * seconds without a break. */
static bool pubsub_over(struct kv_client *c, size_t more)
{
	const struct kv_config *cfg = &c->sh->cfg;
	uint64_t now, held = unsent(c) + more;

	if (held > out_limit(c))
		return true;
	if (!cfg->pubsub_soft_limit || held <= cfg->pubsub_soft_limit) {
		c->soft_since = 0;
		return false;
	}
	now = mono_ms() + 1; /* never 0, which means "not over" */
	if (!c->soft_since)
		c->soft_since = now;
	return now - c->soft_since >= (uint64_t)cfg->pubsub_soft_seconds * 1000;
}

/* Something outstanding answered: write what is ready, go on. */
static void answered(struct kv_client *c)
{
	if (!c->s) {
		if (!c->inflight && !c->busy)
			conn_free(c);
		return;
	}
	process(c);
}

/* A subscriber closed over its output limit leaves the tables. */
static void drop_subs(void *arg)
{
	struct kv_client *c = arg;

	c->inflight--;
	kv_ps_conn_gone(c->sh, &c->conn);
	answered(c);
}

static void job_done(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_client *c = j->owner;

	if (j->scan_shard >= 0 && kv_scan_hop(sh, j))
		return;
	if (j->scan_shard >= 0)
		kv_scan_reply(sh, j);
	collect(c);
	answered(c);
}

/* Where a reply written here now goes: behind the newest outstanding
 * job, or to the output. */
static struct kv_reply *run_here_to(struct kv_client *c)
{
	return c->tail ? &c->tail->after : &c->out;
}

/* A request refused for want of memory: the error in its turn. */
static void reply_nomem(struct kv_client *c)
{
	struct kv_reply *to = run_here_to(c);
	size_t before = to->len;

	KV_REPLY_ERR(to, KV_ERR_NOMEM);
	if (c->tail)
		c->after_bytes += to->len - before;
}

static bool own_pubsub(struct kv_client *c);
static bool own_jobs(struct kv_client *c, struct kv_job *j);

void kv_client_tx_done(struct kv_client *c, struct kv_reply *out)
{
	struct kv_reply *to;
	size_t before;

	if (c->blk && c->s && kv_block_nil(out)) {
		c->tx = NULL;
		set_blocked(c, true);
		kv_block_wait(c->sh, c->blk); /* in_tx still: later requests wait */
		answered(c); /* gives up its reply slot (owe()) */
		return;
	}
	if (c->blk) {
		kv_block_drop(c->blk);
		c->blk = NULL;
	}
	/* an EXEC run from here may have subscribed: once every shard has
	 * the counts it answers (a spanning EXEC's subscriptions went as
	 * nobody's from its job here: the barrier waits for them; a client
	 * with none had none before, as MULTI is refused a subscriber);
	 * closed meanwhile, its subscriptions go */
	if (c->s) {
		own_pubsub(c);
		if (kv_pubsub_conn_subs(&c->conn))
			own_jobs(c, kv_ps_barrier(c->sh));
	} else
		kv_ps_conn_gone(c->sh, &c->conn);
	to = run_here_to(c); /* behind older requests' replies */
	before = to->len;
	kv_reply_raw(to, out->buf, out->len);
	if (c->tail)
		c->after_bytes += to->len - before;
	c->tx = NULL;
	c->ex = NULL;
	c->in_tx = false;
	c->inflight--;
	c->quit |= (c->conn.flags & KV_CONN_CLOSE) != 0; /* a CLIENT KILL of itself */
	answered(c);
}

void kv_client_deliver(struct kv_conn *conn, const char *buf, size_t len)
{
	struct kv_client *c = client_of(conn);
	struct kv_reply *to;

	if (!c->s || c->ending)
		return;
	if (pubsub_over(c, len)) {
		overflow(c);
		return;
	}
	if (!c->busy && !c->inflight && !c->out.len) {
		/* nothing owed before it: straight to the session, one copy
		 * (the session writes once per turn, whatever it queued) */
		queued(c, pc_session_write(c->s, buf, len));
		return;
	}
	to = run_here_to(c); /* behind the replies it is owed */
	kv_reply_raw(to, buf, len);
	if (c->tail)
		c->after_bytes += len;
	if (!c->busy)
		flush(c);
}

/* j joins the connection's outstanding jobs, as the newest. */
static void outstanding(struct kv_client *c, struct kv_job *j)
{
	j->owner = c;
	if (c->tail)
		c->tail->next = j;
	else
		c->head = j;
	c->tail = j;
	c->inflight++;
}

void kv_client_unblocked(struct kv_client *c, struct kv_reply *out)
{
	c->blk = NULL; /* block.c lets its record go */
	set_blocked(c, false);
	kv_client_tx_done(c, out);
}

/* The batch open for more requests: the newest job, when it is a batch
 * for shard t not yet sent and not full. */
static struct kv_job *open_batch(const struct kv_client *c, unsigned t)
{
	struct kv_job *j = c->tail;

	return j && j->kind == KV_JOB_BATCH && !j->sent && j->target == t && j->nreq < KV_BATCH_MAX ?
		       j : NULL;
}

/* Sends the newest job when it is a batch still open. Refused (past the
 * outbox budget), its requests are answered with the error, not lost. */
static void batch_send(struct kv_client *c)
{
	struct kv_job *j = c->tail;

	if (!j || j->kind != KV_JOB_BATCH || j->sent)
		return;
	j->sent = true;
	if (!kv_job_submit(c->sh, j))
		return;
	j->held = NULL; /* its replies are written here, never counted there */
	kv_reply_clear(&j->out);
	for (uint32_t i = 0; i < j->nreq; i++) {
		KV_REPLY_ERR(&j->out, KV_ERR_BUSY);
		j->out_end[i] = j->out.len;
	}
	j->finished = true;
	collect(c);
}

/* Adds the request to a batch for shard t: the open one, or a new one
 * (sending the one before); key_hash: its first key's hash, or NULL.
 * Returns false when out of memory. */
static bool batch_request(struct kv_client *c, const struct kv_cmd *cmd,
			  const struct kv_resp_req *r, unsigned t, const uint64_t *key_hash)
{
	struct kv_job *j = open_batch(c, t);

	if (j && !kv_batch_add(j, cmd, r->argc, r->argv, r->argl, key_hash))
		return true;
	batch_send(c);
	j = kv_batch_new();
	if (!j || kv_batch_add(j, cmd, r->argc, r->argv, r->argl, key_hash)) {
		kv_job_free(j);
		return false;
	}
	j->target = t;
	j->done = job_done;
	j->held = &c->job_bytes;
	j->held_max = out_limit(c);
	outstanding(c, j);
	return true;
}

/* A blocking request (not inside MULTI): first run as a transaction over
 * its keys, as it runs inside MULTI; when that finds nothing, it waits
 * (kv_client_tx_done(), block.c). Later requests wait behind it. */
static void block_request(struct kv_client *c, const struct kv_cmd *cmd,
			  const struct kv_resp_req *r, int64_t now)
{
	batch_send(c);
	c->conn.last_cmd = cmd->name; /* CLIENT LIST's cmd= while it waits */
	c->conn.last_active = now;
	/* counted first: keys all of this shard's, it may answer inside */
	c->inflight++;
	c->in_tx = true;
	c->blk = kv_block_new(c->sh, c, cmd, r->argc, r->argv, r->argl);
	if (!c->blk || kv_multi_start(c->sh, c, cmd, r->argc, r->argv, r->argl, &c->tx)) {
		if (c->blk)
			kv_block_drop(c->blk);
		c->blk = NULL;
		c->inflight--;
		c->in_tx = false;
		reply_nomem(c);
	}
}

/* Sends the request to shard t as a job of this connection. */
static void send_job(struct kv_client *c, const struct kv_resp_req *r, unsigned t, int scan_shard,
		     uint64_t cursor)
{
	struct kv_job *j;

	batch_send(c); /* requests before this one go first */
	j = kv_job_request(r, scan_shard, cursor);
	if (!j) {
		reply_nomem(c);
		return;
	}
	j->target = t;
	j->done = job_done;
	if (scan_shard < 0) { /* a SCAN part's reply is bounded by its COUNT */
		j->held = &c->job_bytes;
		j->held_max = out_limit(c);
	}
	outstanding(c, j);
	if (kv_job_submit(c->sh, j)) {
		/* Past the outbox budget: this request is refused, not lost. */
		j->held = NULL;
		KV_REPLY_ERR(&j->out, KV_ERR_BUSY);
		j->finished = true;
		collect(c);
	}
}

/* On the shard owning every key of a connection's transaction: its EXEC,
 * the queue run in one go. The connection waits meanwhile (in_tx), so
 * its state is this thread's alone until the answer goes home. */
static void exec_there(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_client *c = j->owner;
	const char *argv[] = { "exec" };
	size_t argl[] = { 4 };

	kv_shard_exec(sh, &c->conn, kv_cmd_lookup("exec", 4), kv_now_ms(), 1, argv, argl,
		      &j->out, NULL);
}

static void exec_done(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_client *c = j->owner;

	c->in_tx = false;
	job_done(sh, j);
}

/* Sends the connection's EXEC to the shard owning its keys; later
 * requests wait for its answer. */
static void ship_exec(struct kv_client *c, const struct kv_cmd *cmd)
{
	struct kv_job *j = kv_job_new(KV_JOB_FN, 0, 0);

	(void)cmd;
	batch_send(c);
	if (!j) {
		reply_nomem(c);
		return;
	}
	j->fn = exec_there;
	j->target = (unsigned)kv_txn_shard(c->sh, &c->conn);
	j->done = exec_done;
	outstanding(c, j);
	c->in_tx = true;
	if (kv_job_submit(c->sh, j)) {
		KV_REPLY_ERR(&j->out, KV_ERR_BUSY);
		j->finished = true;
		c->in_tx = false;
		collect(c);
	}
}

/* Starts the connection's EXEC over several shards; later requests
 * wait for its answer. */
static void span_exec(struct kv_client *c)
{
	batch_send(c);
	c->inflight++;
	c->in_tx = true;
	if (kv_exec_start(c->sh, c, &c->conn, &c->ex)) {
		c->inflight--;
		c->in_tx = false;
		kv_txn_reset(&c->conn); /* Redis ends the transaction either way */
		reply_nomem(c);
	}
}

/* Requests looked ahead for their keys, per read. */
#define PREFETCH_MAX 32
/* Their arguments kept, in all: a pipeline of 16 MSETs of 10 keys (21
 * arguments each) runs without a second parse. */
#define LOOK_ARGS 1024
/* A request is looked ahead only with room for its first arguments:
 * the command and key (to prefetch) and a member or two. */
#define LOOK_MIN_ROOM 4

/* What the look ahead found in a read: its next requests as read
 * (kv_resp_peek()), which run without a second parse when it kept all
 * their arguments (looked_ahead_req(); those of every request share one
 * table, argv and argl, in input order); and the keys it hashed, in input
 * order, which the requests take (looked_ahead_hash()) instead of
 * hashing their keys again, to find the shard and in the lookup. Valid
 * while run_input() runs, the read's bytes staying put. */
struct lookahead {
	struct kv_resp_peeked req[PREFETCH_MAX];
	uint32_t first[PREFETCH_MAX];  /* where each one's arguments start in argv */
	const char *argv[LOOK_ARGS];
	size_t argl[LOOK_ARGS];
	size_t end[PREFETCH_MAX];   /* where each request ends in the read */
	size_t nreq, next;          /* requests read; the first not yet taken */
	size_t from;                /* where the first starts in the read */
	const char *key[PREFETCH_MAX];
	size_t klen[PREFETCH_MAX];
	uint64_t hash[PREFETCH_MAX];
	size_t n, at;
	/* and the members it hashed, which the requests' lookups take
	 * (kv_member_hash()) */
	struct kv_hash_memo memo;
	const char *buf;            /* the read */
	size_t len;
};

/* The lookahead of the read run_input() runs now, or NULL. */
static __thread struct lookahead *ahead;

/* Reads the next PREFETCH_MAX whole requests of buf[from..len) ahead. When there
 * are two or more (a pipeline's arrive together), the keys of this
 * shard's are asked of the table's memory before any of them runs
 * (kv_db_prefetch()), then the members they name in collections with
 * an index (kv_db_prefetch_members()), so that their cache misses
 * overlap instead of coming one per request (a lone one would wait for
 * the same lines at once); the keys' hashes stay in la for the requests
 * to take. */
static void look_ahead(const struct kv_client *c, const char *buf, size_t from, size_t len,
		       struct lookahead *la)
{
	size_t n = 0, nm = 0, at = from, kept = 0, step;
	uint64_t hash[PREFETCH_MAX];
	struct kv_member_ahead member[PREFETCH_MAX];

	la->n = la->at = la->nreq = la->next = 0;
	la->memo.n = 0;
	la->from = from;
	la->buf = buf;
	la->len = len;
	while (la->nreq < PREFETCH_MAX && kept + LOOK_MIN_ROOM <= LOOK_ARGS &&
	       (step = kv_resp_peek(buf + at, len - at, la->argv + kept, la->argl + kept,
				    (uint32_t)(LOOK_ARGS - kept), &la->req[la->nreq]))) {
		la->first[la->nreq] = (uint32_t)kept;
		kept += la->req[la->nreq].kept;
		at += step;
		la->end[la->nreq++] = at;
	}
	if (la->nreq < 2)
		return;
	for (size_t i = 0; i < la->nreq; i++) {
		const struct kv_resp_peeked *q = &la->req[i];
		const char **argv = la->argv + la->first[i];
		const size_t *argl = la->argl + la->first[i];
		uint64_t h;

		if (q->argc < 2)
			continue;
		h = kv_keyhash(argv[1], argl[1]);
		la->key[la->n] = argv[1];
		la->klen[la->n] = argl[1];
		la->hash[la->n++] = h;
		if (kv_hash_shard(c->sh, h) != c->sh->idx)
			continue;
		hash[n++] = h;
		if (kv_may_name_member(argv[0], argl[0], q->argc))
			member[nm++] = (struct kv_member_ahead){
				.key_hash = h, .argv = argv, .argl = argl, .argc = q->argc,
				.nargs = q->kept,
			};
	}
	kv_db_prefetch(c->sh->db, hash, n);
	kv_db_prefetch_members(c->sh->db, member, nm, &la->memo);
}

/* The request at buf + used as the look ahead read it, when it kept all
 * its arguments and they are within the limits (a CONFIG SET earlier in
 * the read may have changed them): what kv_resp_parse() would return,
 * without a second reading. Returns its length, or 0 to parse it. */
static long looked_ahead_req(const struct kv_client *c, struct lookahead *la, size_t used,
			     struct kv_resp_req *r)
{
	const struct kv_resp_limits *lim = &c->p.lim;
	const struct kv_resp_peeked *q;
	size_t start, *argl;

	while (la->next < la->nreq && la->end[la->next] <= used)
		la->next++; /* parsed instead, or taken */
	if (la->next == la->nreq || c->p.pos) /* none, or the parser is inside one */
		return 0;
	start = la->next ? la->end[la->next - 1] : la->from;
	q = &la->req[la->next];
	if (start != used || q->kept < q->argc || q->argc > lim->max_args)
		return 0;
	argl = la->argl + la->first[la->next];
	for (uint32_t i = 0; i < q->argc; i++)
		if (argl[i] > lim->max_bulk)
			return 0;
	r->argc = q->argc;
	r->argv = la->argv + la->first[la->next];
	r->argl = argl;
	return (long)(la->end[la->next] - start);
}

/* kv_keyhash() of key[0..len), taken from the lookahead when it hashed
 * these very bytes (the requests come in input order, so the search
 * starts past the last one found). */
static uint64_t looked_ahead_hash(const char *key, size_t len)
{
	struct lookahead *la = ahead;

	for (size_t i = la ? la->at : 0; la && i < la->n; i++) {
		if ((uintptr_t)la->key[i] > (uintptr_t)key)
			break;
		if (la->key[i] == key && la->klen[i] == len) {
			la->at = i + 1;
			return la->hash[i];
		}
	}
	return kv_keyhash(key, len);
}

/* A run's bounds: past them the run starts and the next MSET waits for
 * it, as it would behind any command over several shards. */
#define RUN_REQUESTS 64
#define RUN_ARGS 2048
#define RUN_BYTES (256u << 10)
/* A run's tables kept for the next one up to this many arguments. */
#define RUN_KEEP 512
/* A request's keys hashed once for every check (kv_key_hashes) up to
 * this many; one with more is hashed where each needs it. */
#define REQ_HASHED 256

/* Whether any of the connection's flights is under way. */
static bool flying(const struct kv_client *c)
{
	return c->fl && c->fl->n;
}

/* kv_keyhash() of the request's k-th key. */
static uint64_t key_hash(const struct kv_cmd *cmd, uint32_t k, uint32_t argc,
			 const char *const *argv, const size_t *argl)
{
	uint32_t at = kv_cmd_key_arg(cmd, k, argc, argv, argl);

	return kv_keyhash(argv[at], argl[at]);
}

/* Whether the request may run while the flights are under way: a
 * request on keys, none of them a flight's, with no memory limit set. Its order against them then
 * shows nowhere (a flight's other keys are on other shards or other
 * keys; the connection reads its own writes, since it touches none of
 * theirs), as with requests to different shards. */
static bool flight_passes(const struct kv_client *c, const struct kv_cmd *cmd,
			  const struct kv_resp_req *r, const struct kv_key_hashes *keys)
{
	uint32_t n;

	if (!cmd || !cmd->first_key || (uint32_t)cmd->first_key >= r->argc ||
	    !kv_cmd_arity_ok(cmd, r->argc) || c->conn.txn || c->conn.subs ||
	    c->sh->cfg.maxmemory || /* whether each is refused depends on the order */
	    (cmd->flags & (KV_CMD_ALLSHARDS | KV_CMD_BLOCKING | KV_CMD_PUBSUB)) ||
	    cmd->multi == KV_MULTI_WALK)
		return false;
	n = kv_cmd_nkeys(cmd, r->argc, r->argv, r->argl);
	for (uint32_t k = 0; k < n; k++)
		if (kv_flights_hold(c->fl, keys && keys->n ? keys->hash[k] :
					key_hash(cmd, k, r->argc, r->argv, r->argl)))
			return false;
	return true;
}

/* Room for one more flight: false while KV_FLIGHT_MAX are under way,
 * or when the table cannot be had. */
static bool flight_room(struct kv_client *c)
{
	if (!c->fl)
		c->fl = kv_flights_take(&c->sh->flights);
	return c->fl && c->fl->n < KV_FLIGHT_MAX;
}

/* A flight for the request's keys (all of them when it has none listed,
 * a server-wide command's, or past KV_FLIGHT_KEYS), or NULL; hash: its
 * keys' hashes, or NULL (hashed here). */
static struct kv_flight *flight_new(struct kv_client *c, const struct kv_cmd *cmd, uint32_t argc,
				    const char *const *argv, const size_t *argl,
				    const uint64_t *hash)
{
	uint32_t n = (cmd->flags & KV_CMD_ALLSHARDS) || !cmd->first_key ? 0 :
		     kv_cmd_nkeys(cmd, argc, argv, argl);
	struct kv_flight *f = kv_flight_new(n);

	if (!f)
		return NULL;
	f->c = c;
	for (uint32_t k = 0; k < f->nkeys; k++)
		kv_flight_key(f, k, hash ? hash[k] : key_hash(cmd, k, argc, argv, argl));
	return f;
}

/* The flight's end: out, the transaction's reply, once for each of its
 * requests, in its place among the connection's replies. */
static void flight_done(void *arg, struct kv_reply *out)
{
	struct kv_flight *f = arg;
	struct kv_client *c = f->c;
	struct kv_job *slot = f->slot;
	uint32_t i;

	kv_flights_remove(c->fl, f);
	for (i = 0; i < f->requests; i++)
		kv_reply_raw(&slot->out, out->buf, out->len);
	c->quit |= (c->conn.flags & KV_CONN_CLOSE) != 0; /* a CLIENT KILL of itself */
	free(f);
	slot->finished = true;
	job_done(c->sh, slot);
}

/* Starts a transaction for the request, or several (a run's, each
 * answered with the reply), as a flight: later requests go on unless
 * they touch its keys. hash: its keys' hashes, or NULL. */
static void flight_start(struct kv_client *c, const struct kv_cmd *cmd, uint32_t argc,
			 const char *const *argv, const size_t *argl, const uint64_t *hash,
			 int64_t now, uint32_t requests)
{
	struct kv_flight *f = flight_new(c, cmd, argc, argv, argl, hash);
	struct kv_job *slot = f ? kv_job_new(KV_JOB_FN, 0, 0) : NULL;

	c->conn.last_cmd = cmd->name; /* its parts run with no connection */
	c->conn.last_active = now;
	if (!slot) {
		free(f);
		while (requests--)
			reply_nomem(c);
		return;
	}
	slot->home = slot->target = c->sh->idx;
	slot->done = job_done;
	f->slot = slot;
	f->requests = requests;
	kv_flights_add(c->fl, f);
	outstanding(c, slot);
	if (kv_multi_start_fn(c->sh, c->conn.id, cmd, argc, argv, argl, f->all ? NULL : f->keys,
			      flight_done, f, &f->tx)) {
		struct kv_reply nomem;

		kv_reply_init(&nomem);
		KV_REPLY_ERR(&nomem, KV_ERR_NOMEM);
		flight_done(f, &nomem); /* the errors in its place */
		kv_reply_free(&nomem);
		return;
	}
	kv_shard_count_commands(c->sh, requests - 1);
}

/* The bytes the request's arguments span in the read, from the first's
 * start to the last's end, or SIZE_MAX when they are elsewhere. A
 * request's arguments lie in order in one buffer: the read, or the
 * parser's scratch for a request parsed inline, which the next parse
 * reuses; so the first and the last tell where all are. */
static size_t bytes_in_read(const struct kv_resp_req *r)
{
	const char *buf = ahead->buf, *end = buf + ahead->len;
	const char *from = r->argv[0], *to = r->argv[r->argc - 1] + r->argl[r->argc - 1];

	if (from < buf || to > end || to < from)
		return SIZE_MAX;
	return (size_t)(to - from);
}

/* Takes an MSET over several shards (kv_multi_needed() said so) into the
 * connection's run when it may join it: the same transaction then sets
 * every pair of the run in turn, one lock round trip for all of them
 * instead of one a request (a pipeline of MSETs sends them together).
 * Each request stays atomic, in order, and seen by the requests after it:
 * nothing runs between them. Not with a memory limit, where each request
 * is refused or not on its own; nor for a client watching keys. keys:
 * the request's keys' hashes (kv_multi_needed()), for the run's flight. */
static bool run_join(struct kv_client *c, const struct kv_cmd *cmd, const struct kv_resp_req *r,
		     const struct kv_key_hashes *keys, int64_t now)
{
	struct kv_run *run = &c->run;
	size_t bytes;
	uint32_t from = run->requests ? 1 : 0; /* a run's own name comes once */

	if (!kv_multi_joins(cmd) || c->sh->cfg.maxmemory || c->conn.txn ||
	    run->requests == RUN_REQUESTS || run->argc + r->argc > RUN_ARGS)
		return false;
	bytes = bytes_in_read(r);
	if (bytes == SIZE_MAX || (run->requests && run->bytes + bytes > RUN_BYTES))
		return false;
	if (run->argc + r->argc > run->cap) {
		/* powers of two: a pipeline's run of MSETs fits RUN_KEEP and
		 * its tables serve the next run with no realloc */
		uint32_t cap = run->cap ? run->cap : 64;

		while (cap < run->argc + r->argc)
			cap *= 2;
		const char **argv = realloc(run->argv, cap * sizeof(*argv));

		if (argv)
			run->argv = argv;
		size_t *argl = argv ? realloc(run->argl, cap * sizeof(*argl)) : NULL;

		if (argl)
			run->argl = argl;
		uint64_t *hash = argl ? realloc(run->hash, cap * sizeof(*hash)) : NULL;

		if (!hash)
			return false; /* runs on its own */
		run->hash = hash;
		run->cap = cap;
	}
	/* a run's keys are fewer than its arguments: hash[] has room */
	memcpy(run->hash + run->nkeys, keys->hash, keys->n * sizeof(*keys->hash));
	run->nkeys += keys->n;
	run->unhashed |= !keys->n;
	memcpy(run->argv + run->argc, r->argv + from, (r->argc - from) * sizeof(*r->argv));
	memcpy(run->argl + run->argc, r->argl + from, (r->argc - from) * sizeof(*r->argl));
	run->argc += r->argc - from;
	run->bytes += bytes;
	if (!run->requests++) {
		run->cmd = cmd;
		run->now = now;
	}
	return true;
}

/* Starts the open run's transaction. */
static void run_start(struct kv_client *c)
{
	struct kv_run *run = &c->run;
	uint32_t requests = run->requests, argc = run->argc;
	const uint64_t *hash = run->unhashed ? NULL : run->hash;

	run->requests = 0;
	run->argc = 0;
	run->bytes = 0;
	run->nkeys = 0;
	run->unhashed = false;
	if (requests && !c->ending) /* closing: none ran, none is answered */
		flight_start(c, run->cmd, argc, run->argv, run->argl, hash, run->now, requests);
	if (run->cap > RUN_KEEP) { /* the transaction copied them */
		free(run->argv);
		free(run->argl);
		free(run->hash);
		run->argv = NULL;
		run->argl = NULL;
		run->hash = NULL;
		run->cap = 0;
	}
}

/* Whether the command names one key and runs on that key's shard
 * alone: what a request of it needs is the key's shard, nothing more. */
static bool one_key(const struct kv_cmd *cmd)
{
	return cmd->last_key == cmd->first_key &&
	       !(cmd->flags & (KV_CMD_STOREKEY | KV_CMD_KEYNUM | KV_CMD_DESTKEYNUM | KV_CMD_ALLSHARDS));
}

static void job_done(struct kv_shard *sh, struct kv_job *j);

/* A reply written here from `before` on in `to` waits in a job of its
 * own (finished then), as a job run elsewhere would, when the requests
 * that wrote it appended records since mark and appendfsync is always
 * (until they are durable), or started a BGSAVE (until every shard fixed
 * its view). */
static void hold_reply(struct kv_client *c, struct kv_reply *to, size_t before, uint64_t mark)
{
	bool save = kv_bgsave_claimed(c->sh);
	struct kv_job *j;

	if (to->len == before || (!save && !kv_aof_must_hold(c->sh, mark)))
		return;
	j = kv_job_new(KV_JOB_FN, 0, 0);
	if (!j) {
		kv_reply_truncate(to, before);
		KV_REPLY_ERR(to, KV_ERR_NOMEM); /* cannot wait: not acknowledged */
		return;
	}
	kv_reply_raw(&j->out, to->buf + before, to->len - before);
	if (to != &c->out)
		c->after_bytes -= to->len - before;
	kv_reply_truncate(to, before);
	batch_send(c); /* an open batch before it goes now: it is no longer the newest */
	j->home = j->target = c->sh->idx;
	j->done = job_done;
	outstanding(c, j);
	if (save)
		kv_bgsave_hold(c->sh, kv_job_durable, j);
	else
		kv_aof_hold(c->sh, mark, kv_job_durable, j);
}

/* Runs a request of this shard's keys here now; hash: its first key's,
 * or NULL. Its reply goes behind the outstanding jobs (after the last
 * one's reply, counted in after_bytes), or straight to the output when
 * none is out. */
static void run_here(struct kv_client *c, const struct kv_cmd *cmd, const struct kv_resp_req *r,
		     int64_t now, const uint64_t *hash)
{
	struct kv_reply *to = run_here_to(c);
	size_t before = to->len;
	uint64_t mark = kv_aof_mark(c->sh);

	if (hash) /* its first key's, hashed to route it */
		kv_db_known_hash(c->sh->db, r->argv[cmd->first_key], r->argl[cmd->first_key], *hash);
	kv_shard_exec(c->sh, &c->conn, cmd, now, r->argc, r->argv, r->argl, to, NULL);
	kv_db_known_hash(c->sh->db, NULL, 0, 0);
	if (c->tail)
		c->after_bytes += to->len - before;
	hold_reply(c, to, before, mark);
}

/* A request a subscribed connection may not make: Redis's error in its
 * turn. */
static bool refused_subscribed(struct kv_client *c, const struct kv_cmd *cmd,
			       const struct kv_resp_req *r)
{
	struct kv_reply *to = run_here_to(c);
	size_t before = to->len;
	bool refused = kv_pubsub_refused(&c->conn, cmd, r->argc, r->argv, r->argl, to);

	if (c->tail)
		c->after_bytes += to->len - before;
	return refused;
}

/* The work the commands run here left for other shards that the client
 * must wait for (kv_ps_pending) becomes its newest outstanding jobs, so
 * a reply written behind them waits for them. Returns whether any. */
static bool own_jobs(struct kv_client *c, struct kv_job *j)
{
	bool any = j;

	while (j) {
		struct kv_job *next = j->next;

		j->next = NULL;
		j->done = job_done;
		outstanding(c, j);
		kv_job_submit(c->sh, j); /* must: never refused */
		j = next;
	}
	return any;
}

static bool own_pubsub(struct kv_client *c)
{
	return own_jobs(c, kv_ps_pending(c->sh));
}

/* A request run here left work for other shards: its reply, from out's
 * offset mark on, is written once they did it. So a PUBLISH made
 * anywhere once a client has its SUBSCRIBE's confirmation counts and
 * reaches it, and past KV_PS_OUT_MAX messages out a PUBLISH answers once
 * its messages reached every subscriber's shard. */
static void sync_pubsub(struct kv_client *c, size_t mark)
{
	size_t len = c->out.len - mark;

	if (!own_pubsub(c))
		return;
	kv_reply_raw(&c->tail->after, c->out.buf + mark, len);
	c->after_bytes += len;
	kv_reply_truncate(&c->out, mark);
}

/* Runs or sends one request (now: the clock for the requests of this
 * read). Returns false when it must wait for the outstanding ones (it is
 * read again later). */
/* Sends a request on keys of shard t there: in the batch open for t,
 * or a job of its own when it has too many arguments for one. Returns
 * false, leaving it unread, while too many jobs are out. */
static bool route(struct kv_client *c, const struct kv_cmd *cmd, const struct kv_resp_req *r,
		  unsigned t, const uint64_t *hash)
{
	if (!open_batch(c, t) && c->inflight >= MAX_INFLIGHT)
		return false;
	if (r->argc > KV_BATCH_ARGS)
		send_job(c, r, t, -1, 0);
	else if (!batch_request(c, cmd, r, t, hash))
		reply_nomem(c);
	return true;
}

/* The shard a one-key request goes to, counted in a row (try_move). */
static void tally(struct kv_client *c, unsigned t)
{
	if (t != c->away_shard) {
		c->away_shard = t;
		c->away_run = 0;
	}
	if (c->away_run < UINT32_MAX)
		c->away_run++;
}

static bool dispatch(struct kv_client *c, const struct kv_resp_req *r, int64_t now)
{
	struct kv_shard *sh = c->sh;
	const struct kv_cmd *cmd = kv_cmd_lookup(r->argv[0], r->argl[0]);
	uint64_t cursor = 0;
	/* OBJECT's key comes after its subcommand: OBJECT HELP has none */
	bool keyed = cmd && cmd->first_key && (uint32_t)cmd->first_key < r->argc;
	bool routed = true, scan, local;
	/* the first key's hash, hashed once: for its shard and its lookup */
	const struct kv_cmd *hashed_for = NULL;
	uint64_t hash = 0;
	/* a command over several keys: each key's hash, once */
	uint64_t key_hash_room[REQ_HASHED];
	struct kv_key_hashes keys = { 0, REQ_HASHED, key_hash_room };
	unsigned t;

	if (c->in_tx)
		return false; /* a blocking request or an EXEC holds every later one */
	if (c->run.requests) {
		if (cmd && kv_multi_joins(cmd) &&
		    kv_multi_needed(sh, cmd, r->argc, r->argv, r->argl, &keys) &&
		    (!flying(c) || flight_passes(c, cmd, r, &keys)) && run_join(c, cmd, r, &keys, now))
			return true;
		run_start(c);
	}
	if (keyed && kv_cmd_arity_ok(cmd, r->argc)) {
		hash = looked_ahead_hash(r->argv[cmd->first_key], r->argl[cmd->first_key]);
		hashed_for = cmd;
	}
	if (flying(c) && !flight_passes(c, cmd, r, !keys.n && hashed_for && one_key(cmd) ?
				&(struct kv_key_hashes){ 1, 1, &hash } : &keys))
		return false; /* behind the commands over several shards under way */
	if (c->conn.subs && refused_subscribed(c, cmd, r))
		return true;
	if (cmd && sh->n > 1 && (c->conn.txn || kv_txn_is_watch(cmd))) {
		if (c->inflight && (kv_txn_in_multi(&c->conn) || kv_txn_is_watch(cmd)))
			return false; /* MULTI's and WATCH's requests run at home, in turn */
		size_t before = c->out.len;
		uint64_t mark = kv_aof_mark(sh);

		switch (kv_txn_dispatch(sh, &c->conn, cmd, now, r, &c->out)) {
		case KV_TXN_DONE:
			c->quit = c->conn.flags & KV_CONN_CLOSE; /* a QUIT inside MULTI */
			hold_reply(c, &c->out, before, mark);
			sync_pubsub(c, before); /* an EXEC may have subscribed */
			return true;
		case KV_TXN_SHIP:
			ship_exec(c, cmd);
			return true;
		case KV_TXN_SPAN:
			span_exec(c);
			return true;
		case KV_TXN_ROUTE:
			break;
		}
	}
	if (cmd && (cmd->flags & KV_CMD_BLOCKING) && kv_cmd_arity_ok(cmd, r->argc) &&
	    !kv_txn_in_multi(&c->conn)) {
		block_request(c, cmd, r, now);
		return true;
	}
	/* The usual request first, on one key: of this shard's with nothing
	 * waiting here, it runs now, whatever went to other shards before
	 * it; of another's, it goes there. */
	if (hashed_for) {
		if (sh->n == 1 || one_key(cmd)) {
			t = sh->n == 1 ? 0 : kv_hash_shard(sh, hash);
			tally(c, t);
			if (t != sh->idx)
				return route(c, cmd, r, t, &hash);
			if (kv_shard_runs_now(sh, cmd, r->argc, r->argv, r->argl)) {
				run_here(c, cmd, r, now, &hash);
				return true;
			}
		}
	}
	cmd = kv_cmd_placed(cmd, r->argc, r->argv, r->argl); /* CLIENT LIST's, ... */
	scan = cmd && cmd->multi == KV_MULTI_WALK;
	local = cmd && !keyed && !(cmd->flags & KV_CMD_ALLSHARDS);
	if (!cmd || !kv_cmd_arity_ok(cmd, r->argc) || local ||
	    (!cmd->first_key && !scan && !kv_multi_needed(sh, cmd, r->argc, r->argv, r->argl, NULL))) {
		/* Runs here, on nothing of another shard's, once everything
		 * before it answered (QUIT among them: it marks the connection
		 * to close once answered). */
		size_t before = c->out.len;
		uint64_t mark = kv_aof_mark(sh);

		if (c->inflight)
			return false;
		kv_shard_exec(sh, &c->conn, cmd, now, r->argc, r->argv, r->argl, &c->out, NULL);
		c->quit = c->conn.flags & KV_CONN_CLOSE;
		hold_reply(c, &c->out, before, mark);
		sync_pubsub(c, before);
		return true;
	}
	if (kv_multi_needed(sh, cmd, r->argc, r->argv, r->argl, &keys)) {
		/* Requests before it need not have answered: they reach every
		 * shard before its locks do (jobs one shard sends another run in
		 * order, and a shard's wait queue too), so it sees what they
		 * did; its reply joins the output behind theirs, in its flight's
		 * slot. */
		if (!flight_room(c)) {
			if (flying(c))
				return false; /* behind them */
			reply_nomem(c);
			return true;
		}
		batch_send(c);
		if (!run_join(c, cmd, r, &keys, now))
			flight_start(c, cmd, r->argc, r->argv, r->argl, keys.n ? keys.hash : NULL,
				     now, 1);
		return true;
	}
	if (scan) {
		routed = kv_scan_route(r->argv[1], r->argl[1], sh->n, &t, &cursor);
		if (!routed)
			t = sh->idx; /* its SCAN refuses the cursor */
	} else {
		if (hashed_for != cmd)
			hash = looked_ahead_hash(r->argv[cmd->first_key], r->argl[cmd->first_key]);
		t = sh->n == 1 ? 0 : kv_hash_shard(sh, hash);
	}
	if (t == sh->idx && (!scan || sh->n == 1) &&
	    kv_shard_runs_now(sh, cmd, r->argc, r->argv, r->argl)) {
		run_here(c, cmd, r, now, scan ? NULL : &hash);
		return true;
	}
	if (!scan)
		return route(c, cmd, r, t, &hash);
	if (!open_batch(c, t) && c->inflight >= MAX_INFLIGHT)
		return false;
	send_job(c, r, t, routed ? (int)t : -1, cursor);
	return true;
}

/* After a QUIT or a protocol error, once everything before it answered:
 * its reply, then the close. */
static void end_conn(struct kv_client *c)
{
	if (c->proto) {
		kv_reply_errorf(&c->out, KV_ERR_PROTO_FMT, c->proto_msg);
		atomic_fetch_add_explicit(&c->sh->srv->proto_errors, 1, memory_order_relaxed);
	}
	flush(c);
	if (c->s)
		pc_session_close(c->s);
	c->ending = true;
}

/* Runs the requests buf[0..len) holds, as far as order allows. Returns
 * the bytes used: what is left starts with a request not complete yet,
 * or one that must wait. */
static size_t run_input(struct kv_client *c, const char *buf, size_t len)
{
	/* One clock reading for the requests of one read, as they arrived
	 * together. */
	int64_t now = kv_now_ms();
	size_t used = 0;
	struct lookahead la, *outer = ahead; /* a read of another client's may be running */
	/* A run after a stop tries the request that waited alone first: most
	 * such runs (one for each answer that came back) find it waiting
	 * still, and reading the requests behind it ahead, hashing and
	 * prefetching their keys, was their whole cost. */
	bool looked = false, retry = c->stopped;
	struct kv_hash_memo *outer_memo;

	la.n = la.at = la.nreq = la.next = 0; /* none read ahead yet */
	la.memo.n = 0;
	la.buf = buf;
	la.len = len;
	ahead = &la;
	outer_memo = kv_keyhash_memo(&la.memo);
	c->stopped = false;
	while (!c->ending) {
		struct kv_resp_req r;
		long n;

		if (!looked && (used || !retry)) {
			look_ahead(c, buf, used, len, &la);
			looked = true;
		}

		if (c->quit || c->proto) {
			run_start(c); /* the requests before it */
			if (!c->inflight)
				end_conn(c);
			break;
		}
		c->p.lim = c->sh->limits; /* CONFIG SET may have changed them */
		n = looked_ahead_req(c, &la, used, &r);
		if (!n)
			n = kv_resp_parse(&c->p, buf + used, len - used, &r);
		if (n == -EPROTO) {
			c->proto = true;
			memcpy(c->proto_msg, c->p.error, sizeof(c->proto_msg));
			continue;
		}
		if (n < 0) {
			pc_session_close(c->s);
			c->ending = true;
			break;
		}
		if (n == 0)
			break;
		if (r.argc && !dispatch(c, &r, now)) {
			kv_resp_reset(&c->p);
			c->stopped = true;
			break;
		}
		used += (size_t)n;
		/* No more replies once past the limit: one client never makes
		 * its shard build them without bound. */
		if (over_limit(c))
			overflow(c);
	}
	run_start(c); /* before the read's bytes may move */
	ahead = outer;
	kv_keyhash_memo(outer_memo);
	batch_send(c); /* the requests of this read for one shard go together */
	return used;
}

/* The parser's table of a request's arguments, which grows with them. */
static size_t parser_bytes(const struct kv_client *c)
{
	return (size_t)c->p.cap * (sizeof(*c->p.spans) + sizeof(*c->p.argv) + sizeof(*c->p.argl));
}

/* The input held (a partial request, requests waiting their turn)
 * counts against the shard's input budget, as unread input does: many
 * clients each sending part of a large request are paused, then the
 * oldest closed, rather than exhausting memory. */
static void input_settle(struct kv_client *c)
{
	if (c->off == c->len && c->cap > IN_KEEP) {
		free(c->in);
		c->in = NULL;
		c->off = c->len = c->cap = 0;
	}
	size_t held = c->len - c->off;

	if (held > c->in_peak)
		c->in_peak = held;
	if (held)
		held += parser_bytes(c);
	if (c->s)
		pc_session_hold_input(c->s, held);
}

/* While requests are out, the session owes their answers: a reply slot
 * held open (percore/reply.h) keeps a draining server from ending the
 * connection (FIN) before they are written, as queued bytes do. The slot
 * is given up, never filled, once nothing is out: after the replies were
 * queued, since a client that half-closed takes no output once nothing
 * is owed. */
static void owe(struct kv_client *c)
{
	/* A client waiting on keys (its blocking request's first run over)
	 * holds none: its leaving must end the wait at once, as Redis drops a
	 * blocked client that disconnects, not keep the session for an
	 * answer that would take an element nobody reads. */
	bool want = c->inflight && c->s && !(c->blk && !c->tx);

	if (!c->s)
		c->owed = false; /* the session's slots went with it */
	if (want == c->owed)
		return;
	if (want) {
		c->owed = !pc_reply_reserve(c->s, &c->ticket);
	} else {
		pc_reply_skip(c->s, c->ticket);
		c->owed = false;
	}
}

/* Nothing of the connection's own is under way or held: no request out
 * or waiting, no reply unwritten, no transaction, subscription, watch or
 * blocking wait, which live on its shard. */
static bool movable(const struct kv_client *c)
{
	const struct kv_txn *txn = c->conn.txn;

	return c->s && !c->ending && !c->killed && !c->quit && !c->proto && !c->paused &&
	       !c->inflight && !c->head && !c->tx && !c->ex && !c->blk && !c->in_tx && !c->fl &&
	       !c->run.requests && c->off == c->len && !c->out.len && !c->after_bytes &&
	       !atomic_load_explicit(&c->job_bytes, memory_order_relaxed) && !c->owed &&
	       !(c->conn.flags & (KV_CONN_CLOSE | KV_CONN_BLOCKED)) &&
	       (!txn || (!txn->multi && !txn->nwatch)) && !kv_pubsub_conn_subs(&c->conn);
}

/* A connection whose last KV_MOVE_AFTER one-key requests all went to
 * another shard (settle checks) moves there, unless that shard is
 * crowded already. */
static void try_move(struct kv_client *c)
{
	struct kv_server *k = c->sh->srv;
	struct kv_client *self = c;
	uint64_t there, fair;

	if (!k->o.move_clients || !movable(c))
		return;
	c->away_run = 0; /* refused or not, count afresh */
	there = atomic_load_explicit(&k->stats[c->away_shard].conns, memory_order_relaxed);
	fair = atomic_load_explicit(&k->clients, memory_order_relaxed) / c->sh->n;
	if (there > KV_MOVE_CROWD * fair + KV_MOVE_SLACK)
		return;
	/* refused (-EBUSY: the server is draining, ...): it stays */
	pc_session_move(c->s, c->away_shard, &self, sizeof(self));
}

/* After running input: write the replies ready, hold the socket while
 * too much input waits, free a connection whose session has gone. */
static void settle(struct kv_client *c)
{
	input_settle(c);
	flush(c);
	owe(c);
	if (c->s && !c->ending) {
		bool hold = c->inflight && c->len - c->off > IN_HOLD;

		if (hold && !c->paused)
			pc_session_pause_read(c->s);
		else if (!hold && c->paused)
			pc_session_resume_read(c->s);
		c->paused = hold;
	}
	c->busy = false;
	if (c->fl && !c->fl->n && c->off == c->len) {
		/* between bursts a connection keeps no table (about 800 bytes) */
		kv_flights_put(&c->sh->flights, c->fl);
		c->fl = NULL;
	}
	if (!c->s && !c->inflight)
		conn_free(c);
	else if (c->away_run >= KV_MOVE_AFTER && c->away_shard != c->sh->idx)
		try_move(c);
}

static void process(struct kv_client *c)
{
	if (c->busy)
		return;
	c->busy = true;
	c->off += run_input(c, c->in + c->off, c->len - c->off);
	settle(c);
}

/* Appends received bytes to the connection's input (consumed ones are
 * dropped first). */
static int append(struct kv_client *c, const uint8_t *data, size_t len)
{
	if (c->off && (c->off == c->len || c->off > c->cap / 2)) {
		memmove(c->in, c->in + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->cap - c->len < len) {
		size_t cap = c->cap ? c->cap : 16384;
		char *n;

		while (cap - c->len < len)
			cap *= 2;
		n = realloc(c->in, cap);
		if (!n)
			return -ENOMEM;
		c->in = n;
		c->cap = cap;
	}
	memcpy(c->in + c->len, data, len);
	c->len += len;
	return 0;
}

/* Bytes arrive. With nothing held from before, the requests are run
 * where the session received them and only what is left (a request not
 * complete yet, or waiting its turn) is copied; the session's bytes are
 * always all taken, because a request crossing the end of its ring could
 * never be offered whole. Otherwise they join what is held. */
size_t kv_client_data(struct pc_session *s, const uint8_t *data, size_t len, void *user)
{
	struct kv_client *c = pc_session_data(s);

	(void)user;
	if (!c || c->ending)
		return len; /* refused, or past a QUIT: dropped */
	if (c->off == c->len && !c->busy) {
		size_t used;

		c->busy = true;
		c->off = c->len = 0;
		used = run_input(c, (const char *)data, len);
		if (used < len && !c->ending && append(c, data + used, len - used)) {
			pc_session_close(s);
			c->ending = true;
		}
		settle(c);
		return len;
	}
	if (append(c, data, len)) {
		pc_session_close(s);
		c->ending = true;
		return len;
	}
	process(c);
	return len;
}

/* The client's and the server's addresses and the socket, for CLIENT
 * LIST. */
static void peer_name(struct pc_session *s, struct kv_conn *conn)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (!pc_session_peer(s, &ss, &len))
		pc_sockaddr_format((struct sockaddr *)&ss, conn->addr, sizeof(conn->addr));
	len = sizeof(ss);
	if (!pc_session_local(s, &ss, &len))
		pc_sockaddr_format((struct sockaddr *)&ss, conn->laddr, sizeof(conn->laddr));
	conn->fd = pc_session_fd(s);
}

static void conn_buffers(const struct kv_conn *conn, struct kv_conn_buffers *b);

/* c joins its shard's connections, the newest last (CLIENT LIST's
 * order). */
static void list(struct kv_client *c)
{
	struct kv_shard *sh = c->sh;

	c->lnext = NULL;
	c->lprev = sh->conn_tail;
	if (c->lprev)
		c->lprev->lnext = c;
	else
		sh->conn_head = c;
	sh->conn_tail = c;
	atomic_fetch_add_explicit(&sh->st->conns, 1, memory_order_relaxed);
}

void kv_client_open(struct pc_session *s, void *user)
{
	static const char full[] = "-" KV_ERR_MAXCLIENTS "\r\n";
	struct kv_server *k = user;
	struct kv_shard *sh = pc_shard_user();
	uint64_t n = atomic_fetch_add_explicit(&k->clients, 1, memory_order_relaxed);
	struct kv_client *c = NULL;

	if (sh->cfg.maxclients && n >= sh->cfg.maxclients) {
		atomic_fetch_sub_explicit(&k->clients, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&k->rejected, 1, memory_order_relaxed);
		pc_session_write(s, full, sizeof(full) - 1);
		pc_session_close(s);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || kv_resp_init(&c->p, &sh->limits)) {
		free(c);
		atomic_fetch_sub_explicit(&k->clients, 1, memory_order_relaxed);
		pc_session_close(s);
		return;
	}
	kv_conn_init(&c->conn, atomic_fetch_add_explicit(&k->next_id, 1, memory_order_relaxed) + 1,
		     kv_now_ms());
	peer_name(s, &c->conn);
	c->conn.ps = sh->ps;
	c->conn.buffers = conn_buffers;
	atomic_fetch_add_explicit(&k->accepted, 1, memory_order_relaxed);
	c->s = s;
	c->sh = sh;
	kv_reply_init(&c->out);
	pc_session_set_data(s, c);
	c->away_shard = sh->idx;
	list(c);
}

/* c leaves its shard's connections. */
static void unlist(struct kv_client *c)
{
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		c->sh->conn_head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	else
		c->sh->conn_tail = c->lprev;
	atomic_fetch_sub_explicit(&c->sh->st->conns, 1, memory_order_relaxed);
}

void kv_clients_each(void *arg, void (*fn)(void *ctx, const struct kv_conn *conn), void *ctx)
{
	struct kv_shard *sh = arg;

	for (struct kv_client *c = sh->conn_head; c; c = c->lnext)
		if (!c->killed || (c->conn.flags & KV_CONN_CLOSE))
			fn(ctx, &c->conn); /* killed by another: gone, as in Redis */
}

/* conn->buffers: the figures of CLIENT LIST (docs/KV.md). Input: what
 * the session holds unread and the unparsed part of the client's own
 * buffer; output: the replies built here and not yet queued for the
 * socket (obl: ready ones, those behind requests out on other shards,
 * answered jobs'), the requests still out (oll), the session's queue
 * (omem). */
static void conn_buffers(const struct kv_conn *conn, struct kv_conn_buffers *b)
{
	const struct kv_client *c = client_of(conn);
	struct pc_session_buffers sb = { 0 };
	uint64_t jobs = atomic_load_explicit(&c->job_bytes, memory_order_relaxed);

	if (c->s)
		pc_session_buffers(c->s, &sb);
	if (jobs >= HELD_CLOSED)
		jobs -= HELD_CLOSED;
	b->qbuf = sb.in_used + (c->len - c->off);
	b->qbuf_free = (sb.in_size - sb.in_used) + (c->cap - c->len);
	b->rbs = sb.in_size + c->cap;
	b->rbp = c->in_peak > b->qbuf ? c->in_peak : b->qbuf;
	b->obl = c->out.len + c->after_bytes + jobs;
	b->oll = c->inflight;
	b->omem = sb.out_used;
	b->mem = sizeof(*c) + b->rbs + parser_bytes(c) + c->out.cap + c->after_bytes + jobs +
		 sb.out_size;
	b->reading = c->s && !pc_session_read_paused(c->s);
	b->writing = sb.out_used > 0;
}

uint64_t kv_client_conn_id(const struct kv_client *c)
{
	return c->conn.id;
}

/* A client leaving (closed, killed) stops waiting on keys, as Redis
 * drops a blocked client at once: no element goes to it any more. */
static void stop_waiting(struct kv_client *c)
{
	if (c->blk && !c->tx && kv_block_leave(c->sh, c->blk)) {
		c->blk = NULL; /* it waited: nothing more comes for it */
		c->in_tx = false;
		c->inflight--;
		set_blocked(c, false);
	}
}

/* The shard's turn after a CLIENT KILL: its killed connections close
 * (not inside the command, which may be walking them); a graceful close
 * ends the session later, their waits end now. One that killed itself
 * (KV_CONN_CLOSE) closes once its reply is out, as after a QUIT. */
static void kill_task(void *arg)
{
	struct kv_shard *sh = arg;
	struct kv_client *next;

	sh->kill_task = false;
	for (struct kv_client *c = sh->conn_head; c; c = next) {
		next = c->lnext;
		if (c->killed && c->s && !(c->conn.flags & KV_CONN_CLOSE)) {
			stop_waiting(c);
			pc_session_close(c->s);
		}
	}
}

bool kv_clients_kill(void *arg, uint64_t id, bool self)
{
	struct kv_shard *sh = arg;
	struct kv_client *c = sh->conn_head;

	while (c && c->conn.id != id)
		c = c->lnext;
	if (!c || c->killed)
		return false;
	c->killed = true;
	if (self) {
		c->conn.flags |= KV_CONN_CLOSE; /* once its reply is out, as QUIT */
		return true;
	}
	if (!sh->kill_task) {
		if (pc_reactor_defer(pc_shard_reactor(), kill_task, sh)) {
			c->killed = false; /* no room to defer: left open */
			return false;
		}
		sh->kill_task = true;
	}
	return true;
}

bool kv_clients_unblock(void *arg, uint64_t id, bool error)
{
	struct kv_shard *sh = arg;

	for (struct kv_client *c = sh->conn_head; c; c = c->lnext)
		if (c->conn.id == id)
			/* waiting: its first run over (no transaction) */
			return c->blk && !c->tx && kv_block_unblock(sh, c->blk, error);
	return false;
}

void kv_client_close(struct pc_session *s, enum pc_close_reason why, void *user)
{
	struct kv_client *c = pc_session_data(s);
	struct kv_server *k = user;

	if (!c)
		return;
	if (why == PC_CLOSE_MOVED) {
		/* it lives on, on the shard it moved to (kv_client_moved) */
		pc_session_set_data(s, NULL);
		unlist(c);
		c->s = NULL;
		return;
	}
	if (why == PC_CLOSE_NOMEM) /* counted in the server's input_shed */
		pc_log(PC_LOG_WARN, "kv: closed client id=%llu addr=%s: input over the budget "
		       "(%zu bytes held; --max-input-bytes)", (unsigned long long)c->conn.id,
		       c->conn.addr, c->len - c->off);
	atomic_fetch_sub_explicit(&k->clients, 1, memory_order_relaxed);
	/* a close at the server's stop changes no counts: the other shards
	 * are stopping too */
	if (why == PC_CLOSE_SHUTDOWN)
		kv_pubsub_drop(c->sh->ps, &c->conn);
	else
		kv_ps_conn_gone(c->sh, &c->conn);
	pc_session_set_data(s, NULL);
	unlist(c);
	c->s = NULL;
	c->owed = false;
	stop_waiting(c);
	if (!c->inflight && !c->busy) {
		conn_free(c);
		return;
	}
	stop_jobs(c);
	/* Freed when the last answer comes back, or, when the engine stops
	 * before then (those answers never run), once every shard stopped
	 * (kv_client_free_orphans). */
	c->closing = true;
	c->cnext = c->sh->closing;
	if (c->cnext)
		c->cnext->cprev = c;
	c->sh->closing = c;
	atomic_fetch_add_explicit(&k->closing, 1, memory_order_relaxed);
}

void kv_client_moved(struct pc_session *s, const void *state, size_t len, void *user)
{
	struct kv_server *k = user;
	struct kv_shard *sh = pc_shard_user();
	struct kv_client *c;

	if (len != sizeof(c))
		return;
	memcpy(&c, state, sizeof(c));
	if (!s) {
		/* the connection could not be taken in here: it is closed */
		atomic_fetch_sub_explicit(&k->clients, 1, memory_order_relaxed);
		release(c);
		return;
	}
	c->s = s;
	c->sh = sh;
	c->conn.ps = sh->ps;
	c->conn.fd = pc_session_fd(s);
	c->away_shard = sh->idx;
	c->away_run = 0;
	pc_session_set_data(s, c);
	list(c);
}
