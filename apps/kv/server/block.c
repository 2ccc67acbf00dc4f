/* SPDX-License-Identifier: MIT */
/* Blocked clients: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
 * BZPOPMAX and BZMPOP waiting for data, on keys of any shards.
 *
 * A blocking request first runs as its command would inside MULTI
 * (client.c: as a transaction over its keys, atomic, served from the
 * first key with data). When that answers nil the request waits: one
 * record of it (struct kv_bwait) is shared by its home, the shard of its
 * connection, and every shard owning one of its keys.
 *  - home sends each such shard a registration; the shard queues the
 *    record behind those already waiting on each of the keys it owns
 *    (first come, first served per key) and, should a key have data by
 *    then (a push after the first run), serves at once;
 *  - a write leaving a list or sorted set with elements marks its key
 *    ready (kv_db_on_ready); after the job that wrote it, the shard serves
 *    the keys marked, each to its oldest waiter while it has data;
 *  - a record is served once: the shard that serves claims it (its state
 *    from WAITING to DONE, atomically), runs the request for that one key
 *    there (the pop and its reply in the same step as nothing else runs
 *    on the key), and sends the reply home. A claim that fails (another
 *    shard served it, or it timed out or its client left) drops the
 *    record from that key's queue and tries the next waiter;
 *  - home claims it too (WAITING to GONE) on the timeout (a timer of its
 *    reactor; nothing polls) or when the client disconnects; then it
 *    replies nil (or nothing);
 *  - either way, home then sends every shard an unregistration, which
 *    removes what is left of the record there. Messages from home to a
 *    shard run in order, so none overtakes the registration.
 * The record is freed by the last of home and the shards to let it go
 * (a count). BLMOVE and BRPOPLPUSH wait on their source alone. With the
 * destination on the same shard, they are served there, the move whole.
 * With it on another shard (cross), the source's shard claims the
 * waiter (WAITING to TRYING) and asks home to run the move as LMOVE
 * runs across shards: a transaction over both keys, atomic. Meanwhile
 * the key serves nobody else (its first waiter is trying), so an element
 * pushed goes to the oldest waiter as on one shard. The move's answer
 * ends the wait (an element, or WRONGTYPE for the destination, checked
 * before the pop as Redis 7.0 does when it wakes a client); nil (the
 * element gone to someone else first, a MULTI's pop) makes it wait again
 * at the head of its queue. A timeout or a leave while trying is kept
 * for the move's answer. Ending a wait tells the key's shard to serve
 * the next waiter (delist), which a refused move may have left data to. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aof_shard.h"
#include "block.h"
#include "keyhash.h"
#include "percore/map.h"
#include "percore/reactor.h"
#include "percore/shard.h"

enum { WAITING, DONE, GONE, TRYING };

struct kv_bwait {
	_Atomic int state;
	_Atomic unsigned refs;
	unsigned home;
	struct kv_client *c;       /* home's alone */
	const struct kv_cmd *cmd;
	struct kv_args a;          /* the request, in this allocation */
	int64_t timeout;           /* ms; 0: none */
	struct pc_timer timer;     /* home's */
	unsigned *shards, nshards; /* the shards owning its keys */
	bool cross;                /* a move to a destination on another shard */
	bool expired, left;        /* home's: timed out, client gone while TRYING */
	bool unblock_error;        /* home's: CLIENT UNBLOCK ... ERROR ended it */
};

/* One waiter in a key's queue. */
struct bentry {
	struct kv_bwait *w;
	struct bentry *next;
};

/* A key some request waits on, on its shard. */
struct bkey {
	struct bentry *head, *tail;
	struct bkey *rnext;        /* the ready list */
	bool ready;
	bool busy;                 /* being served: kept even when emptied */
	size_t klen;
	char key[];
};

struct kv_blocked {
	struct pc_map keys;        /* hash -> struct bkey * (PC_MAP_HASHED) */
	size_t nkeys;
	struct bkey *ready_head;
	bool serving;
};

struct keyref {
	const char *p;
	size_t n;
};

static bool key_eq(uint64_t value, const void *key)
{
	const struct bkey *b = (const struct bkey *)(uintptr_t)value;
	const struct keyref *k = key;

	return b->klen == k->n && !memcmp(b->key, k->p, k->n);
}

