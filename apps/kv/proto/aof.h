/* SPDX-License-Identifier: MIT */
/* The append-only file's format: Redis's AOF, the writes as Redis
 * commands in RESP (arrays of bulk strings), one file per shard.
 *
 * A write is recorded in its effective form, as Redis propagates it, so
 * that replaying the file at any later time rebuilds the same keyspace:
 * relative expiry becomes absolute (SET ... PXAT, PEXPIREAT; RESTORE ...
 * ABSTTL), INCRBYFLOAT becomes SET ... KEEPTTL and HINCRBYFLOAT HSET of
 * the result, SPOP becomes SREM of the members it popped, and a write
 * that changed nothing by its reply (EXPIRE answered 0, GETEX without an
 * option or of a missing key, SPOP of nothing) is not recorded. A
 * refused command (an error reply) is never recorded.
 *
 * Groups. MULTI ... EXEC encloses writes replayed whole or not at all: a
 * transaction's, and one shard's part of a write spanning shards, which
 * starts with the marker command
 *     PERCORE.TX <id> <shards>
 * naming the write (an id unique to the server's files) and how many
 * shards' files hold a part of it. Recovery applies such a part only when
 * that many files hold a complete part with that id (kv_aof_walk's group
 * callback decides), so no crash leaves part of one visible. A one-shard
 * server never writes the marker, so its file loads into redis-server. */
#ifndef KV_AOF_H
#define KV_AOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resp_reply.h"

struct kv_call;
struct kv_entry;

/* The byte that pads a file's end while appendfsync is always (the
 * journal's extend_ahead): a run of it is a comment line to redis-server
 * and redis-check-aof, and kv_aof_logical_len() leaves it out. */
#define KV_AOF_PAD '#'

/* The marker's name. */
#define KV_AOF_TX_MARK "PERCORE.TX"
/* A rewrite's marker, PERCORE.REWRITE <id> (apps/kv/server/aof_rewrite.c):
 * outside any group; replay skips it. */
#define KV_AOF_RW_MARK "PERCORE.REWRITE"
/* PERCORE.DROPPED <id>: a marked group of this file that a start found
 * partial and skipped (apps/kv/server/aof_shard.c), so that no later
 * start applies it; outside any group; replay skips it. */
#define KV_AOF_DROP_MARK "PERCORE.DROPPED"

/* Appends argv as one command in RESP. */
void kv_aof_command(struct kv_reply *rec, uint32_t argc, const char *const *argv,
		    const size_t *argl);

/* Appends the effective form of the write c->cmd that just ran (its reply
 * from mark on in c->out), or nothing (see above). */
void kv_aof_effect(struct kv_reply *rec, const struct kv_call *c, size_t mark);

/* Appends the commands that rebuild key e as it is: SET for a string,
 * RESTORE of its DUMP payload for other types, the expiry absolute. */
void kv_aof_key(struct kv_reply *rec, const struct kv_entry *e);

/* Appends DEL key. */
void kv_aof_del(struct kv_reply *rec, const char *key, size_t len);

/* What kv_aof_walk() does with a file's contents. */
struct kv_aof_walk {
	/* A command to replay: outside any group, or in a group applied. */
	void (*apply)(void *arg, uint32_t argc, const char *const *argv, const size_t *argl);
	/* A complete group with a marker (id, shards): whether to apply it
	 * (false: it is skipped). NULL: every group is applied. Groups
	 * without a marker are always applied. */
	bool (*group)(void *arg, const char *id, size_t idlen, uint64_t shards);
	void *arg;
};

/* The length of buf[0..len) without the padding at its end. */
size_t kv_aof_logical_len(const char *buf, size_t len);

/* Reads buf[0..len) as an append-only file, calling w's functions in
 * file order. Returns 0 with *end = len when it read whole, 0 with *end <
 * len when the file ends in a torn record or an unfinished group starting
 * at *end (nothing from there was applied), or -EBADMSG for a damaged
 * record (a command that is not a RESP array of bulk strings, an EXEC
 * without MULTI, a MULTI inside one, a marker out of place) starting at
 * *end, with the reason in why. -ENOMEM when out of memory. */
int kv_aof_walk(const char *buf, size_t len, const struct kv_aof_walk *w, size_t *end, char *why,
		size_t whylen);

#endif
