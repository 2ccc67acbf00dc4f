/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the executor: any byte stream, parsed as RESP
 * requests and run against one keyspace with a clock that advances a
 * millisecond a request (so keys expire, lazily and through active expiry
 * steps), must never crash, leak or read outside a buffer (ASan), must
 * leave the keyspace's invariants whole after every request, and must
 * answer every request with exactly one complete reply. The keyspace starts
 * with a 64 KiB limit under allkeys-lru, so eviction runs, and the
 * connection and server commands act on a connection and settings that
 * CONFIG SET changes (its limit reaching the keyspace) until QUIT. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "keyhash.h"
#include "resp.h"
#include "fuzz_check.h"


/* Length of the one complete reply at r[0..n), or 0 when it is not one. */
static size_t reply_len(const char *r, size_t n)
{
	const char *eol = memmem(r, n, "\r\n", 2);
	if (n < 3 || !eol)
		return 0;
	size_t line = (size_t)(eol - r) + 2;
	if (r[0] == '+' || r[0] == '-' || r[0] == ':')
		return line;
	long v = strtol(r + 1, NULL, 10);
	if (r[0] == '$')
		return v < 0 ? line : line + (size_t)v + 2;
	CHECK(r[0] == '*');
	size_t at = line;
	for (long i = 0; i < v; i++) {
		size_t l = reply_len(r + at, n - at);
		CHECK(l);
		at += l;
	}
	return at;
}

struct server {
	struct kv_db *db;
	struct kv_config cfg;
	struct kv_conn conn;
	struct kv_server_view view;
};

static int apply(void *arg, const struct kv_config *next, char *why, size_t whylen)
{
	struct server *s = arg;

	(void)why;
	(void)whylen;
	s->cfg = *next;
	kv_db_set_maxmemory(s->db, next->maxmemory, next->maxmemory_policy, next->maxmemory_samples);
	return 0;
}

static void run_one(struct server *s, struct kv_resp_req *req, int64_t now, struct kv_reply *out)
{
	struct kv_db *db = s->db;
	struct kv_call c = { .db = db, .out = out, .now = now, .max_bulk = 1 << 20,
			     .conn = &s->conn, .cfg = &s->cfg, .view = &s->view,
			     .argc = req->argc, .argv = req->argv, .argl = req->argl };
	kv_reply_clear(out);
	kv_cmd_exec(&c);
	CHECK(!kv_reply_failed(out));
	CHECK(reply_len(out->buf, out->len) == out->len);
	char why[200];
	if (kv_db_validate(db, why, sizeof(why))) {
		fprintf(stderr, "kv_db_validate: %s\n", why);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	struct kv_resp_limits lim = { .max_bulk = 1 << 16, .max_args = 256 };
	struct kv_parser p;
	struct kv_reply out;
	struct kv_resp_req req;
	int64_t now = 1000000000000;

	/* a fixed hash key, so a crash replays */
	CHECK(kv_keyhash_init() == 0);
	kv_keyhash_set_key(key);
	struct server s = { .db = kv_db_new() };
	struct kv_db *db = s.db;
	CHECK(db && kv_resp_init(&p, &lim) == 0);
	kv_config_init(&s.cfg);
	s.cfg.maxmemory = 64 * 1024;
	s.cfg.maxmemory_policy = KV_POLICY_ALLKEYS_LRU;
	s.view = (struct kv_server_view){ .config_set = apply, .arg = &s };
	apply(&s, &s.cfg, NULL, 0);
	kv_conn_init(&s.conn, 1, now);
	kv_reply_init(&out);
	size_t at = 0;
	long r;
	while (!(s.conn.flags & KV_CONN_CLOSE) &&
	       (r = kv_resp_parse(&p, (const char *)data + at, size - at, &req)) > 0) {
		if (req.argc)
			run_one(&s, &req, now++, &out);
		if (now % 16 == 0)
			kv_db_expire_step(db, now, 32);
		at += (size_t)r;
	}
	kv_conn_fini(&s.conn);
	kv_reply_free(&out);
	kv_resp_free(&p);
	kv_db_free(db);
	return 0;
}
