/* SPDX-License-Identifier: MIT */
/* Frames laid against the io_uring backend's 16 KiB receive buffers, which
 * sessions decode in place: one frame exactly filling a buffer, many small
 * frames in one buffer, frames (and a header) spanning two buffers, and a
 * frame left unread in the middle of a buffer, resumed later. Every frame
 * must be answered once, intact and in order, whether handed over one at
 * a time (on_frame) or in bursts (on_frames). The stream is written while
 * the session holds its reading, so it lies whole in the socket when the
 * receive starts and fills the buffers from the stream's first byte; each
 * round shifts the layout by a different prefix. Then replies lent from
 * the shared receive buffer, left unsent by a full socket while other
 * sessions read through that buffer. Runs on both backends. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"
#include "percore/fb_heartbeat.h"
#include "testmain.h"

/* The provided-buffer size of the io_uring backend (reactor_uring.h). */
#define RECV_BUF 16384u
#define SMALL 64u
#define SMALL_TOTAL (PC_FRAME_HEADER_LEN + SMALL)
#define MAX_FRAMES 512u

enum { ID_HOLD = 1, ID_RESUME = 2, ID_UNREAD = 3, ID_FIRST = 10 };

/* Shard-side state: the held session, and the round whose ID_UNREAD frame
 * was already left unread once. */
static struct pc_session *held;
static uint32_t unread_round;

static void frames_handler(struct pc_session *s, const struct pc_frame *f, void *user)
{
	uint32_t round;

	(void)user;
	switch (f->msg_id) {
	case ID_HOLD:
		pc_session_send(s, ID_HOLD, NULL, 0);
		pc_session_pause_read(s);
		held = s;
		return;
	case ID_RESUME:
		if (held)
			pc_session_resume_read(held);
		held = NULL;
		pc_session_send(s, ID_RESUME, NULL, 0);
		return;
	case ID_UNREAD:
		memcpy(&round, f->body, sizeof(round));
		if (unread_round != round) {
			unread_round = round;
			assert_int_equal(pc_session_unread_frame(s), 0);
			held = s;
			return;
		}
		break;
	default:
		break;
	}
	pc_session_send(s, f->msg_id, f->body, f->len); /* lends the body */
}

struct stream {
	uint8_t *buf;
	size_t len;
	uint32_t n, unread_at; /* frames, and the index of ID_UNREAD */
	uint32_t id[MAX_FRAMES], size[MAX_FRAMES];
	size_t off[MAX_FRAMES];
};

/* Append one frame of `total` bytes on the wire. */
static void put(struct stream *st, uint32_t id, size_t total, uint32_t round)
{
	uint32_t body = (uint32_t)(total - PC_FRAME_HEADER_LEN);
	uint8_t *p = st->buf + st->len;

	assert_true(st->n < MAX_FRAMES);
	assert_int_equal(pc_frame_header_encode(p, id, 0, body), 0);
	for (uint32_t k = 0; k < body; k++)
		p[PC_FRAME_HEADER_LEN + k] = (uint8_t)(st->n * 13u + k);
	if (id == ID_UNREAD) {
		assert_true(body >= sizeof(round));
		memcpy(p + PC_FRAME_HEADER_LEN, &round, sizeof(round));
		st->unread_at = st->n;
	}
	st->id[st->n] = id;
	st->size[st->n] = (uint32_t)total;
	st->off[st->n++] = st->len;
	st->len += total;
}

static void put_small(struct stream *st, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		put(st, ID_FIRST + st->n, PC_FRAME_HEADER_LEN + SMALL, 0);
}

/* Frames up to `back` bytes before the next buffer boundary, so that
 * the next frame's header is split by it. */
static void fill_to_boundary(struct stream *st, size_t back)
{
	size_t at = (st->len / RECV_BUF + 1) * RECV_BUF - back;

	if (at < st->len + PC_FRAME_HEADER_LEN)
		at += RECV_BUF;
	while (at - st->len >= SMALL_TOTAL + PC_FRAME_HEADER_LEN)
		put_small(st, 1);
	put(st, ID_FIRST + st->n, at - st->len, 0);
}

/* The layout, after a prefix frame of `prefix` bytes (none when 0). Offsets
 * are from the stream's first byte, where the first buffer begins. */
static void build(struct stream *st, size_t prefix, uint32_t round)
{
	memset(st, 0, sizeof(*st));
	st->buf = malloc(6 * RECV_BUF);
	assert_non_null(st->buf);
	if (prefix)
		put(st, ID_FIRST, prefix, 0);
	put(st, ID_FIRST + st->n, RECV_BUF, 0); /* exactly a buffer when prefix is 0 */
	put_small(st, 100);                     /* many in one buffer */
	put(st, ID_FIRST + st->n, 10000, 0);    /* across the second boundary */
	put_small(st, 20);
	put(st, ID_UNREAD, PC_FRAME_HEADER_LEN + 100, round); /* unread mid-buffer */
	put_small(st, 20);
	fill_to_boundary(st, 5);                /* a header split by a boundary */
	put(st, ID_FIRST + st->n, PC_FRAME_HEADER_LEN + 300, 0);
	put(st, ID_FIRST + st->n, 6000, 0);
	put_small(st, 3);
	assert_true(st->len <= 6 * RECV_BUF);
}

