/* SPDX-License-Identifier: MIT */
/* The server with well-behaved clients: framed and raw echo, heartbeats,
 * the statistics frame, large frames, idle sessions holding no buffers,
 * ids and pc_session_send_to across shards, each session's local address
 * and socket, IPv6, bad configurations. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "net_util.h"
#include "percore/fb_heartbeat.h"
#include "percore/session.h"
#include "testmain.h"

static void test_framed_echo(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int fds[8];
	static const size_t sizes[] = { 0, 1, 11, 12, 13, 4095, 4096, 65536, 200000 };

	(void)state;
	tu_cfg(&c, 2);
	srv = TU_SERVE(&c);
	for (int i = 0; i < 8; i++) {
		fds[i] = tu_connect(pc_server_port(srv));
		assert_true(fds[i] >= 0);
	}
	for (size_t k = 0; k < PC_ARRAY_LEN(sizes); k++)
		for (int i = 0; i < 8; i++)
			assert_true(tu_echo_ok(fds[i], (uint32_t)(k * 8 + (size_t)i), sizes[k]));
	/* Flags travel back as sent (the error bit included). */
	struct pc_frame f = { 0 };
	assert_int_equal(tu_send_frame(fds[0], 77, PC_FRAME_ERROR, "x", 1), 0);
	assert_int_equal(tu_recv_frame(fds[0], &f, NULL), 0);
	assert_int_equal(f.msg_id, 77);
	assert_int_equal(f.flags, PC_FRAME_ERROR);
	for (int i = 0; i < 8; i++)
		close(fds[i]);
	assert_true(TU_WAIT_STAT(srv, closed, 8));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.sessions, 0);
	assert_int_equal(st.accepted, 8);
	assert_int_equal(st.closed_reason[PC_CLOSE_PEER], 8);
	assert_int_equal(st.frames_in, 8 * PC_ARRAY_LEN(sizes) + 1);
	/* Nothing buffered, nothing attached: idle sessions hold no rings. */
	assert_int_equal(st.buffer_bytes, 0);
	assert_int_equal(st.queued_bytes, 0);
	assert_int_equal(st.buffered_bytes, 0);
	tu_stop(srv);
}

/* Many frames in one write, answered in order. */
static void test_pipelined(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	enum { N = 500 };
	uint8_t *buf = malloc(N * (PC_FRAME_HEADER_LEN + 100)), *p = buf;

	(void)state;
	tu_cfg(&c, 1);
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	for (uint32_t i = 0; i < N; i++) {
		uint8_t body[100];
		memset(body, (int)i, sizeof(body));
		assert_int_equal(pc_frame_header_encode(p, i, 0, i % 100), 0);
		memcpy(p + PC_FRAME_HEADER_LEN, body, i % 100);
		p += PC_FRAME_HEADER_LEN + i % 100;
	}
	assert_int_equal(tu_send_all(fd, buf, (size_t)(p - buf)), 0);
	for (uint32_t i = 0; i < N; i++) {
		struct pc_frame f = { 0 };
		uint8_t *b = NULL;
		assert_int_equal(tu_recv_frame(fd, &f, &b), 0);
		assert_int_equal(f.msg_id, i);
		assert_int_equal(f.len, i % 100);
		for (uint32_t j = 0; j < f.len; j++)
			assert_int_equal(b[j], (uint8_t)i);
		free(b);
	}
	close(fd);
	free(buf);
	tu_stop(srv);
}

static void test_raw_echo(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	static uint8_t out[300000], in[sizeof(out)];

	(void)state;
	tu_cfg(&c, 2);
	c.raw = true;
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 131 + (i >> 9));
	/* Not a frame at all: a raw server echoes it byte for byte. */
	assert_int_equal(tu_send_all(fd, out, sizeof(out)), 0);
	assert_int_equal(tu_recv_all(fd, in, sizeof(in)), 0);
	assert_memory_equal(in, out, sizeof(out));
	close(fd);
	tu_stop(srv);
}

