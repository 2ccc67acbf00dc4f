/* SPDX-License-Identifier: MIT */
/* What the command files share: argument helpers that reply Redis's error
 * themselves, and the commands' entry points. Internal to apps/kv. */
#ifndef KV_CMD_IMPL_H
#define KV_CMD_IMPL_H

#include <string.h>
#include <strings.h>

#include "cmd.h"
#include "coll.h"

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

/* Whether e (NULL: no key) holds a value of another type than t, after
 * replying Redis's WRONGTYPE error when it does. */
static inline bool kv_wrongtype(struct kv_call *c, const struct kv_entry *e, enum kv_type t)
{
	if (e && kv_entry_type(e) != t) {
		kv_err(c, KV_ERR_WRONGTYPE);
		return true;
	}
	return false;
}

/* A SCAN-family cursor as Redis reads one (strtoul: no leading space,
 * nothing after the number, within 64 bits, "" is 0) from argument i;
 * false after "invalid cursor". */
bool kv_arg_cursor(struct kv_call *c, uint32_t i, uint64_t *cursor);

/* Argument i's value of type t (any type but KV_STRING): NULL when the
 * key is absent, and also (with *wrong set, after the WRONGTYPE error)
 * when it holds another type. */
void *kv_arg_obj(struct kv_call *c, uint32_t i, enum kv_type t, struct kv_pos *pos, bool *wrong);

/* SREM, HDEL, ZREM: removes arguments 2.. from key 1's value of type t
 * with del (the type's removal of one member, true when it was there)
 * and replies how many were; WRONGTYPE for another type, 0 when absent. */
typedef bool kv_member_del_fn(void *obj, const void *m, size_t ml);
void kv_del_members(struct kv_call *c, enum kv_type t, kv_member_del_fn *del);
/* kv_coll_del() as a kv_member_del_fn, for hashes and sets. */
kv_member_del_fn kv_coll_del_member;

/* Argument i as a hash (t KV_HASH) or set (KV_SET): NULL when the key is
 * absent, and also (with *wrong set, after the WRONGTYPE error) when it
 * holds another type. */
struct kv_coll *kv_arg_coll(struct kv_call *c, uint32_t i, enum kv_type t, struct kv_pos *pos,
			    bool *wrong);

/* pos's collection of type t for a change, made and stored (empty) when
 * the key is absent; NULL after the WRONGTYPE or out-of-memory error.
 * Bracket the change with kv_db_edit_begin/_end. */
struct kv_coll *kv_coll_for_write(struct kv_call *c, uint32_t i, enum kv_type t,
				  struct kv_pos *pos);

/* Stores obj (of type t, not empty after the caller's change) as pos's
 * new value; false after the out-of-memory error, obj freed. */
bool kv_store_new_obj(struct kv_call *c, struct kv_pos *pos, enum kv_type t, void *obj);

/* The conversion thresholds the call runs with. */
void kv_call_limits(const struct kv_call *c, struct kv_coll_limits *lim);

/* The list node fill the call runs with (list-max-listpack-size). */
int kv_call_list_fill(const struct kv_call *c);

/* The shard thread's random state for random members (SPOP, ...). */
uint64_t *kv_rng(void);

/* Replies one element: its member, and its value too when with_value. */
void kv_reply_elem(struct kv_call *c, const struct kv_elem *e, bool with_value);

/* HRANDFIELD's and SRANDMEMBER's count form over coll (NULL: absent):
 * count < 0 picks -count elements with repeats; otherwise count distinct
 * ones (all when count reaches the size). with_value: a value after each
 * member (hashes). */
void kv_reply_random(struct kv_call *c, const struct kv_coll *coll, int64_t count,
		     bool with_value);

/* HSCAN and SSCAN: key cursor [MATCH pattern] [COUNT n] over a key of
 * type t, in Redis's order of checks. */
void kv_coll_scan_cmd(struct kv_call *c, enum kv_type t);

/* A container's HELP: the lines as an array of status replies, as Redis
 * sends its help texts. */
void kv_reply_help(struct kv_call *c, const char *const *lines, size_t n);

/* Replies a null array (RESP2's *-1), as Redis does for LPOP's and
 * LMPOP's count forms over nothing. */
void kv_reply_null_array(struct kv_call *c);

struct kv_zset;
/* A new sorted set with the call's thresholds; NULL without memory. */
struct kv_zset *kv_zset_new_for(const struct kv_call *c);
/* Replies a score as Redis formats one. */
void kv_reply_zscore(struct kv_call *c, double s);
/* Replies ranks [first, first + n) of z (rev: from the top down), with
 * scores after members when with_scores. */
void kv_zset_reply_span(struct kv_call *c, const struct kv_zset *z, size_t first, size_t n,
			bool rev, bool with_scores);

/* q: a copy of c whose replies go to scratch (made here; kv_reply_free
 * it after), to reread a request's arguments where no reply is wanted. */
void kv_call_quiet(const struct kv_call *c, struct kv_call *q, struct kv_reply *scratch);

/* Whether a blocking command's timeout is valid (kv_cmd_timeout), after
 * Redis's error when it is not. */
bool kv_arg_timeout(struct kv_call *c);

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