static void stream_free(struct stream *st)
{
	free(st->buf);
	free(st);
}

/* The answer to frame i, exactly as sent. */
static void expect_echo(int fd, const struct stream *st, uint32_t i)
{
	struct pc_frame f = { .len = 0 };
	uint8_t *body = NULL;

	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.msg_id, st->id[i]);
	assert_int_equal(PC_FRAME_HEADER_LEN + f.len, st->size[i]);
	assert_memory_equal(body, st->buf + st->off[i] + PC_FRAME_HEADER_LEN, f.len);
	free(body);
}

static void expect_reply(int fd, uint32_t id)
{
	struct pc_frame f = { .len = 0 };

	assert_int_equal(tu_recv_frame(fd, &f, NULL), 0);
	assert_int_equal(f.msg_id, id);
}

static void one_round(struct pc_server *srv, int ctl, size_t prefix, uint32_t round)
{
	struct stream *st = malloc(sizeof(*st));
	int fd = TU_CLIENT(srv), sndbuf = 1 << 20;

	assert_non_null(st);
	build(st, prefix, round);
	/* Room for the whole stream while the server reads nothing. */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	/* Held: the stream waits whole in the socket. */
	assert_int_equal(tu_send_frame(fd, ID_HOLD, 0, NULL, 0), 0);
	expect_reply(fd, ID_HOLD);
	assert_int_equal(tu_send_all(fd, st->buf, st->len), 0);
	assert_int_equal(tu_send_frame(ctl, ID_RESUME, 0, NULL, 0), 0);
	expect_reply(ctl, ID_RESUME);
	for (uint32_t i = 0; i < st->unread_at; i++)
		expect_echo(fd, st, i);
	/* The unread frame and everything after it wait for the resume,
	 * sent once the frame was left unread (the round's second hold). */
	assert_true(TU_WAIT_STAT(srv, read_holds, 2 * round));
	assert_int_equal(tu_send_frame(ctl, ID_RESUME, 0, NULL, 0), 0);
	expect_reply(ctl, ID_RESUME);
	for (uint32_t i = st->unread_at; i < st->n; i++)
		expect_echo(fd, st, i);
	assert_true(tu_echo_ok(fd, 7, 100)); /* and the session goes on */
	close(fd);
	stream_free(st);
}

/* Every round on one server configured by c. */
static void across_buffers(const struct pc_server_cfg *c)
{
	/* No prefix (exact fills), a bare header, odd and near-whole shifts. */
	static const size_t prefixes[] = { 0, PC_FRAME_HEADER_LEN, PC_FRAME_HEADER_LEN + 5, 700,
					   RECV_BUF - 3 };
	struct pc_server *srv = TU_SERVE(c);
	int ctl = TU_CLIENT(srv);

	held = NULL;
	unread_round = 0;
	for (uint32_t r = 0; r < sizeof(prefixes) / sizeof(prefixes[0]); r++)
		one_round(srv, ctl, prefixes[r], r + 1);
	struct pc_server_stats s = tu_stats(srv);
	assert_int_equal(s.buffered_bytes, 0);
	close(ctl);
	tu_stop(srv);
}

static void frames_across_buffers_in_order(void **state)
{
	struct pc_server_cfg c;

	(void)state;
	tu_cfg(&c, 1);
	c.on_frame = frames_handler;
	across_buffers(&c);
}

/* ---- the same frames in bursts (on_frames) ---- */

/* Written by the shard, read by the test once the server stopped: the
 * largest burst seen, and bursts that broke a promise (frames not one
 * after another, a frame the session layer answers handed over). */
static size_t burst_max;
static unsigned burst_bad;

static bool adjacent(const struct pc_frame *a, const struct pc_frame *b)
{
	return a->body + a->len == b->body - PC_FRAME_HEADER_LEN;
}

/* Frames from..to echoed as they came. */
static void echo_span(struct pc_session *s, const struct pc_frame *from, const struct pc_frame *to)
{
	if (pc_session_send_frames(s, from, (size_t)(to - from) + 1))
		burst_bad++;
}

/* frames_handler's answers, a burst at a time: runs of plain frames
 * echoed by one write; a hold returns at once, an unread frame is left
 * by returning the count before it. */
