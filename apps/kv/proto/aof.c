/* SPDX-License-Identifier: MIT */
/* The append-only file's format (aof.h): writes in their effective form,
 * and the reader that replays a file. */
#include "aof.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmd_impl.h"
#include "num.h"
#include "rdb.h"
#include "resp.h"

/* The most arguments an effective form adds to or rebuilds from a
 * command (SET's options, SREM's members come from the reply). */
#define FORM_MAX 16u

void kv_aof_command(struct kv_reply *rec, uint32_t argc, const char *const *argv,
		    const size_t *argl)
{
	kv_reply_array(rec, argc);
	for (uint32_t i = 0; i < argc; i++)
		kv_reply_bulk(rec, argv[i], argl[i]);
}

/* A command of literal words and texts. */
static void words(struct kv_reply *rec, uint32_t argc, const char *const *argv,
		  const size_t *argl)
{
	size_t len[FORM_MAX];

	for (uint32_t i = 0; i < argc; i++)
		len[i] = argl ? argl[i] : strlen(argv[i]);
	kv_aof_command(rec, argc, argv, len);
}

/* ---- the reply a command wrote -------------------------------------------- */

/* A reply's line at *p (within end): its type byte, the number after it,
 * *p moved past its CRLF. False when it is not one. */
static bool reply_line(const char **p, const char *end, char *type, int64_t *n)
{
	const char *q = *p, *nl = memchr(q, '\r', (size_t)(end - q));

	if (!nl || nl + 1 >= end || q + 1 > nl)
		return false;
	*type = *q;
	if (!kv_str2ll(q + 1, (size_t)(nl - q - 1), n))
		*n = 0;
	*p = nl + 2;
	return true;
}

/* The bulk string at *p, moved past. False when it is not one (a nil). */
static bool reply_bulk(const char **p, const char *end, const char **s, size_t *len)
{
	char type;
	int64_t n;

	if (!reply_line(p, end, &type, &n) || type != '$' || n < 0 || *p + n + 2 > end)
		return false;
	*s = *p;
	*len = (size_t)n;
	*p += n + 2;
	return true;
}

/* SPOP's members, from its reply (a bulk or an array of them), as SREM:
 * a random pick would replay differently. */
static void spop_form(struct kv_reply *rec, const struct kv_call *c, const char *p,
		      const char *end)
{
	const char *s;
	size_t len;
	int64_t n = 1;
	char type = *p;

	if (type == '*' && (!reply_line(&p, end, &type, &n) || n <= 0))
		return;
	kv_reply_array(rec, (size_t)n + 2);
	kv_reply_bulk(rec, "SREM", 4);
	kv_reply_bulk(rec, c->argv[1], c->argl[1]);
	for (int64_t i = 0; i < n; i++) {
		if (!reply_bulk(&p, end, &s, &len)) { /* cannot be: the reply is ours */
			rec->failed = true;
			return;
		}
		kv_reply_bulk(rec, s, len);
	}
}

/* ---- expiry made absolute -------------------------------------------------- */

/* The absolute ms an expiry option names: unit 1000 for seconds, rel for
 * a time from now. False when it does not fit (the command refused it). */
static bool abs_ms(const struct kv_call *c, const char *p, size_t len, int64_t unit, bool rel,
		   int64_t *out)
{
	int64_t v;

	if (!kv_str2ll(p, len, &v) || __builtin_mul_overflow(v, unit, &v) ||
	    (rel && __builtin_add_overflow(v, c->now, &v)))
		return false;
	*out = v;
	return true;
}

/* PEXPIREAT key ms. */
static void pexpireat(struct kv_reply *rec, const struct kv_call *c, int64_t ms)
{
	char t[24];
	const char *argv[] = { "PEXPIREAT", c->argv[1], t };
	size_t argl[] = { 9, c->argl[1], (size_t)snprintf(t, sizeof(t), "%lld", (long long)ms) };

	kv_aof_command(rec, 3, argv, argl);
}

/* An expiry option at argument i (EX, PX, EXAT, PXAT; value after it):
 * its absolute time. False when i is not one. */
