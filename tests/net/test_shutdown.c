/* SPDX-License-Identifier: MIT */
/* Graceful shutdown: replies to everything the server received are
 * delivered, then each client sees an orderly close; a client that never
 * reads is cut at the drain deadline; new connections are refused; the
 * server stops by itself once drained. And the immediate stop. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <cmocka.h>

#include "net_util.h"

enum { CLIENTS = 12, FRAMES = 40, BODY = 700 };

static void send_batch(int fd, uint32_t base)
{
	static uint8_t buf[FRAMES * (PC_FRAME_HEADER_LEN + BODY)];
	uint8_t *p = buf;

	for (uint32_t i = 0; i < FRAMES; i++) {
		pc_frame_header_encode(p, base + i, 0, BODY);
		memset(p + PC_FRAME_HEADER_LEN, (int)(base + i), BODY);
		p += PC_FRAME_HEADER_LEN + BODY;
	}
	assert_int_equal(tu_send_all(fd, buf, sizeof(buf)), 0);
}

static void read_batch(int fd, uint32_t base)
{
	for (uint32_t i = 0; i < FRAMES; i++) {
		struct pc_frame f = { 0 };
		uint8_t *b = NULL;

		assert_int_equal(tu_recv_frame(fd, &f, &b), 0);
		assert_int_equal(f.msg_id, base + i);
		assert_int_equal(f.len, BODY);
		for (uint32_t k = 0; k < BODY; k++)
			assert_int_equal(b[k], (uint8_t)(base + i));
		free(b);
	}
}

/* Wait until the server's kernel has acknowledged every byte fd sent:
 * then they lie in the server's socket, received. */
static bool acked(int fd)
{
	uint64_t end = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;
	int left = 1;

	while (ioctl(fd, SIOCOUTQ, &left) == 0 && left > 0 && pc_now_ns() < end)
		tu_sleep_ms(2);
	return left == 0;
}

/* EOF, not a reset: the server's FIN came after the last reply. */
static void expect_eof(int fd)
{
	uint8_t b;

	assert_int_equal(recv(fd, &b, 1, 0), 0);
}

/* Send large frames on fd, which never reads, until the server stops
 * reading it (its output above high water). The frames stay whole
 * however a loaded machine cuts the sends. */
static void fill_until_paused(struct pc_server *srv, int fd)
{
	static uint8_t big[PC_FRAME_HEADER_LEN + 60000];
	struct timeval tv = { .tv_usec = 20000 };
	uint64_t end = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;
	size_t off = 0;

	pc_frame_header_encode(big, 9, 0, 60000);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (!tu_stats(srv).paused && pc_now_ns() < end) {
		ssize_t k = send(fd, big + off, sizeof(big) - off, MSG_NOSIGNAL);

		if (k > 0)
			off = (off + (size_t)k) % sizeof(big);
		else
			assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	}
	assert_true(tu_stats(srv).paused);
}

