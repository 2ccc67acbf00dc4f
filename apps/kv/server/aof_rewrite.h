/* SPDX-License-Identifier: MIT */
/* BGREWRITEAOF without fork, and the automatic rule
 * (auto-aof-rewrite-percentage, auto-aof-rewrite-min-size): every shard
 * compacts its append-only file to its live keys and the writes made
 * meanwhile, switching files atomically. The design is in
 * aof_rewrite.c. Internal to apps/kv. */
#ifndef KV_AOF_REWRITE_H
#define KV_AOF_REWRITE_H

struct kv_shard;
struct kv_server;
struct kv_totals;

/* Starts a rewrite of every shard's file from shard sh. Returns 0
 * (started), 1 (scheduled: a BGSAVE runs; it starts once that ends),
 * -EBUSY while one runs, -ENOTSUP when appendonly is off, -ENOMEM.
 * While appendonly is switching on, the rewrite is the one that writes
 * the files from none (aof_shard.h). */
int kv_aofrw_start(struct kv_shard *sh);

/* On shard 0, once a second or so: a rewrite scheduled (after a BGSAVE,
 * or a switch-on tried again) or due by the automatic rule starts. */
void kv_aofrw_due(struct kv_shard *sh);

/* view.bgrewriteaof: kv_aofrw_start() of the shard arg. */
int kv_aofrw_view(void *arg);

/* The rewrites' figures into INFO's totals. Any shard. */
void kv_aofrw_totals(const struct kv_server *k, struct kv_totals *t);

/* After every shard stopped: what a rewrite cut short by the stop left. */
void kv_aofrw_free_left(struct kv_server *k);

#endif
