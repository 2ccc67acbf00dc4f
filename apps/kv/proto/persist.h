/* SPDX-License-Identifier: MIT */
/* What the process knows of its dumps, for LASTSAVE, INFO persistence,
 * the save rules and SHUTDOWN: the last save's time and outcome, the
 * saves made, the writes counted when the last one began (so that
 * rdb_changes_since_last_save is the server's count less that), and the
 * load at start. Process-wide, as the dump is: one server runs in a
 * process. Any thread: relaxed atomics, each figure on its own (a reader
 * may see one save's time with the previous one's count). Internal to
 * apps/kv. */
#ifndef KV_PERSIST_H
#define KV_PERSIST_H

#include <stdbool.h>
#include <stdint.h>

/* A copy of the state. */
struct kv_persist_info {
	int64_t last_save;        /* s since the epoch: the last successful save, or the start */
	bool last_ok;             /* the last save succeeded (true before any) */
	int64_t last_try_ms;      /* when the last save began (0: none yet) */
	int64_t last_bg_secs;     /* the last background save's duration, s; -1: none yet */
	uint64_t saves;           /* successful saves */
	uint64_t changes_at_save; /* writes counted when the last successful save began */
	bool saving;              /* a background save is under way */
	int64_t saving_since_ms;
	bool loading;             /* a shard is still loading the dump */
	uint64_t loaded, expired, skipped; /* the load at start: keys kept, expired, skipped */
};

void kv_persist_get(struct kv_persist_info *pi);

/* A save began at began_ms (ms since the epoch) with `changes` writes
 * counted then, and ended at ended_ms, ok or not. */
void kv_persist_save_done(int64_t began_ms, int64_t ended_ms, uint64_t changes, bool ok);

/* A background save (a save rule's) starts: false when one is under way
 * already (the caller then starts none). kv_persist_bg_end() when it
 * ended, whatever its outcome (kv_persist_save_done() records that). */
bool kv_persist_bg_begin(int64_t now_ms);
void kv_persist_bg_end(int64_t now_ms);

/* A shard begins (on) or ends loading the dump; its counts when it ends. */
void kv_persist_loading(bool on);
void kv_persist_loaded(uint64_t loaded, uint64_t expired, uint64_t skipped);

#endif
