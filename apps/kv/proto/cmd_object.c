/* SPDX-License-Identifier: MIT */
/* OBJECT ENCODING, REFCOUNT, IDLETIME, FREQ and HELP, as Redis 7.0
 * answers them (object.c): a string's encoding is what Redis would have
 * made of it (int, embstr, raw), a typed value's its type's row says. */
#include "cmd_impl.h"

#include "num.h"

/* Redis keeps integers below this as shared objects (OBJ_SHARED_INTEGERS)
 * and reports them with this reference count (OBJ_SHARED_REFCOUNT). */
#define SHARED_INTEGERS 10000
#define SHARED_REFCOUNT 2147483647

/* The key at argument 2 as OBJECT looks at it (not marking it used), or
 * NULL after replying nil. */
static struct kv_entry *object_key(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_db_peek(c->db, c->argv[2], c->argl[2], c->now, &pos);
	if (!e)
		kv_reply_null(c->out);
	return e;
}

/* Whether a string value is one Redis stores as an integer, and which. */
static bool string_int(const struct kv_entry *e, int64_t *v)
{
	size_t n;
	const char *s = kv_entry_value(e, &n);
	return !kv_entry_str_enc(e) && n <= 20 && kv_str2ll(s, n, v);
}

static const char *string_encoding(const struct kv_entry *e)
{
	int64_t v;
	size_t n;
	if (kv_entry_raw(e))
		return "raw";
	if (string_int(e, &v))
		return "int";
	kv_entry_value(e, &n);
	return n <= 44 ? "embstr" : "raw";
}

void kv_object_encoding(struct kv_call *c)
{
	struct kv_entry *e = object_key(c);
	if (!e)
		return;
	const char *enc = kv_entry_type(e) == KV_STRING ? string_encoding(e) :
			  kv_types[kv_entry_type(e)]->encoding(kv_entry_obj(e));
	kv_reply_bulk(c->out, enc, strlen(enc));
}

/* 1, but for the small integers Redis shares (while no LRU policy asks
 * each key for an object of its own). */
void kv_object_refcount(struct kv_call *c)
{
	struct kv_entry *e = object_key(c);
	int64_t v;
	if (!e)
		return;
	bool lru = c->cfg && c->cfg->maxmemory && c->cfg->maxmemory_policy == KV_POLICY_ALLKEYS_LRU;
	bool shared = kv_entry_type(e) == KV_STRING && !lru && string_int(e, &v) && v >= 0 &&
		      v < SHARED_INTEGERS;
	kv_reply_int(c->out, shared ? SHARED_REFCOUNT : 1);
}

void kv_object_idletime(struct kv_call *c)
{
	struct kv_entry *e = object_key(c);
	if (e)
		kv_reply_int(c->out, (int64_t)(kv_entry_idle_ms(e, c->now) / 1000));
}

/* No LFU policy here: Redis's answer without one. */
void kv_object_freq(struct kv_call *c)
{
	if (object_key(c))
		kv_err(c, KV_ERR_NO_LFU);
}

void kv_object_help(struct kv_call *c)
{
	static const char *const lines[] = {
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>", "    How the value of <key> is stored.",
		"FREQ <key>", "    How often <key> is used (LFU policies only).",
		"IDLETIME <key>", "    Seconds since <key> was last used.",
		"REFCOUNT <key>", "    References to the value of <key>.",
		"HELP", "    This text.",
	};
	kv_reply_help(c, lines, sizeof(lines) / sizeof(lines[0]));
}
