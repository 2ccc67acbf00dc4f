/* SPDX-License-Identifier: MIT */
/* The reply sequencer (percore/reply.h) against a loopback client: slots
 * filled out of order are written in ticket order; a session that leaves
 * with slots open leaves nothing behind for the next session in its
 * slot (a one-shard server gives the freed slot to the next session);
 * an answer for a session gone is discarded and counted, even when a
 * newer session holds its slot.
 *
 * The server's commands (frame id, body):
 *   RESERVE n          reserve n slots (tickets kept in order), no answer
 *   FILL i             fill the i-th reserved slot: frame 100 + i, body i
 *   PENDING            answered at once: pc_reply_pending() and the id
 *   FILL_TO id ticket  pc_reply_fill_to(id, ticket): frame 200; answered
 *                      at once with its return code
 *   SKIP_TO id ticket  pc_reply_skip() of that session's slot (one shard:
 *                      found by pc_session_find); answered with its code
 * One client at a time on one shard: the tickets live in this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "net_util.h"
#include "testmain.h"
#include "percore/reply.h"
#include "percore/session.h"

enum { RESERVE = 1, FILL = 2, PENDING = 3, FILL_TO = 4, SKIP_TO = 5 };

struct pending_answer {
	uint32_t pending, pad;
	uint64_t id;
};

struct fill_to_req {
	uint64_t id;
	uint32_t ticket, pad;
};

static uint32_t tickets[16];
static uint32_t ntickets;

static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	uint32_t n = 0;

	(void)user;
	if (f->len >= sizeof(n))
		memcpy(&n, f->body, sizeof(n));
	switch (f->msg_id) {
	case RESERVE:
		ntickets = 0;
		while (ntickets < n && ntickets < 16 && !pc_reply_reserve(s, &tickets[ntickets]))
			ntickets++;
		break;
	case FILL:
		if (n < ntickets)
			pc_reply_fill(s, tickets[n], 100 + n, 0, &n, sizeof(n));
		break;
	case PENDING: {
		struct pending_answer a = { pc_reply_pending(s), 0, pc_session_id(s) };

		pc_session_send(s, PENDING, &a, sizeof(a));
		break;
	}
	case FILL_TO: {
		struct fill_to_req r = { 0 };
		int32_t rc;

		memcpy(&r, f->body, f->len < sizeof(r) ? f->len : sizeof(r));
		rc = pc_reply_fill_to(r.id, r.ticket, 200, 0, "x", 1);
		pc_session_send(s, FILL_TO, &rc, sizeof(rc));
		break;
	}
	case SKIP_TO: {
		struct fill_to_req r = { 0 };
		struct pc_session *t;
		int32_t rc;

		memcpy(&r, f->body, f->len < sizeof(r) ? f->len : sizeof(r));
		t = pc_session_find(r.id);
		rc = t ? pc_reply_skip(t, r.ticket) : -ENOENT;
		pc_session_send(s, SKIP_TO, &rc, sizeof(rc));
		break;
	}
	default:
		pc_session_close(s);
	}
}

static struct pc_server *serve(void)
{
	struct pc_server_cfg c;

	tu_cfg(&c, 1);
	c.on_frame = on_frame;
	ntickets = 0;
	return TU_SERVE(&c);
}

static void send_u32(int fd, uint32_t id, uint32_t v)
{
	assert_int_equal(tu_send_frame(fd, id, 0, &v, sizeof(v)), 0);
}

/* The next frame: its id, and its body's first four bytes in *v. */
static uint32_t next_frame(int fd, uint32_t *v)
{
	struct pc_frame f;
	uint8_t *body = NULL;

	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	if (v) {
		assert_true(f.len >= sizeof(*v));
		memcpy(v, body, sizeof(*v));
	}
	free(body);
	return f.msg_id;
}

static struct pending_answer pending(int fd)
{
	struct pc_frame f;
	uint8_t *body = NULL;
	struct pending_answer a;

