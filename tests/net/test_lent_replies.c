/* SPDX-License-Identifier: MIT */
/* Replies sent from the frame in hand stay in the session's input ring
 * until the flush (struct net_ref in src/runtime/net/net.h): echoed headers join
 * their bodies, consecutive echoes go out as one range, and short pieces
 * stay only where they add no iovec. These tests mix such pieces with
 * bytes of the handler's own in every order and check the client reads
 * exactly the stream the handler queued; and that a session whose
 * replies are written holds no buffer while it stays open. */
#include <netinet/tcp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"
#include "percore/session.h"
#include "testmain.h"

/* Where a frame's replies go: the session (server side), or the byte
 * stream the client expects. */
struct sink {
	struct pc_session *s;
	uint8_t *buf;
	size_t len, cap;
};

static void put(struct sink *k, const void *p, size_t n)
{
	if (k->len + n > k->cap) {
		k->cap = (k->len + n) * 2;
		k->buf = realloc(k->buf, k->cap);
		assert_non_null(k->buf);
	}
	if (n)
		memcpy(k->buf + k->len, p, n);
	k->len += n;
}

static void out_frame(struct sink *k, uint32_t id, const struct iovec *v, int n)
{
	uint8_t h[PC_FRAME_HEADER_LEN];
	size_t len = 0;

	if (k->s) {
		assert_int_equal(pc_session_sendv(k->s, id, 0, v, n), 0);
		return;
	}
	for (int i = 0; i < n; i++)
		len += v[i].iov_len;
	assert_int_equal(pc_frame_header_encode(h, id, 0, len), 0);
	put(k, h, sizeof(h));
	for (int i = 0; i < n; i++)
		put(k, v[i].iov_base, v[i].iov_len);
}

static void out_bytes(struct sink *k, const void *p, size_t n)
{
	if (k->s)
		assert_int_equal(pc_session_write(k->s, p, n), 0);
	else
		put(k, p, n);
}

/* What the server answers to one frame: the echo alone for two frames in
 * three (runs of whole echoes, one range of the input ring); else the
 * echo, a slice of the body as bytes, a frame of body pieces around bytes
 * of its own, and for large bodies a run of 1 KiB slices each after a
 * byte of its own (more references than one session may hold in a
 * turn). */
static void replies(struct sink *k, uint32_t id, const uint8_t *body, size_t len)
{
	uint8_t own[3] = { 0xee, (uint8_t)id, 0xee };
	struct iovec echo = { (void *)body, len };
	struct iovec mix[4] = {
		{ (void *)body, len / 3 }, { own, sizeof(own) },
		{ (void *)(body + len / 3), len - len / 3 }, { own, 1 },
	};

	out_frame(k, id, &echo, 1);
	if (id / 2 % 3)
		return;
	out_bytes(k, body + len / 2, len / 4);
	out_frame(k, id + 1, mix, 4);
	for (size_t off = 0; len >= 65536 && off + 1024 <= len; off += 1024) {
		out_bytes(k, own, 1);
		out_bytes(k, body + off, 1024);
	}
}

static void mixed_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	struct sink k = { .s = s };

	(void)user;
	replies(&k, f->msg_id, f->body, f->len);
}

/* The 400,000-byte frame is number 300, a multiple of three: it gets
 * every reply. */
enum { FRAMES = 600 };

static size_t body_len(uint32_t i)
{
	static const size_t sizes[] = { 0, 1, 11, 12, 13, 64, 100, 512, 1023, 1024, 1500, 4096, 5000 };

	return i == FRAMES / 2 ? 400000 : sizes[i % PC_ARRAY_LEN(sizes)];
}

static void fill(uint8_t *p, size_t n, uint32_t i)
{
	for (size_t j = 0; j < n; j++)
		p[j] = (uint8_t)(i * 31 + j * 7 + (j >> 8));
}

/* The client read what the handler queued, byte for byte. */
static void same_stream(const uint8_t *got, const struct sink *want)
{
	for (size_t i = 0; i < want->len; i++)
		if (got[i] != want->buf[i])
			fail_msg("byte %zu of %zu differs", i, want->len);
}

struct sender {
	int fd;
	uint8_t *buf;
	size_t len;
	int rc;
};

static void *send_all(void *arg)
{
	struct sender *t = arg;

	t->rc = tu_send_all(t->fd, t->buf, t->len);
	return NULL;
}

/* Every frame in one write (the server reads them in ring-sized bites,
 * wrapping its ring, pausing at high water) while the client reads. */
static void test_mixed_replies(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct sink in = { 0 }, want = { 0 };
	struct sender t = { 0 };
	pthread_t th;
	uint8_t *body = malloc(400000), h[PC_FRAME_HEADER_LEN];

	(void)state;
	assert_non_null(body);
	for (uint32_t i = 0; i < FRAMES; i++) {
		size_t n = body_len(i);

		fill(body, n, i);
		assert_int_equal(pc_frame_header_encode(h, i * 2, 0, n), 0);
		put(&in, h, sizeof(h));
		put(&in, body, n);
		replies(&want, i * 2, body, n);
	}
	tu_cfg(&c, 1);
	c.on_frame = mixed_frame;
	srv = TU_SERVE(&c);
	t.fd = TU_CLIENT(srv);
	t.buf = in.buf;
	t.len = in.len;
	assert_int_equal(pthread_create(&th, NULL, send_all, &t), 0);
	uint8_t *got = malloc(want.len);
	assert_non_null(got);
	assert_int_equal(tu_recv_all(t.fd, got, want.len), 0);
	pthread_join(th, NULL);
	assert_int_equal(t.rc, 0);
	same_stream(got, &want);
	close(t.fd);
	free(got);
	free(body);
	free(in.buf);
	free(want.buf);
	tu_stop(srv);
}

