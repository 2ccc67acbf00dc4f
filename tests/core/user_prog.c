/* SPDX-License-Identifier: MIT */
/* A user's program, in strict ISO C11, built against an installed percore
 * by test_install.sh (with pkg-config, statically too, and with CMake's
 * find_package) under -std=c11 -Wall -Wextra -Wpedantic -Werror.
 *
 * It uses both libraries: a server's shards exchange a call and its reply
 * (shard 0 asks shard 1 to square 12), the server echoes a frame a plain
 * socket sends, and the environment audit (libpercore-bench) runs. Prints
 * "ok" and exits 0 when all three did what they should. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <percore.h>

static _Atomic long answer; /* 0 until shard 0 has the reply; -1 on failure */

/* On shard 1. */
static intptr_t square(void *arg)
{
	intptr_t v = (intptr_t)arg;

	return pc_shard_id() == 1 ? v * v : -1;
}

/* Back on shard 0. */
static void got_reply(void *ctx, intptr_t result)
{
	(void)ctx;
	atomic_store(&answer, pc_shard_id() == 0 ? (long)result : -1);
}

/* On shard 0, submitted from main. */
static void ask(void *arg)
{
	(void)arg;
	if (pc_shard_call(1, square, (void *)(intptr_t)12, got_reply, NULL))
		atomic_store(&answer, -1);
}

static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)user;
	pc_session_send_flags(s, f->msg_id, f->flags, f->body, f->len);
}

/* Send one frame to port and check the echo. Returns 0 or -1. */
static int echo_once(uint16_t port)
{
	static const char body[] = "hello";
	uint8_t out[PC_FRAME_HEADER_LEN + sizeof(body)], in[sizeof(out)];
	struct timeval tv = {.tv_sec = 30};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	pc_frame_header_encode(out, 42, 0, sizeof(body));
	memcpy(out + PC_FRAME_HEADER_LEN, body, sizeof(body));
	if (write(fd, out, sizeof(out)) != (ssize_t)sizeof(out))
		return -1;
	while (got < sizeof(in) && (n = read(fd, in + got, sizeof(in) - got)) > 0)
		got += (size_t)n;
	close(fd);
	return got == sizeof(in) && memcmp(in, out, sizeof(in)) == 0 ? 0 : -1;
}

static int audit_runs(void)
{
	struct pc_audit *a;
	int ok;

	if (pc_audit_collect(NULL, &a))
		return -1;
	ok = pc_audit_count(a) > 0;
	pc_audit_free(a);
	return ok ? 0 : -1;
}

int main(void)
{
	struct timespec pause = {.tv_nsec = 1000000};
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	char err[200];
	int rc = 0;

	pc_server_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.engine.shards = 2;
	cfg.engine.placement = "off"; /* the machine may be busy or small */
	cfg.on_frame = on_frame;
	if (pc_server_start(&cfg, &srv, err, sizeof(err))) {
		fprintf(stderr, "user_prog: %s\n", err);
		return 1;
	}
	if (pc_engine_submit(pc_server_engine(srv), 0, ask, NULL))
		rc = 1;
	for (int i = 0; i < 30000 && atomic_load(&answer) == 0; i++)
		nanosleep(&pause, NULL);
	if (atomic_load(&answer) != 144) {
		fprintf(stderr, "user_prog: the call between shards gave %ld\n", atomic_load(&answer));
		rc = 1;
	}
	if (echo_once(pc_server_port(srv))) {
		fprintf(stderr, "user_prog: no echo\n");
		rc = 1;
	}
	pc_server_shutdown(srv, 1000);
	pc_server_wait(srv);
	pc_server_destroy(srv);
	if (audit_runs()) {
		fprintf(stderr, "user_prog: the audit failed\n");
		rc = 1;
	}
	if (!rc)
		puts("ok");
	return rc;
}
