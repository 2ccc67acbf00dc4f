/* SPDX-License-Identifier: MIT */
/* String commands: GET and SET with their variants, MGET, MSET, APPEND,
 * STRLEN, GETRANGE, SETRANGE. Replies, errors and the order of checks are
 * Redis 7.0's (t_string.c). */
#include "cmd_impl.h"

/* SET's and GETEX's options. */
#define O_NX      0x01u
#define O_XX      0x02u
#define O_GET     0x04u
#define O_KEEPTTL 0x08u
#define O_PERSIST 0x10u
#define O_EX      0x20u
#define O_PX      0x40u
#define O_EXAT    0x80u
#define O_PXAT    0x100u
#define O_EXPIRE  (O_EX | O_PX | O_EXAT | O_PXAT)

struct set_opts {
	unsigned flags;
	uint32_t expire_arg;   /* the argument holding the time, when O_EXPIRE */
};

/* The option at argument i, given those already seen, or 0 when it is not
 * one this command takes or it conflicts (Redis's syntax error). */
static unsigned set_option(const struct kv_call *c, uint32_t i, unsigned seen, bool is_set)
{
	bool has_next = i + 1 < c->argc;
	if (is_set && kv_arg_is(c, i, "nx") && !(seen & O_XX))
		return O_NX;
	if (is_set && kv_arg_is(c, i, "xx") && !(seen & O_NX))
		return O_XX;
	if (is_set && kv_arg_is(c, i, "get"))
		return O_GET;
	if (is_set && kv_arg_is(c, i, "keepttl") && !(seen & (O_PERSIST | O_EXPIRE)))
		return O_KEEPTTL;
	if (!is_set && kv_arg_is(c, i, "persist") && !(seen & (O_EXPIRE | O_KEEPTTL)))
		return O_PERSIST;
	static const struct { const char *word; unsigned flag; } times[] = {
		{ "ex", O_EX }, { "px", O_PX }, { "exat", O_EXAT }, { "pxat", O_PXAT },
	};
	for (size_t t = 0; t < 4; t++)
		if (kv_arg_is(c, i, times[t].word) && has_next &&
		    !(seen & (O_KEEPTTL | O_PERSIST | (O_EXPIRE & ~times[t].flag))))
			return times[t].flag;
	return 0;
}