static bool expiry_option(const struct kv_call *c, uint32_t i, int64_t *ms)
{
	static const struct {
		const char *name;
		int64_t unit;
		bool rel;
	} opts[] = { { "ex", 1000, true }, { "px", 1, true }, { "exat", 1000, false },
		     { "pxat", 1, false } };

	if (i + 1 >= c->argc)
		return false;
	for (size_t k = 0; k < sizeof(opts) / sizeof(opts[0]); k++)
		if (kv_arg_is(c, i, opts[k].name))
			return abs_ms(c, c->argv[i + 1], c->argl[i + 1], opts[k].unit, opts[k].rel,
				      ms);
	return false;
}

/* SET key value [options]: its expiry option, when it has one, as PXAT. */
static void set_form(struct kv_reply *rec, const struct kv_call *c)
{
	const char *argv[FORM_MAX];
	size_t argl[FORM_MAX];
	char t[24];
	uint32_t n = 0;
	int64_t ms;
	bool has = false;

	if (c->argc + 2 > FORM_MAX)
		goto as_is;
	for (uint32_t i = 0; i < c->argc; i++) {
		if (i >= 3 && expiry_option(c, i, &ms)) {
			has = true;
			i++;
			continue;
		}
		argv[n] = c->argv[i];
		argl[n++] = c->argl[i];
	}
	if (!has)
		goto as_is;
	argv[n] = "PXAT";
	argl[n++] = 4;
	argv[n] = t;
	argl[n++] = (size_t)snprintf(t, sizeof(t), "%lld", (long long)ms);
	kv_aof_command(rec, n, argv, argl);
	return;
as_is:
	kv_aof_command(rec, c->argc, c->argv, c->argl);
}

/* SETEX, PSETEX key time value: SET key value PXAT ms. */
static void setex_form(struct kv_reply *rec, const struct kv_call *c, int64_t unit)
{
	char t[24];
	int64_t ms;
	const char *argv[] = { "SET", c->argv[1], c->argv[3], "PXAT", t };
	size_t argl[] = { 3, c->argl[1], c->argl[3], 4, 0 };

	if (!abs_ms(c, c->argv[2], c->argl[2], unit, true, &ms))
		return;
	argl[4] = (size_t)snprintf(t, sizeof(t), "%lld", (long long)ms);
	kv_aof_command(rec, 5, argv, argl);
}

/* GETEX key [option]: PERSIST or PEXPIREAT, or nothing (a read). */
static void getex_form(struct kv_reply *rec, const struct kv_call *c, const char *reply)
{
	int64_t ms;

	if (c->argc < 3 || reply[0] != '$' || reply[1] == '-')
		return;
	if (kv_arg_is(c, 2, "persist"))
		words(rec, 2, (const char *const[]){ "PERSIST", c->argv[1] },
		      (const size_t[]){ 7, c->argl[1] });
	else if (expiry_option(c, 2, &ms))
		pexpireat(rec, c, ms);
}

/* RESTORE key ttl payload [REPLACE] [ABSTTL] ...: a relative ttl made
 * absolute. */
static void restore_form(struct kv_reply *rec, const struct kv_call *c)
{
	const char *argv[FORM_MAX];
	size_t argl[FORM_MAX];
	char t[24];
	int64_t ms;

	for (uint32_t i = 4; i < c->argc; i++)
		if (kv_arg_is(c, i, "absttl"))
			goto as_is;
	if (c->argc + 1 > FORM_MAX || (c->argl[2] == 1 && c->argv[2][0] == '0') ||
	    !abs_ms(c, c->argv[2], c->argl[2], 1, true, &ms))
		goto as_is;
	memcpy(argv, c->argv, c->argc * sizeof(*argv));
	memcpy(argl, c->argl, c->argc * sizeof(*argl));
	argv[2] = t;
	argl[2] = (size_t)snprintf(t, sizeof(t), "%lld", (long long)ms);
	argv[c->argc] = "ABSTTL";
	argl[c->argc] = 6;
	kv_aof_command(rec, c->argc + 1, argv, argl);
	return;
as_is:
	kv_aof_command(rec, c->argc, c->argv, c->argl);
}

/* EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT key time [flag]: answered 1, the
 * time set as PEXPIREAT (the flag held). */
static void expire_form(struct kv_reply *rec, const struct kv_call *c, const char *reply,
			int64_t unit, bool rel)
{
	int64_t ms;

	if (reply[0] == ':' && reply[1] == '1' && abs_ms(c, c->argv[2], c->argl[2], unit, rel, &ms))
		pexpireat(rec, c, ms);
}

