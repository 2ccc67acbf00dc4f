/* SPDX-License-Identifier: MIT */
/* What bad clients get, and that well-behaved clients keep being served
 * during and after each: malformed headers, random garbage, refusals
 * whatever the input buffered behind them, a half frame then silence, a
 * frame dribbled byte by byte, a client that never reads, more connections
 * than the limits, abrupt resets mid-frame. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"
#include "testmain.h"

/* A well-behaved client, checked before, during and after each abuse. */
struct good {
	int fd;
	uint32_t seq;
};

static void good_open(struct good *g, struct pc_server *srv)
{
	g->fd = tu_connect(pc_server_port(srv));
	assert_true(g->fd >= 0);
	g->seq = 0;
	assert_true(tu_echo_ok(g->fd, g->seq++, 100));
}

static void good_check(struct good *g)
{
	uint32_t id = g->seq++;

	assert_true(tu_echo_ok(g->fd, id, 1 + id % 3000));
}

static void good_close(struct good *g)
{
	good_check(g);
	close(g->fd);
}

/* The whole error frame, then an orderly end: EOF (the server's FIN),
 * not a reset, whatever the client sent after the bad header. */
static void expect_error_then_close(int fd, const char *why)
{
	struct pc_frame f = { 0 };
	uint8_t *body = NULL, b;

	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.flags, PC_FRAME_ERROR);
	assert_int_equal(f.msg_id, 0);
	assert_non_null(strstr((const char *)body, why));
	free(body);
	errno = 0;
	ssize_t n = recv(fd, &b, 1, 0);
	if (n)
		fprintf(stderr, "after the error frame: %zd (%s)\n", n, strerror(errno));
	assert_int_equal(n, 0);
}

static void test_malformed_headers(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	static const struct {
		uint8_t h[PC_FRAME_HEADER_LEN];
		const char *why;
	} bad[] = {
		{ { 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 }, "malformed" },       /* version */
		{ { 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 }, "malformed" },       /* version 0 */
		{ { 1, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 }, "malformed" },       /* flag bit 2 */
		{ { 1, 0x80, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 }, "malformed" },    /* flag bit 7 */
		{ { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1 }, "malformed" },       /* reserved */
		{ { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x80, 0 }, "malformed" },    /* reserved */
		{ { 1, 0, 0, 0, 0, 1, 0, 0, 0x04, 0x01, 0, 0 }, "maximum" },   /* 1025 > 1024 */
		{ { 1, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0 }, "maximum" },
	};
	uint64_t malformed = 0, oversize = 0;

	(void)state;
	tu_cfg(&c, 2);
	c.max_body = 1024;
	srv = TU_SERVE(&c);
	good_open(&g, srv);
	for (size_t i = 0; i < PC_ARRAY_LEN(bad); i++) {
		int fd = tu_connect(pc_server_port(srv));

		assert_true(fd >= 0);
		/* A good frame first: answered before the bad one is refused. */
		assert_true(tu_echo_ok(fd, 1, 10));
		assert_int_equal(tu_send_all(fd, bad[i].h, sizeof(bad[i].h)), 0);
		expect_error_then_close(fd, bad[i].why);
		close(fd);
		if (strstr(bad[i].why, "maximum"))
			oversize++;
		else
			malformed++;
		good_check(&g);
	}
	/* The largest body allowed still works. */
	assert_true(tu_echo_ok(g.fd, 1000, 1024));
	assert_true(TU_WAIT_STAT(srv, closed, PC_ARRAY_LEN(bad)));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.malformed, malformed);
	assert_int_equal(st.oversize, oversize);
	assert_int_equal(st.error_replies, PC_ARRAY_LEN(bad));
	assert_int_equal(st.closed_reason[PC_CLOSE_MALFORMED], malformed);
	assert_int_equal(st.closed_reason[PC_CLOSE_OVERSIZE], oversize);
	assert_int_equal(st.sessions, 1);
	good_close(&g);
	tu_stop(srv);
}

/* A header refused on its first bytes, without waiting for the rest. */
static void test_refused_early(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	static const uint8_t version_only[1] = { 9 };
	static const uint8_t len_only[10] = { 1, 0, 0, 0, 0, 0, 0x7f, 0, 0, 0 };

	(void)state;
	tu_cfg(&c, 1);
	c.max_body = 4096;
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	assert_int_equal(tu_send_all(fd, version_only, sizeof(version_only)), 0);
	expect_error_then_close(fd, "malformed");
	close(fd);
	fd = tu_connect(pc_server_port(srv));
	assert_int_equal(tu_send_all(fd, len_only, sizeof(len_only)), 0);
	expect_error_then_close(fd, "maximum");
	close(fd);
	tu_stop(srv);
}