static struct pc_map_slot *find_key(struct kv_blocked *t, const char *p, size_t n, uint64_t hash)
{
	struct keyref k = { p, n };

	return pc_map_find_hashed(&t->keys, hash, key_eq, &k);
}

static void unref(struct kv_bwait *w)
{
	if (atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1)
		free(w);
}

/* How many of its keys w waits on: all, but BLMOVE's source alone. */
static uint32_t waited(const struct kv_bwait *w)
{
	return w->cmd->last_key == 2 ? 1 : kv_cmd_nkeys(w->cmd, w->a.argc, w->a.argv, w->a.argl);
}

static bool claim(struct kv_bwait *w, int to)
{
	int want = WAITING;

	return atomic_compare_exchange_strong_explicit(&w->state, &want, to, memory_order_acq_rel,
						       memory_order_acquire);
}

/* ---- the record ------------------------------------------------------------ */

struct kv_bwait *kv_block_new(struct kv_shard *sh, struct kv_client *c, const struct kv_cmd *cmd,
			      uint32_t argc, const char *const *argv, const size_t *argl)
{
	size_t bytes = sizeof(struct kv_bwait) + argc * (sizeof(char *) + sizeof(size_t)) +
		       sh->n * sizeof(unsigned);
	struct kv_bwait *w;
	char *p;

	for (uint32_t i = 0; i < argc; i++)
		bytes += argl[i];
	w = calloc(1, bytes);
	if (!w)
		return NULL;
	atomic_init(&w->state, WAITING);
	atomic_init(&w->refs, 1);
	w->home = sh->idx;
	w->c = c;
	w->cmd = cmd;
	w->a.argc = argc;
	w->a.argv = (const char **)(w + 1);
	w->a.argl = (size_t *)(w->a.argv + argc);
	w->shards = (unsigned *)(w->a.argl + argc);
	p = (char *)(w->shards + sh->n);
	for (uint32_t i = 0; i < argc; i++) {
		memcpy(p, argv[i], argl[i]);
		w->a.argv[i] = p;
		w->a.argl[i] = argl[i];
		p += argl[i];
	}
	kv_cmd_timeout(cmd, argc, argv, argl, &w->timeout);
	/* a destination (BLMOVE's) of another shard: moved by a transaction */
	w->cross = cmd->last_key == 2 && argc > 2 &&
		   kv_key_shard(sh, argv[1], argl[1]) != kv_key_shard(sh, argv[2], argl[2]);
	return w;
}

/* Whether the reply is the nil a blocking command gives when it finds
 * nothing: then it waits. */
bool kv_block_nil(const struct kv_reply *r)
{
	return r->len == 5 && (!memcmp(r->buf, "*-1\r\n", 5) || !memcmp(r->buf, "$-1\r\n", 5));
}

/* ---- on a key's shard ------------------------------------------------------ */

static void mark_ready(struct kv_blocked *t, struct bkey *b)
{
	if (b->ready)
		return;
	b->ready = true;
	b->rnext = t->ready_head;
	t->ready_head = b;
}

static void on_ready(void *arg, const struct kv_pos *pos)
{
	struct kv_blocked *t = arg;
	struct pc_map_slot *s = find_key(t, pos->key, pos->klen, kv_keyhash(pos->key, pos->klen));

	if (s)
		mark_ready(t, (struct bkey *)(uintptr_t)s->value);
}

static bool is_key_arg(const struct kv_bwait *w, uint32_t n, uint32_t i)
{
	for (uint32_t k = 0; k < n; k++)
		if (kv_cmd_key_arg(w->cmd, k, w->a.argc, w->a.argv, w->a.argl) == i)
			return true;
	return false;
}

/* The request for one of its keys (argument at): the same command with
 * that key alone (a key count of 1), BLMOVE's whole. Fills argv/argl
 * (room for w's argc); returns their count. */