static void test_drain_delivers(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int fds[CLIENTS], stuck;

	(void)state;
	tu_cfg(&c, 2);
	c.high_water = 32 << 10;
	srv = TU_SERVE(&c);
	uint16_t port = pc_server_port(srv);
	for (int i = 0; i < CLIENTS; i++) {
		fds[i] = tu_connect(port);
		assert_true(fds[i] >= 0);
		assert_true(tu_echo_ok(fds[i], 1, 10)); /* accepted and served */
	}
	/* A client that will never read: its output cannot drain. */
	stuck = tu_connect(port);
	assert_true(stuck >= 0);
	assert_true(tu_echo_ok(stuck, 1, 10));
	fill_until_paused(srv, stuck);
	/* Requests sent and not read back: received, and not all answered,
	 * when shutdown begins. */
	for (int i = 0; i < CLIENTS; i++)
		send_batch(fds[i], 1000 + (uint32_t)i * FRAMES);
	/* A send returns before the server's kernel has the bytes when the
	 * loopback's delivery is deferred (a loaded machine): wait for them. */
	for (int i = 0; i < CLIENTS; i++)
		assert_true(acked(fds[i]));
	uint64_t t0 = pc_now_ns();
	/* Long enough for every client to read its replies on a loaded
	 * machine: only the stuck client may be cut. */
	const uint32_t drain_ms = 2500 * TU_SLOW;
	assert_int_equal(pc_server_shutdown(srv, drain_ms), 0);
	assert_int_equal(pc_server_shutdown(srv, drain_ms), -EALREADY);
	for (int i = 0; i < CLIENTS; i++) {
		read_batch(fds[i], 1000 + (uint32_t)i * FRAMES);
		expect_eof(fds[i]);
		/* The server waits for our close (no reset to race the
		 * replies); ours ends it. */
		close(fds[i]);
	}
	/* The listeners are gone: a new client is refused or reset. */
	int late = tu_connect(port);
	if (late >= 0) {
		assert_true(tu_closed(late));
		close(late);
	}
	/* The stuck client holds the server until the deadline, no longer. */
	assert_int_equal(pc_server_wait(srv), 0);
	uint64_t took_ms = (pc_now_ns() - t0) / 1000000;
	assert_true(took_ms >= drain_ms - 1);
	assert_true(took_ms < drain_ms + 5000 * TU_SLOW);
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.sessions, 0);
	assert_int_equal(st.drain_aborted, 1);
	assert_int_equal(st.closed_reason[PC_CLOSE_SHUTDOWN], CLIENTS + 1);
	assert_int_equal(st.queued_bytes, 0);
	assert_int_equal(st.buffer_bytes, 0);
	close(stuck);
	pc_server_destroy(srv);
}

/* Replies far larger than their requests: the client's socket and the
 * server's fill up, and the session stops reading with requests still
 * waiting in its socket (or, on the completion path, received by the
 * reactor and kept back). */
enum { BIG_REPLY = 32 << 10, FIRST = 512, SECOND = 16 };

static void big_reply(struct pc_session *s, const struct pc_frame *f, void *user)
{
	static const uint8_t pad[BIG_REPLY];
	struct iovec iov[2] = { { (void *)f->body, f->len }, { (void *)pad, sizeof(pad) } };

	(void)user;
	assert_int_equal(pc_session_sendv(s, f->msg_id, 0, iov, 2), 0);
}

static void send_ids(int fd, uint32_t first, uint32_t n)
{
	for (uint32_t id = first; id < first + n; id++)
		assert_int_equal(tu_send_frame(fd, id, 0, &id, sizeof(id)), 0);
}

/* A session paused by its output when the drain begins still answers the
 * requests that wait in its socket once its client reads, before the FIN. */
static void test_drain_reads_paused(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;

	(void)state;
	tu_cfg(&c, 1);
	c.on_frame = big_reply;
	c.high_water = 64 << 10;
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	send_ids(fd, 0, FIRST);
	assert_true(TU_WAIT_STAT(srv, paused, 1));
	send_ids(fd, FIRST, SECOND);
	assert_true(acked(fd));
	assert_int_equal(pc_server_shutdown(srv, 60000), 0);
	for (uint32_t id = 0; id < FIRST + SECOND; id++) {
		struct pc_frame f = { 0 };
		uint8_t *b = NULL;
		uint32_t got;

		assert_int_equal(tu_recv_frame(fd, &f, &b), 0);
		memcpy(&got, b, sizeof(got));
		free(b);
		assert_int_equal(f.msg_id, id);
		assert_int_equal(got, id);
		assert_int_equal(f.len, sizeof(id) + BIG_REPLY);
	}
	expect_eof(fd);
	close(fd);
	assert_int_equal(pc_server_wait(srv), 0);
	assert_int_equal(tu_stats(srv).drain_aborted, 0);
	pc_server_destroy(srv);
}