/* INCRBYFLOAT and HINCRBYFLOAT: the value they computed, set. */
static void float_form(struct kv_reply *rec, const struct kv_call *c, const char *p,
		       const char *end, bool hash)
{
	const char *s;
	size_t len;

	if (!reply_bulk(&p, end, &s, &len))
		return;
	if (hash)
		words(rec, 4, (const char *const[]){ "HSET", c->argv[1], c->argv[2], s },
		      (const size_t[]){ 4, c->argl[1], c->argl[2], len });
	else
		words(rec, 4, (const char *const[]){ "SET", c->argv[1], s, "KEEPTTL" },
		      (const size_t[]){ 3, c->argl[1], len, 7 });
}

void kv_aof_effect(struct kv_reply *rec, const struct kv_call *c, size_t mark)
{
	bool replied = c->out->len > mark + 1;
	const char *reply = replied ? c->out->buf + mark : "", *end = reply + (c->out->len - mark);
	const char *name = c->cmd->name;

	/* refused; or no reply where one was due: nothing ran (a typed
	 * command's result goes to its part, only an error to out) */
	if (replied ? reply[0] == '-' : !c->part)
		return;
	if (!replied)
		end = reply;
	if (!strcmp(name, "set"))
		set_form(rec, c);
	else if (!strcmp(name, "setex"))
		setex_form(rec, c, 1000);
	else if (!strcmp(name, "psetex"))
		setex_form(rec, c, 1);
	else if (!strcmp(name, "getex"))
		getex_form(rec, c, reply);
	else if (!strcmp(name, "expire"))
		expire_form(rec, c, reply, 1000, true);
	else if (!strcmp(name, "pexpire"))
		expire_form(rec, c, reply, 1, true);
	else if (!strcmp(name, "expireat"))
		expire_form(rec, c, reply, 1000, false);
	else if (!strcmp(name, "pexpireat"))
		expire_form(rec, c, reply, 1, false);
	else if (!strcmp(name, "spop"))
		spop_form(rec, c, reply, end);
	else if (!strcmp(name, "incrbyfloat"))
		float_form(rec, c, reply, end, false);
	else if (!strcmp(name, "hincrbyfloat"))
		float_form(rec, c, reply, end, true);
	else if (!strcmp(name, "restore"))
		restore_form(rec, c);
	else
		kv_aof_command(rec, c->argc, c->argv, c->argl);
}

/* ---- reading a file --------------------------------------------------------- */

struct walk {
	const char *buf;
	size_t len;
	const struct kv_aof_walk *w;
	struct kv_parser p;
	char *why;
	size_t whylen;
};

static bool is(const struct kv_resp_req *r, const char *word)
{
	size_t n = strlen(word);

	return r->argc && r->argl[0] == n && !strncasecmp(r->argv[0], word, n);
}

/* The command at off: its length (0: torn, cut short by the file's end;
 * -EBADMSG: not a RESP array; -ENOMEM). */
static long next_cmd(struct walk *k, size_t off, struct kv_resp_req *r)
{
	long n;

	if (k->buf[off] != '*') {
		snprintf(k->why, k->whylen, "not a RESP array (byte 0x%02x)",
			 (unsigned char)k->buf[off]);
		return -EBADMSG;
	}
	n = kv_resp_parse(&k->p, k->buf + off, k->len - off, r);
	if (n == -EPROTO) {
		snprintf(k->why, k->whylen, "%s", k->p.error);
		return -EBADMSG;
	}
	if (n > 0 && !r->argc) {
		snprintf(k->why, k->whylen, "an empty command");
		return -EBADMSG;
	}
	if (n == 0)
		kv_resp_reset(&k->p);
	return n;
}

/* The group whose MULTI ends at off: applied or skipped whole, once its
 * EXEC is found. Returns the offset after the EXEC, 0 when the file ends
 * first (torn), or a negative errno with *bad at the damaged record. */
