/* SPDX-License-Identifier: MIT */
/* Blocked clients (block.c says how they wait and are served across
 * shards). Internal to apps/kv. */
#ifndef KV_BLOCK_H
#define KV_BLOCK_H

#include "server_internal.h"

struct kv_bwait;

/* At home: the record of a blocking request (copied), before its first
 * run; NULL when out of memory. */
struct kv_bwait *kv_block_new(struct kv_shard *sh, struct kv_client *c, const struct kv_cmd *cmd,
			      uint32_t argc, const char *const *argv, const size_t *argl);
/* Whether a first run's reply says "nothing there": then it waits. */
bool kv_block_nil(const struct kv_reply *r);
/* At home: w's first run found nothing; it waits on its keys' shards
 * until served (kv_client_unblocked() then gets the reply) or its
 * timeout (a nil reply). */
void kv_block_wait(struct kv_shard *sh, struct kv_bwait *w);
/* At home: w's first run answered; w is not needed any more. */
void kv_block_drop(struct kv_bwait *w);
/* At home, its client gone: w stops waiting. False when a shard served
 * it already (its reply is on the way: kv_client_unblocked() comes). */
bool kv_block_leave(struct kv_shard *sh, struct kv_bwait *w);

/* At home: CLIENT UNBLOCK ends w's wait, if it still waits (false
 * otherwise: served, or its move across shards running); its reply, the
 * timeout's nil or the UNBLOCKED error (error), comes in a later task,
 * outside the command that asked. */
bool kv_block_unblock(struct kv_shard *sh, struct kv_bwait *w, bool error);

/* On a shard: serves the keys written since the last call (a no-op when
 * none), each to its oldest waiters while it has data. */
void kv_block_serve(struct kv_shard *sh);

/* A shard's table of waiters, made at its start and freed at its stop.
 * kv_block_start returns 0 or -ENOMEM. */
int kv_block_start(struct kv_shard *sh);
void kv_block_stop(struct kv_shard *sh);

#endif
