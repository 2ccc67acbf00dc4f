/* SPDX-License-Identifier: MIT */
/* MULTI, EXEC, DISCARD, WATCH, UNWATCH on one keyspace, and the queue and
 * watch state the sharded server's EXEC runs from (txn.h). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_impl.h"
#include "keyhash.h"
#include "txn.h"

#define STAMPS 16384u /* counters: a power of two */

static _Atomic uint64_t stamps[STAMPS];
static _Atomic uint64_t flushes;  /* bumped by a flush: every key moved */
static _Atomic uint64_t watchers; /* connections watching keys */

/* A key's stamp: its counter and the flush count (together, any move). */
static uint64_t stamp_of(const char *key, size_t len)
{
	uint64_t h = kv_keyhash(key, len);

	return atomic_load(&stamps[h & (STAMPS - 1)]) + (atomic_load(&flushes) << 40);
}

void kv_txn_touch_hash(uint64_t hash)
{
	/* seq_cst: a write either sees a watcher that counted itself first,
	 * or came before that watcher read the stamp */
	if (atomic_load(&watchers))
		atomic_fetch_add_explicit(&stamps[hash & (STAMPS - 1)], 1, memory_order_seq_cst);
}

void kv_txn_touch(const char *key, size_t len)
{
	if (atomic_load(&watchers))
		kv_txn_touch_hash(kv_keyhash(key, len));
}

void kv_txn_touch_all(void)
{
	if (atomic_load(&watchers))
		atomic_fetch_add(&flushes, 1);
}

void kv_txn_touch_cmd(const struct kv_call *c, size_t mark)
{
	uint32_t n;

	if (!(c->cmd->flags & KV_CMD_WRITE) || !atomic_load(&watchers))
		return;
	if (c->out->len > mark && c->out->buf[mark] == '-')
		return; /* refused: nothing changed */
	if (!c->cmd->first_key) {
		kv_txn_touch_all(); /* FLUSHALL, FLUSHDB */
		return;
	}
	n = kv_cmd_nkeys(c->cmd, c->argc, c->argv, c->argl);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(c->cmd, k, c->argc, c->argv, c->argl);

		kv_txn_touch(c->argv[i], c->argl[i]);
	}
}

bool kv_txn_watch_ok(const struct kv_txn *t)
{
	for (uint32_t i = 0; t && i < t->nwatch; i++)
		if (stamp_of(t->w[i].key, t->w[i].len) != t->w[i].stamp)
			return false;
	return true;
}

bool kv_txn_is(const struct kv_cmd *cmd, const char *name)
{
	return cmd && !strcmp(cmd->name, name);
}

bool kv_txn_is_watch(const struct kv_cmd *cmd)
{
	return cmd && cmd->fn == kv_watch;
}

bool kv_txn_control(const struct kv_cmd *cmd)
{
	return cmd->fn == kv_multi || cmd->fn == kv_exec || cmd->fn == kv_discard ||
	       cmd->fn == kv_watch || cmd->fn == kv_quit || cmd->fn == kv_reset;
}

/* The connection's state, made on first use; NULL when out of memory. */
static struct kv_txn *state(struct kv_conn *conn)
{
	if (!conn->txn)
		conn->txn = calloc(1, sizeof(*conn->txn));
	return conn->txn;
}

/* The size of a queued request's one allocation. */
static size_t req_size(uint32_t argc, const size_t *argl)
{
	size_t bytes = sizeof(struct kv_txn_req) + argc * (sizeof(char *) + sizeof(size_t)) + 1;

	for (uint32_t i = 0; i < argc; i++)
		bytes += argl[i];
	return bytes;
}

size_t kv_txn_mem(const struct kv_conn *conn)
{
	const struct kv_txn *t = conn->txn;
	size_t bytes = 0;

	for (uint32_t i = 0; t && i < t->n; i++)
		bytes += req_size(t->q[i]->argc, t->q[i]->argl);
	return bytes;
}