static void test_heartbeats(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct pc_frame f = { 0 };

	(void)state;
	tu_cfg(&c, 1);
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	/* A request (id != 0) is answered with a heartbeat of id 0 that
	 * carries the request's body back. */
	assert_int_equal(tu_send_frame(fd, PC_MSG_HEARTBEAT, PC_FRAME_HEARTBEAT, "clock", 5), 0);
	assert_true(tu_heartbeat_answer_ok(fd, "clock", 5));
	/* An answer (id 0) is not answered: the next frame back is the echo. */
	assert_int_equal(tu_send_frame(fd, 0, PC_FRAME_HEARTBEAT, NULL, 0), 0);
	assert_true(tu_echo_ok(fd, 9, 3));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.heartbeats_in, 2);
	assert_int_equal(st.heartbeats_out, 1);
	/* Frames count the application's frames: the echo, no heartbeat. */
	assert_int_equal(st.frames_in, 1);
	assert_int_equal(st.frames_out, 1);
	close(fd);
	tu_stop(srv);

	/* The server probes a quiet client; the client's answers keep it
	 * alive past the idle timeout. */
	tu_cfg(&c, 1);
	c.heartbeat_ms = 40;
	/* The pings keep the session past two idle timeouts; the timeout is
	 * long enough that a stalled test thread does not make it idle. */
	c.idle_timeout_ms = 1000 * TU_SLOW;
	srv = TU_SERVE(&c);
	fd = TU_CLIENT(srv);
	uint64_t end = pc_now_ns() + 2ull * c.idle_timeout_ms * 1000000;
	int pings = 0;
	while (pc_now_ns() < end) {
		assert_int_equal(tu_recv_frame(fd, &f, NULL), 0);
		assert_int_equal(f.flags, PC_FRAME_HEARTBEAT);
		assert_int_equal(f.msg_id, PC_MSG_HEARTBEAT);
		pings++;
		assert_int_equal(tu_send_frame(fd, 0, PC_FRAME_HEARTBEAT, NULL, 0), 0);
	}
	assert_true(pings >= 3);
	/* Still served (a ping may come before the echo). */
	assert_int_equal(tu_send_frame(fd, 77, 0, "abc", 3), 0);
	do
		assert_int_equal(tu_recv_frame(fd, &f, NULL), 0);
	while (f.flags & PC_FRAME_HEARTBEAT);
	assert_int_equal(f.msg_id, 77);
	assert_int_equal(f.len, 3);
	assert_int_equal(tu_stats(srv).closed_reason[PC_CLOSE_IDLE], 0);
	close(fd);
	tu_stop(srv);
}

static void test_stats_frame(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct pc_frame f = { 0 };
	uint8_t *body = NULL;

	(void)state;
	tu_cfg(&c, 2);
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	assert_true(tu_echo_ok(fd, 1, 10));
	assert_int_equal(tu_send_frame(fd, PC_MSG_STATS, 0, NULL, 0), 0);
	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.msg_id, PC_MSG_STATS);
	cJSON *o = cJSON_Parse((const char *)body);
	assert_non_null(o);
	/* Every figure, and the reply's own five members. */
	assert_int_equal(cJSON_GetArraySize(o),
			 sizeof(struct pc_server_stats) / sizeof(uint64_t) + 5);
	assert_int_equal(cJSON_GetObjectItem(o, "sessions")->valuedouble, 1);
	assert_int_equal(cJSON_GetObjectItem(o, "shards")->valuedouble, 2);
	assert_true(cJSON_GetObjectItem(o, "shard")->valuedouble < 2);
	assert_non_null(cJSON_GetObjectItem(o, "closed_idle"));
	assert_true(cJSON_GetObjectItem(o, "rss_bytes")->valuedouble > 0);
	assert_true(cJSON_GetObjectItem(o, "maps")->valuedouble > 0);
	assert_true(cJSON_GetObjectItem(o, "session_bytes")->valuedouble > 0);
	assert_true(cJSON_GetObjectItem(o, "frames_in")->valuedouble >= 1);
	cJSON_Delete(o);
	free(body);
	close(fd);
	tu_stop(srv);

	/* Off: the frame is an ordinary frame and is echoed. */
	tu_cfg(&c, 1);
	c.stats_frames = false;
	srv = TU_SERVE(&c);
	fd = TU_CLIENT(srv);
	assert_true(tu_echo_ok(fd, PC_MSG_STATS, 4));
	close(fd);
	tu_stop(srv);
}

/* ---- ids and pc_session_send_to -------------------------------------------- */

enum { MSG_WHOAMI = 1, MSG_FORWARD = 2, MSG_DELIVERED = 3, MSG_RESULT = 4, MSG_WHERE = 5 };

