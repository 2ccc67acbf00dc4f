/* SPDX-License-Identifier: MIT */
/* Publish/subscribe between shards: each shard's tables (pubsub.h) get
 * their messages and count changes from the other shards here.
 *
 * A PUBLISH sends its message to each shard with subscribers of the
 * channel (or of a pattern matching it), by the counts of the
 * publisher's shard; there it is delivered to that shard's own
 * subscribers. A turn's messages for one shard travel together, one mesh
 * message. Messages one shard sends another run in order, so one
 * publisher's messages reach each subscriber in publish order. A change
 * of subscriptions goes to every other shard as a job, and the
 * confirmation waits for all of them (client.c): once a client has it,
 * a PUBLISH on any shard counts and reaches that subscription. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "percore/outbox.h"
#include "pubsub.h"
#include "server_internal.h"

/* One message of a batch: its length, then its bytes. */
static void put_piece(struct kv_reply *r, const char *p, size_t len)
{
	uint32_t l = (uint32_t)len;

	kv_reply_raw(r, &l, sizeof(l));
	kv_reply_raw(r, p, len);
}

static const char *get_piece(const char *p, const char **s, size_t *len)
{
	uint32_t l;

	memcpy(&l, p, sizeof(l));
	*s = p + sizeof(l);
	*len = l;
	return *s + l;
}

/* Reaped batches kept for reuse, at most. */
#define PS_SPARE_MAX 8u
/* Messages a batch holds without an allocation of their own. */
#define PS_BATCH_ROOM 1024u
/* A reused batch keeps a buffer it grew up to this size: a busy turn's
 * batch costs no allocation the next time, a burst's large one is not
 * kept. */
#define PS_BATCH_KEEP (64u << 10)

/* One turn's messages for one other shard: channel and message each, in
 * publish order, sent as one mesh message and delivered there. No answer
 * comes back: the target marks it delivered, and its home frees it when
 * it next looks (reap), so a publishing shard asleep by then is not
 * woken only to free it. */
struct ps_batch {
	struct ps_batch *next;     /* its lane's sent list, oldest first */
	_Atomic bool delivered;    /* written by the target, read at home */
	uint32_t n;                /* messages */
	struct kv_reply msgs;
	char room[PS_BATCH_ROOM];
};

/* Per target shard: the turn's batch still open, and those sent and not
 * yet freed, in the order sent. */
struct ps_lane {
	struct ps_batch *open, *head, *tail;
};

struct kv_ps_out {
	struct ps_batch *spare;
	unsigned nspare;
	struct kv_job *jobs;       /* at the stop: the change jobs still out */
	unsigned n;
	struct ps_lane lane[];
};

static void batch_free(struct ps_batch *b)
{
	kv_reply_free(&b->msgs);
	free(b);
}

static struct ps_batch *batch_new(struct kv_ps_out *q)
{
	struct ps_batch *b = q->spare;

	if (b) {
		q->spare = b->next;
		q->nspare--;
		kv_reply_clear(&b->msgs); /* its buffer, grown or not, stays */
	} else if ((b = malloc(sizeof(*b)))) {
		kv_reply_init_in(&b->msgs, b->room, sizeof(b->room));
	} else {
		return NULL;
	}
	b->next = NULL;
	atomic_init(&b->delivered, false);
	b->n = 0;
	return b;
}

static void batch_recycle(struct kv_ps_out *q, struct ps_batch *b)
{
	if (q->nspare >= PS_SPARE_MAX || b->msgs.cap > PS_BATCH_KEEP) {
		batch_free(b);
		return;
	}
	b->next = q->spare;
	q->spare = b;
	q->nspare++;
}

/* On the target: the batch's messages to this shard's subscribers. The
 * batch is its home's again once marked (not touched after). */
static void deliver_batch(void *arg)
{
	struct ps_batch *b = arg;
	struct kv_shard *sh = pc_shard_user();
	const char *p = b->msgs.buf, *end = p + b->msgs.len;

	while (p < end) {
		const char *chan, *msg;
		size_t clen, mlen;

		p = get_piece(p, &chan, &clen);
		p = get_piece(p, &msg, &mlen);
		kv_pubsub_deliver(sh->ps, chan, clen, msg, mlen);
	}
	atomic_store_explicit(&b->delivered, true, memory_order_release);
}

/* Frees the batches to shard t already delivered, oldest first. */
static void reap(struct kv_shard *sh, unsigned t)
{
	struct ps_lane *l = &sh->ps_q->lane[t];

	while (l->head && atomic_load_explicit(&l->head->delivered, memory_order_acquire)) {
		struct ps_batch *b = l->head;

		l->head = b->next;
		if (!l->head)
			l->tail = NULL;
		sh->ps_out -= b->n;
		batch_recycle(sh->ps_q, b);
	}
}

