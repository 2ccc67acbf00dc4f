/* SPDX-License-Identifier: MIT */
/* The kv server in this process, two shards, over loopback: a DENYOOM
 * command over keys of both shards is refused whole or applied whole;
 * readers and writers of the same keys at once, every request answered
 * once, in order, every MGET one generation; a stop while closed
 * clients' answers are still out frees them (the sanitizer's leak check
 * at exit); a crowd of clients each holding part of a large request is
 * bounded by the input budget. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../testmain.h"
#include "net/net_util.h"
#include "kv_server.h"

static const char oom_text[] = "-OOM command not allowed when used memory > 'maxmemory'.";

/* ---- a small RESP client -------------------------------------------------- */

struct rv {
	char t;          /* + - : $ * */
	int64_t i;       /* ':' value; '$' length (-1: nil); '*' count */
	char *s;         /* '+' '-' '$' bytes, 0-terminated */
	struct rv *e;    /* '*' elements */
};

struct rc {
	int fd;
	char *buf;
	size_t len, off, cap;
};

static void rv_free(struct rv *v)
{
	for (int64_t k = 0; v->t == '*' && k < v->i; k++)
		rv_free(&v->e[k]);
	free(v->e);
	free(v->s);
	memset(v, 0, sizeof(*v));
}

static void rc_open(struct rc *c, uint16_t port)
{
	memset(c, 0, sizeof(*c));
	c->fd = tu_connect(port);
	assert_true(c->fd >= 0);
}

static void rc_close(struct rc *c)
{
	close(c->fd);
	free(c->buf);
}

/* Appends one request (argv, 0-terminated strings) to the send buffer s. */
static void enc(char **s, size_t *n, size_t *cap, int argc, const char *const *argv)
{
	size_t need = 32;

	for (int k = 0; k < argc; k++)
		need += strlen(argv[k]) + 32;
	if (*n + need > *cap) {
		*cap = (*n + need) * 2;
		*s = realloc(*s, *cap);
		assert_non_null(*s);
	}
	*n += (size_t)sprintf(*s + *n, "*%d\r\n", argc);
	for (int k = 0; k < argc; k++)
		*n += (size_t)sprintf(*s + *n, "$%zu\r\n%s\r\n", strlen(argv[k]), argv[k]);
}

/* Bytes buffered from offset at on: more read when fewer than want. */
static void need(struct rc *c, size_t want)
{
	while (c->len - c->off < want) {
		ssize_t k;

		if (c->cap - c->len < 65536 && c->off) {
			memmove(c->buf, c->buf + c->off, c->len - c->off);
			c->len -= c->off;
			c->off = 0;
		}
		if (c->cap - c->len < 65536) {
			c->cap = c->cap * 2 + 65536;
			c->buf = realloc(c->buf, c->cap);
			assert_non_null(c->buf);
		}
		k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		assert_true(k > 0); /* closed, or nothing within the wait */
		c->len += (size_t)k;
	}
}

static size_t line_len(struct rc *c)
{
	for (size_t at = 0;; at++) {
		need(c, at + 2);
		if (c->buf[c->off + at] == '\r' && c->buf[c->off + at + 1] == '\n')
			return at;
	}
}

static void rc_reply(struct rc *c, struct rv *v)
{
	size_t l = line_len(c);
	char *p = c->buf + c->off;

	memset(v, 0, sizeof(*v));
	v->t = p[0];
	if (v->t == '+' || v->t == '-') {
		v->s = strndup(p, l);
		c->off += l + 2;
		return;
	}
	v->i = strtoll(p + 1, NULL, 10);
	c->off += l + 2;
	if (v->t == '$' && v->i >= 0) {
		need(c, (size_t)v->i + 2);
		v->s = strndup(c->buf + c->off, (size_t)v->i);
		c->off += (size_t)v->i + 2;
	} else if (v->t == '*' && v->i > 0) {
		v->e = calloc((size_t)v->i, sizeof(*v->e));
		assert_non_null(v->e);
		for (int64_t k = 0; k < v->i; k++)
			rc_reply(c, &v->e[k]);
	} else {
		assert_true(v->t == ':' || v->t == '$' || v->t == '*');
	}
}