/* Reads options from argument first on; false after the syntax error. */
static bool parse_set_opts(struct kv_call *c, uint32_t first, bool is_set, struct set_opts *o)
{
	o->flags = 0;
	for (uint32_t i = first; i < c->argc; i++) {
		unsigned f = set_option(c, i, o->flags, is_set);
		if (!f) {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
		o->flags |= f;
		if (f & O_EXPIRE)
			o->expire_arg = ++i;
	}
	return true;
}

/* The absolute expiry time the option's argument names; false after
 * Redis's error (not an integer; not positive; overflow). */
static bool expire_time(struct kv_call *c, const struct set_opts *o, int64_t *when)
{
	int64_t v;
	if (!kv_arg_ll(c, o->expire_arg, &v))
		return false;
	bool seconds = o->flags & (O_EX | O_EXAT);
	if (v <= 0 || (seconds && v > INT64_MAX / 1000)) {
		kv_err_expire(c);
		return false;
	}
	if (seconds)
		v *= 1000;
	if (o->flags & (O_EX | O_PX)) {
		if (v > INT64_MAX - c->now) {
			kv_err_expire(c);
			return false;
		}
		v += c->now;
	}
	*when = v;
	return true;
}

/* A string key's value, or nil; false after WRONGTYPE for another type. */
static bool reply_value(struct kv_call *c, const struct kv_entry *e)
{
	size_t n;
	const char *v;
	if (!e) {
		kv_reply_null(c->out);
		return true;
	}
	if (kv_wrongtype(c, e, KV_STRING))
		return false;
	v = kv_entry_value(e, &n);
	kv_reply_bulk(c->out, v, n);
	return true;
}

/* SET's core, shared by SETNX, SETEX, PSETEX. ok: the reply on success
 * (NULL: +OK); skipped: the reply when NX or XX stops it (NULL: nil). */
static void set_generic(struct kv_call *c, const struct set_opts *o, uint32_t val_arg,
			void (*ok)(struct kv_call *), void (*skipped)(struct kv_call *))
{
	int64_t when = o->flags & O_KEEPTTL ? KV_KEEP_TTL : KV_NO_EXPIRE;
	if ((o->flags & O_EXPIRE) && !expire_time(c, o, &when))
		return;
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	bool get = o->flags & O_GET;
	size_t mark = c->out->len;
	if (get && !reply_value(c, e))
		return;
	if (((o->flags & O_NX) && e) || ((o->flags & O_XX) && !e)) {
		if (!get)
			skipped ? skipped(c) : kv_reply_null(c->out);
		return;
	}
	if (kv_db_store(c->db, &pos, c->argv[val_arg], c->argl[val_arg], when)) {
		/* nothing changed: the error alone, not the old value too */
		kv_reply_truncate(c->out, mark);
		kv_err_oom(c);
		return;
	}
	if (!get)
		ok ? ok(c) : kv_reply_status(c->out, "OK");
}

void kv_set(struct kv_call *c)
{
	struct set_opts o;
	if (parse_set_opts(c, 3, true, &o))
		set_generic(c, &o, 2, NULL, NULL);
}

static void reply_one(struct kv_call *c)
{
	kv_reply_int(c->out, 1);
}

static void reply_zero(struct kv_call *c)
{
	kv_reply_int(c->out, 0);
}

void kv_setnx(struct kv_call *c)
{
	struct set_opts o = { O_NX, 0 };
	set_generic(c, &o, 2, reply_one, reply_zero);
}

void kv_setex(struct kv_call *c)
{
	struct set_opts o = { O_EX, 2 };
	set_generic(c, &o, 3, NULL, NULL);
}

void kv_psetex(struct kv_call *c)
{
	struct set_opts o = { O_PX, 2 };
	set_generic(c, &o, 3, NULL, NULL);
}

void kv_get(struct kv_call *c)
{
	struct kv_pos pos;
	reply_value(c, kv_arg_key(c, 1, &pos));
}

/* SET key value GET, which it is. */
void kv_getset(struct kv_call *c)
{
	struct set_opts o = { O_GET, 0 };
	set_generic(c, &o, 2, NULL, NULL);
}

void kv_getdel(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (reply_value(c, e) && e)
		kv_db_erase(c->db, &pos);
}

/* GETEX key [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST] */
void kv_getex(struct kv_call *c)
{
	struct set_opts o;
	struct kv_pos pos;
	int64_t when = 0;
	if (!parse_set_opts(c, 2, false, &o))
		return;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (!e) {
		kv_reply_null(c->out);
		return;
	}
	if (kv_wrongtype(c, e, KV_STRING) || ((o.flags & O_EXPIRE) && !expire_time(c, &o, &when)))
		return;
	reply_value(c, e);
	if ((o.flags & (O_EXAT | O_PXAT)) && when <= c->now)
		kv_db_erase(c->db, &pos);
	else if (o.flags & O_EXPIRE)
		kv_db_set_expire(c->db, &pos, when);
	else if ((o.flags & O_PERSIST) && kv_entry_expire(e) != KV_NO_EXPIRE)
		kv_db_set_expire(c->db, &pos, KV_NO_EXPIRE);
}

/* The keys' values, or nil (for a missing key or one of another type),
 * in order (typed: KV_MULTI_VALUES). */
void kv_mget(struct kv_call *c)
{
	for (uint32_t i = 1; i < c->argc; i++) {
		struct kv_pos pos;
		struct kv_entry *e = kv_arg_key(c, i, &pos);
		size_t n;
		const char *v;

		if (!e || kv_entry_type(e) != KV_STRING) {
			kv_part_add_nil(c->part);
			continue;
		}
		v = kv_entry_value(e, &n);
		kv_part_add(c->part, v, n);
	}
}

/* MSET and MSETNX: pairs, so an even count of arguments is an arity
 * error. nx: set nothing when any key exists. Returns whether every pair
 * was stored (false: an error or a key existing replied). */
static bool mset_generic(struct kv_call *c, bool nx)
{
	struct kv_pos pos;
	if (c->argc % 2 == 0) {
		kv_err_arity(c);
		return false;
	}
	for (uint32_t i = 1; nx && i < c->argc; i += 2) {
		if (kv_arg_key(c, i, &pos)) {
			kv_reply_int(c->out, 0);
			return false;
		}
	}
	for (uint32_t i = 1; i < c->argc; i += 2) {
		kv_arg_key(c, i, &pos);
		if (kv_db_store(c->db, &pos, c->argv[i + 1], c->argl[i + 1], KV_NO_EXPIRE)) {
			kv_err_oom(c);
			return false;
		}
	}
	return true;
}

/* Typed (KV_MULTI_OK): nothing to write but an error. */
void kv_mset(struct kv_call *c)
{
	mset_generic(c, false);
}

void kv_msetnx(struct kv_call *c)
{
	if (mset_generic(c, true))
		kv_reply_int(c->out, 1);
}

void kv_strlen(struct kv_call *c)
{
	struct kv_pos pos;
	size_t n = 0;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (kv_wrongtype(c, e, KV_STRING))
		return;
	if (e)
		kv_entry_value(e, &n);
	kv_reply_int(c->out, (int64_t)n);
}

void kv_append(struct kv_call *c)
{
	struct kv_pos pos;
	size_t olen, add = c->argl[2];
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (kv_wrongtype(c, e, KV_STRING))
		return;
	if (!e) {
		if (kv_db_store(c->db, &pos, c->argv[2], add, KV_NO_EXPIRE))
			kv_err_oom(c);
		else
			kv_reply_int(c->out, (int64_t)add);
		return;
	}
	kv_entry_value(e, &olen);
	if ((uint64_t)olen + add > c->max_bulk) {
		kv_err(c, KV_ERR_TOO_BIG);
		return;
	}
	char *v = kv_db_resize(c->db, &pos, olen + add, true);
	if (!v) {
		kv_err_oom(c);
		return;
	}
	memcpy(v + olen, c->argv[2], add);
	kv_reply_int(c->out, (int64_t)(olen + add));
}

void kv_getrange(struct kv_call *c)
{
	int64_t start, end;
	size_t len;
	struct kv_pos pos;
	if (!kv_arg_ll(c, 2, &start) || !kv_arg_ll(c, 3, &end))
		return;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (kv_wrongtype(c, e, KV_STRING))
		return;
	const char *v = e ? kv_entry_value(e, &len) : "";
	if (!e || (start < 0 && end < 0 && start > end)) {
		kv_reply_bulk(c->out, "", 0);
		return;
	}
	int64_t n = (int64_t)len;
	if (start < 0)
		start = n + start;
	if (end < 0)
		end = n + end;
	if (start < 0)
		start = 0;
	if (end < 0)
		end = 0;
	if (end >= n)
		end = n - 1;
	if (start > end || n == 0)
		kv_reply_bulk(c->out, "", 0);
	else
		kv_reply_bulk(c->out, v + start, (size_t)(end - start + 1));
}

void kv_setrange(struct kv_call *c)
{
	int64_t off;
	size_t olen = 0, add = c->argl[3];
	struct kv_pos pos;
	if (!kv_arg_ll(c, 2, &off))
		return;
	if (off < 0) {
		kv_err(c, KV_ERR_OFFSET);
		return;
	}
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (kv_wrongtype(c, e, KV_STRING))
		return;
	if (e)
		kv_entry_value(e, &olen);
	if (add == 0) {
		kv_reply_int(c->out, (int64_t)olen);
		return;
	}
	if ((uint64_t)off + add > c->max_bulk) {
		kv_err(c, KV_ERR_TOO_BIG);
		return;
	}
	size_t end = (size_t)off + add, nlen = end > olen ? end : olen;
	char *v = kv_db_resize(c->db, &pos, nlen, e != NULL);
	if (!v) {
		kv_err_oom(c);
		return;
	}
	if ((size_t)off > olen)
		memset(v + olen, 0, (size_t)off - olen);
	memcpy(v + off, c->argv[3], add);
	kv_reply_int(c->out, (int64_t)nlen);
}
