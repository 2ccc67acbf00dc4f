/* SPDX-License-Identifier: MIT */
/* Sessions moving between shards (pc_session_move, session_move.c).
 *
 * The server is a raw line protocol. Every line is answered with
 * "<shard> <n> <line>", n counting the connection's lines in the
 * application's own state, which travels with each move; "MOVE" also
 * moves the session to the next shard, "BIG" first queues a large reply.
 * Checked: bytes that follow a MOVE in the same receive, and whatever the
 * client sends while the session moves, are answered on the new shard,
 * once and in order, with the state carried; a move waits for output the
 * client has not read yet; the client's EOF right behind a MOVE still
 * gets every answer, then the close; a shard with no room closes the
 * connection and hands the state back (on_moved with NULL); refusals
 * return their errors; and four clients streaming lines while moving
 * every few dozen lines lose and repeat nothing, on both backends. */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "net_util.h"
#include "testmain.h"
#include "percore/shard.h"
#include "percore/session.h"

#define BIG_LEN (8u << 20)

/* The application's state of one connection. */
struct conn {
	uint64_t lines;
	uint64_t moves;
};

static _Atomic uint64_t lost_states;   /* on_moved(NULL): state handed back */
static _Atomic uint64_t moved_closes;  /* on_close(PC_CLOSE_MOVED) */
static _Atomic int refusals[5];        /* "REFUSE": each call's return */
static _Atomic uint64_t server_errors;  /* checks failed on the server's side */
static char *big;

static void on_open(struct pc_session *s, void *user)
{
	(void)user;
	pc_session_set_data(s, calloc(1, sizeof(struct conn)));
}

static void on_close(struct pc_session *s, enum pc_close_reason why, void *user)
{
	(void)user;
	if (why == PC_CLOSE_MOVED)
		atomic_fetch_add(&moved_closes, 1); /* its state went along */
	else
		free(pc_session_data(s));
}

static void on_moved(struct pc_session *s, const void *state, size_t len, void *user)
{
	struct conn *c;

	(void)user;
	if (len != sizeof(c)) {
		atomic_fetch_add(&server_errors, 1);
		return;
	}
	memcpy(&c, state, sizeof(c));
	if (!s) {
		atomic_fetch_add(&lost_states, 1);
		free(c);
		return;
	}
	c->moves++;
	pc_session_set_data(s, c);
}

static void refuse_all(struct pc_session *s, struct conn *c)
{
	unsigned here = (unsigned)pc_shard_id(), n = pc_shard_count();

	atomic_store(&refusals[0], pc_session_move(s, here, &c, sizeof(c)));
	atomic_store(&refusals[1], pc_session_move(s, n + 3, &c, sizeof(c)));
	atomic_store(&refusals[2], pc_session_move(s, (here + 1) % n, &c,
						     PC_SESSION_MOVE_STATE_MAX + 1));
	atomic_store(&refusals[3], pc_session_move(s, (here + 1) % n, &c, sizeof(c)));
	/* the second move of the same session, while the first is under way */
	atomic_store(&refusals[4], pc_session_move(s, (here + 1) % n, &c, sizeof(c)));
}

/* One line: its answer, and what it asks. Returns false when the session
 * stops reading here (it moves). */
static bool line(struct pc_session *s, struct conn *c, const uint8_t *p, size_t len)
{
	char head[48];
	unsigned here = (unsigned)pc_shard_id();
	int n = snprintf(head, sizeof(head), "%u %llu ", here, (unsigned long long)++c->lines);

	if (pc_session_write(s, head, (size_t)n) || pc_session_write(s, p, len))
		atomic_fetch_add(&server_errors, 1);
	if (len == 4 && !memcmp(p, "BIG\n", 4) && pc_session_write(s, big, BIG_LEN))
		atomic_fetch_add(&server_errors, 1);
	if (len == 7 && !memcmp(p, "REFUSE\n", 7)) {
		refuse_all(s, c);
		return false;
	}
	if (len == 5 && !memcmp(p, "MOVE\n", 5)) {
		if (pc_session_move(s, (here + 1) % pc_shard_count(), &c, sizeof(c)))
			atomic_fetch_add(&server_errors, 1);
		return false;
	}
	return true;
}

