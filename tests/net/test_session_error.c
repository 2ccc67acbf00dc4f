/* SPDX-License-Identifier: MIT */
/* Refusals an application makes: pc_session_error() answers with an Error
 * table (schemas/error.fbs) and keeps the session, or refuses it as
 * malformed; pc_session_refuse() sends the reply it is given and closes.
 * Each refusal is counted as the session layer counts its own, bad
 * arguments do nothing, and a well-behaved client is served throughout. A
 * reply that never reached the socket is not counted as sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"
#include "testmain.h"
#include "percore/fb_error.h"

/* Requests of the test protocol (id 0 is echoed). Each handler answers
 * with a frame of id RC holding its call's return value, unless the
 * session is being closed. */
enum { ERR_KEEP = 1, ERR_REFUSE, REFUSE_OVERSIZE, REFUSE_BAD_WHY, ERR_TOO_LONG, REFUSE_TWICE,
       ERR_LONGEST, REFUSE_HUGE, RC = 100 };

/* REFUSE_HUGE's reply body: more than the kernel buffers of both ends
 * hold while the client does not read. */
#define HUGE_BODY (12u << 20)
static uint8_t *huge;

/* Messages of the longest length sent and one byte more; set before the
 * server starts. */
static char longest[PC_SESSION_ERROR_MAX + 1], too_long[PC_SESSION_ERROR_MAX + 2];
/* What REFUSE_TWICE's calls returned (its session cannot answer). */
static _Atomic int32_t twice[3];

static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	int32_t rc[2] = { 0, 0 };
	bool closing = false;

	(void)user;
	switch (f->msg_id) {
	case ERR_KEEP:
		rc[0] = pc_session_error(s, EINVAL, "refused, go on", false);
		break;
	case ERR_REFUSE:
		rc[0] = pc_session_error(s, EPROTO, NULL, true);
		closing = true;
		break;
	case REFUSE_OVERSIZE:
		rc[0] = pc_session_refuse(s, PC_CLOSE_OVERSIZE, 77, "too big", 7);
		closing = true;
		break;
	case REFUSE_BAD_WHY:
		rc[0] = pc_session_refuse(s, PC_CLOSE_LOCAL, 77, "no", 2);
		rc[1] = pc_session_refuse(s, PC_CLOSE_REASONS, 77, "no", 2);
		break;
	case ERR_TOO_LONG:
		rc[0] = pc_session_error(s, EINVAL, too_long, false);
		break;
	case REFUSE_TWICE:
		twice[0] = pc_session_refuse(s, PC_CLOSE_MALFORMED, 5, "once", 4);
		twice[1] = pc_session_refuse(s, PC_CLOSE_MALFORMED, 5, "twice", 5);
		twice[2] = pc_session_error(s, EIO, "late", false);
		closing = true;
		break;
	case ERR_LONGEST:
		rc[0] = pc_session_error(s, E2BIG, longest, false);
		break;
	case REFUSE_HUGE:
		pc_session_refuse(s, PC_CLOSE_MALFORMED, 9, huge, HUGE_BODY);
		closing = true;
		break;
	default:
		tu_echo_frame(s, f, user);
		return;
	}
	if (!closing)
		pc_session_send(s, RC, rc, sizeof(rc));
}

static void expect_rc(int fd, int32_t want0, int32_t want1)
{
	struct pc_frame f = { 0 };
	uint8_t *body = NULL;
	int32_t rc[2];

	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.msg_id, RC);
	assert_int_equal(f.len, sizeof(rc));
	memcpy(rc, body, sizeof(rc));
	free(body);
	assert_int_equal(rc[0], want0);
	assert_int_equal(rc[1], want1);
}

/* The next frame is an Error (code, message or NULL for none). */
static void expect_error(int fd, int32_t code, const char *message)
{
	const struct pc_fb_error *e;
	struct pc_frame f = { 0 };
	uint8_t *body = NULL;
	uint32_t n;

	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.flags, PC_FRAME_ERROR);
	assert_int_equal(f.msg_id, PC_MSG_ERROR);
	assert_int_equal(pc_fb_error_read(body, f.len, &e), 0);
	assert_int_equal(pc_fb_error_code(e), code);
	const char *m = pc_fb_error_message(e, &n);
	if (message) {
		assert_non_null(m);
		assert_int_equal(n, strlen(message));
		assert_memory_equal(m, message, n);
	} else {
		assert_null(m);
	}
	free(body);
}

static void expect_raw_error(int fd, uint32_t id, const char *body_text)
{
	struct pc_frame f = { 0 };
	uint8_t *body = NULL;

	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.flags, PC_FRAME_ERROR);
	assert_int_equal(f.msg_id, id);
	assert_int_equal(f.len, strlen(body_text));
	assert_memory_equal(body, body_text, f.len);
	free(body);
}

