/* SPDX-License-Identifier: MIT */
/* Runs RESP requests from stdin through the parser and the single-shard
 * executor and writes the raw replies to stdout, as one connection to a
 * one-shard server would see them. The oracle test drives it beside a real
 * redis-server. A protocol error gets Redis's reply and ends the run, as
 * Redis closes the connection; so does QUIT, after its reply. CONFIG SET
 * applies to this run's keyspace and parser. Exit status 0, or 1 on a
 * read, write or memory failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "resp.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(1, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The one-shard server kv_exec stands for: settings it applies itself. */
struct server {
	struct kv_config cfg;
	struct kv_db *db;
	struct kv_parser *parser;
};

/* CONFIG SET: new limits for the keyspace and the parser. */
static int apply_config(void *arg, const struct kv_config *next, char *why, size_t whylen)
{
	struct server *s = arg;

	(void)why;
	(void)whylen;
	s->cfg = *next;
	kv_db_set_maxmemory(s->db, next->maxmemory, next->maxmemory_policy, next->maxmemory_samples);
	s->parser->lim = kv_config_resp_limits(next);
	return 0;
}

struct input {
	char *buf;
	size_t len, cap;
};

/* Reads what stdin has into in; 0 at end of input, -1 on failure. */
static long read_more(struct input *in)
{
	if (in->cap - in->len < 65536) {
		size_t cap = in->cap ? in->cap * 2 : 1 << 20;
		char *b = realloc(in->buf, cap);
		if (!b)
			return -1;
		in->buf = b;
		in->cap = cap;
	}
	ssize_t r;
	do
		r = read(0, in->buf + in->len, in->cap - in->len);
	while (r < 0 && errno == EINTR);
	if (r > 0)
		in->len += (size_t)r;
	return r;
}

/* Runs every complete request in in; 1 after a protocol error, -1 on
 * failure, else 0. */
static int run_requests(struct kv_parser *p, struct input *in, struct server *srv,
			const struct kv_server_view *view, struct kv_conn *conn, struct kv_reply *out)
{
	for (;;) {
		struct kv_resp_req req;
		long n = kv_resp_parse(p, in->buf, in->len, &req);
		if (n == -EPROTO) {
			kv_reply_errorf(out, "ERR %s", p->error);
			return 1;
		}
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (req.argc) {
			struct kv_call c = { .db = srv->db, .out = out, .now = now_ms(),
					     .max_bulk = p->lim.max_bulk, .conn = conn,
					     .cfg = &srv->cfg, .view = view, .argc = req.argc,
					     .argv = req.argv, .argl = req.argl };
			kv_cmd_exec(&c);
		}
		memmove(in->buf, in->buf + n, in->len - (size_t)n);
		in->len -= (size_t)n;
		if (conn->flags & KV_CONN_CLOSE)
			return 1;
	}
}

int main(void)
{
	struct kv_parser p;
	struct kv_reply out;
	struct input in = { 0 };
	struct server srv = { .db = kv_db_new(), .parser = &p };
	struct kv_server_view view = { .config_set = apply_config, .arg = &srv };
	struct kv_conn conn;
	int rc = 0;

	kv_config_init(&srv.cfg);
	struct kv_resp_limits lim = kv_config_resp_limits(&srv.cfg);
	if (!srv.db || kv_resp_init(&p, &lim))
		return 1;
	kv_conn_init(&conn, 1, now_ms());
	kv_reply_init(&out);
	for (;;) {
		long r = read_more(&in);
		if (r <= 0) {
			rc = r < 0;
			break;
		}
		int s = run_requests(&p, &in, &srv, &view, &conn, &out);
		if (s < 0 || kv_reply_failed(&out) || write_all(out.buf, out.len)) {
			rc = 1;
			break;
		}
		kv_reply_clear(&out);
		if (s == 1)
			break;
	}
	kv_conn_fini(&conn);
	kv_reply_free(&out);
	kv_resp_free(&p);
	kv_db_free(srv.db);
	free(in.buf);
	return rc;
}
