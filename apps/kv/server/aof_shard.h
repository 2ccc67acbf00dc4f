/* SPDX-License-Identifier: MIT */
/* One shard's append-only file: replayed at start, then appended to
 * through a raw journal (percore/journal.h), whose group commit gives
 * appendfsync always its cost of one fdatasync for every write that
 * arrives while the previous one is in flight. Internal to apps/kv.
 *
 * Files. Shard i of n keeps <dir>/<appendfilename>-<i>-of-<n> in Redis's
 * AOF format (proto/aof.h). Files of another shard count are refused at
 * start (their keys would belong to other shards). Which shard owns a key
 * depends on the process's hash key (keyhash.h): the files' is kept in
 * <dir>/<appendfilename>.hashkey and used by every later start (a server
 * in the same process with its own hash key cannot run beside it).
 *
 * Durability. With appendfsync always a write's reply is held until its
 * record is durable: a job that wrote finishes (its done runs home) only
 * then, and a reply written at home waits in a job of its own. everysec
 * syncs once a second; no leaves it to the kernel. A failed write or sync
 * ends the file's journal: writes not yet durable are answered MISCONF,
 * later ones refused with it (reads go on), and once a second the shard
 * tries the file again: it cuts what the failed batch may have left, and
 * when the disk takes a full rewrite of the shard's keyspace, writes
 * resume. The figures go to the shard's stats (INFO, /metrics).
 *
 * Writes spanning shards. Each shard's part of one is recorded as a group
 * with a marker (proto/aof.h); before the shards start, the complete
 * marked groups of every file are listed, and each shard, replaying its
 * file, applies such a group only when the files hold every part of it. */
#ifndef KV_AOF_SHARD_H
#define KV_AOF_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_shard;
struct kv_server;
struct kv_cmd_log;

/* Runs once the writes it waited for are durable (err 0) or failed. */
typedef void kv_aof_done_fn(struct kv_shard *sh, void *arg, int err);

/* Before the shards start (any thread): finds the files of this shard
 * count and of another one (to convert: aof_load.c), and lists the
 * marked groups of every file. Returns 0 or -EEXIST (files of two other
 * counts) / -ENOENT (one of the other count's missing) / -ENOMEM with
 * the reason in err. */
int kv_aof_prepare(struct kv_server *k, char *err, size_t errlen);
/* After the shards started: 0, or the first shard's load error (its
 * message in err). Frees what prepare set up. */
int kv_aof_started(struct kv_server *k, char *err, size_t errlen);

/* On shard start: replays the shard's file (when appendonly) and opens it
 * for appending. A failure is kept for kv_aof_started(). */
void kv_aof_start(struct kv_shard *sh);
void kv_aof_stop(struct kv_shard *sh);

/* Switched at run time (CONFIG SET), as Redis 7.0 does. appendonly yes:
 * the state becomes switching-on (INFO's aof_enabled:1) and the shard
 * that ran CONFIG SET removes the files of an earlier time on (stale:
 * the keyspace changed since) and writes the hash key's file; then a
 * rewrite (aof_rewrite.c) starts from no file: each shard creates its
 * file from its point-in-time view, its writes meanwhile logged after
 * their keys' records, and once every file is written, synced and in
 * place the state becomes on. A rewrite that fails turns appendonly off
 * again (logged); one a shard could not take yet (its file of an
 * earlier time still closing) is scheduled again. appendonly no: each
 * shard stops logging, writes and syncs what it owes (held replies go
 * once durable) and closes its file. appendfsync: the journal's mode
 * changes between two turns; replies held under always keep waiting for
 * their sync. */
struct kv_config;
/* On the shard that runs CONFIG SET, before the settings go out: 1 when
 * appendonly is switched on (call kv_aof_switched_on() once they are
 * applied here), 0, or a negative errno with Redis's text in why (the
 * settings then unchanged). */
int kv_aof_config(struct kv_shard *sh, const struct kv_config *next, char *why, size_t whylen);
void kv_aof_switched_on(struct kv_shard *sh);
/* On every shard, new settings about to replace sh->cfg. */
void kv_aof_apply(struct kv_shard *sh, const struct kv_config *next);

/* Where the shard's commands record their writes; NULL when appendonly
 * is off. */
struct kv_cmd_log *kv_aof_log(struct kv_shard *sh);

/* How many records the shard has appended so far. */
uint64_t kv_aof_mark(const struct kv_shard *sh);

/* With appendfsync always, when records were appended since mark: fn(sh,
 * arg, err) runs once they are durable (or at once with the error when
 * they cannot be), and true is returned. Else false: nothing to wait for. */
bool kv_aof_hold(struct kv_shard *sh, uint64_t mark, kv_aof_done_fn *fn, void *arg);
/* Whether kv_aof_hold() would hold. */
bool kv_aof_must_hold(const struct kv_shard *sh, uint64_t mark);

/* The part of a write spanning `shards` shards (tx: its id, unique to the
 * server) that the shard is about to run, and its end: its writes are
 * recorded as one marked group. */
void kv_aof_part_begin(struct kv_shard *sh, uint64_t tx, unsigned shards);
void kv_aof_part_end(struct kv_shard *sh);

/* A write that changed key (a part of a command spanning shards that
 * works on the keyspace directly): its state now is recorded, the key
 * whole or its deletion. */
void kv_aof_touched(struct kv_shard *sh, const char *key, size_t len);

/* kv_db_on_gone's watch (arg: the shard): a key expired or evicted is
 * recorded as DEL, as Redis propagates it. */
void kv_aof_gone(void *arg, const char *key, size_t len);

/* A spanning EXEC (tx, with key locks on this shard) writes here: from
 * kv_aof_tx_keep() on, its records on this shard are kept apart
 * (kv_aof_tx_enter() and, when it returned true, kv_aof_tx_leave()
 * around each of its jobs),
 * and kv_aof_tx_commit() appends them as one group: a marked one of
 * `parts` parts (the shards the EXEC writes on, each committing its
 * own), or, for one part, a plain MULTI ... EXEC. drop: the EXEC ran
 * nothing (a watched key moved): nothing is recorded. Each is a no-op
 * when appendonly is off. */
void kv_aof_tx_keep(struct kv_shard *sh, uint64_t tx, unsigned parts);
bool kv_aof_tx_enter(struct kv_shard *sh, uint64_t tx);
void kv_aof_tx_leave(struct kv_shard *sh);
void kv_aof_tx_commit(struct kv_shard *sh, uint64_t tx, bool drop);

#endif