static long walk_group(struct walk *k, size_t off, size_t *bad)
{
	struct kv_resp_req r;
	size_t at = off, first = off;
	char id[64];
	size_t idlen = 0;
	uint64_t shards = 0;
	bool marked = false, apply = true;
	long n;

	/* pass 1: find the EXEC and the marker */
	for (;; at += (size_t)n) {
		if (at == k->len)
			return 0;
		n = next_cmd(k, at, &r);
		if (n <= 0) {
			*bad = at;
			return n;
		}
		if (is(&r, "exec"))
			break;
		if (is(&r, "multi") || (is(&r, KV_AOF_TX_MARK) && (at != off || r.argc != 3))) {
			snprintf(k->why, k->whylen, "%s inside MULTI",
				 is(&r, "multi") ? "MULTI" : "a misplaced " KV_AOF_TX_MARK);
			*bad = at;
			return -EBADMSG;
		}
		if (at == off && is(&r, KV_AOF_TX_MARK)) {
			int64_t s;

			if (r.argl[1] > sizeof(id) || !kv_str2ll(r.argv[2], r.argl[2], &s) || s < 1) {
				snprintf(k->why, k->whylen, "a bad " KV_AOF_TX_MARK " marker");
				*bad = at;
				return -EBADMSG;
			}
			memcpy(id, r.argv[1], r.argl[1]);
			idlen = r.argl[1];
			shards = (uint64_t)s;
			marked = true;
			first = at + (size_t)n;
		}
	}
	if (marked && k->w->group)
		apply = k->w->group(k->w->arg, id, idlen, shards);
	/* pass 2: its commands */
	for (size_t p = first; apply && p < at; p += (size_t)n) {
		n = next_cmd(k, p, &r);
		k->w->apply(k->w->arg, r.argc, r.argv, r.argl);
	}
	n = next_cmd(k, at, &r); /* the EXEC */
	return (long)(at + (size_t)n);
}

size_t kv_aof_logical_len(const char *buf, size_t len)
{
	while (len && buf[len - 1] == KV_AOF_PAD)
		len--;
	return len;
}

int kv_aof_walk(const char *buf, size_t len, const struct kv_aof_walk *w, size_t *end, char *why,
		size_t whylen)
{
	struct walk k = { .buf = buf, .len = len, .w = w, .why = why, .whylen = whylen };
	struct kv_resp_req r;
	size_t off = 0;
	int rc = 0;

	if (kv_resp_init(&k.p, NULL))
		return -ENOMEM;
	while (off < len) {
		long n = next_cmd(&k, off, &r);

		if (n <= 0) {
			rc = (int)n;
			break;
		}
		if (is(&r, "exec") || is(&r, KV_AOF_TX_MARK)) {
			snprintf(why, whylen, "%s without MULTI", is(&r, "exec") ? "EXEC" :
				 KV_AOF_TX_MARK);
			rc = -EBADMSG;
			break;
		}
		if (is(&r, "multi")) {
			size_t bad = off;
			long g = walk_group(&k, off + (size_t)n, &bad);

			if (g <= 0) {
				rc = (int)g;
				if (g < 0)
					off = bad;
				break;
			}
			off = (size_t)g;
			continue;
		}
		w->apply(w->arg, r.argc, r.argv, r.argl);
		off += (size_t)n;
	}
	kv_resp_free(&k.p);
	*end = off;
	return rc;
}

/* ---- a key whole -------------------------------------------------------------- */

void kv_aof_key(struct kv_reply *rec, const struct kv_entry *e)
{
	size_t klen, vlen;
	const char *key = kv_entry_key(e, &klen);
	int64_t exp = kv_entry_expire(e);
	char t[24];
	size_t tlen = (size_t)snprintf(t, sizeof(t), "%lld", (long long)(exp > 0 ? exp : 0));
	struct kv_rdb_buf b = KV_RDB_BUF_INIT;
	struct kv_rdb_value v = { .type = kv_entry_type(e) };

	if (v.type == KV_STRING) {
		const char *val = kv_entry_value(e, &vlen);

		words(rec, exp > 0 ? 5 : 3, (const char *const[]){ "SET", key, val, "PXAT", t },
		      (const size_t[]){ 3, klen, vlen, 4, tlen });
		return;
	}
	v.obj = kv_entry_obj(e);
	kv_rdb_dump(&b, &v, true);
	if (b.failed)
		rec->failed = true;
	else
		words(rec, 6, (const char *const[]){ "RESTORE", key, t, (const char *)b.p, "REPLACE",
						   "ABSTTL" },
		      (const size_t[]){ 7, klen, tlen, b.len, 7, 6 });
	kv_rdb_buf_free(&b);
}

void kv_aof_del(struct kv_reply *rec, const char *key, size_t len)
{
	words(rec, 2, (const char *const[]){ "DEL", key }, (const size_t[]){ 3, len });
}