static size_t on_lines(struct pc_session *s, const uint8_t *d, size_t n, void *user)
{
	struct conn *c = pc_session_data(s);
	size_t used = 0;

	(void)user;
	while (used < n) {
		const uint8_t *nl = memchr(d + used, '\n', n - used);
		size_t len;

		if (!nl)
			break;
		len = (size_t)(nl - (d + used)) + 1;
		used += len;
		if (!line(s, c, nl + 1 - len, len))
			break;
	}
	return used;
}

static struct pc_server *serve(unsigned shards, uint32_t max_sessions)
{
	struct pc_server_cfg c;

	tu_cfg(&c, shards);
	c.raw = true;
	c.on_data = on_lines;
	c.on_open = on_open;
	c.on_close = on_close;
	c.on_moved = on_moved;
	c.max_sessions = max_sessions;
	c.high_water = BIG_LEN * 2;
	atomic_store(&lost_states, 0);
	atomic_store(&moved_closes, 0);
	atomic_store(&server_errors, 0);
	if (!big) {
		big = malloc(BIG_LEN);
		for (size_t i = 0; i < BIG_LEN; i++)
			big[i] = (char)('A' + i % 23);
	}
	return TU_SERVE(&c);
}

/* One answer line into buf (NUL-terminated, newline kept); its length,
 * or -1 at EOF, error or timeout. */
static int answer(int fd, char *buf, size_t cap)
{
	size_t k = 0;

	while (k + 1 < cap) {
		if (recv(fd, buf + k, 1, 0) != 1)
			return -1;
		if (buf[k++] == '\n')
			break;
	}
	buf[k] = 0;
	return (int)k;
}

/* The next answer must be for line n with text `text`; returns its shard. */
static unsigned expect(int fd, unsigned long long n, const char *text)
{
	char buf[256], want[160];
	unsigned shard;
	unsigned long long got;
	int off = 0;

	assert_true(answer(fd, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "%u %llu %n", &shard, &got, &off), 2);
	assert_int_equal(got, n);
	snprintf(want, sizeof(want), "%s\n", text);
	assert_string_equal(buf + off, want);
	return shard;
}

static uint64_t stat_sum(struct pc_server *srv, size_t field)
{
	struct pc_server_stats st;

	assert_int_equal(pc_server_stats(srv, -1, &st), 0);
	return *(const uint64_t *)((const char *)&st + field);
}

/* Moves in one receive: what follows each MOVE is answered on the next
 * shard, in order, the line count carried. */
static void test_moves_within_one_write(void **state)
{
	struct pc_server *srv = serve(3, 0);
	int fd = TU_CLIENT(srv);
	const char msg[] = "a\nMOVE\nb\nc\nMOVE\nd\nMOVE\ne\n";
	unsigned s0;

	(void)state;
	assert_int_equal(tu_send_all(fd, msg, sizeof(msg) - 1), 0);
	s0 = expect(fd, 1, "a");
	assert_int_equal(expect(fd, 2, "MOVE"), s0);
	assert_int_equal(expect(fd, 3, "b"), (s0 + 1) % 3);
	assert_int_equal(expect(fd, 4, "c"), (s0 + 1) % 3);
	assert_int_equal(expect(fd, 5, "MOVE"), (s0 + 1) % 3);
	assert_int_equal(expect(fd, 6, "d"), (s0 + 2) % 3);
	assert_int_equal(expect(fd, 7, "MOVE"), (s0 + 2) % 3);
	assert_int_equal(expect(fd, 8, "e"), s0);
	/* and the socket is read on the last shard as usual */
	assert_int_equal(tu_send_all(fd, "f\n", 2), 0);
	assert_int_equal(expect(fd, 9, "f"), s0);
	assert_int_equal(stat_sum(srv, offsetof(struct pc_server_stats, moved_out)), 3);
	assert_int_equal(stat_sum(srv, offsetof(struct pc_server_stats, moved_in)), 3);
	assert_int_equal(stat_sum(srv, offsetof(struct pc_server_stats, closed)), 0);
	assert_int_equal(stat_sum(srv, offsetof(struct pc_server_stats, sessions)), 1);
	assert_int_equal(atomic_load(&moved_closes), 3);
	close(fd);
	tu_stop(srv);
	assert_int_equal(atomic_load(&server_errors), 0);
}

/* A large reply the client has not read holds the move back; what the
 * client sends meanwhile is answered on the new shard after it. */