static size_t bursts_handler(struct pc_session *s, const struct pc_frame *f, size_t n, void *user)
{
	size_t run = 0, i;
	uint32_t round = 0;

	(void)user;
	burst_max = n > burst_max ? n : burst_max;
	for (i = 0; i < n; i++) {
		if ((i && !adjacent(&f[i - 1], &f[i])) || (f[i].flags & PC_FRAME_HEARTBEAT) ||
		    f[i].msg_id == PC_MSG_STATS)
			burst_bad++;
		if (f[i].msg_id != ID_HOLD && f[i].msg_id != ID_RESUME && f[i].msg_id != ID_UNREAD)
			continue;
		if (f[i].msg_id == ID_UNREAD) {
			memcpy(&round, f[i].body, sizeof(round));
			if (unread_round == round)
				continue; /* offered again: echoed with its run */
		}
		if (i > run)
			echo_span(s, &f[run], &f[i - 1]);
		run = i + 1;
		switch (f[i].msg_id) {
		case ID_HOLD:
			pc_session_send(s, ID_HOLD, NULL, 0);
			pc_session_pause_read(s);
			held = s;
			return i + 1;
		case ID_RESUME:
			if (held)
				pc_session_resume_read(held);
			held = NULL;
			pc_session_send(s, ID_RESUME, NULL, 0);
			break;
		case ID_UNREAD:
			unread_round = round;
			held = s;
			return i;
		}
	}
	if (n > run)
		echo_span(s, &f[run], &f[n - 1]);
	return n;
}

/* A one-shard server configuration whose frames go to h in bursts. */
static void burst_cfg(struct pc_server_cfg *c, pc_frames_fn h)
{
	tu_cfg(c, 1);
	c->on_frame = NULL;
	c->on_frames = h;
	burst_max = 0;
	burst_bad = 0;
}

/* A stream with nothing in it yet, its buffer ready. */
static struct stream *empty_stream(void)
{
	struct stream *st = malloc(sizeof(*st));

	assert_non_null(st);
	build(st, 0, 0);
	st->len = 0;
	st->n = 0;
	return st;
}

/* The layouts of frames_across_buffers_in_order, handed over in bursts:
 * every frame answered once, in order; bursts as large as allowed and no
 * larger. */
static void frames_across_buffers_in_bursts(void **state)
{
	struct pc_server_cfg c;

	(void)state;
	burst_cfg(&c, bursts_handler);
	across_buffers(&c);
	assert_int_equal(burst_max, PC_SESSION_BURST);
	assert_int_equal(burst_bad, 0);
}

/* Heartbeats and statistics requests inside a run of frames: the session
 * layer answers them in their place, and no burst holds one. */
static void bursts_end_at_layer_frames(void **state)
{
	enum { RUN = 5 };
	struct pc_server_cfg c;
	struct stream *st = empty_stream();
	uint32_t i = 0;

	(void)state;
	burst_cfg(&c, bursts_handler);
	struct pc_server *srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);

	put_small(st, RUN);
	assert_int_equal(pc_frame_header_encode(st->buf + st->len, PC_MSG_HEARTBEAT,
						PC_FRAME_HEARTBEAT, 5), 0);
	memcpy(st->buf + st->len + PC_FRAME_HEADER_LEN, "clock", 5);
	st->len += PC_FRAME_HEADER_LEN + 5;
	put_small(st, RUN);
	assert_int_equal(pc_frame_header_encode(st->buf + st->len, PC_MSG_STATS, 0, 0), 0);
	st->len += PC_FRAME_HEADER_LEN;
	put_small(st, RUN);
	assert_int_equal(tu_send_all(fd, st->buf, st->len), 0);
	for (; i < RUN; i++)
		expect_echo(fd, st, i);
	assert_true(tu_heartbeat_answer_ok(fd, "clock", 5));
	for (; i < 2 * RUN; i++)
		expect_echo(fd, st, i);
	expect_reply(fd, PC_MSG_STATS);
	for (; i < 3 * RUN; i++)
		expect_echo(fd, st, i);
	assert_true(tu_echo_ok(fd, 7, 100));
	/* Each echo counted as a frame sent, as a reply of its own would be;
	 * heartbeats apart. */
	struct pc_server_stats stats = tu_stats(srv);
	assert_int_equal(stats.frames_in, 3 * RUN + 2);
	assert_int_equal(stats.frames_out, 3 * RUN + 2);
	close(fd);
	tu_stop(srv);
	assert_true(burst_max > 1);
	assert_int_equal(burst_bad, 0);
	stream_free(st);
}

/* Echoes the frames of even id only: frames with gaps between them. */
static size_t evens_handler(struct pc_session *s, const struct pc_frame *f, size_t n, void *user)
{
	struct pc_frame even[PC_SESSION_BURST];
	size_t k = 0;

	(void)user;
	for (size_t i = 0; i < n; i++)
		if (!(f[i].msg_id & 1))
			even[k++] = f[i];
	if (pc_session_send_frames(s, even, k))
		burst_bad++;
	return n;
}

