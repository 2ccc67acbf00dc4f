/* SPDX-License-Identifier: MIT */
/* The kv command table and the single-shard executor: each command's
 * Redis name, arity, flags and key positions, and its implementation
 * against one shard's keyspace with Redis 7's replies and error texts.
 *
 * Routing (which shard owns which key) lives above this: it looks a
 * command up, reads its key positions, and runs it with kv_cmd_run() on
 * the shard that owns the keys. Everything here runs on that shard. */
#ifndef KV_CMD_H
#define KV_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "db.h"
#include "errors.h"
#include "shard_merge.h"
#include "resp_reply.h"

/* Command flags (Redis's names). */
#define KV_CMD_WRITE    0x1u   /* may change the keyspace */
#define KV_CMD_READONLY 0x2u
#define KV_CMD_DENYOOM  0x4u   /* refused while over --maxmemory */
#define KV_CMD_FAST     0x8u   /* O(1) or O(log n) */
/* Where the server runs a command (every command has one of these or keys):
 * ALLSHARDS: on every shard, the replies merged (DBSIZE summed, KEYS
 * concatenated, FLUSHALL/FLUSHDB one OK, SCAN walked shard by shard);
 * NOKEY_LOCAL: once, on the connection's own shard, with the connection
 * (c->conn) and the server view (INFO's whole-server figures come from
 * view->totals, not from a fan-out of INFO itself). */
#define KV_CMD_ALLSHARDS    0x10u
#define KV_CMD_NOKEY_LOCAL  0x20u
/* The argument before the first key counts the keys (SINTERCARD's
 * numkeys): only that many from first_key on are keys. */
#define KV_CMD_KEYNUM       0x40u
/* A destination key first, then a count of the keys after it
 * (ZUNIONSTORE's destination numkeys key...): first_key is the
 * destination, the counted keys start two arguments later. */
#define KV_CMD_DESTKEYNUM   0x80u
/* Waits for data when its keys have none (BLPOP...): run here it answers
 * as Redis does inside MULTI (nil at once); the server blocks it. Its
 * timeout is the last argument, or the first for a key count's command
 * (BLMPOP timeout numkeys ...). */
#define KV_CMD_BLOCKING     0x100u
/* Runs for a connection subscribed to channels (RESP2 allows only these). */
#define KV_CMD_PUBSUB       0x200u
/* A second key may follow a STORE option among the arguments after the
 * first key (SORT's destination): the request's keys are the first key,
 * and that one when given. */
#define KV_CMD_STOREKEY     0x400u

struct kv_call;

/* Where the writes that ran are recorded (the server's append-only
 * file, aof.h). */
struct kv_cmd_log {
	/* A write ran, its reply from mark on in c->out (an error reply
	 * included: the log decides what to record). */
	void (*wrote)(struct kv_cmd_log *l, const struct kv_call *c, size_t mark);
	/* A transaction's queue (EXEC) starts (begin) or ends: its writes are
	 * recorded as one group. */
	void (*group)(struct kv_cmd_log *l, bool begin);
	/* Non-zero (a -errno): the log cannot take writes; they are refused
	 * with Redis's MISCONF error. */
	int err;
};

/* One request being executed. The caller fills every field but cmd. */
struct kv_call {
	struct kv_db *db;
	struct kv_reply *out;
	int64_t now;             /* ms since the epoch, read once per request */
	uint64_t max_bulk;       /* longest string a command may build (proto-max-bulk-len) */
	/* The connection that sent the request: NULL where there is none, and
	 * NULL when the command runs on a shard other than the connection's
	 * (only NOKEY_LOCAL commands read it). */
	struct kv_conn *conn;
	/* The id of the connection that sent the request, also where conn is
	 * NULL (a part of a command run on every shard); 0: none. */
	uint64_t caller;
	/* The settings (NULL: Redis's defaults) and the whole server (NULL:
	 * just this keyspace and connection). */
	const struct kv_config *cfg;
	const struct kv_server_view *view;
	uint32_t argc;           /* at least 1: argv[0] is the command's name */
	const char *const *argv;
	const size_t *argl;
	const struct kv_cmd *cmd;
	/* A command with a typed result (kv_multi_typed(cmd->multi)) writes it
	 * here, and to out only an error. NULL: the executor provides one and
	 * turns it into the reply. */
	struct kv_part *part;
	/* Where its writes are recorded; NULL: nowhere. */
	struct kv_cmd_log *log;
	/* The shard's publish/subscribe tables (pubsub.h); NULL where there
	 * is no server. */
	struct kv_pubsub *ps;
};

typedef void kv_cmd_fn(struct kv_call *c);