/* The shard's ring bytes in use reach 0 (replies written, rings back). */
static bool no_buffers(struct pc_server *srv)
{
	uint64_t end = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;

	while (tu_stats(srv).buffer_bytes && pc_now_ns() < end)
		tu_sleep_ms(2);
	return tu_stats(srv).buffer_bytes == 0;
}

/* An open session whose echoes are all written holds no ring: the input
 * ring its replies were sent from goes back with the flush, whatever the
 * size, one frame at a time or many in one write. */
static void test_idle_after_echo(void **state)
{
	static const size_t sizes[] = { 64, 512, 4096, 70000 };
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct sink in = { 0 };
	uint8_t h[PC_FRAME_HEADER_LEN], body[4096];

	(void)state;
	tu_cfg(&c, 1);
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	for (size_t k = 0; k < PC_ARRAY_LEN(sizes); k++) {
		assert_true(tu_echo_ok(fd, (uint32_t)k, sizes[k]));
		assert_true(no_buffers(srv));
	}
	fill(body, sizeof(body), 1);
	for (uint32_t i = 0; i < 16; i++) {
		assert_int_equal(pc_frame_header_encode(h, i, 0, sizeof(body)), 0);
		put(&in, h, sizeof(h));
		put(&in, body, sizeof(body));
	}
	assert_int_equal(tu_send_all(fd, in.buf, in.len), 0);
	uint8_t *got = malloc(in.len);
	assert_non_null(got);
	assert_int_equal(tu_recv_all(fd, got, in.len), 0);
	assert_memory_equal(got, in.buf, in.len);
	assert_true(no_buffers(srv));
	assert_int_equal(tu_stats(srv).sessions, 1);
	close(fd);
	free(got);
	free(in.buf);
	tu_stop(srv);
}

/* Each request asks for a burst of short replies of the handler's own
 * bytes, copied at the output ring's tail: frames of one piece and of
 * two, and bytes. Their lengths vary, so that with a small output ring
 * and a client slow to read, the tail meets the ring's end mid-reply. */
enum { BURST_REQUESTS = 500, BURST = 40 };

static void burst_replies(struct sink *k, uint32_t req)
{
	uint8_t own[64];

	for (uint32_t j = 0; j < BURST; j++) {
		uint32_t id = req * BURST + j;
		size_t len = id % 61 + 1;
		struct iovec one = { own, len }, two[2] = { { own, 1 }, { own + 1, len - 1 } };

		fill(own, len, id);
		if (j % 3 == 0)
			out_frame(k, id, &one, 1);
		else if (j % 3 == 1)
			out_frame(k, id, two, 2);
		else
			out_bytes(k, own, len);
	}
}

static void burst_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	struct sink k = { .s = s };

	(void)user;
	burst_replies(&k, f->msg_id);
}

/* A client whose receive buffer is small: the server's output waits in
 * its ring. */
static int small_window_client(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int rcvbuf = 4096, mss = 536, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = TU_WAIT_MS / 1000 };

	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	/* The server's send buffer is sized from the segment size (on
	 * loopback, megabytes): small segments keep it small too. */
	assert_int_equal(setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss)), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Short replies queued while the output ring is in use and wrapping
 * reach the client whole and in order. */
static void test_short_replies_wrap(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct sink in = { 0 }, want = { 0 };
	struct sender t = { 0 };
	uint8_t h[PC_FRAME_HEADER_LEN];
	pthread_t th;

	(void)state;
	for (uint32_t i = 0; i < BURST_REQUESTS; i++) {
		assert_int_equal(pc_frame_header_encode(h, i, 0, 0), 0);
		put(&in, h, sizeof(h));
		burst_replies(&want, i);
	}
	tu_cfg(&c, 1);
	c.on_frame = burst_frame;
	c.tx_buffer = 4096;
	srv = TU_SERVE(&c);
	t.fd = small_window_client(pc_server_port(srv));
	t.buf = in.buf;
	t.len = in.len;
	assert_int_equal(pthread_create(&th, NULL, send_all, &t), 0);
	uint8_t *got = malloc(want.len);
	assert_non_null(got);
	for (size_t off = 0; off < want.len; off += 1024) {
		size_t n = want.len - off < 1024 ? want.len - off : 1024;
		assert_int_equal(tu_recv_all(t.fd, got + off, n), 0);
		if (off % 4096 == 0)
			tu_sleep_ms(1); /* the server's output backs up */
	}
	pthread_join(th, NULL);
	assert_int_equal(t.rc, 0);
	same_stream(got, &want);
	close(t.fd);
	free(got);
	free(in.buf);
	free(want.buf);
	tu_stop(srv);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mixed_replies),
		cmocka_unit_test(test_idle_after_echo),
		cmocka_unit_test(test_short_replies_wrap),
	};

	return pc_test_main(tests, argc, argv);
}
