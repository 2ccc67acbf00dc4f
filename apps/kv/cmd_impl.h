/* SPDX-License-Identifier: MIT */
/* What the command files share: argument helpers that reply Redis's error
 * themselves, common error texts, and the commands' entry points. Internal
 * to apps/kv. */
#ifndef KV_CMD_IMPL_H
#define KV_CMD_IMPL_H

#include <string.h>
#include <strings.h>

#include "cmd.h"

#define KV_ERR_SYNTAX   "ERR syntax error"
#define KV_ERR_NOT_INT  "ERR value is not an integer or out of range"
#define KV_ERR_NOT_FLOAT "ERR value is not a valid float"
#define KV_ERR_NO_KEY   "ERR no such key"
#define KV_ERR_TOO_BIG  "ERR string exceeds maximum allowed size (proto-max-bulk-len)"

/* Writes a constant error text. */
#define kv_err(c, text) kv_reply_error((c)->out, text, sizeof(text) - 1)

/* Whether argument i is word (ASCII letters, any case). */
static inline bool kv_arg_is(const struct kv_call *c, uint32_t i, const char *word)
{
	size_t n = strlen(word);
	return c->argl[i] == n && strncasecmp(c->argv[i], word, n) == 0;
}

/* Argument i as an integer; false (after replying the error) when it is
 * not one. */
bool kv_arg_ll(struct kv_call *c, uint32_t i, int64_t *v);

/* Looks argument i up as a key. */
static inline struct kv_entry *kv_arg_key(struct kv_call *c, uint32_t i, struct kv_pos *pos)
{
	return kv_db_lookup(c->db, c->argv[i], c->argl[i], c->now, pos);
}

/* A container's HELP: the lines as an array of status replies, as Redis
 * sends its help texts. */
void kv_reply_help(struct kv_call *c, const char *const *lines, size_t n);

/* Replies "wrong number of arguments for '<command>' command". */
void kv_err_arity(struct kv_call *c);

/* Replies "invalid expire time in '<command>' command". */
void kv_err_expire(struct kv_call *c);

/* Replies the out-of-memory error for a store that failed. */
void kv_err_oom(struct kv_call *c);

/* Connection and server (cmd.c, cmd_conn.c, cmd_info.c, cmd_command.c). */
kv_cmd_fn kv_ping, kv_echo, kv_select, kv_dbsize, kv_flushall;
kv_cmd_fn kv_hello, kv_quit, kv_info, kv_command;

/* The containers' subcommands (cmd_conn.c, cmd_config.c, cmd_command.c). */
#define KV_CLIENT_NSUBS  8
#define KV_CONFIG_NSUBS  3
#define KV_COMMAND_NSUBS 6
extern const struct kv_cmd kv_client_subs[KV_CLIENT_NSUBS];
extern const struct kv_cmd kv_config_subs[KV_CONFIG_NSUBS];
extern const struct kv_cmd kv_command_subs[KV_COMMAND_NSUBS];

/* Strings (cmd_string.c, cmd_number.c). */
kv_cmd_fn kv_get, kv_set, kv_setnx, kv_setex, kv_psetex, kv_getset, kv_getdel, kv_getex,
	kv_mget, kv_mset, kv_msetnx, kv_append, kv_strlen, kv_getrange, kv_setrange;
kv_cmd_fn kv_incr, kv_incrby, kv_decr, kv_decrby, kv_incrbyfloat;

/* Keyspace (cmd_key.c). */
kv_cmd_fn kv_del, kv_exists, kv_type, kv_keys, kv_scan, kv_rename, kv_renamenx;
kv_cmd_fn kv_expire, kv_pexpire, kv_expireat, kv_pexpireat, kv_ttl, kv_pttl, kv_persist;

#endif