/* Sends its bytes from a thread of its own, so the client reads the reply
 * while they are still arriving at the server. */
struct sender {
	pthread_t t;
	int fd;
	const uint8_t *p;
	size_t n;
};

static void *send_run(void *arg)
{
	struct sender *s = arg;

	tu_send_all(s->fd, s->p, s->n); /* may fail once the server closes */
	return NULL;
}

/* A refused connection gets its error frame and then the FIN however much
 * input is buffered behind the bad header or still arriving: one byte
 * short of the input ring (64 KiB), the ring exactly full, more than it
 * holds, and a body announced over the maximum followed by 64 KiB and by
 * megabytes more. Only replies actually written are counted. */
static void test_refused_whatever_follows(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	enum { MORE = 8 << 20 };
	static const size_t garbage[] = { 65535, 65536, 65537, 256 << 10 };
	uint8_t *junk = malloc(PC_FRAME_HEADER_LEN + MORE);
	struct sender snd;
	int fd;

	(void)state;
	assert_non_null(junk);
	tu_cfg(&c, 1); /* the default ring (64 KiB) and body maximum (1 MiB) */
	srv = TU_SERVE(&c);
	good_open(&g, srv);
	memset(junk, 0xff, PC_FRAME_HEADER_LEN + MORE);
	for (size_t i = 0; i < PC_ARRAY_LEN(garbage); i++) {
		fd = TU_CLIENT(srv);
		/* All of it is taken: what the server no longer reads after the
		 * refusal is discarded behind its FIN. */
		assert_int_equal(tu_send_all(fd, junk, garbage[i]), 0);
		expect_error_then_close(fd, "malformed");
		close(fd);
		good_check(&g);
	}
	/* A header announcing 2 MiB, then 65,588 bytes. */
	pc_frame_header_encode(junk, 1, 0, 2u << 20);
	memset(junk + PC_FRAME_HEADER_LEN, 'a', MORE);
	fd = TU_CLIENT(srv);
	assert_int_equal(tu_send_all(fd, junk, PC_FRAME_HEADER_LEN + 65588), 0);
	expect_error_then_close(fd, "maximum");
	close(fd);
	/* The same with megabytes still coming while the reply is read. */
	snd = (struct sender){ .fd = TU_CLIENT(srv), .p = junk, .n = PC_FRAME_HEADER_LEN + MORE };
	assert_int_equal(pthread_create(&snd.t, NULL, send_run, &snd), 0);
	expect_error_then_close(snd.fd, "maximum");
	pthread_join(snd.t, NULL);
	close(snd.fd);
	good_check(&g);

	assert_true(TU_WAIT_STAT(srv, closed, PC_ARRAY_LEN(garbage) + 2));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.malformed, PC_ARRAY_LEN(garbage));
	assert_int_equal(st.oversize, 2);
	assert_int_equal(st.error_replies, PC_ARRAY_LEN(garbage) + 2);
	assert_int_equal(st.closed_reason[PC_CLOSE_MALFORMED], PC_ARRAY_LEN(garbage));
	assert_int_equal(st.closed_reason[PC_CLOSE_OVERSIZE], 2);
	assert_int_equal(st.sessions, 1);
	assert_int_equal(st.buffered_bytes, 0);
	free(junk);
	good_close(&g);
	tu_stop(srv);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void test_random_garbage(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	enum { CLIENTS = 24, BYTES = 32768 };
	static uint8_t junk[BYTES];
	uint64_t seed = 0x5eed;

	(void)state;
	tu_cfg(&c, 2);
	c.max_body = 64 << 10;
	srv = TU_SERVE(&c);
	good_open(&g, srv);
	for (int i = 0; i < CLIENTS; i++) {
		int fd = tu_connect(pc_server_port(srv));

		assert_true(fd >= 0);
		for (size_t k = 0; k < BYTES; k += 8) {
			uint64_t v = rng_next(&seed);
			memcpy(junk + k, &v, 8);
		}
		/* Half the streams start with a valid version byte, so the
		 * refusal comes from a later field. */
		if (i % 2)
			junk[0] = PC_FRAME_VERSION;
		/* The server may refuse and close before all of it is sent. */
		tu_send_all(fd, junk, BYTES);
		assert_true(tu_closed(fd));
		close(fd);
		if (i % 6 == 0)
			good_check(&g);
	}
	assert_true(TU_WAIT_STAT(srv, closed, CLIENTS));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.malformed + st.oversize, CLIENTS);
	assert_int_equal(st.sessions, 1);
	assert_int_equal(st.buffered_bytes, 0);
	good_close(&g);
	tu_stop(srv);
}

