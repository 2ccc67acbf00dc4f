/* SPDX-License-Identifier: MIT */
/* What the command files share: argument helpers that reply Redis's error
 * themselves, and the commands' entry points. Internal to apps/kv. */
#ifndef KV_CMD_IMPL_H
#define KV_CMD_IMPL_H

#include <string.h>
#include <strings.h>

#include "cmd.h"

/* Writes a constant error text. */
#define kv_err(c, text) KV_REPLY_ERR((c)->out, text)

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

/* Every command's and subcommand's function, declared from its record. */
#define KV_COMMAND(name, fn, ...) kv_cmd_fn fn;
#define KV_SUBCOMMAND(name, fn, ...) kv_cmd_fn fn;
#include "commands.def"
#undef KV_COMMAND
#undef KV_SUBCOMMAND

#endif