	assert_int_equal(tu_send_frame(fd, PENDING, 0, NULL, 0), 0);
	assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
	assert_int_equal(f.msg_id, PENDING);
	assert_int_equal(f.len, sizeof(a));
	memcpy(&a, body, sizeof(a));
	free(body);
	return a;
}

/* Three slots filled 2, 0, 1: written 0 (at its fill), then 1 and 2. */
static void test_ticket_order(void **state)
{
	struct pc_server *srv = serve();
	int fd = TU_CLIENT(srv);
	uint32_t v;

	(void)state;
	send_u32(fd, RESERVE, 3);
	send_u32(fd, FILL, 2);
	assert_int_equal(pending(fd).pending, 3); /* 2 waits behind 0 and 1 */
	send_u32(fd, FILL, 0);
	assert_int_equal(next_frame(fd, &v), 100);
	assert_int_equal(v, 0);
	assert_int_equal(pending(fd).pending, 2);
	send_u32(fd, FILL, 1);
	assert_int_equal(next_frame(fd, &v), 101);
	assert_int_equal(v, 1);
	assert_int_equal(next_frame(fd, &v), 102);
	assert_int_equal(v, 2);
	assert_int_equal(pending(fd).pending, 0);
	close(fd);
	tu_stop(srv);
}

/* A session leaves with a slot open and a filled one waiting behind it;
 * the next session, in the same slot, starts with none owed, gets its
 * own answers, and the old session's late answer is discarded. */
static void test_slot_reused(void **state)
{
	struct pc_server *srv = serve();
	int fd = TU_CLIENT(srv);
	struct pending_answer old, now;
	uint32_t v;

	(void)state;
	send_u32(fd, RESERVE, 2);
	send_u32(fd, FILL, 1);
	old = pending(fd);
	assert_int_equal(old.pending, 2);
	pc_socket_reset_on_close(fd); /* gone at once: answers owed would hold a FIN */
	close(fd);
	assert_true(TU_WAIT_STAT(srv, closed, 1));

	fd = TU_CLIENT(srv);
	now = pending(fd);
	assert_int_equal(now.pending, 0);
	assert_true(now.id != old.id);
	/* the old session's open slot, answered late: nobody to take it */
	struct fill_to_req late = { old.id, 0, 0 };
	uint64_t discarded = tu_stats(srv).replies_discarded;
	uint32_t rc;

	assert_int_equal(tu_send_frame(fd, FILL_TO, 0, &late, sizeof(late)), 0);
	assert_int_equal(next_frame(fd, &rc), FILL_TO);
	assert_int_equal((int32_t)rc, -ENOENT);
	assert_true(TU_WAIT_STAT(srv, replies_discarded, discarded + 1));
	/* this session's own slots work from its first ticket */
	send_u32(fd, RESERVE, 1);
	assert_int_equal(pending(fd).pending, 1);
	send_u32(fd, FILL, 0);
	assert_int_equal(next_frame(fd, &v), 100);
	assert_int_equal(v, 0);
	assert_int_equal(pending(fd).pending, 0);
	close(fd);
	/* nothing owed: the second session closes like the first */
	assert_true(TU_WAIT_STAT(srv, closed, 2));
	tu_stop(srv);
}

/* A raw server's commands: "R" writes the session's id (8 bytes), then
 * reserves a slot (raw_ticket); "S" and an id (8 bytes) skips that
 * session's slot, answered with the code (4 bytes). */
static uint32_t raw_ticket;

static size_t on_raw(struct pc_session *s, const uint8_t *d, size_t n, void *user)
{
	uint64_t id;
	int32_t rc;

	(void)user;
	if (d[0] == 'R') {
		id = pc_session_id(s);
		pc_session_write(s, &id, sizeof(id)); /* before the slot it would wait behind */
		pc_reply_reserve(s, &raw_ticket);
		return 1;
	}
	if (d[0] != 'S')
		return n;
	if (n < 1 + sizeof(id))
		return 0;
	memcpy(&id, d + 1, sizeof(id));
	struct pc_session *t = pc_session_find(id);

	rc = t ? pc_reply_skip(t, raw_ticket) : -ENOENT;
	pc_session_write(s, &rc, sizeof(rc));
	return 1 + sizeof(id);
}

