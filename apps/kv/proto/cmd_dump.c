/* SPDX-License-Identifier: MIT */
/* DUMP and RESTORE: a key's value in Redis's serialized form (rdb.h), so
 * a value moves between percore kv and redis-server. RESTORE checks its
 * arguments in Redis 7.0's order (options, BUSYKEY, TTL, the payload's
 * version and CRC, then its contents). */
#include "cmd_impl.h"

#include <errno.h>

#include "rdb.h"

/* Redis's rdbcompression default: DUMP compresses long strings. */
#define DUMP_COMPRESS true
/* IDLETIME's ceiling in ms: idle times are kept in 32 bits of ms
 * (kv_entry_idle_ms), so longer ones read as this. */
#define IDLE_MAX_MS ((uint64_t)INT32_MAX)

void kv_dump(struct kv_call *c)
{
	struct kv_pos pos;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	struct kv_rdb_buf b = KV_RDB_BUF_INIT;
	struct kv_rdb_value v = { .type = e ? kv_entry_type(e) : KV_STRING };
	if (!e) {
		kv_reply_null(c->out);
		return;
	}
	if (v.type == KV_STRING)
		v.str = kv_entry_value(e, &v.len);
	else
		v.obj = kv_entry_obj(e);
	kv_rdb_dump(&b, &v, DUMP_COMPRESS);
	if (b.failed)
		kv_err_oom(c);
	else
		kv_reply_bulk(c->out, b.p, b.len);
	kv_rdb_buf_free(&b);
}

/* RESTORE's options after the payload. */
struct restore_opts {
	bool replace, absttl;
	int64_t idle;      /* seconds; -1: not given */
	int64_t freq;      /* -1: not given; accepted, not kept (no LFU) */
};

/* Reads the options as Redis does (IDLETIME and FREQ exclude each
 * other: the second is a syntax error); false after the error. */
static bool restore_opts(struct kv_call *c, struct restore_opts *o)
{
	*o = (struct restore_opts){ false, false, -1, -1 };
	for (uint32_t j = 4; j < c->argc; j++) {
		bool more = j + 1 < c->argc;
		if (kv_arg_is(c, j, "replace")) {
			o->replace = true;
		} else if (kv_arg_is(c, j, "absttl")) {
			o->absttl = true;
		} else if (kv_arg_is(c, j, "idletime") && more && o->freq == -1) {
			if (!kv_arg_ll(c, ++j, &o->idle))
				return false;
			if (o->idle < 0) {
				kv_err(c, KV_ERR_IDLETIME);
				return false;
			}
		} else if (kv_arg_is(c, j, "freq") && more && o->idle == -1) {
			if (!kv_arg_ll(c, ++j, &o->freq))
				return false;
			if (o->freq < 0 || o->freq > 255) {
				kv_err(c, KV_ERR_FREQ);
				return false;
			}
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* The payload's value, read with the limits the call runs with; false
 * after the error. */
static bool restore_value(struct kv_call *c, struct kv_rdb_value *v)
{
	const uint8_t *p = (const uint8_t *)c->argv[3];
	size_t n = c->argl[3];
	if (!kv_rdb_dump_check(p, n)) {
		kv_err(c, KV_ERR_DUMP_PAYLOAD);
		return false;
	}
	struct kv_rdb_reader r = { .p = p, .len = n - 10 };
	struct kv_rdb_limits lim = kv_rdb_default_limits;
	kv_call_limits(c, &lim.coll);
	int err = kv_rdb_get_value(&r, &lim, v);
	if (err == -ENOMEM) {
		kv_err_oom(c);
		return false;
	}
	/* a type this server has no row for yet is as foreign as a bad one */
	if (!err && v->type != KV_STRING && !kv_types[v->type]) {
		kv_rdb_value_free(v);
		err = -ENOTSUP;
	}
	if (err)
		kv_err(c, KV_ERR_BAD_DATA);
	return err == 0;
}

/* Stores v (taking it) under pos's key with expiry at (KV_NO_EXPIRE:
 * none); false after the error, v freed either way. */
static bool restore_store(struct kv_call *c, struct kv_pos *pos, struct kv_rdb_value *v,
			  int64_t at)
{
	int err = v->type == KV_STRING ? kv_db_store(c->db, pos, v->str, v->len, at) :
					 kv_db_store_obj(c->db, pos, v->type, v->obj, at);
	if (err) {
		kv_rdb_value_free(v);
		kv_err_oom(c);
		return false;
	}
	if (v->type == KV_STRING)
		kv_rdb_value_free(v);   /* copied into the entry */
	return true;
}

void kv_restore(struct kv_call *c)
{
	struct restore_opts o;
	struct kv_pos pos;
	struct kv_rdb_value v;
	int64_t ttl;
	if (!restore_opts(c, &o))
		return;
	struct kv_entry *e = kv_arg_key(c, 1, &pos);
	if (e && !o.replace) {
		kv_err(c, KV_ERR_BUSYKEY);
		return;
	}
	if (!kv_arg_ll(c, 2, &ttl))
		return;
	if (ttl < 0) {
		kv_err(c, KV_ERR_TTL);
		return;
	}
	if (!restore_value(c, &v))
		return;
	int64_t at = ttl && !o.absttl ? ttl + c->now : ttl;
	if (ttl && at <= c->now) {
		/* already past: the key ends up absent, as in Redis */
		if (e)
			kv_db_erase(c->db, &pos);
		kv_rdb_value_free(&v);
		kv_reply_status(c->out, "OK");
		return;
	}
	if (!restore_store(c, &pos, &v, ttl ? at : KV_NO_EXPIRE))
		return;
	if (o.idle >= 0) {
		uint64_t ms = (uint64_t)o.idle > IDLE_MAX_MS / 1000 ? IDLE_MAX_MS :
								     (uint64_t)o.idle * 1000;
		struct kv_entry *ne = kv_db_peek(c->db, c->argv[1], c->argl[1], c->now, &pos);
		if (ne)
			kv_entry_set_idle(ne, c->now, ms);
	}
	kv_reply_status(c->out, "OK");
}