/* One request, its reply into v. */
static void rc_call(struct rc *c, struct rv *v, int argc, const char *const *argv)
{
	char *s = NULL;
	size_t n = 0, cap = 0;

	enc(&s, &n, &cap, argc, argv);
	assert_int_equal(tu_send_all(c->fd, s, n), 0);
	free(s);
	rc_reply(c, v);
}

/* Builds argv: name, then keys fmt % (a, k) for k < nkeys, each followed
 * by value when not NULL. */
struct req {
	const char *argv[64];
	char names[32][32];
	int argc;
};

static void keyed(struct req *r, const char *name, const char *fmt, int a, int nkeys,
		  const char *value)
{
	r->argc = 0;
	r->argv[r->argc++] = name;
	for (int k = 0; k < nkeys; k++) {
		snprintf(r->names[k], sizeof(r->names[k]), fmt, a, k);
		r->argv[r->argc++] = r->names[k];
		if (value)
			r->argv[r->argc++] = value;
	}
}

/* ---- the server ----------------------------------------------------------- */

static struct kv_server *start(uint64_t maxmemory, enum kv_policy policy, uint64_t max_input)
{
	struct kv_server_opts o;
	struct kv_server *k = NULL;
	char err[200] = "";

	kv_server_opts_init(&o);
	o.net.port = 0;
	o.net.engine.shards = 2;
	o.net.engine.placement = "off";
	o.net.engine.oversubscribe = true;
	o.net.engine.idle = PC_IDLE_SLEEP; /* tests share the CPUs: do not spin */
	o.cfg.maxmemory = maxmemory;
	o.cfg.maxmemory_policy = policy;
	if (max_input)
		o.net.max_input_bytes = max_input;
	if (kv_server_start(&o, &k, err, sizeof(err)))
		fail_msg("kv server did not start: %s", err);
	return k;
}

static void finish(struct kv_server *k)
{
	struct kv_server_totals t;

	kv_server_stop(k);
	kv_server_wait(k);
	kv_server_totals(k, &t);
	assert_int_equal(t.closing, 0); /* every closed client freed */
	kv_server_destroy(k);
}

/* ---- OOM decides for the whole command ------------------------------------ */

/* A server with a 1 MiB limit under policy, and a client of it. */
static struct kv_server *limited(enum kv_policy policy, struct rc *c, char *val, size_t n)
{
	struct kv_server *k = start(1u << 20, policy, 0);

	memset(val, 'v', n - 1);
	val[n - 1] = '\0';
	rc_open(c, kv_server_port(k));
	return k;
}

/* MSETs (and MSETNXs) of 16 fresh keys, which land on both shards, until
 * the limit refuses them: each reply is +OK with every key set, or Redis's
 * -OOM with none set, never a part. */
static void test_oom_whole(void **state)
{
	struct rc c;
	struct rv v;
	struct req r;
	char val[600];
	struct kv_server *k = limited(KV_POLICY_NOEVICTION, &c, val, sizeof(val));
	int oks = 0, ooms = 0;

	(void)state;
	for (int g = 0; g < 4000 && ooms < 40; g++) {
		bool nx = g % 3 == 2;

		snprintf(val, 16, "%08d", g);
		val[8] = 'v';
		keyed(&r, nx ? "MSETNX" : "MSET", "oom:%d:%d", g, 16, val);
		rc_call(&c, &v, r.argc, r.argv);
		bool ok = v.t == (nx ? ':' : '+');
		if (ok)
			assert_true(nx ? v.i == 1 : !strcmp(v.s, "+OK"));
		else
			assert_string_equal(v.s, oom_text);
		oks += ok;
		ooms += !ok;
		rv_free(&v);
		keyed(&r, "MGET", "oom:%d:%d", g, 16, NULL);
		rc_call(&c, &v, r.argc, r.argv);
		assert_int_equal(v.t, '*');
		assert_int_equal(v.i, 16);
		for (int i = 0; i < 16; i++) {
			if (ok)
				assert_string_equal(v.e[i].s, val);
			else
				assert_int_equal(v.e[i].i, -1);
		}
		rv_free(&v);
	}
	assert_true(oks > 0);
	assert_int_equal(ooms, 40);
	/* room again: accepted whole */
	rc_call(&c, &v, 1, (const char *[]){ "FLUSHALL" });
	rv_free(&v);
	keyed(&r, "MSET", "oom:%d:%d", 0, 16, "again");
	rc_call(&c, &v, r.argc, r.argv);
	assert_string_equal(v.s, "+OK");
	rv_free(&v);
	rc_close(&c);
	finish(k);
}