/* Whether the peer has closed fd (EOF or reset); reads what came before
 * the close. Never blocks. */
static bool closed_now(int fd)
{
	uint8_t b[256];
	ssize_t k;

	while ((k = recv(fd, b, sizeof(b), MSG_DONTWAIT)) > 0)
		;
	return k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Wait up to ms for the server to close any of fd[0..1] not yet seen
 * closed, noting the time each close is seen in at[]. */
static void watch_closes(const int fd[2], uint64_t at[2], uint64_t ms)
{
	uint64_t end = pc_now_ns() + ms * 1000000;

	for (uint64_t now = pc_now_ns(); now < end; now = pc_now_ns()) {
		struct pollfd p[2];
		for (int i = 0; i < 2; i++)
			p[i] = (struct pollfd){ .fd = at[i] ? -1 : fd[i], .events = POLLIN };
		if (poll(p, 2, (int)((end - now) / 1000000) + 1) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (p[i].revents && closed_now(fd[i]))
				at[i] = pc_now_ns();
	}
}

static void test_half_frame_stall(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	uint8_t h[PC_FRAME_HEADER_LEN + 50];
	uint64_t closed_at[2] = { 0, 0 };

	(void)state;
	tu_cfg(&c, 1);
	/* Long enough that the good client, talking every sixth of it, is
	 * never idle even when this machine stalls it for most of one. */
	c.idle_timeout_ms = 1000 * TU_SLOW;
	const uint64_t timeout_ns = (uint64_t)c.idle_timeout_ms * 1000000;
	srv = TU_SERVE(&c);
	good_open(&g, srv);
	/* Before both connections: the server cannot have seen either. */
	uint64_t t0 = pc_now_ns();
	int half[2] = { tu_connect(pc_server_port(srv)), tu_connect(pc_server_port(srv)) };
	assert_int_equal(pc_frame_header_encode(h, 1, 0, 100), 0);
	assert_int_equal(tu_send_all(half[0], h, 6), 0);
	assert_int_equal(tu_send_all(half[1], h, sizeof(h)), 0);
	/* The good client keeps talking for two timeouts, so it is never
	 * idle; meanwhile each close is seen as it happens. */
	while ((!closed_at[0] || !closed_at[1] || pc_now_ns() - t0 < 2 * timeout_ns) &&
	       pc_now_ns() - t0 < 2 * timeout_ns + (uint64_t)TU_WAIT_MS * 1000000) {
		good_check(&g);
		watch_closes(half, closed_at, c.idle_timeout_ms / 6);
	}
	assert_true(closed_at[0] && closed_at[1]);
	assert_true(TU_WAIT_STAT(srv, closed, 2));
	/* Not before its time (the timer never fires early): a close seen
	 * less than one timeout after t0 came early. */
	for (int i = 0; i < 2; i++)
		if (closed_at[i] - t0 < timeout_ns)
			fail_msg("connection %d closed %.1f ms after it was made; the idle timeout is %u ms",
				 i, (double)(closed_at[i] - t0) / 1e6, c.idle_timeout_ms);
	int half_header = half[0], half_body = half[1];
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.closed_reason[PC_CLOSE_IDLE], 2);
	assert_int_equal(st.sessions, 1);
	assert_int_equal(st.buffered_bytes, 0);
	close(half_header);
	close(half_body);
	good_close(&g);
	tu_stop(srv);
}

/* Sends frames without ever reading until the kernel has refused more for
 * a while (the server, reading and answering, makes room for a time). */
static size_t flood(int fd, size_t body, size_t max_bytes)
{
	uint8_t *buf = malloc(PC_FRAME_HEADER_LEN + body);
	size_t sent = 0;
	int fl = fcntl(fd, F_GETFL);

	memset(buf + PC_FRAME_HEADER_LEN, 0xab, body);
	pc_frame_header_encode(buf, 1, 0, body);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	for (size_t off = 0; sent < max_bytes;) {
		ssize_t k = send(fd, buf + off, PC_FRAME_HEADER_LEN + body - off, MSG_NOSIGNAL);
		if (k < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			if (poll(&p, 1, 100 * TU_SLOW) == 1)
				continue;
		}
		if (k <= 0)
			break;
		sent += (size_t)k;
		off = (off + (size_t)k) % (PC_FRAME_HEADER_LEN + body);
	}
	fcntl(fd, F_SETFL, fl);
	free(buf);
	return sent;
}

static void test_never_reads(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	enum { BODY = 16 << 10 };

	(void)state;
	tu_cfg(&c, 1);
	c.high_water = 64 << 10;
	srv = TU_SERVE(&c);
	good_open(&g, srv);
	int bad = tu_connect(pc_server_port(srv));
	assert_true(bad >= 0);
	size_t sent = flood(bad, BODY, 64u << 20);
	assert_true(sent > c.high_water);
	assert_true(TU_WAIT_STAT(srv, paused, 1));
	/* Held at the high-water mark (plus at most one reply), however
	 * long it lasts, while the good client is served. While the flood
	 * ran, the kernel may have taken more of the replies late (on a
	 * loaded machine loopback delivery waits for its softirq thread),
	 * letting the server read again and pause a second time; once the
	 * flood has stopped, nothing resumes it. */
	const uint64_t bound = c.high_water + PC_FRAME_HEADER_LEN + BODY;
	const uint64_t pauses = tu_stats(srv).read_pauses;

	assert_true(pauses >= 1);
	for (int i = 0; i < 20; i++) {
		struct pc_server_stats st = tu_stats(srv);
		assert_true(st.queued_bytes <= bound);
		assert_true(st.queued_bytes >= c.high_water);
		assert_int_equal(st.paused, 1);
		good_check(&g);
		tu_sleep_ms(10);
	}
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.read_pauses, pauses);
	/* Once it reads, everything it sent comes back and it is read again. */
	size_t frame = PC_FRAME_HEADER_LEN + BODY, whole = sent / frame * frame;
	uint8_t *buf = malloc(frame);
	int fl = fcntl(bad, F_GETFL);
	fcntl(bad, F_SETFL, fl | O_NONBLOCK);
	size_t got = 0;
	uint64_t end = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;
	while (got < whole && pc_now_ns() < end) {
		ssize_t k = recv(bad, buf, frame, 0);
		if (k > 0)
			got += (size_t)k;
		else
			tu_sleep_ms(1);
	}
	free(buf);
	assert_int_equal(got, whole);
	assert_true(TU_WAIT_STAT(srv, frames_out, sent / frame + g.seq));
	assert_int_equal(tu_stats(srv).paused, 0);
	close(bad);
	assert_true(TU_WAIT_STAT(srv, closed, 1));
	st = tu_stats(srv);
	assert_int_equal(st.queued_bytes, 0);
	assert_int_equal(st.buffer_bytes, 0);
	good_close(&g);
	tu_stop(srv);
}

