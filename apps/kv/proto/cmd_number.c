/* SPDX-License-Identifier: MIT */
/* Counters: INCR, INCRBY, DECR, DECRBY on 64-bit integers and
 * INCRBYFLOAT on long doubles, as Redis 7.0 does them: the value is a
 * string read with Redis's rules, the result is stored as its decimal
 * text, and the key keeps its expiry. */
#include "cmd_impl.h"

#include <math.h>

#include "num.h"

static void incr_by(struct kv_call *c, int64_t by)
{
	struct kv_pos pos;
	int64_t v = 0;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (kv_wrongtype(c, e, KV_STRING))
		return;
	if (e) {
		size_t n;
		const char *s = kv_entry_value(e, &n);
		if (!kv_str2ll(s, n, &v)) {
			kv_err(c, KV_ERR_NOT_INT);
			return;
		}
	}
	if ((by < 0 && v < 0 && by < INT64_MIN - v) || (by > 0 && v > 0 && by > INT64_MAX - v)) {
		kv_err(c, KV_ERR_OVERFLOW);
		return;
	}
	v += by;
	char text[24];
	size_t n = kv_ll2str(text, v);
	if (kv_db_store(c->db, &pos, text, n, KV_KEEP_TTL))
		kv_err_oom(c);
	else
		kv_reply_int(c->out, v);
}

void kv_incr(struct kv_call *c)
{
	incr_by(c, 1);
}

void kv_decr(struct kv_call *c)
{
	incr_by(c, -1);
}

void kv_incrby(struct kv_call *c)
{
	int64_t by;
	if (kv_arg_ll(c, 2, &by))
		incr_by(c, by);
}

void kv_decrby(struct kv_call *c)
{
	int64_t by;
	if (!kv_arg_ll(c, 2, &by))
		return;
	if (by == INT64_MIN) {
		kv_err(c, KV_ERR_DECR_OVERFLOW);
		return;
	}
	incr_by(c, -by);
}

/* The key's value, then the increment, each refused as "not a valid
 * float"; a result that is not finite is refused too. */
void kv_incrbyfloat(struct kv_call *c)
{
	struct kv_pos pos;
	long double v = 0, by;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	size_t n;
	if (kv_wrongtype(c, e, KV_STRING))
		return;
	if (e) {
		const char *s = kv_entry_value(e, &n);
		if (!kv_str2ld(s, n, &v)) {
			kv_err(c, KV_ERR_NOT_FLOAT);
			return;
		}
	}
	if (!kv_str2ld(c->argv[2], c->argl[2], &by)) {
		kv_err(c, KV_ERR_NOT_FLOAT);
		return;
	}
	v += by;
	if (!isfinite(v)) {
		kv_err(c, KV_ERR_NAN);
		return;
	}
	char text[KV_LD_MAX_CHARS + 1];
	n = kv_ld2str(text, v);
	if (kv_db_store(c->db, &pos, text, n, KV_KEEP_TTL)) {
		kv_err_oom(c);
		return;
	}
	/* Redis keeps the text it made, never an integer, even for "3" */
	kv_entry_set_str_enc(pos.entry, KV_STR_NOINT);
	kv_reply_bulk(c->out, text, n);
}
