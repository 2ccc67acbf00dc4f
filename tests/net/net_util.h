/* SPDX-License-Identifier: MIT */
/* Test helpers: an in-process echo server and blocking loopback clients
 * whose every wait is bounded. */
#ifndef PERCORE_TESTS_NET_UTIL_H
#define PERCORE_TESTS_NET_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "percore/clock.h"
#include "percore/frame.h"
#include "percore/listener.h"
#include "percore/server.h"

/* Sanitizers and emulation (PC_TEST_SLOW: the aarch64 tests under qemu)
 * slow everything down; waits scale with this. */
#if defined(PC_ASAN) || defined(PC_TSAN) || defined(PC_TEST_SLOW)
#define TU_SLOW 4
#else
#define TU_SLOW 1
#endif
#define TU_WAIT_MS (5000 * TU_SLOW)

static inline void tu_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* The echo protocol: same id, flags and body. */
static inline void tu_echo_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)user;
	pc_session_send_flags(s, f->msg_id, f->flags, f->body, f->len);
}

static inline size_t tu_echo_raw(struct pc_session *s, const uint8_t *d, size_t n, void *user)
{
	(void)user;
	return pc_session_write(s, d, n) ? 0 : n;
}

/* The reactor backend the suite runs on: PC_TEST_BACKEND=uring or epoll
 * (the default), set by tests/net/CMakeLists.txt. */
static inline enum pc_backend tu_backend(void)
{
	const char *b = getenv("PC_TEST_BACKEND");

	return b && !strcmp(b, "uring") ? PC_BACKEND_URING : PC_BACKEND_EPOLL;
}

/* A server on 127.0.0.1, port chosen by the kernel, shards not pinned. */
static inline void tu_cfg(struct pc_server_cfg *c, unsigned shards)
{
	pc_server_cfg_init(c);
	c->engine.backend = tu_backend();
	c->host = "127.0.0.1";
	c->engine.shards = shards;
	c->engine.placement = "off";
	c->engine.oversubscribe = true;
	c->engine.idle = PC_IDLE_SLEEP; /* tests share two CPUs: do not spin */
	c->on_frame = tu_echo_frame;
	c->on_data = tu_echo_raw;
	c->stats_frames = true;
}

static inline struct pc_server *tu_start(const struct pc_server_cfg *c)
{
	struct pc_server *srv = NULL;
	char err[160];
	int rc = pc_server_start(c, &srv, err, sizeof(err));

	if (rc) {
		fprintf(stderr, "server start: %s (%d)\n", err, rc);
		return NULL;
	}
	return srv;
}

/* Start a server from c, or fail the test (use after cmocka.h). */
#define TU_SERVE(c)                                                             \
	({                                                                      \
		struct pc_server *s_ = tu_start(c);                             \
		assert_non_null(s_);                                            \
		s_;                                                             \
	})

static inline void tu_stop(struct pc_server *srv)
{
	pc_server_stop(srv);
	pc_server_wait(srv);
	pc_server_destroy(srv);
}

/* One attempt of tu_connect_from; -errno when it fails. */
static inline int tu_connect_once(uint16_t port, const char *from)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, err;
	struct timeval tv = { .tv_sec = TU_WAIT_MS / 1000 };

	if (fd < 0)
		return -errno;
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (from) {
		struct sockaddr_in b = { .sin_family = AF_INET };

		inet_pton(AF_INET, from, &b.sin_addr);
		/* the port is chosen at connect, for the whole address pair
		 * (IP_BIND_ADDRESS_NO_PORT), not at bind for the address alone */
		setsockopt(fd, IPPROTO_IP, 24 /* IP_BIND_ADDRESS_NO_PORT */, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&b, sizeof(b))) {
			err = -errno;
			close(fd);
			return err;
		}
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* tu_connect_once, tried again a few times while the source port is
 * taken by another test's connection at that moment (EADDRINUSE,
 * EADDRNOTAVAIL): the client's problem, not the server's. The fd, or
 * -errno of the last attempt. */
static inline int tu_connect_try(uint16_t port, const char *from)
{
	int fd = -EADDRINUSE;

	for (int i = 0; i < 5 && (fd == -EADDRINUSE || fd == -EADDRNOTAVAIL); i++)
		fd = tu_connect_once(port, from);
	return fd;
}