/* Sends shard t's open batch: it joins the lane's list until delivered.
 * Sent as a reply is, never refused: a subscriber counted must get it.
 * Not through the target's wait queue: delivering touches no key, so a
 * transaction holding that shard need not hold its subscribers back. */
static void send_open(struct kv_shard *sh, unsigned t)
{
	struct ps_lane *l = &sh->ps_q->lane[t];
	struct ps_batch *b = l->open;

	if (!b)
		return;
	l->open = NULL;
	if (l->tail)
		l->tail->next = b;
	else
		l->head = b;
	l->tail = b;
	sh->ps_out += b->n;
	if (pc_shard_send_reply(t, deliver_batch, b))
		abort(); /* -ENOMEM for a 64-byte chunk: nothing can go on */
}

/* The turn's end: its batches go, unanswered. */
static void send_batches(void *arg)
{
	struct kv_shard *sh = arg;

	sh->ps_task = false;
	for (unsigned t = 0; t < sh->n; t++) {
		reap(sh, t);
		send_open(sh, t);
	}
}

/* A message for shard `to`: it joins the turn's batch for that shard,
 * sent at the turn's end (send_batches), or at once when a PUBLISH must
 * wait for it (kv_ps_pending). One mesh message per shard and turn
 * rather than per PUBLISH: the cost of a message between shards is paid
 * once for a pipeline's worth of PUBLISHes. */
static void forward(void *arg, unsigned to, const char *chan, size_t clen, const char *msg,
		    size_t mlen)
{
	struct kv_shard *sh = arg;
	struct ps_lane *l = &sh->ps_q->lane[to];

	if (!l->open && !(l->open = batch_new(sh->ps_q)))
		abort(); /* a message counted and lost would break exactly-once */
	if (!sh->ps_task) {
		if (pc_reactor_defer(pc_shard_reactor(), send_batches, sh))
			abort(); /* as above */
		sh->ps_task = true;
	}
	put_piece(&l->open->msgs, chan, clen);
	put_piece(&l->open->msgs, msg, mlen);
	if (kv_reply_failed(&l->open->msgs))
		abort(); /* as above */
	l->open->n++;
}

static void deliver(void *arg, struct kv_conn *to, const char *buf, size_t len)
{
	(void)arg;
	kv_client_deliver(to, buf, len);
}

void kv_ps_start(struct kv_shard *sh)
{
	struct kv_pubsub_hooks h = { .deliver = deliver, .forward = forward, .arg = sh };

	sh->ps = kv_pubsub_new(sh->n, sh->idx, &h);
	sh->ps_q = calloc(1, sizeof(*sh->ps_q) + sh->n * sizeof(sh->ps_q->lane[0]));
	if (!sh->ps || !sh->ps_q)
		abort(); /* a shard without its tables cannot serve */
	sh->ps_q->n = sh->n;
}

/* The batches and change jobs still out stay for kv_ps_free_orphans: a
 * shard not stopped yet may still deliver one. */
void kv_ps_stop(struct kv_shard *sh)
{
	struct kv_ps_out *q = sh->ps_q;

	for (unsigned t = 0; t < sh->n; t++) {
		if (q->lane[t].open)
			batch_free(q->lane[t].open); /* never sent */
		q->lane[t].open = NULL;
	}
	q->jobs = sh->ps_jobs;
	sh->srv->ps_orphans[sh->idx] = q;
	sh->ps_q = NULL;
	kv_pubsub_free(sh->ps);
	sh->ps = NULL;
}

/* On a shard the changes are for: every argument one change of the
 * home shard's. */
static void apply_changes(struct kv_shard *sh, struct kv_job *j)
{
	for (uint32_t i = 0; i < j->a.argc; i++)
		if (kv_pubsub_apply(sh->ps, j->home, j->a.argv[i], j->a.argl[i]))
			abort(); /* a count lost would send messages to the wrong shards */
}

/* The changes of subscriptions made here since the last call, one job
 * for each other shard (linked by next), or NULL. */
static struct kv_job *changes(struct kv_shard *sh)
{
	struct kv_reply buf;
	uint32_t n = kv_pubsub_take_changes(sh->ps, &buf);
	struct kv_job *list = NULL;
	const char **argv;
	size_t *argl;