static uint32_t one_key(const struct kv_bwait *w, uint32_t at, const char **argv, size_t *argl)
{
	uint32_t n = kv_cmd_nkeys(w->cmd, w->a.argc, w->a.argv, w->a.argl), argc = 0;

	if (w->cmd->last_key == 2) { /* BLMOVE, BRPOPLPUSH */
		memcpy(argv, w->a.argv, w->a.argc * sizeof(*argv));
		memcpy(argl, w->a.argl, w->a.argc * sizeof(*argl));
		return w->a.argc;
	}
	for (uint32_t i = 0; i < w->a.argc; i++) {
		if (i != at && is_key_arg(w, n, i))
			continue;
		if ((w->cmd->flags & KV_CMD_KEYNUM) && i + 1 == (uint32_t)w->cmd->first_key) {
			argv[argc] = "1";
			argl[argc++] = 1;
			continue;
		}
		argv[argc] = w->a.argv[i];
		argl[argc++] = w->a.argl[i];
	}
	return argc;
}

static void deliver(struct kv_shard *sh, struct kv_job *j);
static void delivered(struct kv_shard *sh, struct kv_job *j)
{
	(void)sh;
	kv_job_free(j);
}

/* Whether key b holds what w's command pops: a list, or a sorted set. */
static bool has_data(struct kv_shard *sh, const struct kv_bwait *w, const struct bkey *b)
{
	struct kv_pos pos;
	const struct kv_entry *e = kv_db_peek(sh->db, b->key, b->klen, kv_now_ms(), &pos);
	bool zset = !strncmp(w->cmd->name, "bz", 2);

	return e && kv_entry_type(e) == (zset ? KV_ZSET : KV_LIST);
}

/* The argument of w's request that is key b. */
static uint32_t key_at(const struct kv_bwait *w, const struct bkey *b)
{
	uint32_t n = kv_cmd_nkeys(w->cmd, w->a.argc, w->a.argv, w->a.argl);

	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(w->cmd, k, w->a.argc, w->a.argv, w->a.argl);

		if (w->a.argl[i] == b->klen && !memcmp(w->a.argv[i], b->key, b->klen))
			return i;
	}
	return 0; /* not reached: b is one of its keys */
}

static void send_served(struct kv_shard *sh, struct kv_job *j)
{
	if (kv_job_submit(sh, j))
		abort();
}

/* The pop is durable (appendfsync always), or cannot be: the client gets
 * its element either way, as the keyspace no longer has it (a failed
 * file may bring it back at the next start: delivered twice, never lost). */
static void served_durable(struct kv_shard *sh, void *arg, int err)
{
	(void)err;
	send_served(sh, arg);
}

/* Serves w (claimed) from key b with the request for that key alone
 * (argv, argc), run here, its reply sent home once what it wrote is as
 * durable as appendfsync asks. */
static void serve(struct kv_shard *sh, struct kv_bwait *w, uint32_t argc, const char **argv,
		  const size_t *argl)
{
	struct kv_job *j = kv_job_new(KV_JOB_FN, 0, 0);
	uint64_t mark = kv_aof_mark(sh);

	if (!j)
		abort(); /* a claimed client must get its answer */
	kv_shard_exec(sh, NULL, w->cmd, kv_now_ms(), argc, argv, argl, &j->out, NULL);
	atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed); /* the job's */
	j->obj = w;
	j->fn = deliver;
	j->done = delivered;
	j->target = w->home;
	if (!kv_aof_hold(sh, mark, served_durable, j))
		send_served(sh, j);
}

static void drop_head(struct bkey *b)
{
	struct bentry *e = b->head;

	b->head = e->next;
	if (!b->head)
		b->tail = NULL;
	unref(e->w);
	free(e);
}

static void drop_key(struct kv_shard *sh, struct bkey *b)
{
	struct kv_blocked *t = sh->blk;
	struct pc_map_slot *s = find_key(t, b->key, b->klen, kv_keyhash(b->key, b->klen));

	pc_map_erase_slot(&t->keys, s);
	free(b);
	if (!--t->nkeys)
		kv_db_on_ready(sh->db, NULL, NULL);
}

static void attempt(struct kv_shard *sh, struct kv_job *j);

/* w (claimed TRYING) waits on data here for a move to another shard:
 * home runs it. */
static void try_move(struct kv_shard *sh, struct kv_bwait *w)
{
	struct kv_job *j = kv_job_new(KV_JOB_FN, 0, 0);

	if (!j)
		abort(); /* a claimed client must get its answer */
	atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed); /* the job's */
	j->obj = w;
	j->fn = attempt;
	j->done = delivered;
	j->target = w->home;
	send_served(sh, j);
}