static void test_move_waits_for_output(void **state)
{
	struct pc_server *srv = serve(2, 0);
	int fd = TU_CLIENT(srv);
	char *in = malloc(BIG_LEN);
	unsigned s0;

	(void)state;
	assert_int_equal(tu_send_all(fd, "BIG\nMOVE\nx\n", 11), 0);
	tu_sleep_ms(100); /* not reading: the reply fills the socket */
	assert_int_equal(tu_send_all(fd, "y\n", 2), 0);
	s0 = expect(fd, 1, "BIG");
	assert_int_equal(tu_recv_all(fd, in, BIG_LEN), 0);
	assert_memory_equal(in, big, BIG_LEN);
	assert_int_equal(expect(fd, 2, "MOVE"), s0);
	assert_int_equal(expect(fd, 3, "x"), 1 - s0);
	assert_int_equal(expect(fd, 4, "y"), 1 - s0);
	free(in);
	close(fd);
	tu_stop(srv);
	assert_int_equal(atomic_load(&server_errors), 0);
}

/* The client's EOF right behind a MOVE: every line answered on the new
 * shard, then the connection ends. */
static void test_eof_behind_a_move(void **state)
{
	struct pc_server *srv = serve(2, 0);
	int fd = TU_CLIENT(srv);
	char c;
	unsigned s0;

	(void)state;
	assert_int_equal(tu_send_all(fd, "a\nMOVE\nlast\n", 12), 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	s0 = expect(fd, 1, "a");
	expect(fd, 2, "MOVE");
	assert_int_equal(expect(fd, 3, "last"), 1 - s0);
	assert_int_equal(recv(fd, &c, 1, 0), 0);
	close(fd);
	tu_stop(srv);
	assert_int_equal(atomic_load(&server_errors), 0);
}

/* Refusals, and a shard with no room: the connection closes and the
 * application gets its state back. */
static void test_refusals_and_no_room(void **state)
{
	struct pc_server *srv = serve(2, 1);
	int fds[2] = { -1, -1 }, extra[64];
	unsigned nextra = 0;
	char buf[64];

	(void)state;
	/* one connection on each shard (others are refused: no room) */
	while ((fds[0] < 0 || fds[1] < 0) && nextra < 64) {
		int fd = TU_CLIENT(srv);
		unsigned shard;

		if (tu_send_all(fd, "hi\n", 3) || answer(fd, buf, sizeof(buf)) <= 0 ||
		    sscanf(buf, "%u", &shard) != 1) {
			extra[nextra++] = fd;
			continue;
		}
		fds[shard] = fd;
	}
	assert_true(fds[0] >= 0 && fds[1] >= 0);
	/* refused moves leave it reading; the last one is taken, then the
	 * full shard closes it */
	assert_int_equal(tu_send_all(fds[0], "REFUSE\n", 7), 0);
	expect(fds[0], 2, "REFUSE");
	assert_int_equal(atomic_load(&refusals[0]), -EINVAL);
	assert_int_equal(atomic_load(&refusals[1]), -EINVAL);
	assert_int_equal(atomic_load(&refusals[2]), -EMSGSIZE);
	assert_int_equal(atomic_load(&refusals[3]), 0);
	assert_int_equal(atomic_load(&refusals[4]), -EBUSY);
	assert_true(recv(fds[0], buf, 1, 0) <= 0);
	for (unsigned i = 0; i < 50 * TU_SLOW && atomic_load(&lost_states) == 0; i++)
		tu_sleep_ms(10);
	assert_int_equal(atomic_load(&lost_states), 1);
	/* the other shard's connection is untouched */
	assert_int_equal(tu_send_all(fds[1], "still\n", 6), 0);
	assert_int_equal(expect(fds[1], 2, "still"), 1);
	close(fds[0]);
	close(fds[1]);
	for (unsigned i = 0; i < nextra; i++)
		close(extra[i]);
	tu_stop(srv);
	assert_int_equal(atomic_load(&server_errors), 0);
}

/* A server without on_moved refuses moves. */
static size_t refuse_only(struct pc_session *s, const uint8_t *d, size_t n, void *user)
{
	(void)d;
	(void)user;
	atomic_store(&refusals[0], pc_session_move(s, 1 - (unsigned)pc_shard_id(), NULL, 0));
	pc_session_write(s, "ok\n", 3);
	return n;
}

static void test_no_on_moved(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	int fd;
	char buf[8];

	(void)state;
	tu_cfg(&c, 2);
	c.raw = true;
	c.on_data = refuse_only;
	srv = TU_SERVE(&c);
	fd = TU_CLIENT(srv);
	assert_int_equal(tu_send_all(fd, "x\n", 2), 0);
	assert_int_equal(tu_recv_all(fd, buf, 3), 0);
	assert_int_equal(atomic_load(&refusals[0]), -EOPNOTSUPP);
	close(fd);
	tu_stop(srv);
	assert_int_equal(atomic_load(&server_errors), 0);
}

/* Clients streaming lines in uneven pieces, a MOVE every few dozen, while
 * reading the answers: each answered once, in order, from the shard the
 * moves so far put it on. */
#define STREAM_CLIENTS 4
#define STREAM_LINES 6000

struct stream {
	int fd;
	char *out;
	size_t len;
	unsigned moves;
};

static void stream_build(struct stream *st, unsigned seed)
{
	size_t cap = STREAM_LINES * 24, k = 0;

	st->out = malloc(cap);
	st->moves = 0;
	for (unsigned i = 0; i < STREAM_LINES; i++) {
		if ((i * 2654435761u + seed) % 37 == 0) {
			k += (size_t)sprintf(st->out + k, "MOVE\n");
			st->moves++;
		} else {
			k += (size_t)sprintf(st->out + k, "l%u-%u\n", seed, i);
		}
	}
	st->len = k;
}

/* Checks every answer of st's stream as it is read. */
static void stream_check(struct stream *st, unsigned nshards)
{
	const char *p = st->out;
	unsigned shard = UINT32_MAX;

	for (unsigned long long n = 1; n <= STREAM_LINES; n++) {
		const char *nl = strchr(p, '\n');
		char text[32];
		unsigned got;

		memcpy(text, p, (size_t)(nl - p));
		text[nl - p] = 0;
		got = expect(st->fd, n, text);
		if (shard != UINT32_MAX)
			assert_int_equal(got, shard);
		shard = !strcmp(text, "MOVE") ? (got + 1) % nshards : got;
		p = nl + 1;
	}
}

static void *stream_send(void *arg)
{
	struct stream *st = arg;
	size_t sent = 0;
	unsigned r = (unsigned)st->fd * 7919u;

	while (sent < st->len) {
		size_t piece;

		r = r * 1103515245u + 12345u;
		piece = 1 + (r >> 8) % 700;
		if (piece > st->len - sent)
			piece = st->len - sent;
		if (tu_send_all(st->fd, st->out + sent, piece))
			return (void *)1;
		sent += piece;
		if ((r >> 4) % 16 == 0)
			tu_sleep_ms(1);
	}
	return NULL;
}

static void test_streams_while_moving(void **state)
{
	struct pc_server *srv = serve(3, 0);
	struct stream st[STREAM_CLIENTS];
	pthread_t th[STREAM_CLIENTS];
	uint64_t moves = 0;

	(void)state;
	for (unsigned i = 0; i < STREAM_CLIENTS; i++) {
		st[i].fd = TU_CLIENT(srv);
		stream_build(&st[i], i + 1);
		moves += st[i].moves;
		assert_int_equal(pthread_create(&th[i], NULL, stream_send, &st[i]), 0);
	}
	for (unsigned i = 0; i < STREAM_CLIENTS; i++) {
		void *rc;

		stream_check(&st[i], 3);
		assert_int_equal(pthread_join(th[i], &rc), 0);
		assert_null(rc);
	}
	assert_int_equal(stat_sum(srv, offsetof(struct pc_server_stats, moved_in)), moves);
	assert_int_equal(stat_sum(srv, offsetof(struct pc_server_stats, moved_out)), moves);
	for (unsigned i = 0; i < STREAM_CLIENTS; i++) {
		close(st[i].fd);
		free(st[i].out);
	}
	tu_stop(srv);
	assert_int_equal(atomic_load(&server_errors), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moves_within_one_write),
		cmocka_unit_test(test_move_waits_for_output),
		cmocka_unit_test(test_eof_behind_a_move),
		cmocka_unit_test(test_refusals_and_no_room),
		cmocka_unit_test(test_no_on_moved),
		cmocka_unit_test(test_streams_while_moving),
	};
	int rc = pc_test_main(tests, argc, argv);

	free(big);
	return rc;
}