/* allkeys-lru: the lock evicts first, then decides: never -OOM. */
static void test_oom_evicts_first(void **state)
{
	struct rc c;
	struct rv v;
	struct req r;
	char val[600];
	struct kv_server *k = limited(KV_POLICY_ALLKEYS_LRU, &c, val, sizeof(val));

	(void)state;
	for (int g = 0; g < 600; g++) {
		keyed(&r, g % 2 ? "MSETNX" : "MSET", "lru:%d:%d", g, 16, val);
		rc_call(&c, &v, r.argc, r.argv);
		assert_true(v.t == (g % 2 ? ':' : '+'));
		rv_free(&v);
	}
	rc_call(&c, &v, 1, (const char *[]){ "DBSIZE" });
	assert_true(v.i > 0 && v.i < 600 * 16); /* evicted, not refused */
	rv_free(&v);
	rc_close(&c);
	finish(k);
}

/* ---- readers beside writers ----------------------------------------------- */

#define RW_KEYS   12
#define RW_ROUNDS (150 / TU_SLOW + 20)
#define RW_DEPTH  8

struct rw_arg {
	uint16_t port;
	int id;
	bool writer;
	char err[200];
	uint64_t sent, answered;
};

static bool same_values(const struct rv *v, bool nil_ok)
{
	if (v->t != '*' || v->i != RW_KEYS)
		return false;
	for (int i = 1; i < RW_KEYS; i++)
		if (v->e[i].i != v->e[0].i || (v->e[0].s && strcmp(v->e[i].s, v->e[0].s)))
			return false;
	return nil_ok || v->e[0].i >= 0;
}

/* Writers: MSET a generation over "rw:*", DEL or MSET over "dx:*".
 * Observers: MGET "rw:*" (one generation), EXISTS "dx:*" (0 or all),
 * MGET "dx:*" (nothing or one generation), INCR of its own counter (in
 * order, once each). Every request of a pipeline is answered exactly
 * once: the PING sent last is the last reply, and nothing follows. */