/* A copy of the request in one allocation. */
static struct kv_txn_req *req_copy(const struct kv_call *c)
{
	struct kv_txn_req *r;
	char *p;

	r = malloc(req_size(c->argc, c->argl));
	if (!r)
		return NULL;
	r->cmd = kv_cmd_placed(kv_cmd_lookup(c->argv[0], c->argl[0]), c->argc, c->argv, c->argl);
	r->argc = c->argc;
	r->argv = (const char **)(r + 1);
	r->argl = (size_t *)(r->argv + c->argc);
	p = (char *)(r->argl + c->argc);
	for (uint32_t i = 0; i < c->argc; i++) {
		memcpy(p, c->argv[i], c->argl[i]);
		r->argv[i] = p;
		r->argl[i] = c->argl[i];
		p += c->argl[i];
	}
	return r;
}

bool kv_txn_queue(struct kv_call *c)
{
	struct kv_txn *t = c->conn ? c->conn->txn : NULL;
	struct kv_txn_req *r;

	if (!t || !t->multi || kv_txn_control(c->cmd))
		return false;
	if (c->cmd->multi == KV_MULTI_SAVE) { /* the one Redis 7.0 refuses in MULTI */
		t->dirty = true;
		kv_err(c, KV_ERR_NOT_IN_MULTI);
		return true;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 8;
		struct kv_txn_req **q = realloc(t->q, cap * sizeof(*q));

		if (!q)
			goto oom;
		t->q = q;
		t->cap = cap;
	}
	r = req_copy(c);
	if (!r)
		goto oom;
	t->q[t->n++] = r;
	kv_reply_status(c->out, "QUEUED");
	return true;
oom:
	t->dirty = true;
	kv_err_oom(c);
	return true;
}

void kv_txn_refused(struct kv_call *c, size_t mark)
{
	const char *err;
	size_t len;

	if (kv_txn_in_multi(c->conn))
		c->conn->txn->dirty = true;
	if (!c->cmd || c->cmd->fn != kv_exec || c->out->len < mark + 7)
		return;
	/* "-ERR text\r\n" becomes "-EXECABORT ...because of: text\r\n" */
	err = c->out->buf + mark + 5;
	len = c->out->len - mark - 7;
	char text[len + 1];

	memcpy(text, err, len);
	text[len] = '\0';
	c->out->len = mark;
	kv_reply_errorf(c->out, KV_ERR_EXECABORT_FMT, text);
	if (c->conn)
		kv_txn_reset(c->conn);
}

/* Ends MULTI: the queue is dropped. */
static void discard_queue(struct kv_txn *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->q[i]);
	t->n = 0;
	t->multi = t->dirty = false;
}

/* Forgets the watched keys. */
static void unwatch_all(struct kv_txn *t)
{
	if (t->nwatch)
		atomic_fetch_sub(&watchers, 1);
	for (uint32_t i = 0; i < t->nwatch; i++)
		free(t->w[i].key);
	t->nwatch = 0;
}

void kv_txn_reset(struct kv_conn *conn)
{
	if (!conn->txn)
		return;
	discard_queue(conn->txn);
	unwatch_all(conn->txn);
}

void kv_txn_free(struct kv_conn *conn)
{
	kv_txn_reset(conn);
	if (conn->txn) {
		free(conn->txn->q);
		free(conn->txn->w);
		free(conn->txn);
		conn->txn = NULL;
	}
}

void kv_multi(struct kv_call *c)
{
	struct kv_txn *t;

	if (!c->conn) {
		kv_err(c, KV_ERR_NO_CONN);
		return;
	}
	if (kv_txn_in_multi(c->conn)) {
		kv_err(c, KV_ERR_MULTI_NESTED);
		return;
	}
	t = state(c->conn);
	if (!t) {
		kv_err_oom(c);
		return;
	}
	t->multi = true;
	kv_reply_status(c->out, "OK");
}