static void forward_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	uint64_t id = pc_session_id(s), to;
	int32_t rc;

	(void)user;
	if (f->msg_id == MSG_WHOAMI) {
		pc_session_send(s, MSG_WHOAMI, &id, sizeof(id));
	} else if (f->msg_id == MSG_WHERE) {
		/* the server's side: its port (host order, 0 on error), the fd;
		 * then its buffers with an empty frame queued before the answer */
		struct sockaddr_storage ss;
		socklen_t len;
		struct pc_session_buffers b;
		int32_t where[6] = { 0, pc_session_fd(s) };

		if (!pc_session_local(s, &ss, &len) && ss.ss_family == AF_INET)
			where[0] = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		pc_session_send(s, MSG_RESULT, NULL, 0);
		pc_session_buffers(s, &b);
		where[2] = (int32_t)b.in_used;
		where[3] = b.in_size >= b.in_used;
		where[4] = (int32_t)b.out_used;
		where[5] = b.out_size >= b.out_used && b.out_used == pc_session_queued(s);
		pc_session_send(s, MSG_WHERE, where, sizeof(where));
	} else if (f->msg_id == MSG_FORWARD && f->len > sizeof(to)) {
		memcpy(&to, f->body, sizeof(to));
		rc = pc_session_send_to(to, MSG_DELIVERED, 0, f->body + 8, f->len - 8);
		pc_session_send(s, MSG_RESULT, &rc, sizeof(rc));
	}
}

static uint64_t whoami(int fd)
{
	struct pc_frame f = { 0 };
	uint8_t *b = NULL;
	uint64_t id = 0;

	if (tu_send_frame(fd, MSG_WHOAMI, 0, NULL, 0) || tu_recv_frame(fd, &f, &b))
		return 0;
	if (f.len == sizeof(id))
		memcpy(&id, b, sizeof(id));
	free(b);
	return id;
}

static int32_t forward(int fd, uint64_t to, const char *text)
{
	uint8_t buf[64];
	struct pc_frame f = { 0 };
	uint8_t *b = NULL;
	int32_t rc = 1;

	memcpy(buf, &to, 8);
	memcpy(buf + 8, text, strlen(text));
	if (tu_send_frame(fd, MSG_FORWARD, 0, buf, 8 + strlen(text)) || tu_recv_frame(fd, &f, &b))
		return 99;
	if (f.msg_id == MSG_RESULT && f.len == sizeof(rc))
		memcpy(&rc, b, sizeof(rc));
	free(b);
	return rc;
}

/* pc_server_stats_print(): every figure once, each exact (above 2^32),
 * as JSON and as lines. */
static void test_stats_print(void **state)
{
	struct pc_server_stats st;
	uint64_t *v = (uint64_t *)&st;
	const size_t n = sizeof(st) / sizeof(uint64_t);
	char *text = NULL;
	size_t len = 0;
	char name[64];
	FILE *f;

	(void)state;
	for (size_t i = 0; i < n; i++)
		v[i] = (1ull << 40) + i * 1000003;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(pc_server_stats_print(&st, true, f), 0);
	assert_int_equal(fclose(f), 0);
	cJSON *o = cJSON_Parse(text);
	assert_non_null(o);
	assert_int_equal(cJSON_GetArraySize(o), n);
	assert_true(cJSON_GetObjectItem(o, "sessions")->valuedouble == (double)st.sessions);
	assert_true(cJSON_GetObjectItem(o, "drain_aborted")->valuedouble == (double)st.drain_aborted);
	for (unsigned r = 0; r < PC_CLOSE_REASONS; r++) {
		snprintf(name, sizeof(name), "closed_%s", pc_close_reason_name((enum pc_close_reason)r));
		cJSON *m = cJSON_GetObjectItem(o, name);
		assert_non_null(m);
		assert_true(m->valuedouble == (double)st.closed_reason[r]);
	}
	/* Each figure a different value: each member a different figure. */
	for (cJSON *m = o->child; m; m = m->next) {
		size_t k = (size_t)((m->valuedouble - (double)(1ull << 40)) / 1000003);

		assert_true(k < n && m->valuedouble == (double)v[k]);
		v[k] = 0;
	}
	cJSON_Delete(o);
	free(text);

	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(pc_server_stats_print(&st, false, f), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(text, "\nclosed_idle "));
	free(text);
}