/* Serves key b's waiters, oldest first, while it has data. False when
 * its keys are held by a transaction: tried again after the next job. */
static bool serve_key(struct kv_shard *sh, struct bkey *b)
{
	while (b->head) {
		struct kv_bwait *w = b->head->w;
		const char *argv[w->a.argc];
		size_t argl[w->a.argc];
		uint32_t argc;

		int state = atomic_load_explicit(&w->state, memory_order_acquire);

		if (state == TRYING)
			break; /* its move runs: the next waiter waits for its end */
		if (state != WAITING) {
			drop_head(b);
			continue;
		}
		if (!has_data(sh, w, b))
			break;
		if (w->cross) {
			if (!claim(w, TRYING))
				continue; /* ended meanwhile: dropped on the next round */
			try_move(sh, w);
			break;
		}
		argc = one_key(w, key_at(w, b), argv, argl);
		if (!kv_shard_keys_free(sh, w->cmd, argc, argv, argl))
			return false;
		if (!claim(w, DONE)) {
			drop_head(b);
			continue;
		}
		/* off the queue before its answer, which may run home's end of
		 * it (delist) right here when home is this shard */
		struct bentry *e = b->head;

		b->head = e->next;
		if (!b->head)
			b->tail = NULL;
		serve(sh, w, argc, argv, argl);
		unref(w);
		free(e);
	}
	return true;
}

void kv_block_serve(struct kv_shard *sh)
{
	struct kv_blocked *t = sh->blk;
	struct bkey *later = NULL;

	if (!t || !t->ready_head || t->serving)
		return;
	t->serving = true;
	while (t->ready_head) {
		struct bkey *b = t->ready_head;

		t->ready_head = b->rnext;
		b->ready = false;
		b->busy = true;
		bool done = serve_key(sh, b);

		b->busy = false;
		if (!done) {
			b->rnext = later;
			later = b;
		} else if (!b->head && !b->ready) { /* ready again: met later */
			drop_key(sh, b);
		}
	}
	while (later) { /* ready still, once the transaction lets go */
		struct bkey *b = later;

		later = b->rnext;
		mark_ready(t, b);
	}
	t->serving = false;
}

static struct bkey *key_for(struct kv_shard *sh, const char *p, size_t n)
{
	struct kv_blocked *t = sh->blk;
	uint64_t hash = kv_keyhash(p, n);
	struct pc_map_slot *s = find_key(t, p, n, hash);
	struct bkey *b;

	if (s)
		return (struct bkey *)(uintptr_t)s->value;
	b = calloc(1, sizeof(*b) + n);
	if (!b || pc_map_insert_hashed(&t->keys, hash, (uint64_t)(uintptr_t)b))
		abort(); /* a waiter must be queued: nothing else wakes it */
	memcpy(b->key, p, n);
	b->klen = n;
	if (!t->nkeys++)
		kv_db_on_ready(sh->db, on_ready, t);
	return b;
}

/* Registration, on a shard owning some of w's keys: queued on each,
 * those with data marked ready, then served. */
static void enlist(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_bwait *w = j->obj;
	uint32_t n = waited(w);

	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(w->cmd, k, w->a.argc, w->a.argv, w->a.argl);
		struct bentry *e;
		struct bkey *b;

		if (kv_key_shard(sh, w->a.argv[i], w->a.argl[i]) != sh->idx)
			continue;
		b = key_for(sh, w->a.argv[i], w->a.argl[i]);
		e = malloc(sizeof(*e));
		if (!e)
			abort();
		atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
		*e = (struct bentry){ w, NULL };
		if (b->tail)
			b->tail->next = e;
		else
			b->head = e;
		b->tail = e;
		if (has_data(sh, w, b))
			mark_ready(sh->blk, b);
	}
	kv_block_serve(sh);
}

/* Marks key b ready when others still wait on it: a wait that ended
 * may have left them data (a move refused for its destination's type). */
static void wake_rest(struct kv_shard *sh, struct bkey *b)
{
	if (b->head)
		mark_ready(sh->blk, b);
}

