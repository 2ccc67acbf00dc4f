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

/* A message forwarded to one shard: channel then message bytes. */
struct fwd_msg {
	size_t clen, mlen;
	char data[];
};

static void deliver_msg(void *arg)
{
	struct kv_shard *sh = pc_shard_user();
	struct fwd_msg *m = arg;

	kv_pubsub_deliver(sh->ps, m->data, m->clen, m->data + m->clen, m->mlen);
	free(m);
}

/* A PUBLISH already answered for: never refused for the outbox budget,
 * or a subscriber counted would miss it. */
static void forward(void *arg, unsigned to, const char *chan, size_t clen, const char *msg,
		    size_t mlen)
{
	struct fwd_msg *m = malloc(sizeof(*m) + clen + mlen);

	(void)arg;
	if (!m)
		abort(); /* a message counted and lost would break exactly-once */
	m->clen = clen;
	m->mlen = mlen;
	memcpy(m->data, chan, clen);
	memcpy(m->data + clen, msg, mlen);
	if (pc_shard_send_reply(to, deliver_msg, m))
		abort();
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
}

void kv_ps_stop(struct kv_shard *sh)
{
	sh->srv->ps_orphans[sh->idx] = sh->ps_jobs;
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

struct kv_job *kv_ps_changes(struct kv_shard *sh)
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

/* A closed connection's changes went: the job leaves its shard's list. */
static void free_job(struct kv_shard *sh, struct kv_job *j)
{
	struct kv_job **p = &sh->ps_jobs;

	while (*p != j)
		p = &(*p)->next;
	*p = j->next;
	kv_job_free(j);
}

void kv_ps_free_orphans(struct kv_job *list)
{
	while (list) {
		struct kv_job *j = list;

		list = j->next;
		kv_job_free(j);
	}
}

void kv_ps_conn_gone(struct kv_shard *sh, struct kv_conn *conn)
{
	struct kv_job *j;

	if (!kv_pubsub_conn_subs(conn))
		return;
	kv_pubsub_drop(sh->ps, conn);
	j = kv_ps_changes(sh);
	while (j) {
		struct kv_job *next = j->next;

		/* listed until its done: one the engine's stop leaves unrun is
		 * freed once every shard has stopped (kv_ps_free_orphans) */
		j->next = sh->ps_jobs;
		sh->ps_jobs = j;
		j->done = free_job;
		kv_job_submit(sh, j); /* must: never refused */
		j = next;
	}
}