static void test_send_to(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int fds[32], n = 0, a = -1, b = -1;
	uint64_t ids[32];

	(void)state;
	tu_cfg(&c, 2);
	c.on_frame = forward_frame;
	srv = TU_SERVE(&c);
	/* Connect until the kernel has put two clients on different shards. */
	while (n < 32 && (a < 0 || b < 0)) {
		fds[n] = tu_connect(pc_server_port(srv));
		assert_true(fds[n] >= 0);
		ids[n] = whoami(fds[n]);
		assert_true(ids[n] != 0);
		for (int k = 0; k < n; k++)
			assert_true(ids[k] != ids[n]); /* unique */
		if (pc_session_id_shard(ids[n]) == 0 && a < 0)
			a = n;
		if (pc_session_id_shard(ids[n]) == 1 && b < 0)
			b = n;
		n++;
	}
	assert_true(a >= 0 && b >= 0);
	/* Each session knows the address the client reached and its socket. */
	for (int k = 0; k < n; k++) {
		struct pc_frame w = { 0 };
		uint8_t *wb = NULL;
		int32_t where[6];

		assert_int_equal(tu_send_frame(fds[k], MSG_WHERE, 0, NULL, 0), 0);
		assert_int_equal(tu_recv_frame(fds[k], &w, NULL), 0);
		assert_int_equal(w.msg_id, MSG_RESULT);
		assert_int_equal(tu_recv_frame(fds[k], &w, &wb), 0);
		assert_int_equal(w.len, sizeof(where));
		memcpy(where, wb, sizeof(where));
		free(wb);
		assert_int_equal(where[0], pc_server_port(srv));
		assert_true(where[1] >= 0);
		/* pc_session_buffers: the empty frame queued is output not yet
		 * written; the input ring holds no more than its size */
		assert_true(where[2] >= 0);
		assert_true(where[3]);
		assert_int_equal(where[4], PC_FRAME_HEADER_LEN);
		assert_true(where[5]);
	}
	/* Across shards, through the mesh. */
	assert_int_equal(forward(fds[a], ids[b], "hello b"), 0);
	struct pc_frame f = { 0 };
	uint8_t *body = NULL;
	assert_int_equal(tu_recv_frame(fds[b], &f, &body), 0);
	assert_int_equal(f.msg_id, MSG_DELIVERED);
	assert_int_equal(f.len, 7);
	assert_memory_equal(body, "hello b", 7);
	free(body);
	/* To itself, on its own shard: delivered at once, so before the
	 * handler's own result. */
	uint8_t self[12];
	memcpy(self, &ids[b], 8);
	memcpy(self + 8, "self", 4);
	assert_int_equal(tu_send_frame(fds[b], MSG_FORWARD, 0, self, sizeof(self)), 0);
	assert_int_equal(tu_recv_frame(fds[b], &f, NULL), 0);
	assert_int_equal(f.msg_id, MSG_DELIVERED);
	assert_int_equal(tu_recv_frame(fds[b], &f, NULL), 0);
	assert_int_equal(f.msg_id, MSG_RESULT);
	/* A closed session: locally -ENOENT; remotely dropped and counted. */
	close(fds[b]);
	assert_true(TU_WAIT_STAT(srv, closed, 1));
	assert_int_equal(forward(fds[a], ids[b], "late"), 0);
	assert_true(TU_WAIT_STAT(srv, send_to_gone, 1));
	uint64_t stale_local = ids[a] + 1; /* same shard, a slot not in use */
	int32_t rc = forward(fds[a], stale_local, "x");
	assert_true(rc == -ENOENT || rc == 0);
	assert_int_equal(forward(fds[a], (uint64_t)7 << 48, "x"), -EINVAL);
	for (int k = 0; k < n; k++)
		if (k != b)
			close(fds[k]);
	tu_stop(srv);
}

/* ---- routing by message id (pc_dispatch) ---------------------------------- */

static int say_ten(void *ctx, const struct pc_frame *f, void *arg)
{
	(void)f;
	return pc_session_send(arg, 10, ctx, strlen(ctx));
}

static int routes(struct pc_dispatch *d, unsigned shard, void *user)
{
	(void)shard;
	(void)user;
	if (pc_dispatch_register(d, 10, say_ten, "ten"))
		return -1;
	return pc_dispatch_register(d, 70000, say_ten, "seventy thousand");
}

static int refuse_routes(struct pc_dispatch *d, unsigned shard, void *user)
{
	(void)d;
	(void)user;
	return shard == 1 ? -ENOSPC : 0;
}

static void expect_reply(int fd, uint32_t id, uint8_t flags, const char *body)
{
	struct pc_frame f = { 0 };
	uint8_t *b = NULL;

	assert_int_equal(tu_send_frame(fd, id, 0, "?", 1), 0);
	assert_int_equal(tu_recv_frame(fd, &f, &b), 0);
	assert_int_equal(f.msg_id, id == 70000 ? 10 : id);
	assert_int_equal(f.flags, flags);
	assert_int_equal(f.len, strlen(body));
	assert_memory_equal(b, body, f.len);
	free(b);
}