static void *rw_client(void *p)
{
	struct rw_arg *a = p;
	struct rc c = { .fd = tu_connect(a->port) };
	char *s = NULL, val[32], ctr[16];
	size_t n, cap = 0;
	int64_t count = 0;
	struct req r;

	snprintf(ctr, sizeof(ctr), "ctr:%d", a->id);
	for (int g = 0; g < RW_ROUNDS && c.fd >= 0 && !a->err[0]; g++) {
		n = 0;
		for (int d = 0; d < RW_DEPTH; d++) {
			snprintf(val, sizeof(val), "w%d-%d-%d", a->id, g, d);
			if (a->writer) {
				keyed(&r, "MSET", "rw:%d%d", 0, RW_KEYS, val);
				enc(&s, &n, &cap, r.argc, r.argv);
				keyed(&r, d % 2 ? "DEL" : "MSET", "dx:%d%d", 0, RW_KEYS,
				      d % 2 ? NULL : val);
				enc(&s, &n, &cap, r.argc, r.argv);
			} else {
				keyed(&r, "MGET", "rw:%d%d", 0, RW_KEYS, NULL);
				enc(&s, &n, &cap, r.argc, r.argv);
				keyed(&r, "EXISTS", "dx:%d%d", 0, RW_KEYS, NULL);
				enc(&s, &n, &cap, r.argc, r.argv);
				keyed(&r, "MGET", "dx:%d%d", 0, RW_KEYS, NULL);
				enc(&s, &n, &cap, r.argc, r.argv);
				enc(&s, &n, &cap, 2, (const char *[]){ "INCR", ctr });
			}
			a->sent += a->writer ? 2 : 4;
		}
		if (tu_send_all(c.fd, s, n)) {
			snprintf(a->err, sizeof(a->err), "send failed");
			break;
		}
		for (int d = 0; d < RW_DEPTH && !a->err[0]; d++) {
			struct rv v[4];
			int m = a->writer ? 2 : 4;

			for (int i = 0; i < m; i++) {
				rc_reply(&c, &v[i]);
				a->answered++;
			}
			if (a->writer) {
				if (v[0].t != '+' || (v[1].t != '+' && v[1].t != ':'))
					snprintf(a->err, sizeof(a->err), "writer got %c %c", v[0].t,
						 v[1].t);
			} else if (!same_values(&v[0], false)) {
				snprintf(a->err, sizeof(a->err), "MGET rw saw a mix");
			} else if (v[1].t != ':' || (v[1].i != 0 && v[1].i != RW_KEYS)) {
				snprintf(a->err, sizeof(a->err), "EXISTS dx saw %lld",
					 (long long)v[1].i);
			} else if (!same_values(&v[2], true)) {
				snprintf(a->err, sizeof(a->err), "MGET dx saw a mix");
			} else if (v[3].t != ':' || v[3].i != ++count) {
				snprintf(a->err, sizeof(a->err), "INCR %lld, want %lld",
					 (long long)v[3].i, (long long)count);
			}
			for (int i = 0; i < m; i++)
				rv_free(&v[i]);
		}
	}
	if (!a->err[0]) {
		struct rv v;
		char extra;

		rc_call(&c, &v, 1, (const char *[]){ "PING" });
		if (v.t != '+' || strcmp(v.s, "+PONG") || c.off != c.len ||
		    recv(c.fd, &extra, 1, MSG_DONTWAIT) != -1)
			snprintf(a->err, sizeof(a->err), "a reply more than requests");
		rv_free(&v);
	}
	free(s);
	if (c.fd >= 0)
		rc_close(&c);
	return NULL;
}