/* Counts the clients served (an echo works) and refused (closed). */
/* The kernel completes the handshake before the server sees a
 * connection, so a connection over a limit is normally refused after
 * connect() returned. On a busy machine the server can accept and reset
 * it before the client's thread runs again: connect() then fails with
 * ECONNRESET, a refusal too (REFUSED_AT_CONNECT). Anything else fails. */
enum { REFUSED_AT_CONNECT = -2 };

static int connect_limited(uint16_t port, const char *from)
{
	int fd = tu_connect_try(port, from);

	if (fd == -ECONNRESET)
		return REFUSED_AT_CONNECT;
	if (fd < 0)
		fprintf(stderr, "connect to port %u: %s\n", port, strerror(-fd));
	return fd < 0 ? -1 : fd;
}

static void close_limited(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void probe(int *fds, int n, int *served, int *refused)
{
	*served = *refused = 0;
	for (int i = 0; i < n; i++) {
		if (fds[i] == REFUSED_AT_CONNECT)
			(*refused)++;
		else if (tu_echo_ok(fds[i], (uint32_t)i, 8))
			(*served)++;
		else if (tu_closed(fds[i]))
			(*refused)++;
	}
}

static void test_session_limit(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	int fds[10], served, refused;

	(void)state;
	tu_cfg(&c, 1);
	c.max_sessions = 4;
	srv = TU_SERVE(&c);
	good_open(&g, srv);
	for (int i = 0; i < 10; i++) {
		fds[i] = connect_limited(pc_server_port(srv), NULL);
		assert_true(fds[i] != -1);
	}
	assert_true(TU_WAIT_STAT(srv, rejected_shard_limit, 7));
	probe(fds, 10, &served, &refused);
	assert_int_equal(served, 3);
	assert_int_equal(refused, 7);
	good_check(&g);
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.rejected_shard_limit, 7);
	assert_int_equal(st.sessions, 4);
	close_limited(fds, 10);
	assert_true(TU_WAIT_STAT(srv, closed, 3));
	/* Room again once they have gone. */
	int again = tu_connect(pc_server_port(srv));
	assert_true(tu_echo_ok(again, 1, 10));
	close(again);
	good_close(&g);
	tu_stop(srv);
}