/* pc_session_send_frames() with frames that are not one after another:
 * each run goes out whole, nothing between them. */
static void send_frames_skips_gaps(void **state)
{
	enum { N = 24 };
	struct pc_server_cfg c;
	struct stream *st = empty_stream();

	(void)state;
	burst_cfg(&c, evens_handler);
	struct pc_server *srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);

	put_small(st, N); /* ids 10, 11, ...: runs of one */
	put(st, ID_FIRST + 2 * N, PC_FRAME_HEADER_LEN + 5, 0);
	put(st, ID_FIRST + 2 * N + 2, PC_FRAME_HEADER_LEN + 7, 0); /* a run of two */
	assert_int_equal(tu_send_all(fd, st->buf, st->len), 0);
	for (uint32_t i = 0; i < st->n; i++)
		if (!(st->id[i] & 1))
			expect_echo(fd, st, i);
	assert_true(tu_echo_ok(fd, 8, 10));
	assert_int_equal(tu_stats(srv).frames_out, N / 2 + 2 + 1);
	close(fd);
	tu_stop(srv);
	assert_int_equal(burst_bad, 0);
	stream_free(st);
}

/* ---- replies lent from a shared receive buffer outlive a full socket ---- */

/* A sends this many 4 KiB frames without reading: more than its receive
 * buffer (64 KiB, a window that still moves bytes quickly) and the
 * server's send buffer (at most tcp_wmem's 4 MiB) hold, so the server's
 * writes come back short and it stops reading A at high water. */
#define FLOOD_FRAMES 2048u
#define FLOOD_BODY 4096u

static void flood_body(uint8_t *b, uint32_t i)
{
	for (uint32_t j = 0; j < FLOOD_BODY; j++)
		b[j] = (uint8_t)(i * 131u + j * 7u + (i >> 8));
}

static void *flood_send(void *arg)
{
	int fd = *(int *)arg;
	uint8_t *b = malloc(FLOOD_BODY);
	intptr_t bad = b == NULL;

	for (uint32_t i = 0; i < FLOOD_FRAMES && !bad; i++) {
		flood_body(b, i);
		bad = tu_send_frame(fd, ID_FIRST + i, 0, b, FLOOD_BODY) != 0;
	}
	free(b);
	return (void *)bad;
}

/* Replies that lend their bodies from the buffer the shard reads every
 * session into (the epoll backend's scratch buffer, io_uring's provided
 * buffers) and do not fit in the socket must be copied before that
 * buffer is read into again: while A's replies wait, B's frames pass
 * through the same buffer; A's replies must come back intact. */
static void lent_replies_outlive_a_full_socket(void **state)
{
	struct pc_server_cfg c;
	uint8_t *want = malloc(FLOOD_BODY), *body = NULL;
	int small = 64 << 10;
	void *bad = NULL;
	pthread_t t;

	(void)state;
	assert_non_null(want);
	tu_cfg(&c, 1);
	struct pc_server *srv = TU_SERVE(&c);
	int a = TU_CLIENT(srv), b = TU_CLIENT(srv);

	assert_int_equal(setsockopt(a, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	assert_int_equal(pthread_create(&t, NULL, flood_send, &a), 0);
	/* B while A is read too (both in one turn), then while A waits. */
	for (uint32_t i = 0; i < 200; i++)
		assert_true(tu_echo_ok(b, 1000 + i, FLOOD_BODY));
	assert_true(TU_WAIT_STAT(srv, read_pauses, 1)); /* A's replies wait */
	for (uint32_t i = 0; i < 200; i++)
		assert_true(tu_echo_ok(b, 2000 + i, FLOOD_BODY));
	for (uint32_t i = 0; i < FLOOD_FRAMES; i++) {
		struct pc_frame f = { .len = 0 };

		assert_int_equal(tu_recv_frame(a, &f, &body), 0);
		assert_int_equal(f.msg_id, ID_FIRST + i);
		assert_int_equal(f.len, FLOOD_BODY);
		flood_body(want, i);
		assert_memory_equal(body, want, FLOOD_BODY);
		free(body);
	}
	assert_int_equal(pthread_join(t, &bad), 0);
	assert_null(bad);
	close(a);
	close(b);
	free(want);
	tu_stop(srv);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frames_across_buffers_in_order),
		cmocka_unit_test(frames_across_buffers_in_bursts),
		cmocka_unit_test(bursts_end_at_layer_frames),
		cmocka_unit_test(send_frames_skips_gaps),
		cmocka_unit_test(lent_replies_outlive_a_full_socket),
	};

	return pc_test_main(tests, argc, argv);
}
