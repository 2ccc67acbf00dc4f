/* SPDX-License-Identifier: MIT */
/* Publish/subscribe tables of one shard, without threads.
 *
 * Each shard keeps its own connections' subscriptions (who gets a
 * message here) and a replicated count of every shard's subscribers per
 * channel and pattern (who gets a message anywhere). A PUBLISH is
 * planned from the counts on the publisher's shard: its reply (the
 * receivers, as Redis counts them: one per channel subscription and one
 * per matching pattern subscription) and the shards it must reach, one
 * message each; each of those shards then delivers to its own
 * subscribers. Changes to this shard's subscriptions are recorded as
 * pending, for the server to send to the other shards
 * (kv_pubsub_take_changes) and to apply there (kv_pubsub_apply). */
#ifndef KV_PUBSUB_H
#define KV_PUBSUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "resp_reply.h"

struct kv_cmd;

struct kv_pubsub;

/* Where the tables hand a message on: deliver writes encoded bytes to
 * one of this shard's subscribers; forward sends channel and message to
 * shard `to` (which delivers them there with kv_pubsub_deliver). */
struct kv_pubsub_hooks {
	void (*deliver)(void *arg, struct kv_conn *to, const char *buf, size_t len);
	void (*forward)(void *arg, unsigned to, const char *chan, size_t clen, const char *msg,
			size_t mlen);
	void *arg;
};

/* A table for shard self of n. NULL when out of memory. */
struct kv_pubsub *kv_pubsub_new(unsigned n, unsigned self, const struct kv_pubsub_hooks *h);
void kv_pubsub_free(struct kv_pubsub *ps);

/* The channels and patterns conn is subscribed to. */
size_t kv_pubsub_conn_subs(const struct kv_conn *conn);
/* Of them, the patterns (pattern) or the channels. */
size_t kv_pubsub_conn_count(const struct kv_conn *conn, bool pattern);
/* Frees conn's record of its subscriptions (after kv_pubsub_drop, or
 * when the tables it named are gone). */
void kv_pubsub_conn_fini(struct kv_conn *conn);

/* Subscribes conn to a channel (pattern: a glob pattern). Returns 1 when
 * new, 0 when it already was, -ENOMEM (unchanged). */
int kv_pubsub_subscribe(struct kv_pubsub *ps, struct kv_conn *conn, bool pattern,
			const char *name, size_t len);
/* Returns 1 when conn was subscribed (and no longer is), else 0. */
int kv_pubsub_unsubscribe(struct kv_pubsub *ps, struct kv_conn *conn, bool pattern,
			  const char *name, size_t len);
/* Unsubscribes conn from everything, writing each confirmation to out
 * when not NULL (one kind: pattern or not). */
void kv_pubsub_unsubscribe_all(struct kv_pubsub *ps, struct kv_conn *conn, bool pattern,
			       struct kv_reply *out);
/* Unsubscribes conn from everything, no replies (the connection closed). */
void kv_pubsub_drop(struct kv_pubsub *ps, struct kv_conn *conn);

/* A PUBLISH on this shard: delivers here, forwards to every other shard
 * with subscribers, and returns the receivers the counts name. */
uint64_t kv_pubsub_publish(struct kv_pubsub *ps, const char *chan, size_t clen, const char *msg,
			   size_t mlen);
/* Delivers a message to this shard's subscribers (a forwarded PUBLISH).
 * Returns how many got it. */
uint64_t kv_pubsub_deliver(struct kv_pubsub *ps, const char *chan, size_t clen, const char *msg,
			   size_t mlen);

/* Pending changes: encoded, one per argument ("+c"/"-c"/"+p"/"-p" then
 * the name), in order. Moves them to the caller (*argv pointing into
 * buf): returns how many; the caller frees buf's memory with
 * kv_reply_free. */
uint32_t kv_pubsub_take_changes(struct kv_pubsub *ps, struct kv_reply *buf);
/* Splits a taken buffer into n changes. */
void kv_pubsub_split_changes(const struct kv_reply *buf, uint32_t n, const char **argv,
			     size_t *argl);
/* Applies one change made on shard `from`. Returns 0 or -ENOMEM (a
 * count the table could not record). */
int kv_pubsub_apply(struct kv_pubsub *ps, unsigned from, const char *change, size_t len);

/* PUBSUB's answers, over every shard's counts. */
void kv_pubsub_channels(const struct kv_pubsub *ps, const char *pat, size_t plen,
			struct kv_reply *out);
uint64_t kv_pubsub_numsub(const struct kv_pubsub *ps, const char *chan, size_t clen);
uint64_t kv_pubsub_numpat(const struct kv_pubsub *ps);

/* A (P)(UN)SUBSCRIBE confirmation: the command's word, the name (NULL:
 * a null, as UNSUBSCRIBE of nothing answers) and the connection's
 * subscriptions after it. */
void kv_pubsub_confirm(struct kv_reply *out, bool pattern, bool sub, const char *name, size_t len,
		       size_t subs);

/* In RESP2, a subscribed connection runs only (P)(UN)SUBSCRIBE, PING,
 * QUIT and RESET: whether cmd (found and of the right arity) is refused,
 * with Redis's error written to out. */
bool kv_pubsub_refused(struct kv_conn *conn, const struct kv_cmd *cmd, uint32_t argc,
		       const char *const *argv, const size_t *argl, struct kv_reply *out);

#endif