	if (!n) {
		kv_reply_free(&buf);
		return NULL;
	}
	argv = malloc(n * sizeof(*argv));
	argl = malloc(n * sizeof(*argl));
	if (!argv || !argl || kv_reply_failed(&buf))
		abort(); /* as above */
	kv_pubsub_split_changes(&buf, n, argv, argl);
	for (unsigned t = sh->n; t-- > 0;) {
		struct kv_job *j;
		size_t bytes = 0;

		if (t == sh->idx)
			continue;
		for (uint32_t i = 0; i < n; i++)
			bytes += argl[i];
		j = kv_job_new(KV_JOB_FN, n, bytes);
		if (!j)
			abort();
		for (uint32_t i = 0; i < n; i++)
			kv_job_arg(j, argv[i], argl[i]);
		j->fn = apply_changes;
		j->target = t;
		j->must = true;
		j->u64 = 1; /* counts as one message out */
		j->next = list;
		list = j;
	}
	free(argv);
	free(argl);
	kv_reply_free(&buf);
	return list;
}

/* A job of nobody's done: it leaves its shard's list. */
static void free_job(struct kv_shard *sh, struct kv_job *j)
{
	if (j->nprev)
		j->nprev->next = j->next;
	else
		sh->ps_jobs = j->next;
	if (j->next)
		j->next->nprev = j->nprev;
	sh->ps_out -= (uint32_t)j->u64;
	kv_job_free(j);
}

/* Sends a job as nobody's: listed until its done, so one the engine's
 * stop leaves unrun is freed once every shard has stopped
 * (kv_ps_free_orphans). */
static void send_unowned(struct kv_shard *sh, struct kv_job *j)
{
	j->nprev = NULL;
	j->next = sh->ps_jobs;
	if (j->next)
		j->next->nprev = j;
	sh->ps_jobs = j;
	sh->ps_out += (uint32_t)j->u64;
	j->done = free_job;
	kv_job_submit(sh, j); /* must: never refused */
}

/* On the target, once the batches sent before it were delivered (the
 * messages one shard sends another run in order): nothing left to do,
 * its done at home answers the PUBLISH that waited. */
static void after_batches(struct kv_shard *sh, struct kv_job *j)
{
	(void)sh;
	(void)j;
}

/* A job for shard t that does nothing there: its done at home says that
 * what home sent t before it has run. */
static struct kv_job *after_job(unsigned t)
{
	struct kv_job *j = kv_job_new(KV_JOB_FN, 0, 0);

	if (!j)
		abort(); /* as in forward() */
	j->fn = after_batches;
	j->target = t;
	j->must = true;
	return j;
}

struct kv_job *kv_ps_barrier(struct kv_shard *sh)
{
	struct kv_job *list = NULL;

	for (unsigned t = sh->n; t-- > 0;) {
		struct kv_job *j;

		if (t == sh->idx)
			continue;
		j = after_job(t);
		j->next = list;
		list = j;
	}
	return list;
}

struct kv_job *kv_ps_pending(struct kv_shard *sh)
{
	struct kv_job *list = changes(sh), **end = &list;

	for (unsigned t = 0; t < sh->n && sh->ps_out >= KV_PS_OUT_MAX; t++)
		reap(sh, t);
	if (sh->ps_out < KV_PS_OUT_MAX)
		return list; /* the messages go at the turn's end */
	while (*end)
		end = &(*end)->next;
	for (unsigned t = 0; t < sh->n; t++) {
		struct kv_job *j;

		send_open(sh, t);
		if (!sh->ps_q->lane[t].head)
			continue;
		j = after_job(t);
		*end = j;
		end = &j->next;
	}
	return list;
}

void kv_ps_free_orphans(struct kv_ps_out *q)
{
	if (!q)
		return;
	while (q->jobs) {
		struct kv_job *j = q->jobs;

		q->jobs = j->next;
		kv_job_free(j);
	}
	for (unsigned t = 0; t < q->n; t++)
		while (q->lane[t].head) {
			struct ps_batch *b = q->lane[t].head;

			q->lane[t].head = b->next;
			batch_free(b);
		}
	while (q->spare) {
		struct ps_batch *b = q->spare;

		q->spare = b->next;
		batch_free(b);
	}
	free(q);
}

void kv_ps_flush(struct kv_shard *sh)
{
	struct kv_job *j = kv_ps_pending(sh);

	while (j) {
		struct kv_job *next = j->next;

		send_unowned(sh, j);
		j = next;
	}
}

void kv_ps_conn_gone(struct kv_shard *sh, struct kv_conn *conn)
{
	if (!kv_pubsub_conn_subs(conn))
		return;
	kv_pubsub_drop(sh->ps, conn);
	kv_ps_flush(sh);
}