/* Turns the one shard took over ms milliseconds. */
static uint64_t turns_over(struct pc_server *srv, unsigned ms)
{
	struct pc_shard_stats a, b;

	assert_int_equal(pc_engine_stats_read(pc_server_engine(srv), 0, &a), 0);
	tu_sleep_ms(ms);
	assert_int_equal(pc_engine_stats_read(pc_server_engine(srv), 0, &b), 0);
	return b.turns - a.turns;
}

/* The shard's turns while fd, having half-closed, is owed an answer: it
 * stays open for it, and idle (no loop on the client's EOF). */
static void held_idle(struct pc_server *srv, int fd, uint64_t closed)
{
	uint64_t idle = turns_over(srv, 200), held;

	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	held = turns_over(srv, 200);
	print_message("turns in 200 ms: idle %llu, held at EOF %llu\n", (unsigned long long)idle,
		      (unsigned long long)held);
	assert_true(held <= 4 * idle + 50);
	assert_int_equal(tu_stats(srv).closed, closed); /* held for its answer */
}

/* The skip (its code rc, from the client `other`) ended fd's session:
 * the client sees the close, the server counts it. */
static void ended_by_skip(struct pc_server *srv, int fd, int other, uint64_t closed, int32_t rc)
{
	assert_int_equal(rc, 0);
	assert_true(tu_closed(fd));
	assert_true(TU_WAIT_STAT(srv, closed, closed + 1));
	close(fd);
	close(other);
	tu_stop(srv);
}

/* A client half-closes while an answer is owed: its session stays open
 * for the answer; the slot given up unanswered, the session ends, though
 * nothing was written. */
static void test_skip_after_eof(void **state)
{
	struct pc_server *srv = serve();
	int fd = TU_CLIENT(srv), other;
	struct pending_answer a;
	uint64_t closed = tu_stats(srv).closed;
	int32_t rc;

	(void)state;
	send_u32(fd, RESERVE, 1);
	a = pending(fd);
	assert_int_equal(a.pending, 1);
	held_idle(srv, fd, closed);

	other = TU_CLIENT(srv);
	struct fill_to_req skip = { a.id, tickets[0], 0 };

	assert_int_equal(tu_send_frame(other, SKIP_TO, 0, &skip, sizeof(skip)), 0);
	assert_int_equal(next_frame(other, (uint32_t *)&rc), SKIP_TO);
	ended_by_skip(srv, fd, other, closed, rc);
}

/* The same on a raw session (its input used where it arrived). */
static void test_skip_after_eof_raw(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int fd, other;
	uint64_t id, closed;
	uint8_t skip[1 + sizeof(id)] = { 'S' };
	int32_t rc;

	(void)state;
	tu_cfg(&c, 1);
	c.raw = true;
	c.on_data = on_raw;
	srv = TU_SERVE(&c);
	fd = TU_CLIENT(srv);
	closed = tu_stats(srv).closed;
	assert_int_equal(tu_send_all(fd, "R", 1), 0);
	assert_int_equal(tu_recv_all(fd, &id, sizeof(id)), 0);
	held_idle(srv, fd, closed);

	other = TU_CLIENT(srv);
	memcpy(skip + 1, &id, sizeof(id));
	assert_int_equal(tu_send_all(other, skip, sizeof(skip)), 0);
	assert_int_equal(tu_recv_all(other, &rc, sizeof(rc)), 0);
	ended_by_skip(srv, fd, other, closed, rc);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ticket_order),
		cmocka_unit_test(test_slot_reused),
		cmocka_unit_test(test_skip_after_eof),
		cmocka_unit_test(test_skip_after_eof_raw),
	};

	return pc_test_main(tests, argc, argv);
}