static void test_readers_writers(void **state)
{
	struct kv_server *k = start(0, KV_POLICY_NOEVICTION, 0);
	struct rw_arg args[6];
	pthread_t th[6];
	struct rc c;
	struct rv v;
	struct req r;

	(void)state;
	rc_open(&c, kv_server_port(k));
	keyed(&r, "MSET", "rw:%d%d", 0, RW_KEYS, "init");
	rc_call(&c, &v, r.argc, r.argv);
	rv_free(&v);
	for (int i = 0; i < 6; i++) {
		args[i] = (struct rw_arg){ .port = kv_server_port(k), .id = i, .writer = i < 2 };
		assert_int_equal(pthread_create(&th[i], NULL, rw_client, &args[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		if (args[i].err[0])
			fail_msg("client %d: %s", i, args[i].err);
		assert_int_equal(args[i].answered, args[i].sent);
	}
	rc_close(&c);
	finish(k);
}

/* ---- a stop with answers in flight ---------------------------------------- */

/* Clients send long pipelines over both shards (multi-shard MGETs, GETs
 * of large values) and vanish; the server is stopped at once, while
 * their answers are still out. The leak check at exit and the closing
 * total say whether they were freed. */
static void test_stop_inflight(void **state)
{
	int exercised = 0;

	(void)state;
	for (int round = 0; round < 4; round++) {
		struct kv_server *k = start(0, KV_POLICY_NOEVICTION, 0);
		struct kv_server_totals t;
		char *big = malloc(200001), *s = NULL;
		size_t n = 0, cap = 0;
		struct rc c;
		struct rv v;
		struct req r;
		int fds[6];

		memset(big, 'b', 200000);
		big[200000] = '\0';
		rc_open(&c, kv_server_port(k));
		for (int i = 0; i < 8; i++) {
			char key[16];

			snprintf(key, sizeof(key), "big:%d", i);
			rc_call(&c, &v, 3, (const char *[]){ "SET", key, big });
			rv_free(&v);
		}
		r.argc = 0;
		r.argv[r.argc++] = "MGET";
		for (int i = 0; i < 8; i++) {
			snprintf(r.names[i], sizeof(r.names[i]), "big:%d", i);
			r.argv[r.argc++] = r.names[i];
		}
		for (int i = 0; i < 300; i++) {
			char key[16];

			enc(&s, &n, &cap, r.argc, r.argv);
			snprintf(key, sizeof(key), "big:%d", i % 8);
			enc(&s, &n, &cap, 2, (const char *[]){ "GET", key });
		}
		for (int i = 0; i < 6; i++) {
			struct linger l = { .l_onoff = 1, .l_linger = 0 };

			fds[i] = tu_connect(kv_server_port(k));
			assert_true(fds[i] >= 0);
			assert_int_equal(tu_send_all(fds[i], s, n), 0);
			/* gone at once, with a reset: no reply is ever read */
			setsockopt(fds[i], SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		}
		for (int i = 0; i < 6; i++)
			close(fds[i]);
		kv_server_totals(k, &t);
		exercised += t.closing > 0;
		rc_close(&c);
		finish(k);
		free(big);
		free(s);
	}
	printf("stops with closed clients' answers still out: %d of 4\n", exercised);
}

/* ---- the input budget ----------------------------------------------------- */

#define BUDGET   (17u << 20)
#define PARTIALS 100
#define PART     (1u << 20)

/* Many clients each send the first megabyte of a 4 MiB SET and wait:
 * what the server holds stays within the budget of each shard, the
 * oldest holders are closed and counted, and a new client is served. */
static void test_input_budget(void **state)
{
	struct kv_server *k = start(0, KV_POLICY_NOEVICTION, BUDGET);
	static const char head[] = "*3\r\n$3\r\nSET\r\n$4\r\npart\r\n$4194304\r\n";
	char *body = calloc(1, PART);
	size_t sent[PARTIALS] = { 0 };
	int fds[PARTIALS], closed = 0;
	struct kv_server_totals t;
	uint64_t end;
	struct rc c;
	struct rv v;

	(void)state;
	assert_non_null(body);
	memset(body, 'p', PART);
	memcpy(body, head, sizeof(head) - 1);
	for (int i = 0; i < PARTIALS; i++) {
		fds[i] = tu_connect(kv_server_port(k));
		assert_true(fds[i] >= 0);
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
	}
	/* Send what each socket takes until none takes more for a while:
	 * paused clients' bytes stay in the kernel's buffers. */
	end = pc_now_ns() + 2000000000ull * TU_SLOW;
	while (pc_now_ns() < end) {
		bool moved = false;

		for (int i = 0; i < PARTIALS; i++) {
			ssize_t m = sent[i] < PART ? send(fds[i], body + sent[i], PART - sent[i],
							  MSG_NOSIGNAL) : 0;

			if (m > 0) {
				sent[i] += (size_t)m;
				moved = true;
			}
		}
		if (moved)
			end = pc_now_ns() + 2000000000ull * TU_SLOW;
		else
			tu_sleep_ms(20);
	}
	kv_server_totals(k, &t);
	assert_true(t.input_shed >= 1);
	/* a pass may let one more read of each shard in before it acts */
	assert_true(t.input_held <= 2ull * BUDGET + (2u << 20));
	for (int i = 0; i < PARTIALS; i++) {
		char b[64];
		ssize_t m = recv(fds[i], b, sizeof(b), MSG_DONTWAIT);

		closed += m == 0 || (m < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
		close(fds[i]);
	}
	assert_true(closed >= 1);
	rc_open(&c, kv_server_port(k));
	rc_call(&c, &v, 1, (const char *[]){ "PING" });
	assert_string_equal(v.s, "+PONG");
	rv_free(&v);
	rc_close(&c);
	free(body);
	finish(k);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom_whole),
		cmocka_unit_test(test_oom_evicts_first),
		cmocka_unit_test(test_readers_writers),
		cmocka_unit_test(test_stop_inflight),
		cmocka_unit_test(test_input_budget),
	};

	return pc_test_main(tests, argc, argv);
}
