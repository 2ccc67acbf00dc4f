/* SPDX-License-Identifier: MIT */
/* The frame deadline: a frame whose first byte came longer ago than the
 * frame timeout and that is still incomplete ends its session (an error
 * reply, then the FIN), counted as its own close reason; a client that
 * dribbles a byte every 100 ms is caught though it is never silent, while
 * clients sending complete frames slowly, or each frame in pieces with
 * the next one always begun, are served as long as they like. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"

/* Long enough for a sanitizer build on a busy machine to be on time. */
#define FRAME_MS (1000u * TU_SLOW)

static void frame_cfg(struct pc_server_cfg *c)
{
	tu_cfg(c, 1);
	c->frame_timeout_ms = FRAME_MS;
}

/* One byte every 100 ms until the server answers or the frame is done.
 * Returns the bytes sent. */
static size_t dribble(int fd, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (send(fd, p + i, 1, MSG_NOSIGNAL) != 1 || poll(&pf, 1, 100) != 0)
			break;
	}
	return i;
}

static void test_dribbler_is_closed(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	uint8_t frame[PC_FRAME_HEADER_LEN + 200] = { 0 }, b;
	struct pc_frame f = { 0 };
	uint8_t *body = NULL;

	(void)state;
	frame_cfg(&c);
	srv = TU_SERVE(&c);
	int good = TU_CLIENT(srv), fd = TU_CLIENT(srv);
	assert_int_equal(pc_frame_header_encode(frame, 7, 0, 200), 0);
	/* A frame before: answered, and no deadline left behind. */
	assert_true(tu_echo_ok(fd, 1, 50));
	uint64_t t0 = pc_now_ns();
	size_t sent = dribble(fd, frame, sizeof(frame));
	uint64_t waited = pc_elapsed(pc_now_ns(), t0);
	fprintf(stderr, "%zu bytes dribbled in %.2f s\n", sent, (double)waited / 1e9);
	/* Caught before the frame was done, never before its time. */
	assert_true(sent < sizeof(frame));
	assert_true(waited >= (uint64_t)FRAME_MS * 1000000);
	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.flags, PC_FRAME_ERROR);
	assert_int_equal(f.msg_id, 0);
	assert_non_null(strstr((const char *)body, "frame timeout"));
	free(body);
	assert_int_equal(recv(fd, &b, 1, 0), 0); /* the FIN, not a reset */
	close(fd);
	assert_true(tu_echo_ok(good, 2, 100));
	assert_true(TU_WAIT_STAT(srv, closed, 1));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.closed_reason[PC_CLOSE_FRAME_TIMEOUT], 1);
	assert_int_equal(st.error_replies, 1);
	assert_int_equal(st.closed_reason[PC_CLOSE_IDLE], 0);
	assert_int_equal(st.sessions, 1);
	assert_int_equal(st.buffered_bytes, 0);
	close(good);
	tu_stop(srv);
}

/* Frames of 20 bytes, each sent whole, FRAME_MS / 3 apart, for at least
 * twice the frame timeout. */
static void test_slow_whole_frames_served(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;

	(void)state;
	frame_cfg(&c);
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	uint64_t t0 = pc_now_ns();
	for (uint32_t id = 0; pc_elapsed(pc_now_ns(), t0) < 2ull * FRAME_MS * 1000000; id++) {
		assert_true(tu_echo_ok(fd, id, 20));
		tu_sleep_ms(FRAME_MS / 3);
	}
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.closed, 0);
	assert_int_equal(st.sessions, 1);
	close(fd);
	tu_stop(srv);
}

/* Each frame in two pieces FRAME_MS / 4 apart, the second piece carrying
 * the start of the next frame: an incomplete frame is buffered all the
 * time, but none stays incomplete for long. The deadline is per frame. */
static void test_deadline_is_per_frame(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	enum { BODY = 40, LEN = PC_FRAME_HEADER_LEN + BODY, HALF = LEN / 2 };
	uint8_t two[2 * LEN];
	uint32_t frames = 0;

	(void)state;
	frame_cfg(&c);
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	memset(two, 0x5a, sizeof(two));
	assert_int_equal(pc_frame_header_encode(two, 1, 0, BODY), 0);
	assert_int_equal(pc_frame_header_encode(two + LEN, 1, 0, BODY), 0);
	assert_int_equal(tu_send_all(fd, two, HALF), 0);
	uint64_t t0 = pc_now_ns();
	while (pc_elapsed(pc_now_ns(), t0) < 2ull * FRAME_MS * 1000000) {
		struct pc_frame f;

		tu_sleep_ms(FRAME_MS / 4);
		/* The rest of this frame and the first half of the next. */
		assert_int_equal(tu_send_all(fd, two + HALF, LEN), 0);
		assert_int_equal(tu_recv_frame(fd, &f, NULL), 0);
		assert_int_equal(f.len, BODY);
		frames++;
	}
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.closed, 0);
	assert_int_equal(st.frames_in, frames);
	assert_true(st.buffered_bytes > 0); /* a frame is begun right now */
	close(fd);
	tu_stop(srv);
}

/* Off (0, the library's default) and for raw servers: no deadline. */
static void test_off_and_raw(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	uint8_t h[PC_FRAME_HEADER_LEN];

	(void)state;
	tu_cfg(&c, 1);
	assert_int_equal(c.frame_timeout_ms, 0);
	c.idle_timeout_ms = 60000;
	srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	assert_int_equal(pc_frame_header_encode(h, 1, 0, 10), 0);
	assert_int_equal(tu_send_all(fd, h, 5), 0);
	tu_sleep_ms(300);
	assert_int_equal(tu_stats(srv).closed, 0);
	close(fd);
	tu_stop(srv);

	frame_cfg(&c);
	c.frame_timeout_ms = 200;
	c.raw = true;
	srv = TU_SERVE(&c);
	fd = TU_CLIENT(srv);
	assert_int_equal(tu_send_all(fd, h, 5), 0);
	assert_int_equal(tu_recv_all(fd, h, 5), 0); /* echoed as bytes */
	tu_sleep_ms(600);
	assert_int_equal(tu_stats(srv).closed, 0);
	close(fd);
	tu_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dribbler_is_closed),
		cmocka_unit_test(test_slow_whole_frames_served),
		cmocka_unit_test(test_deadline_is_per_frame),
		cmocka_unit_test(test_off_and_raw),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