/* One command's record (commands.def says what each field holds). */
struct kv_cmd {
	const char *name;
	kv_cmd_fn *fn;
	int arity;
	unsigned flags;
	int first_key, last_key, key_step;
	enum kv_multi multi;
	const char *group, *since, *summary;
};

/* The longest command name in the table. */
#define KV_CMD_NAME_MAX 16

/* Whether argc arguments (the name included) meet cmd's arity. */
static inline bool kv_cmd_arity_ok(const struct kv_cmd *cmd, uint32_t argc)
{
	return cmd->arity > 0 ? (uint32_t)cmd->arity == argc : argc >= (uint32_t)-cmd->arity;
}

/* A container's subcommands ("container|sub"), *n of them; NULL and 0
 * for a command that has none. */
const struct kv_cmd *kv_cmd_subs(const struct kv_cmd *cmd, size_t *n);

/* The record that says where a request runs: the subcommand argv[1]
 * names when it runs on every shard (flag A), else cmd (NULL stays
 * NULL). */
const struct kv_cmd *kv_cmd_placed(const struct kv_cmd *cmd, uint32_t argc,
				   const char *const *argv, const size_t *argl);

/* The command named name[0..len), any letter case, or NULL. */
const struct kv_cmd *kv_cmd_lookup(const char *name, size_t len);

/* Finds c's command (for a container, its subcommand) and checks its arity;
 * on failure writes Redis's "unknown command", "unknown subcommand" or
 * "wrong number of arguments" error to c->out and returns false. Records the command on c->conn (when not NULL) as its
 * last, for CLIENT LIST. */
bool kv_cmd_check(struct kv_call *c);

/* Runs the checked command c->cmd: its reply (or error) goes to c->out.
 * With a memory limit on c->db (kv_db_set_maxmemory) it first evicts keys
 * as the policy allows, and refuses a DENYOOM command with Redis's -OOM
 * error while the keyspace is still over its limit. A write is refused
 * with Redis's MISCONF error while c->log has an error, else c->log
 * records it. */
void kv_cmd_run(struct kv_call *c);

/* kv_cmd_check() with the command argv[0] names already found (cmd, not
 * NULL: kv_cmd_lookup()'s answer), so a router that looked it up does not
 * look again. */
bool kv_cmd_check_as(struct kv_call *c, const struct kv_cmd *cmd);

/* kv_cmd_check() then kv_cmd_run(): one request, start to end. */
void kv_cmd_exec(struct kv_call *c);

/* kv_cmd_check_as() then kv_cmd_run(). */
void kv_cmd_exec_as(struct kv_call *c, const struct kv_cmd *cmd);

/* The argument index of the request's last key (first_key: the first).
 * For a STOREKEY command, STORE's destination when there is one. A key
 * count (KV_CMD_KEYNUM) that is not a number in range, or leaves
 * no room for the arguments the arity asks for after the keys, names one
 * key: the command refuses it where that key is. */
uint32_t kv_cmd_last_key(const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
			 const size_t *argl);

/* A blocking command's timeout, in ms (0: none), rounded up as Redis
 * does: NULL, or Redis's error text. */
#define KV_CMD_TIMEOUT_FOREVER (1ll << 40)  /* ms past which none is kept */
const char *kv_cmd_timeout(const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
			   const size_t *argl, int64_t *ms);

/* How many keys the request names (0: none), and the argument index
 * of key number k among them: the way to walk a request's keys. */
uint32_t kv_cmd_nkeys(const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
		      const size_t *argl);
static inline uint32_t kv_cmd_key_arg(const struct kv_cmd *cmd, uint32_t k, uint32_t argc,
				      const char *const *argv, const size_t *argl)
{
	if (k && (cmd->flags & KV_CMD_STOREKEY))
		return kv_cmd_last_key(cmd, argc, argv, argl);
	return (uint32_t)cmd->first_key + k * (uint32_t)cmd->key_step +
	       (k && (cmd->flags & KV_CMD_DESTKEYNUM) ? 1u : 0u);
}

/* The commands in the table, in order (for COMMAND and tests). */
const struct kv_cmd *kv_cmd_table(size_t *count);

/* SAVE's end, on the connection's shard: writes the n shards' parts
 * (kv_save's) into one dump where cfg says (NULL: the defaults) and
 * replies OK, or ERR when it could not (the reason on stderr, the
 * previous dump kept). now: the save's time, ms since the epoch. */
void kv_save_finish(const struct kv_config *cfg, const struct kv_server_view *view,
		    const struct kv_part *const *parts, unsigned n, int64_t now,
		    struct kv_reply *out);

/* The time of the last successful save, or of the start (kv_save_mark),
 * in seconds since the epoch (LASTSAVE). Any thread. */
int64_t kv_save_last(void);
void kv_save_mark(int64_t s);

#endif