static int client(struct pc_server *srv, uint32_t id)
{
	int fd = TU_CLIENT(srv);

	assert_true(tu_echo_ok(fd, 0, 10));
	assert_int_equal(tu_send_frame(fd, id, 0, "x", 1), 0);
	return fd;
}

static void test_refusals(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int good, fd;

	(void)state;
	memset(longest, 'm', sizeof(longest) - 1);
	memset(too_long, 'm', sizeof(too_long) - 1);
	tu_cfg(&c, 2);
	c.on_frame = on_frame;
	srv = TU_SERVE(&c);
	good = TU_CLIENT(srv);

	/* Refused requests: an Error each, the session goes on. */
	fd = client(srv, ERR_KEEP);
	expect_error(fd, EINVAL, "refused, go on");
	expect_rc(fd, 0, 0);
	assert_int_equal(tu_send_frame(fd, ERR_LONGEST, 0, NULL, 0), 0);
	expect_error(fd, E2BIG, longest);
	expect_rc(fd, 0, 0);
	/* Bad arguments: nothing sent, nothing counted, still open. */
	assert_int_equal(tu_send_frame(fd, ERR_TOO_LONG, 0, NULL, 0), 0);
	expect_rc(fd, -EMSGSIZE, 0);
	assert_int_equal(tu_send_frame(fd, REFUSE_BAD_WHY, 0, NULL, 0), 0);
	expect_rc(fd, -EINVAL, -EINVAL);
	assert_true(tu_echo_ok(fd, 0, 100));
	assert_true(tu_echo_ok(good, 0, 100));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.malformed + st.oversize + st.error_replies, 0);
	close(fd);

	/* Refused sessions: the reply, then the close, counted. */
	fd = client(srv, ERR_REFUSE);
	expect_error(fd, EPROTO, NULL);
	assert_true(tu_closed(fd));
	close(fd);
	fd = client(srv, REFUSE_OVERSIZE);
	expect_raw_error(fd, 77, "too big");
	assert_true(tu_closed(fd));
	close(fd);
	fd = client(srv, REFUSE_TWICE);
	expect_raw_error(fd, 5, "once");
	assert_true(tu_closed(fd));
	close(fd);
	/* A second refusal, or any reply, once closing: nothing done. */
	assert_int_equal(twice[0], 0);
	assert_int_equal(twice[1], -EPIPE);
	assert_int_equal(twice[2], -EPIPE);
	assert_true(tu_echo_ok(good, 0, 1000));

	assert_true(TU_WAIT_STAT(srv, closed, 4));
	st = tu_stats(srv);
	assert_int_equal(st.malformed, 2);
	assert_int_equal(st.oversize, 1);
	assert_int_equal(st.error_replies, 3);
	assert_int_equal(st.closed_reason[PC_CLOSE_MALFORMED], 2);
	assert_int_equal(st.closed_reason[PC_CLOSE_OVERSIZE], 1);
	assert_int_equal(st.sessions, 1);
	close(good);
	tu_stop(srv);
}

/* The largest send buffer the kernel gives a socket (tcp_wmem's third
 * figure), 0 when unknown. */
static uint64_t tcp_wmem_max(void)
{
	unsigned long long a, b, c;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
	int n = f ? fscanf(f, "%llu %llu %llu", &a, &b, &c) : 0;

	if (f)
		fclose(f);
	return n == 3 ? c : 0;
}

/* A refusal whose reply the client never reads: queued, partly written,
 * then the client resets. Counted as a refusal, not as a reply sent. */
static void test_unwritten_reply_not_counted(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int small = 4096;

	(void)state;
	if (!tcp_wmem_max() || tcp_wmem_max() >= HUGE_BODY / 2) {
		PC_SKIP("the kernel may buffer the whole reply here");
	}
	huge = calloc(1, HUGE_BODY);
	assert_non_null(huge);
	tu_cfg(&c, 1);
	c.on_frame = on_frame;
	c.max_body = HUGE_BODY;
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	/* A fixed small window: the client's kernel takes little for it. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	assert_int_equal(tu_send_frame(fd, REFUSE_HUGE, 0, "x", 1), 0);
	assert_true(TU_WAIT_STAT(srv, malformed, 1));
	assert_true(TU_WAIT_STAT(srv, bytes_out, 1)); /* the first write went out */
	assert_int_equal(tu_stats(srv).error_replies, 0);
	pc_socket_reset_on_close(fd);
	close(fd);
	assert_true(TU_WAIT_STAT(srv, closed, 1));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.error_replies, 0);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(st.closed_reason[PC_CLOSE_MALFORMED], 1);
	assert_int_equal(st.queued_bytes, 0);
	tu_stop(srv);
	free(huge);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_unwritten_reply_not_counted),
	};

	return pc_test_main(tests, argc, argv);
}