void kv_discard(struct kv_call *c)
{
	if (!kv_txn_in_multi(c->conn)) {
		kv_err(c, KV_ERR_DISCARD_NO_MULTI);
		return;
	}
	kv_txn_reset(c->conn);
	kv_reply_status(c->out, "OK");
}

bool kv_txn_exec_check(struct kv_call *c)
{
	if (!kv_txn_in_multi(c->conn)) {
		kv_err(c, KV_ERR_EXEC_NO_MULTI);
		return false;
	}
	if (c->conn->txn->dirty) {
		kv_txn_reset(c->conn);
		kv_err(c, KV_ERR_EXECABORT);
		return false;
	}
	return true;
}

/* EXEC on one keyspace: every key is here, and nothing else runs here
 * while it does. */
void kv_exec(struct kv_call *c)
{
	struct kv_txn *t;
	struct kv_pos pos;

	if (!kv_txn_exec_check(c))
		return;
	t = c->conn->txn;
	t->multi = false; /* the queue runs, not queued again */
	for (uint32_t i = 0; i < t->nwatch; i++) /* expired ones go, and count */
		kv_db_lookup(c->db, t->w[i].key, t->w[i].len, c->now, &pos);
	if (!kv_txn_watch_ok(t)) {
		kv_reply_null_array(c);
	} else {
		size_t keep = SIZE_MAX;

		kv_reply_array(c->out, t->n);
		if (c->log)
			c->log->group(c->log, true);
		for (uint32_t i = 0; i < t->n; i++) {
			struct kv_call sub = *c;

			sub.argc = t->q[i]->argc;
			sub.argv = t->q[i]->argv;
			sub.argl = t->q[i]->argl;
			sub.part = NULL;
			kv_cmd_exec(&sub);
			/* a CLIENT KILL of itself: the rest runs, unanswered, as
			 * Redis writes nothing more to a client it closes */
			if (keep == SIZE_MAX && (c->conn->flags & KV_CONN_CLOSE))
				keep = c->out->len;
		}
		if (c->log)
			c->log->group(c->log, false);
		if (keep != SIZE_MAX)
			kv_reply_truncate(c->out, keep);
	}
	kv_txn_reset(c->conn);
}

void kv_watch(struct kv_call *c)
{
	struct kv_txn *t;

	if (!c->conn) {
		kv_err(c, KV_ERR_NO_CONN);
		return;
	}
	if (kv_txn_in_multi(c->conn)) {
		kv_err(c, KV_ERR_WATCH_IN_MULTI);
		return;
	}
	t = state(c->conn);
	if (!t) {
		kv_err_oom(c);
		return;
	}
	if (!t->nwatch)
		atomic_fetch_add(&watchers, 1); /* before any stamp is read */
	for (uint32_t i = 1; i < c->argc; i++) {
		struct kv_txn_watch *w;

		if (t->nwatch == t->wcap) {
			uint32_t cap = t->wcap ? t->wcap * 2 : 4;

			w = realloc(t->w, cap * sizeof(*w));
			if (!w)
				goto oom;
			t->w = w;
			t->wcap = cap;
		}
		w = &t->w[t->nwatch];
		w->key = malloc(c->argl[i] + 1);
		if (!w->key)
			goto oom;
		memcpy(w->key, c->argv[i], c->argl[i]);
		w->len = c->argl[i];
		w->stamp = stamp_of(w->key, w->len);
		t->nwatch++;
	}
	kv_reply_status(c->out, "OK");
	return;
oom:
	if (!t->nwatch)
		atomic_fetch_sub(&watchers, 1);
	kv_err_oom(c);
}

void kv_unwatch(struct kv_call *c)
{
	if (c->conn && c->conn->txn)
		unwatch_all(c->conn->txn);
	kv_reply_status(c->out, "OK");
}
