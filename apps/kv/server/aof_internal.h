/* SPDX-License-Identifier: MIT */
/* The append-only file's state, shared by aof_shard.c (appending,
 * recovery of a failed file) and aof_rewrite.c (BGREWRITEAOF), and the
 * calls between them. Internal to apps/kv/server. */
#ifndef KV_AOF_INTERNAL_H
#define KV_AOF_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/journal.h"
#include "percore/reactor.h"
#include "resp_reply.h"
#include "server_internal.h"

struct kv_aof_waiter;
struct kv_aof_keep;
struct kv_aofrw_part;

struct kv_aof {
	struct kv_cmd_log log;
	struct kv_shard *sh;
	struct pc_journal *j;        /* NULL while failed */
	struct pc_journal *dead;     /* a failed journal waiting for its close */
	/* after a rewrite's switch: the old file's journal, until its last
	 * records are confirmed (its callbacks count from base, the new
	 * one's from nbase; base takes nbase's value once it is closed) */
	struct pc_journal *retired;
	pc_journal_fn cb;            /* the callback of records appended to j */
	struct pc_journal_opts o;
	bool always;
	char path[600];
	struct kv_reply rec;         /* the record being built */
	uint64_t appended;           /* records appended over the shard's life */
	uint64_t base;               /* appended when the journal opened */
	uint64_t nbase;              /* the same for the new file of a rewrite */
	uint64_t confirmed;
	/* a rewrite's new file is not yet in place: its confirmations wait
	 * (the most of them in gated) */
	bool gate;
	uint64_t gated;
	struct kv_aof_waiter *w;     /* holds, in lsn order: w[wh..wn) */
	size_t wh, wn, wcap;
	/* everysec: the journal writes each turn's records (mode never) and
	 * this file, the same one, is synced once a second, so a slow sync
	 * never holds writes back (at most about two seconds are lost) */
	bool everysec;
	struct pc_file *syncf;
	bool syncing;
	bool reopen_syncf;           /* the file was replaced: syncf names the old one */
	uint64_t synced_size;        /* pc_journal_written() at the last sync */
	unsigned depth;              /* groups open (EXEC, a part) */
	size_t body;                 /* rec's length after the group's head */
	uint64_t base_size;          /* the file's bytes after the last rewrite (or at start) */
	struct kv_aofrw_part *rw;    /* this shard's part of a rewrite; NULL: none */
	bool stopping;               /* the shard stops: a rewrite's part moves no more */
	/* switched at run time (aof_shard.h): no file yet, its first
	 * rewrite writes it (nothing is held meanwhile); switched off,
	 * closing (nothing more logged); the closing's last sync done */
	bool enabling, off, closed;
	struct pc_periodic tick;     /* once a second: everysec's sync, a retry */
	/* spanning EXECs' records kept until their commit (aof_tx.c), and
	 * the one whose job runs now (its records go to it) */
	struct kv_aof_keep *keep, *in;
};

/* aof_shard.c: records up to `upto` (counted over the shard's life) are
 * confirmed, with err; the holds they satisfy run. */
void kv_aof_confirm(struct kv_aof *a, uint64_t upto, int err);
/* aof_shard.c: the file failed with err (writes refused until it works). */
void kv_aof_fail(struct kv_aof *a, int err);
/* aof_shard.c: the callback of records appended after a rewrite's switch. */
void kv_aof_on_new(uint64_t lsn, int err, void *arg);
/* aof_shard.c: appends one command at once, outside any group (a rewrite's
 * marker); returns 0 or the file's error. */
int kv_aof_append_command(struct kv_aof *a, uint32_t argc, const char *const *argv,
			  const size_t *argl);
/* aof_shard.c: after a rewrite's switch, the old journal closed once it
 * can be, the everysec handle moved to the new file. */
void kv_aof_settle(struct kv_aof *a);
/* aof_shard.c: publishes the file's figures. */
void kv_aof_publish(struct kv_aof *a);
/* aof_shard.c: a switch-on's part begins on sh (generation gen): the
 * shard's file state, without a file; NULL with -ECANCELED (the switch
 * is no longer current), -EAGAIN (a file of an earlier time still
 * closes) or -ENOMEM in err. */
struct kv_aof *kv_aof_enable(struct kv_shard *sh, uint64_t gen, int *err);
/* aof_shard.c: stops logging and closes the file (its owed records
 * written and synced) over the next turns, then frees a. */
void kv_aof_close(struct kv_aof *a);
/* aof_shard.c: a switch-on's rewrite ended at home: on, given up (off
 * again), or tried again (retry). */
void kv_aof_switch_done(struct kv_shard *home, uint64_t gen, bool ok, bool retry);

/* aof_tx.c: the shard stops: the records of EXECs not committed go. */
void kv_aof_tx_drop_all(struct kv_aof *a);

/* aof_rewrite.c: the name of a file's rewrite in progress. */
void kv_aofrw_new_path(const char *path, char *out, size_t len);

/* Starting (aof_load.c): shard i's file of n at dir/appendfilename. */
void kv_aof_file_path(const struct kv_config *cfg, unsigned i, unsigned n, char *out, size_t len);
/* Writes the 16 bytes of the keys' hash key to path, durably. */
int kv_aof_write_key(const char *path, const char *dir, const uint8_t *key);
/* The shard's keys from its file at path (or from the files of another
 * shard count, converted, when its own is missing). False when it failed
 * (the start fails): the file must then not be opened, which would
 * create it and make a conversion look done. */
bool kv_aof_load(struct kv_shard *sh, const char *path);
/* The start fails: "path: what" (the first failure is kept). */
void kv_aof_start_failed(struct kv_server *k, int rc, const char *what, const char *path);
/* Writes the keyspace whole to path, synced, by a rename (aof_shard.c). */
int kv_aof_write_keys(struct kv_shard *sh, const char *path);
/* aof_rewrite.c: a record appended to the file goes to the rewrite's new
 * file too (before it: the keys' records it may need first). */
void kv_aofrw_copy(struct kv_aof *a, const void *p, size_t len);
/* aof_rewrite.c: the shard's file failed: its rewrite part fails. */
void kv_aofrw_file_failed(struct kv_aof *a);
/* aof_rewrite.c: the once-a-second work of a part waiting to end. */
void kv_aofrw_tick(struct kv_aof *a);
/* aof_rewrite.c: the shard stops: its part ends, the new file removed. */
void kv_aofrw_stop(struct kv_aof *a);
/* aof_rewrite.c: the file's sync mode changed: the new file's follows. */
void kv_aofrw_set_sync(struct kv_aof *a);
/* aof_rewrite.c: appendonly was switched off: the part gives up. */
void kv_aofrw_cancel(struct kv_aof *a);

#endif
