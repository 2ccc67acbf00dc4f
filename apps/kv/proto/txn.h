/* SPDX-License-Identifier: MIT */
/* A connection's transaction state (MULTI ... EXEC) and its watched keys
 * (WATCH), with Redis 7.0's rules: after MULTI every command but EXEC,
 * DISCARD, MULTI and WATCH is checked (name, arity) and queued; a check
 * that fails marks the transaction so that EXEC refuses it (EXECABORT).
 *
 * Watching. Every key maps to one of a fixed set of modification
 * counters, shared by every keyspace of the process (so a shard's write
 * is seen by a client of any shard); a write command that succeeded, an
 * expiry and an eviction bump its key's counter, a flush bumps them all.
 * WATCH remembers the counters of its keys; EXEC refuses to run (a null
 * array) when one moved. Two keys sharing a counter may abort an EXEC
 * that Redis would run: a client retries, as after any conflict. Nothing
 * is bumped while no connection watches, so plain writes pay one load. */
#ifndef KV_TXN_H
#define KV_TXN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_call;
struct kv_cmd;
struct kv_conn;

/* One queued request, its arguments in the same allocation; cmd is the
 * record that says where it runs (kv_cmd_placed(): CLIENT LIST's own, so
 * an EXEC runs it on every shard as it runs outside MULTI). */
struct kv_txn_req {
	const struct kv_cmd *cmd;
	uint32_t argc;
	const char **argv;
	size_t *argl;
};

/* One watched key: its name (allocated) and its counter's value then. */
struct kv_txn_watch {
	char *key;
	size_t len;
	uint64_t stamp;
};

struct kv_txn {
	bool multi;                  /* between MULTI and EXEC or DISCARD */
	bool dirty;                  /* a queued command was refused: EXEC aborts */
	uint32_t n, cap;
	struct kv_txn_req **q;
	uint32_t nwatch, wcap;
	struct kv_txn_watch *w;
};

/* Whether the connection is between MULTI and EXEC. */
static inline bool kv_txn_in_multi(const struct kv_conn *conn);

/* Whether cmd is one MULTI does not queue: MULTI, EXEC, DISCARD, WATCH,
 * QUIT, RESET (they act at once, or refuse, as Redis's do). */
bool kv_txn_control(const struct kv_cmd *cmd);

/* Called for a checked command c->cmd: inside MULTI it is queued (copied)
 * and answered QUEUED, or refused (SAVE, as Redis 7.0: the coming EXEC
 * aborts), and true is returned; otherwise false (run it). */
bool kv_txn_queue(struct kv_call *c);

/* A command failed its check (unknown, arity; its error at out offset
 * mark): inside MULTI that aborts the coming EXEC. An EXEC refused so
 * ends the transaction, its error turned into Redis's EXECABORT form. */
void kv_txn_refused(struct kv_call *c, size_t mark);

/* Ends the transaction and forgets the watched keys (EXEC, DISCARD, the
 * connection's end). */
void kv_txn_reset(struct kv_conn *conn);

/* Whether cmd is the command named name (lower case). */
bool kv_txn_is(const struct kv_cmd *cmd, const char *name);

/* Whether cmd is WATCH: kv_txn_is(cmd, "watch") without the string
 * comparison, as every request of a sharded server asks it. */
bool kv_txn_is_watch(const struct kv_cmd *cmd);

/* kv_txn_reset(), then frees the state (the connection's end). */
void kv_txn_free(struct kv_conn *conn);

/* EXEC's first checks, on the connection's shard: the error reply
 * (without MULTI, EXECABORT; the transaction then reset) written to out
 * and false, or true when the queue is to run. */
bool kv_txn_exec_check(struct kv_call *c);

/* Whether no watched key's counter moved since WATCH (check after each
 * watched key was looked up on its own keyspace, so that one past its
 * expiry is deleted and counted first). */
bool kv_txn_watch_ok(const struct kv_txn *t);

/* The memory of the connection's queued requests (CLIENT LIST's
 * multi-mem): 0 when none. */
size_t kv_txn_mem(const struct kv_conn *conn);

/* Counters: the key's, bumped after a write to it; every one (a flush). */
void kv_txn_touch(const char *key, size_t len);
void kv_txn_touch_hash(uint64_t hash);
void kv_txn_touch_all(void);
/* After a command ran: bumps its keys when it is a write that did not
 * reply an error (its reply starts at out offset mark). */
void kv_txn_touch_cmd(const struct kv_call *c, size_t mark);

/* The command functions (kv_multi, kv_exec, kv_discard, kv_watch,
 * kv_unwatch) are declared from commands.def (cmd_impl.h). */

#include "conn.h"

static inline bool kv_txn_in_multi(const struct kv_conn *conn)
{
	return conn && conn->txn && conn->txn->multi;
}

#endif