static void test_addr_limit(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	int fds[8], served, refused;

	(void)state;
	tu_cfg(&c, 2);
	c.max_per_addr = 3;
	srv = TU_SERVE(&c);
	good_open(&g, srv); /* from 127.0.0.1 */
	int probe_fd = tu_connect_from(pc_server_port(srv), "127.0.0.2");
	if (probe_fd < 0) {
		good_close(&g);
		tu_stop(srv);
		PC_SKIP("no second loopback address (127.0.0.2) here");
	}
	close(probe_fd);
	assert_true(TU_WAIT_STAT(srv, closed, 1));
	/* Over both shards, 127.0.0.2 gets three sessions in all. */
	for (int i = 0; i < 8; i++) {
		fds[i] = connect_limited(pc_server_port(srv), "127.0.0.2");
		assert_true(fds[i] != -1);
	}
	assert_true(TU_WAIT_STAT(srv, rejected_addr_limit, 5));
	probe(fds, 8, &served, &refused);
	assert_int_equal(served, 3);
	assert_int_equal(refused, 5);
	/* Other addresses are not affected. */
	good_check(&g);
	int other = tu_connect(pc_server_port(srv));
	assert_true(tu_echo_ok(other, 1, 10));
	close(other);
	assert_int_equal(tu_stats(srv).rejected_addr_limit, 5);
	close_limited(fds, 8);
	assert_true(TU_WAIT_STAT(srv, closed, 1 + 3 + 1)); /* refused ones never were sessions */
	int again = tu_connect_from(pc_server_port(srv), "127.0.0.2");
	assert_true(tu_echo_ok(again, 1, 10));
	close(again);
	good_close(&g);
	tu_stop(srv);
}

static void reset_close(int fd)
{
	pc_socket_reset_on_close(fd);
	close(fd);
}

static void test_resets(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct good g;
	enum { N = 30 };
	uint8_t h[PC_FRAME_HEADER_LEN + 2000];

	(void)state;
	tu_cfg(&c, 2);
	c.high_water = 32 << 10;
	srv = TU_SERVE(&c);
	good_open(&g, srv);
	memset(h, 0x33, sizeof(h));
	for (int i = 0; i < N; i++) {
		int fd = tu_connect(pc_server_port(srv));

		assert_true(fd >= 0);
		switch (i % 3) {
		case 0: /* mid-header */
			pc_frame_header_encode(h, 1, 0, 5000);
			tu_send_all(fd, h, 7);
			break;
		case 1: /* mid-body */
			pc_frame_header_encode(h, 1, 0, 5000);
			tu_send_all(fd, h, sizeof(h));
			break;
		case 2: /* replies queued and unread */
			flood(fd, 4000, 4u << 20);
			break;
		}
		/* Let the server take the bytes in before the reset. */
		tu_sleep_ms(2);
		reset_close(fd);
		if (i % 5 == 0)
			good_check(&g);
	}
	assert_true(TU_WAIT_STAT(srv, closed, N));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.sessions, 1);
	assert_int_equal(st.queued_bytes, 0);
	assert_int_equal(st.buffered_bytes, 0);
	assert_int_equal(st.buffer_bytes, 0);
	assert_int_equal(st.paused, 0);
	assert_int_equal(st.closed_reason[PC_CLOSE_RESET] + st.closed_reason[PC_CLOSE_PEER], N);
	good_close(&g);
	tu_stop(srv);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_headers),
		cmocka_unit_test(test_refused_early),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_refused_whatever_follows),
		cmocka_unit_test(test_half_frame_stall),
		cmocka_unit_test(test_never_reads),
		cmocka_unit_test(test_session_limit),
		cmocka_unit_test(test_addr_limit),
		cmocka_unit_test(test_resets),
	};

	return pc_test_main(tests, argc, argv);
}