/* With nothing in flight the server stops at once, not at the deadline. */
static void test_drain_idle(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;

	(void)state;
	tu_cfg(&c, 2);
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	assert_true(tu_echo_ok(fd, 1, 10));
	uint64_t t0 = pc_now_ns();
	assert_int_equal(pc_server_shutdown(srv, 60000), 0);
	expect_eof(fd);
	close(fd);
	assert_int_equal(pc_server_wait(srv), 0);
	assert_true(pc_now_ns() - t0 < 5000000000ull * TU_SLOW);
	assert_int_equal(tu_stats(srv).drain_aborted, 0);
	pc_server_destroy(srv);
}

/* Stop now: sessions closed without flushing, on_close still told. */
static unsigned closes[PC_CLOSE_REASONS];

static void count_close(struct pc_session *s, enum pc_close_reason why, void *user)
{
	(void)s;
	(void)user;
	__atomic_add_fetch(&closes[why], 1, __ATOMIC_RELAXED);
}

static void test_stop_now(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int fds[5];

	(void)state;
	tu_cfg(&c, 2);
	c.on_close = count_close;
	srv = TU_SERVE(&c);
	for (int i = 0; i < 5; i++) {
		fds[i] = tu_connect(pc_server_port(srv));
		assert_true(tu_echo_ok(fds[i], 1, 10));
	}
	pc_server_stop(srv);
	assert_int_equal(pc_server_wait(srv), 0);
	for (int i = 0; i < 5; i++) {
		assert_true(tu_closed(fds[i]));
		close(fds[i]);
	}
	assert_int_equal(closes[PC_CLOSE_SHUTDOWN], 5);
	assert_int_equal(tu_stats(srv).sessions, 0);
	assert_int_equal(pc_server_shutdown(srv, 10), -EALREADY);
	pc_server_destroy(srv);
}

/* A client that never stops sending does not hold the drain open: the
 * sessions read for a while, then every reply written so far arrives in
 * order before the FIN, and nothing is cut at the deadline. */
struct endless {
	int fd;
	bool stop;
};

static void *send_forever(void *arg)
{
	struct endless *e = arg;
	static uint8_t buf[64 * (PC_FRAME_HEADER_LEN + 16)];
	uint32_t id = 0;

	while (!__atomic_load_n(&e->stop, __ATOMIC_RELAXED)) {
		uint8_t *p = buf;

		for (int i = 0; i < 64; i++, p += PC_FRAME_HEADER_LEN + 16) {
			pc_frame_header_encode(p, id++, 0, 16);
			memset(p + PC_FRAME_HEADER_LEN, 0, 16);
		}
		if (tu_send_all(e->fd, buf, sizeof(buf)))
			break;
	}
	return NULL;
}

static void test_drain_endless_sender(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct endless e = { 0 };
	struct pc_frame f;
	uint32_t next = 0;
	pthread_t t;

	(void)state;
	tu_cfg(&c, 2);
	srv = TU_SERVE(&c);
	e.fd = TU_CLIENT(srv);
	assert_int_equal(pthread_create(&t, NULL, send_forever, &e), 0);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(tu_recv_frame(e.fd, &f, NULL), 0);
		assert_int_equal(f.msg_id, next++);
	}
	assert_int_equal(pc_server_shutdown(srv, 60000), 0);
	while (tu_recv_frame(e.fd, &f, NULL) == 0) /* in order, up to the FIN */
		assert_int_equal(f.msg_id, next++);
	__atomic_store_n(&e.stop, true, __ATOMIC_RELAXED);
	shutdown(e.fd, SHUT_WR);
	assert_int_equal(pthread_join(t, NULL), 0);
	close(e.fd);
	assert_int_equal(pc_server_wait(srv), 0);
	assert_int_equal(tu_stats(srv).drain_aborted, 0);
	pc_server_destroy(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_delivers),
		cmocka_unit_test(test_drain_reads_paused),
		cmocka_unit_test(test_drain_idle),
		cmocka_unit_test(test_drain_endless_sender),
		cmocka_unit_test(test_stop_now),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