/* A blocking client on 127.0.0.1 (or from, when not NULL: another
 * loopback address to test per-address limits), with the wait's timeouts
 * on both directions; -1 when it cannot be made, said on stderr. */
static inline int tu_connect_from(uint16_t port, const char *from)
{
	int fd = tu_connect_try(port, from);

	if (fd < 0)
		fprintf(stderr, "connect to port %u from %s: %s\n", port, from ? from : "any",
			strerror(-fd));
	return fd < 0 ? -1 : fd;
}

static inline int tu_connect(uint16_t port)
{
	return tu_connect_from(port, NULL);
}

/* A client of srv, or fail the test (use after cmocka.h). */
#define TU_CLIENT(srv)                                                          \
	({                                                                      \
		int fd_ = tu_connect(pc_server_port(srv));                      \
		assert_true(fd_ >= 0);                                          \
		fd_;                                                            \
	})

static inline int tu_send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Read exactly n bytes within the socket's timeout. Returns 0, or -1 on
 * EOF, error or timeout. */
static inline int tu_recv_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t k = recv(fd, b, n, 0);
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static inline int tu_send_frame(int fd, uint32_t id, uint8_t flags, const void *body, size_t len)
{
	uint8_t h[PC_FRAME_HEADER_LEN];

	if (pc_frame_header_encode(h, id, flags, len))
		return -1;
	if (tu_send_all(fd, h, sizeof(h)))
		return -1;
	return len ? tu_send_all(fd, body, len) : 0;
}

/* Read one frame; body (len bytes at most) is malloc'd into *body when
 * body is not NULL. Returns 0 or -1. */
static inline int tu_recv_frame(int fd, struct pc_frame *f, uint8_t **body)
{
	uint8_t h[PC_FRAME_HEADER_LEN], *b;

	if (tu_recv_all(fd, h, sizeof(h)) ||
	    pc_frame_header_check(h, sizeof(h), PC_FRAME_MAX_BODY_CAP, f))
		return -1;
	b = malloc(f->len + 1);
	if (!b || tu_recv_all(fd, b, f->len)) {
		free(b);
		return -1;
	}
	b[f->len] = '\0';
	f->body = b;
	if (body)
		*body = b;
	else
		free(b);
	return 0;
}

/* One echo round trip of a len-byte body; true when it came back intact. */
static inline bool tu_echo_ok(int fd, uint32_t id, size_t len)
{
	uint8_t *out = malloc(len + 1), *in = NULL;
	struct pc_frame f;
	bool ok;

	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)(i * 7 + id);
	ok = !tu_send_frame(fd, id, 0, out, len) && !tu_recv_frame(fd, &f, &in) &&
	     f.msg_id == id && f.flags == 0 && f.len == len && !memcmp(in, out, len);
	free(out);
	free(in);
	return ok;
}

/* True when the next frame is the answer to a heartbeat request: a
 * heartbeat of id 0 carrying the request's body (len bytes) back. */
static inline bool tu_heartbeat_answer_ok(int fd, const void *body, size_t len)
{
	struct pc_frame f;
	uint8_t *in = NULL;
	bool ok = !tu_recv_frame(fd, &f, &in) && f.flags == PC_FRAME_HEARTBEAT && f.msg_id == 0 &&
		  f.len == len && (!len || !memcmp(in, body, len));

	free(in);
	return ok;
}

/* True when the peer closed (EOF or reset) within the wait. */
static inline bool tu_closed(int fd)
{
	uint8_t b[4096];
	uint64_t end = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;

	while (pc_now_ns() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t k = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			return true;
	}
	return false;
}

/* Wait until a summed statistic reaches at least want. */
#define TU_WAIT_STAT(srv, field, want)                                          \
	({                                                                      \
		struct pc_server_stats st_;                                     \
		uint64_t end_ = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;   \
		bool ok_ = false;                                               \
		while (!ok_ && pc_now_ns() < end_) {                             \
			pc_server_stats((srv), -1, &st_);                        \
			ok_ = st_.field >= (uint64_t)(want);                     \
			if (!ok_)                                               \
				tu_sleep_ms(2);                                  \
		}                                                               \
		ok_;                                                            \
	})

static inline struct pc_server_stats tu_stats(struct pc_server *srv)
{
	struct pc_server_stats st;
	pc_server_stats(srv, -1, &st);
	return st;
}

#endif