static void test_dispatch(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	char err[128];

	(void)state;
	/* Registered ids go to their handlers, dense and sparse; the rest to
	 * on_frame (here the echo). */
	tu_cfg(&c, 2);
	c.on_dispatch = routes;
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	expect_reply(fd, 10, 0, "ten");
	expect_reply(fd, 70000, 0, "seventy thousand");
	expect_reply(fd, 11, 0, "?");
	assert_true(tu_echo_ok(fd, 99999, 100));
	assert_int_equal(tu_stats(srv).unknown_ids, 2);
	close(fd);
	tu_stop(srv);

	/* Without on_frame, an unknown id gets an error reply and is counted;
	 * the session stays open. */
	tu_cfg(&c, 1);
	c.on_dispatch = routes;
	c.on_frame = NULL;
	srv = TU_SERVE(&c);
	fd = TU_CLIENT(srv);
	expect_reply(fd, 12, PC_FRAME_ERROR, PC_DISPATCH_UNKNOWN_BODY);
	expect_reply(fd, 10, 0, "ten");
	assert_int_equal(tu_stats(srv).unknown_ids, 1);
	close(fd);
	tu_stop(srv);

	/* A shard whose registration fails fails the start, cleanly. */
	tu_cfg(&c, 2);
	c.on_dispatch = refuse_routes;
	assert_int_equal(pc_server_start(&c, &srv, err, sizeof(err)), -ENOSPC);
}

static void test_ipv6(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	char err[128];
	struct sockaddr_in6 a = { .sin6_family = AF_INET6 };

	(void)state;
	tu_cfg(&c, 1);
	c.host = "[::1]";
	if (pc_server_start(&c, &srv, err, sizeof(err))) {
		PC_SKIP("no IPv6 loopback here: %s", err);
	}
	inet_pton(AF_INET6, "::1", &a.sin6_addr);
	a.sin6_port = htons(pc_server_port(srv));
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_true(tu_echo_ok(fd, 3, 1000));
	close(fd);
	tu_stop(srv);
}

static size_t refuse_all_frames(struct pc_session *s, const struct pc_frame *f, size_t n, void *user)
{
	(void)s, (void)f, (void)n, (void)user;
	return 0;
}

static void test_bad_config(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv, *srv2;
	char err[128];

	(void)state;
	tu_cfg(&c, 1);
	c.on_frame = NULL;
	assert_int_equal(pc_server_start(&c, &srv, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "on_frame"));
	assert_null(srv);
	/* on_frames takes every frame: beside on_frame it is refused. */
	tu_cfg(&c, 1);
	c.on_frames = refuse_all_frames;
	assert_int_equal(pc_server_start(&c, &srv, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "on_frames"));
	assert_null(srv);
	tu_cfg(&c, 1);
	c.high_water = 1000;
	c.low_water = 2000;
	assert_int_equal(pc_server_start(&c, &srv, err, sizeof(err)), -EINVAL);
	tu_cfg(&c, 1);
	c.host = "not-an-address";
	assert_int_equal(pc_server_start(&c, &srv, err, sizeof(err)), -EINVAL);
	tu_cfg(&c, 1);
	c.high_water = 64u << 20;
	assert_int_equal(pc_server_start(&c, &srv, err, sizeof(err)), -EINVAL);
	/* A port another server holds (without SO_REUSEPORT from the same
	 * user it would be shared: so hold it with a plain socket). */
	tu_cfg(&c, 1);
	srv = TU_SERVE(&c);
	struct sockaddr_storage ss;
	socklen_t len;
	assert_int_equal(pc_sockaddr_parse("127.0.0.1", 0, &ss, &len), 0);
	int plain = pc_listen((struct sockaddr *)&ss, len, 0, 0);
	assert_true(plain >= 0);
	assert_int_equal(pc_socket_local(plain, &ss, &len), 0);
	c.port = pc_sockaddr_port((struct sockaddr *)&ss);
	assert_int_equal(pc_server_start(&c, &srv2, err, sizeof(err)), -EADDRINUSE);
	close(plain);
	tu_stop(srv);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framed_echo),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_raw_echo),
		cmocka_unit_test(test_heartbeats),
		cmocka_unit_test(test_stats_frame),
		cmocka_unit_test(test_stats_print),
		cmocka_unit_test(test_send_to),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_bad_config),
	};

	return pc_test_main(tests, argc, argv);
}