/* On the source's shard: w's move found nothing and w waits again; the
 * key may have had data meanwhile. */
static void rearm(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_bwait *w = j->obj;
	uint32_t i = kv_cmd_key_arg(w->cmd, 0, w->a.argc, w->a.argv, w->a.argl);
	struct pc_map_slot *s = find_key(sh->blk, w->a.argv[i], w->a.argl[i],
					 kv_keyhash(w->a.argv[i], w->a.argl[i]));

	if (s)
		wake_rest(sh, (struct bkey *)(uintptr_t)s->value);
	kv_block_serve(sh);
}

/* Unregistration: whatever is left of w's entries here. */
static void delist(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_bwait *w = j->obj;
	uint32_t n = waited(w);

	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(w->cmd, k, w->a.argc, w->a.argv, w->a.argl);
		struct pc_map_slot *s = find_key(sh->blk, w->a.argv[i], w->a.argl[i],
						 kv_keyhash(w->a.argv[i], w->a.argl[i]));
		struct bkey *b = s ? (struct bkey *)(uintptr_t)s->value : NULL;

		if (!b)
			continue;
		for (struct bentry **pp = &b->head; *pp;) {
			struct bentry *e = *pp;

			if (e->w != w) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			unref(w);
			free(e);
		}
		b->tail = NULL;
		for (struct bentry *e = b->head; e; e = e->next)
			b->tail = e;
		if (!b->head && !b->ready && !b->busy)
			drop_key(sh, b);
		else
			wake_rest(sh, b);
	}
	kv_block_serve(sh);
}

/* ---- at home ---------------------------------------------------------------- */

static void sent(struct kv_shard *sh, struct kv_job *j)
{
	(void)sh;
	unref(j->obj);
	kv_job_free(j);
}

/* Sends fn with w to every shard owning its keys. One to this shard
 * runs inside, and may end w's wait: a count of its own keeps w here. */
static void to_shards(struct kv_shard *sh, struct kv_bwait *w, kv_job_fn *fn)
{
	atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
	for (unsigned s = 0; s < w->nshards; s++) {
		struct kv_job *j = kv_job_new(KV_JOB_FN, 0, 0);

		if (!j)
			abort(); /* a record left queued would never be freed */
		atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
		j->obj = w;
		j->fn = fn;
		j->done = sent;
		j->target = w->shards[s];
		if (kv_job_submit(sh, j))
			abort();
	}
	unref(w);
}

/* w answered (out: its reply, NULL when its client left): unregistered
 * everywhere, its client on. */
static void finish(struct kv_shard *sh, struct kv_bwait *w, struct kv_reply *out)
{
	if (pc_timer_active(&w->timer))
		pc_wheel_cancel(pc_reactor_wheel(pc_shard_reactor()), &w->timer);
	to_shards(sh, w, delist);
	if (out)
		kv_client_unblocked(w->c, out);
	unref(w);
}

/* At home: the reply of the shard that served w. */
static void deliver(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_bwait *w = j->obj;

	finish(sh, w, &j->out);
	unref(w); /* the job's */
}

/* w ends with the reply text[0..len). */
static void finish_with(struct kv_shard *sh, struct kv_bwait *w, const char *text, size_t len)
{
	struct kv_reply out;

	kv_reply_init(&out);
	kv_reply_raw(&out, text, len);
	finish(sh, w, &out);
	kv_reply_free(&out);
}

/* The nil of a timeout: BLMOVE's too, as Redis times out. */
static void finish_nil(struct kv_shard *sh, struct kv_bwait *w)
{
	finish_with(sh, w, "*-1\r\n", 5);
}

/* Home's own claim, to end the wait (GONE); false when a shard served
 * w, or runs its move (then kept: the move's answer ends it). */
static bool claim_home(struct kv_bwait *w, bool leaving)
{
	if (claim(w, GONE))
		return true;
	if (atomic_load_explicit(&w->state, memory_order_acquire) == TRYING) {
		if (leaving)
			w->left = true;
		else
			w->expired = true;
	}
	return false;
}

static void timed_out(struct pc_wheel *wh, struct pc_timer *tm)
{
	struct kv_bwait *w = pc_container_of(tm, struct kv_bwait, timer);

	(void)wh;
	if (claim_home(w, false))
		finish_nil(pc_shard_user(), w);
}

