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

/* On a shard with subscribers: a forwarded PUBLISH's channel and
 * message, delivered to them. */
static void deliver_job(struct kv_shard *sh, struct kv_job *j)
{
	kv_pubsub_deliver(sh->ps, j->a.argv[0], j->a.argl[0], j->a.argv[1], j->a.argl[1]);
}

/* A message for shard `to`: a job, pending until the PUBLISH's
 * connection takes it (kv_ps_pending). Sent as a reply is, never
 * refused: a subscriber counted must get it. */
static void forward(void *arg, unsigned to, const char *chan, size_t clen, const char *msg,
		    size_t mlen)
{
	struct kv_shard *sh = arg;
	struct kv_job *j = kv_job_new(KV_JOB_FN, 2, clen + mlen);

	if (!j)
		abort(); /* a message counted and lost would break exactly-once */
	kv_job_arg(j, chan, clen);
	kv_job_arg(j, msg, mlen);
	j->fn = deliver_job;
	j->target = to;
	j->must = true;
	*sh->ps_fwd_tail = j;
	sh->ps_fwd_tail = &j->next;
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
	if (!sh->ps)
		abort(); /* a shard without its tables cannot serve */
	sh->ps_fwd_tail = &sh->ps_fwd;
}

void kv_ps_stop(struct kv_shard *sh)
{
	sh->srv->ps_orphans[sh->idx] = sh->ps_jobs;
	kv_ps_free_orphans(sh->ps_fwd); /* never sent */
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
	sh->ps_out--;
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
	sh->ps_out++;
	j->done = free_job;
	kv_job_submit(sh, j); /* must: never refused */
}

struct kv_job *kv_ps_pending(struct kv_shard *sh)
{
	struct kv_job *list = changes(sh), **end = &list, *j = sh->ps_fwd;

	while (*end)
		end = &(*end)->next;
	sh->ps_fwd = NULL;
	sh->ps_fwd_tail = &sh->ps_fwd;
	while (j) {
		struct kv_job *next = j->next;

		j->next = NULL;
		if (sh->ps_out < KV_PS_OUT_MAX) {
			send_unowned(sh, j);
		} else {
			*end = j;
			end = &j->next;
		}
		j = next;
	}
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
