/* SPDX-License-Identifier: MIT */
/* Connection state, the settings' defaults and the text builder INFO and
 * CLIENT use: see conn.h. */
#include "conn.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "num.h"
#include "pubsub.h"
#include "txn.h"

void kv_conn_init(struct kv_conn *c, uint64_t id, int64_t now)
{
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->ctime = now;
	c->last_active = now;
	c->proto = 2;
	c->fd = -1;
	c->last_cmd = "NULL";
}

void kv_conn_fini(struct kv_conn *c)
{
	free(c->name);
	free(c->lib_name);
	free(c->lib_ver);
	c->name = c->lib_name = c->lib_ver = NULL;
	kv_txn_free(c);
	kv_pubsub_conn_fini(c);
}

int kv_conn_set_str(char **field, const char *s, size_t n)
{
	char *v = NULL;
	if (n && !(v = strndup(s, n)))
		return -ENOMEM;
	free(*field);
	*field = v;
	return 0;
}

void kv_config_init(struct kv_config *cfg)
{
	*cfg = (struct kv_config){
		.port = 6379,
		.shards = 1,
		.maxmemory = 0,
		.maxmemory_policy = KV_POLICY_NOEVICTION,
		.maxmemory_samples = 5,
		.proto_max_bulk_len = KV_RESP_MAX_BULK_DEFAULT,
		.max_multibulk_len = KV_RESP_MAX_ARGS_DEFAULT,
		.maxclients = 10000,
		.client_output_limit = 0,
		.pubsub_output_limit = 32ull << 20,
		.pubsub_soft_limit = 8ull << 20,
		.pubsub_soft_seconds = 60,
		.timeout = 0,
		.tcp_keepalive = 300,
		.hz = 10,
		.hash_max_listpack_entries = 512,
		.hash_max_listpack_value = 64,
		.set_max_intset_entries = 512,
		.list_max_listpack_size = -2,
		.zset_max_listpack_entries = 128,
		.zset_max_listpack_value = 64,
	};
	strcpy(cfg->bind, "* -::*");
	strcpy(cfg->dbfilename, "dump.rdb");
	strcpy(cfg->appendfilename, "appendonly.aof");
	cfg->appendfsync = KV_FSYNC_EVERYSEC;
	cfg->aof_load_truncated = true;
	cfg->auto_aof_rewrite_percentage = 100;
	cfg->auto_aof_rewrite_min_size = 64ull << 20;
	if (!getcwd(cfg->dir, sizeof(cfg->dir)))
		strcpy(cfg->dir, ".");
	cfg->rdbcompression = true;
	cfg->rdbchecksum = true;
}

/* The next space-separated word of s[*at..n): its start and length, 0
 * at the end. */
static size_t next_word(const char *s, size_t n, size_t *at, const char **w)
{
	size_t len = 0;
	while (*at < n && (s[*at] == ' ' || s[*at] == '\t'))
		(*at)++;
	*w = s + *at;
	while (*at < n && s[*at] != ' ' && s[*at] != '\t') {
		(*at)++;
		len++;
	}
	return len;
}

bool kv_config_save_parse(struct kv_config *cfg, const char *s, size_t n)
{
	struct kv_save_rule rules[KV_SAVE_RULES_MAX];
	uint32_t nrules = 0;
	size_t at = 0, len;
	const char *w;

	while ((len = next_word(s, n, &at, &w))) {
		int64_t secs, changes;
		const char *w2;
		size_t len2 = next_word(s, n, &at, &w2);
		if (!len2 || nrules == KV_SAVE_RULES_MAX || !kv_str2ll(w, len, &secs) ||
		    !kv_str2ll(w2, len2, &changes) || secs < 1 || secs > UINT32_MAX ||
		    changes < 0 || changes > INT32_MAX)
			return false;
		rules[nrules++] = (struct kv_save_rule){ (uint32_t)secs, (uint32_t)changes };
	}
	memcpy(cfg->save, rules, nrules * sizeof(rules[0]));
	cfg->nsave = nrules;
	return true;
}

void kv_config_save_format(const struct kv_config *cfg, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < cfg->nsave && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%u %u", i ? " " : "",
					cfg->save[i].secs, cfg->save[i].changes);
}

struct kv_resp_limits kv_config_resp_limits(const struct kv_config *cfg)
{
	return (struct kv_resp_limits){ .max_bulk = cfg->proto_max_bulk_len,
					.max_args = cfg->max_multibulk_len };
}

/* Makes room for n more bytes and a NUL; false when out of memory. */
static bool text_room(struct kv_text *t, size_t n)
{
	if (t->failed)
		return false;
	if (t->cap - t->len > n)
		return true;
	size_t cap = t->cap ? t->cap : 256;
	while (cap - t->len <= n)
		cap *= 2;
	char *b = realloc(t->buf, cap);
	if (!b) {
		t->failed = true;
		return false;
	}
	t->buf = b;
	t->cap = cap;
	return true;
}

void kv_text_printf(struct kv_text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !text_room(t, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void kv_text_free(struct kv_text *t)
{
	free(t->buf);
	*t = (struct kv_text){ 0 };
}

/* Redis's age and idle: whole seconds, never negative. */
static long long secs_since(int64_t then, int64_t now)
{
	return now > then ? (long long)((now - then) / 1000) : 0;
}

/* Redis 7.0's flags letters, in its order, for the states kept here:
 * subscribed (P), inside MULTI (x), waiting on keys (b), no-evict (e);
 * N for none. */
static void client_flags(const struct kv_conn *c, char *out)
{
	char *p = out;

	if (kv_pubsub_conn_subs(c))
		*p++ = 'P';
	if (kv_txn_in_multi(c))
		*p++ = 'x';
	if (c->flags & KV_CONN_BLOCKED)
		*p++ = 'b';
	if (c->flags & KV_CONN_NO_EVICT)
		*p++ = 'e';
	if (p == out)
		*p++ = 'N';
	*p = 0;
}

/* Redis's events: r while it is read, w while it waits to write. */
static const char *client_events(const struct kv_conn_buffers *b)
{
	static const char *const names[] = { "", "w", "r", "rw" };

	return names[(b->reading ? 2 : 0) + (b->writing ? 1 : 0)];
}

void kv_client_info_line(struct kv_text *t, const struct kv_conn *c, int64_t now,
			 size_t argv_mem)
{
	struct kv_conn_buffers b = { .reading = true };
	size_t multi_mem = kv_txn_mem(c);
	char flags[8];

	if (c->buffers)
		c->buffers(c, &b);
	client_flags(c, flags);
	kv_text_printf(t,
		       "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=%d "
		       "sub=%zu psub=%zu ssub=0 multi=%lld qbuf=%zu qbuf-free=%zu argv-mem=%zu "
		       "multi-mem=%zu rbs=%zu rbp=%zu obl=%zu oll=%zu omem=%zu tot-mem=%zu "
		       "events=%s cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s\n",
		       (unsigned long long)c->id, c->addr, c->laddr, c->fd, c->name ? c->name : "",
		       secs_since(c->ctime, now), secs_since(c->last_active, now), flags, c->db,
		       kv_pubsub_conn_count(c, false), kv_pubsub_conn_count(c, true),
		       kv_txn_in_multi(c) ? (long long)c->txn->n : -1LL, b.qbuf, b.qbuf_free,
		       argv_mem, multi_mem, b.rbs, b.rbp, b.obl, b.oll, b.omem,
		       b.mem + argv_mem + multi_mem, client_events(&b), c->last_cmd, c->proto,
		       c->lib_name ? c->lib_name : "", c->lib_ver ? c->lib_ver : "");
}
