/* SPDX-License-Identifier: MIT */
/* Publish/subscribe between shards: each shard's tables (pubsub.h) get
 * their messages and count changes from the other shards here.
 *
 * A PUBLISH sends one message to each shard with subscribers of the
 * channel (or of a pattern matching it), by the counts of the
 * publisher's shard; there it is delivered to that shard's own
 * subscribers. Messages one shard sends another run in order, so one
 * publisher's messages reach each subscriber in publish order. A change
 * of subscriptions goes to every other shard as a job, and the
 * confirmation waits for all of them (client.c): once a client has it,
 * a PUBLISH on any shard counts and reaches that subscription. */
#include <errno.h>
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

/* On a shard with subscribers: the messages another shard's PUBLISHes
 * sent it in one turn (channel and message each, in publish order),
 * delivered to them. */
static void deliver_batch(struct kv_shard *sh, struct kv_job *j)
{
	const char *p = j->reqs.buf, *end = p + j->reqs.len;

	while (p < end) {
		const char *chan, *msg;
		size_t clen, mlen;

		p = get_piece(p, &chan, &clen);
		p = get_piece(p, &msg, &mlen);
		kv_pubsub_deliver(sh->ps, chan, clen, msg, mlen);
	}
}

static void send_batches(void *arg);

/* A message for shard `to`: it joins the turn's batch for that shard,
 * sent at the turn's end (send_batches) or taken by a PUBLISH that must
 * wait for it (kv_ps_pending). Sent as a reply is, never refused: a
 * subscriber counted must get it. One mesh message per shard and turn
 * rather than per PUBLISH: the cost of a message between shards is paid
 * once for a pipeline's worth of PUBLISHes. */
static void forward(void *arg, unsigned to, const char *chan, size_t clen, const char *msg,
		    size_t mlen)
{
	struct kv_shard *sh = arg;
	struct kv_job *j = sh->ps_batch[to];

	if (!j) {
		j = kv_job_new(KV_JOB_FN, 0, 0);
		if (!j)
			abort(); /* a message counted and lost would break exactly-once */
		if (j->out.borrowed) { /* no reply: the block's room holds the messages */
			kv_reply_init_in(&j->reqs, j->out.buf, j->out.cap);
			kv_reply_init(&j->out);
		}
		j->fn = deliver_batch;
		j->target = to;
		j->must = true;
		sh->ps_batch[to] = j;
	}
	if (!sh->ps_task) {
		if (pc_reactor_defer(pc_shard_reactor(), send_batches, sh))
			abort(); /* as above */
		sh->ps_task = true;
	}
	put_piece(&j->reqs, chan, clen);
	put_piece(&j->reqs, msg, mlen);
	if (kv_reply_failed(&j->reqs))
		abort(); /* as above */
	j->u64++;
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
	sh->ps_batch = calloc(sh->n, sizeof(*sh->ps_batch));
	if (!sh->ps || !sh->ps_batch)
		abort(); /* a shard without its tables cannot serve */
}

void kv_ps_stop(struct kv_shard *sh)
{
	sh->srv->ps_orphans[sh->idx] = sh->ps_jobs;
	for (unsigned t = 0; t < sh->n; t++)
		kv_job_free(sh->ps_batch[t]); /* never sent */
	free(sh->ps_batch);
	sh->ps_batch = NULL;
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

/* The turn's batches, linked by next after *end; returns the new end. */
static struct kv_job **take_batches(struct kv_shard *sh, struct kv_job **end)
{
	for (unsigned t = 0; t < sh->n; t++) {
		struct kv_job *j = sh->ps_batch[t];

		if (!j)
			continue;
		sh->ps_batch[t] = NULL;
		j->next = NULL;
		*end = j;
		end = &j->next;
	}
	return end;
}

/* The turn's end: its batches go, unanswered. */
static void send_batches(void *arg)
{
	struct kv_shard *sh = arg;
	struct kv_job *j = NULL;

	sh->ps_task = false;
	take_batches(sh, &j);
	while (j) {
		struct kv_job *next = j->next;

		send_unowned(sh, j);
		j = next;
	}
}

struct kv_job *kv_ps_pending(struct kv_shard *sh)
{
	struct kv_job *list = changes(sh), **end = &list;

	if (sh->ps_out < KV_PS_OUT_MAX)
		return list; /* the messages go at the turn's end */
	while (*end)
		end = &(*end)->next;
	take_batches(sh, end);
	return list;
}

void kv_ps_free_orphans(struct kv_job *list)
{
	while (list) {
		struct kv_job *j = list;

		list = j->next;
		kv_job_free(j);
	}
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
