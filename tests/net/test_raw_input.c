/* SPDX-License-Identifier: MIT */
/* A raw server's input used where it was received (session_io.c): a
 * session holding no input offers the receive buffer itself to on_data
 * and copies into its input ring only what the handler left.
 *
 * The handler here takes whole lines only (returns 0 without a newline)
 * and echoes them. "PAUSE" stops reading its session; "RESUME" from
 * another connection resumes the paused one. Checked: every byte comes
 * back once, in order, however the client cuts its writes; what follows a
 * PAUSE in the same receive waits and comes back after RESUME, also when
 * it is many times the input ring; and bytes a handler used none of are
 * not offered to it again before more arrive. */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "net_util.h"
#include "testmain.h"
#include "percore/session.h"

/* One shard: its thread is the only writer of these. */
static struct pc_session *paused;
static size_t starved_len[2];     /* per session slot below: 0 or the bytes last refused */
static unsigned long reoffers;    /* offers of nothing new after a refusal */
static unsigned long offers;

static size_t *starved_of(struct pc_session *s)
{
	return &starved_len[(uintptr_t)pc_session_data(s) & 1];
}

static void on_open(struct pc_session *s, void *user)
{
	static uintptr_t n;

	(void)user;
	pc_session_set_data(s, (void *)n++);
	*starved_of(s) = 0;
}

static size_t on_lines(struct pc_session *s, const uint8_t *d, size_t n, void *user)
{
	size_t *starved = starved_of(s), used = 0;

	(void)user;
	__atomic_add_fetch(&offers, 1, __ATOMIC_RELAXED);
	if (*starved && n <= *starved)
		__atomic_add_fetch(&reoffers, 1, __ATOMIC_RELAXED);
	*starved = 0;
	while (used < n && !pc_session_read_paused(s)) {
		const uint8_t *nl = memchr(d + used, '\n', n - used);
		size_t len;

		if (!nl)
			break;
		len = (size_t)(nl - (d + used)) + 1;
		if (pc_session_write(s, d + used, len))
			return used;
		if (len == 6 && !memcmp(d + used, "PAUSE\n", 6)) {
			pc_session_pause_read(s);
			paused = s;
		} else if (len == 7 && !memcmp(d + used, "RESUME\n", 7) && paused) {
			pc_session_resume_read(paused);
			paused = NULL;
		}
		used += len;
	}
	if (!used)
		*starved = n;
	return used;
}

static struct pc_server *serve(uint32_t rx_buffer)
{
	struct pc_server_cfg c;

	tu_cfg(&c, 1);
	c.raw = true;
	c.on_data = on_lines;
	c.on_open = on_open;
	c.rx_buffer = rx_buffer;
	paused = NULL;
	__atomic_store_n(&reoffers, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&offers, 0, __ATOMIC_RELAXED);
	return TU_SERVE(&c);
}

/* Whether nothing arrives on fd within ms. */
static bool quiet_for(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 0;
}

/* n lines of deterministic lengths (0..399) and bytes, into buf. */
static size_t make_lines(char *buf, unsigned n, unsigned seed)
{
	size_t k = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned len = (i * 7919u + seed) % 400u;

		for (unsigned j = 0; j < len; j++)
			buf[k++] = (char)('a' + (i + j) % 26);
		buf[k++] = '\n';
	}
	return k;
}

/* Whatever fd has for us now, appended at in + *got. */
static void take_ready(int fd, char *in, size_t cap, size_t *got)
{
	ssize_t k;

	while (*got < cap && (k = recv(fd, in + *got, cap - *got, MSG_DONTWAIT)) > 0)
		*got += (size_t)k;
}

/* 3,000 lines sent in pieces of 1 to 1,500 bytes, now and then after a
 * pause so that pieces arrive alone (the echo read as it comes): echoed
 * whole and in order, and no offer repeats bytes the handler just
 * refused. */
static void test_lines_in_pieces(void **state)
{
	struct pc_server *srv = serve(0);
	int fd = TU_CLIENT(srv);
	static char out[3000 * 400], in[sizeof(out)];
	size_t len = make_lines(out, 3000, 17), sent = 0, got = 0;
	unsigned r = 12345;

	(void)state;
	for (unsigned i = 0; sent < len; i++) {
		size_t piece;

		r = r * 1103515245u + 12345u;
		piece = 1 + (r >> 8) % 1500;
		piece = piece < len - sent ? piece : len - sent;
		assert_int_equal(tu_send_all(fd, out + sent, piece), 0);
		sent += piece;
		if (i % 8 == 0)
			tu_sleep_ms(1);
		take_ready(fd, in, len, &got);
	}
	assert_int_equal(tu_recv_all(fd, in + got, len - got), 0);
	assert_memory_equal(in, out, len);
	assert_true(__atomic_load_n(&offers, __ATOMIC_RELAXED) > 0);
	assert_int_equal(__atomic_load_n(&reoffers, __ATOMIC_RELAXED), 0);
	close(fd);
	tu_stop(srv);
}

/* Lines after a PAUSE in the same write wait for the RESUME, then come
 * back in order, and the session reads on. With rx_buffer 4 KiB the
 * waiting bytes (about 40 KB, sent in one write) are many times one
 * input ring. */
static void pause_in_one_write(uint32_t rx_buffer, unsigned nlines)
{
	struct pc_server *srv = serve(rx_buffer);
	int a = TU_CLIENT(srv), b = TU_CLIENT(srv);
	static char out[200 * 400], in[sizeof(out)];
	char echo[7];
	size_t len;

	memcpy(out, "a1\nPAUSE\n", 9);
	len = 9 + make_lines(out + 9, nlines, 3);
	assert_int_equal(tu_send_all(a, out, len), 0);
	assert_int_equal(tu_recv_all(a, in, 9), 0);
	assert_memory_equal(in, out, 9);
	assert_true(quiet_for(a, 200));
	assert_int_equal(tu_send_all(b, "RESUME\n", 7), 0);
	assert_int_equal(tu_recv_all(b, echo, 7), 0);
	assert_memory_equal(echo, "RESUME\n", 7);
	assert_int_equal(tu_recv_all(a, in + 9, len - 9), 0);
	assert_memory_equal(in, out, len);
	assert_int_equal(tu_send_all(a, "after\n", 6), 0);
	assert_int_equal(tu_recv_all(a, in, 6), 0);
	assert_memory_equal(in, "after\n", 6);
	assert_int_equal(__atomic_load_n(&reoffers, __ATOMIC_RELAXED), 0);
	close(a);
	close(b);
	tu_stop(srv);
}

static void test_pause_mid_receive(void **state)
{
	(void)state;
	pause_in_one_write(0, 20);
}

static void test_pause_before_more_than_a_ring(void **state)
{
	(void)state;
	pause_in_one_write(4096, 200);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_in_pieces),
		cmocka_unit_test(test_pause_mid_receive),
		cmocka_unit_test(test_pause_before_more_than_a_ring),
	};

	return pc_test_main(tests, argc, argv);
}