/* At home: the answer of w's move across shards (the transaction's). */
static void moved(void *arg, struct kv_reply *out)
{
	struct kv_bwait *w = arg;
	struct kv_shard *sh = pc_shard_user();

	if (!kv_block_nil(out)) {
		atomic_store_explicit(&w->state, DONE, memory_order_release);
		finish(sh, w, out);
	} else if (w->expired || w->left) {
		atomic_store_explicit(&w->state, DONE, memory_order_release);
		finish_nil(sh, w);
	} else { /* someone else's first: it waits again, at its queue's head */
		atomic_store_explicit(&w->state, WAITING, memory_order_release);
		to_shards(sh, w, rearm);
	}
	unref(w); /* the transaction's */
}

/* At home: w's source had data for its move to another shard. */
static void attempt(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_bwait *w = j->obj;

	if (w->expired || w->left) {
		atomic_store_explicit(&w->state, DONE, memory_order_release);
		finish_nil(sh, w);
	} else {
		atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
		if (kv_multi_start_fn(sh, 0, w->cmd, w->a.argc, w->a.argv, w->a.argl, NULL, moved,
				      w, NULL)) {
			unref(w);
			atomic_store_explicit(&w->state, DONE, memory_order_release);
			finish_with(sh, w, "-" KV_ERR_NOMEM "\r\n", sizeof(KV_ERR_NOMEM) + 2);
		}
	}
	unref(w); /* the job's */
}

void kv_block_wait(struct kv_shard *sh, struct kv_bwait *w)
{
	uint32_t n = waited(w);
	bool *used = calloc(sh->n, sizeof(*used));

	if (!used)
		abort();
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(w->cmd, k, w->a.argc, w->a.argv, w->a.argl);

		used[kv_key_shard(sh, w->a.argv[i], w->a.argl[i])] = true;
	}
	for (unsigned s = 0; s < sh->n; s++)
		if (used[s])
			w->shards[w->nshards++] = s;
	free(used);
	pc_timer_init(&w->timer, timed_out);
	if (w->timeout && w->timeout < KV_CMD_TIMEOUT_FOREVER)
		pc_reactor_timer_after(pc_shard_reactor(), &w->timer, (uint64_t)w->timeout * 1000000u);
	to_shards(sh, w, enlist);
}

void kv_block_drop(struct kv_bwait *w)
{
	unref(w);
}

bool kv_block_leave(struct kv_shard *sh, struct kv_bwait *w)
{
	if (!claim_home(w, true))
		return false; /* served: its reply is on the way */
	finish(sh, w, NULL);
	return true;
}

static void unblocked(void *arg)
{
	struct kv_bwait *w = arg;
	struct kv_shard *sh = pc_shard_user();

	if (w->unblock_error)
		finish_with(sh, w, "-" KV_ERR_UNBLOCKED "\r\n", sizeof(KV_ERR_UNBLOCKED) + 2);
	else
		finish_nil(sh, w);
}

bool kv_block_unblock(struct kv_shard *sh, struct kv_bwait *w, bool error)
{
	(void)sh;
	if (!claim(w, GONE))
		return false;
	w->unblock_error = error;
	if (pc_reactor_defer(pc_shard_reactor(), unblocked, w))
		unblocked(w); /* no room to defer: at once */
	return true;
}

/* ---- a shard's table ------------------------------------------------------- */

int kv_block_start(struct kv_shard *sh)
{
	sh->blk = calloc(1, sizeof(*sh->blk));
	if (!sh->blk || pc_map_init(&sh->blk->keys, PC_MAP_HASHED))
		return -ENOMEM;
	return 0;
}

void kv_block_stop(struct kv_shard *sh)
{
	struct pc_map_iter it = PC_MAP_ITER_INIT;
	struct pc_map_slot *s;

	if (!sh->blk)
		return;
	while ((s = pc_map_next(&sh->blk->keys, &it))) {
		struct bkey *b = (struct bkey *)(uintptr_t)s->value;

		while (b->head)
			drop_head(b);
		free(b);
	}
	pc_map_destroy(&sh->blk->keys);
	free(sh->blk);
	sh->blk = NULL;
}
