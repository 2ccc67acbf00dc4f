/* SPDX-License-Identifier: MIT */
/* Clients that hold part of a frame: the server's memory mappings do not
 * grow with their number, each still gets its frame echoed once the rest
 * arrives, a good client is served throughout; and the shard's input
 * budget pauses the largest holders, drops the oldest incomplete frames
 * when nothing else can bring it down, and resumes under its low
 * watermark; input a raw server holds aside (pc_session_hold_input)
 * counts as unread input does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "net_util.h"
#include "testmain.h"

/* As many connections as the descriptor limit allows: both ends are in
 * this process, so two descriptors each, with a margin for the runtime.
 * Capped so a machine with a huge hard limit still runs this well within
 * its timeout on two busy CPUs (20,000 x 2 descriptors, 40,000 sockets). */
#define PARTIAL_CAP 20000u
#define PARTIAL_MIN 1000u
#define PARTIAL_BODY 200u
#define PARTIAL_HALF ((PC_FRAME_HEADER_LEN + PARTIAL_BODY) / 2)
/* Mappings the server may add while the connections arrive: its arena's
 * chunks, the sockets' bookkeeping, allocator growth; not one per
 * connection (which would be thousands). */
#define MAPS_GROWTH_MAX 64u
/* And between half the connections and all of them. */
#define MAPS_SECOND_HALF_MAX 16u

static unsigned partial_count(void)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = rl.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 2 * PARTIAL_MIN + 256)
		return 0;
	rlim_t n = (rl.rlim_cur - 256) / 2;
	return n > PARTIAL_CAP ? PARTIAL_CAP : (unsigned)n;
}

/* Connection i's frame: header, then a body of its own bytes. */
static void frame_of(unsigned i, uint8_t *out)
{
	assert_int_equal(pc_frame_header_encode(out, i + 1, 0, PARTIAL_BODY), 0);
	for (unsigned k = 0; k < PARTIAL_BODY; k++)
		out[PC_FRAME_HEADER_LEN + k] = (uint8_t)(i * 31u + k);
}

static void test_many_partial_frames(void **state)
{
	uint8_t frame[PC_FRAME_HEADER_LEN + PARTIAL_BODY];
	struct pc_server_cfg c;
	unsigned n = partial_count();

	(void)state;
	if (!n)
		PC_SKIP("the descriptor hard limit allows fewer than %u connections", PARTIAL_MIN);
	tu_cfg(&c, 1);
	c.backlog = 4096;
	struct pc_server *srv = TU_SERVE(&c);
	int good = TU_CLIENT(srv);
	int *fd = calloc(n, sizeof(*fd));
	assert_non_null(fd);
	assert_true(tu_echo_ok(good, 7, 1000));
	uint64_t maps0 = pc_process_maps(), maps_half = 0;
	assert_true(maps0 > 0);
	for (unsigned i = 0; i < n; i++) {
		fd[i] = TU_CLIENT(srv);
		frame_of(i, frame);
		assert_int_equal(tu_send_all(fd[i], frame, PARTIAL_HALF), 0);
		if (i % 1000 == 999)
			assert_true(tu_echo_ok(good, i, 1000)); /* served throughout */
		if (i + 1 == n / 2) {
			assert_true(TU_WAIT_STAT(srv, buffered_bytes, (uint64_t)(i + 1) * PARTIAL_HALF));
			maps_half = pc_process_maps();
		}
	}
	assert_true(TU_WAIT_STAT(srv, buffered_bytes, (uint64_t)n * PARTIAL_HALF));
	uint64_t maps1 = pc_process_maps();
	struct pc_server_stats st = tu_stats(srv);
	print_message("%u connections holding %u bytes each: %llu mappings before, %llu at "
		      "half, %llu after; %llu arena mappings\n", n, (unsigned)PARTIAL_HALF,
		      (unsigned long long)maps0, (unsigned long long)maps_half,
		      (unsigned long long)maps1, (unsigned long long)st.buffer_maps);
	assert_true(maps1 < maps0 + MAPS_GROWTH_MAX);
	assert_true(maps1 < maps_half + MAPS_SECOND_HALF_MAX);
	assert_true(st.buffer_maps >= 1 && st.buffer_maps <= 4);
	assert_int_equal(st.sessions, n + 1);
	assert_true(tu_echo_ok(good, 1, 1000));
	/* The rest of every frame, then every echo, byte for byte. */
	for (unsigned i = 0; i < n; i++) {
		frame_of(i, frame);
		assert_int_equal(tu_send_all(fd[i], frame + PARTIAL_HALF,
					     sizeof(frame) - PARTIAL_HALF), 0);
	}
	for (unsigned i = 0; i < n; i++) {
		uint8_t back[sizeof(frame)];
		frame_of(i, frame);
		assert_int_equal(tu_recv_all(fd[i], back, sizeof(back)), 0);
		if (memcmp(back, frame, sizeof(frame)))
			fail_msg("connection %u: its echo differs from its frame", i);
		close(fd[i]);
	}
	st = tu_stats(srv);
	assert_int_equal(st.closed_reason[PC_CLOSE_NOMEM], 0);
	assert_int_equal(st.input_shed, 0);
	assert_true(tu_echo_ok(good, 2, 1000));
	close(good);
	free(fd);
	tu_stop(srv);
}

/* Send part of a frame of body bytes (id 1): its first `part` bytes. */
static void send_part(int fd, uint32_t body, size_t from, size_t part)
{
	uint8_t *f = malloc(PC_FRAME_HEADER_LEN + body);

	assert_non_null(f);
	assert_int_equal(pc_frame_header_encode(f, 1, 0, body), 0);
	for (uint32_t k = 0; k < body; k++)
		f[PC_FRAME_HEADER_LEN + k] = (uint8_t)(k * 13u);
	assert_int_equal(tu_send_all(fd, f + from, part), 0);
	free(f);
}

/* The echo of a frame of body bytes sent with send_part. */
static bool echoed(int fd, uint32_t body)
{
	struct pc_frame f;
	uint8_t *b = NULL;
	bool ok = !tu_recv_frame(fd, &f, &b) && f.msg_id == 1 && f.flags == 0 && f.len == body;

	for (uint32_t k = 0; ok && k < body; k++)
		ok = b[k] == (uint8_t)(k * 13u);
	free(b);
	return ok;
}

#define BIG_BODY 32768u
#define SMALL_BODY 2000u
#define BUDGET (48u << 10) /* low watermark: 36 KiB */

static void wait_buffered(struct pc_server *srv, uint64_t want)
{
	uint64_t end = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;

	while (tu_stats(srv).buffered_bytes != want && pc_now_ns() < end)
		tu_sleep_ms(2);
	assert_int_equal(tu_stats(srv).buffered_bytes, want);
}

/* A holds 30,000 bytes, B 1,000, C 20,000: over the 48 KiB budget, A and
 * C (the largest) stop being read while B and a client sending whole
 * frames are still served. B adding bytes while over the budget leaves
 * no unpaused holder: the oldest incomplete frame (A's) is dropped with
 * an error reply, and under the low watermark B and C are read again and
 * complete their frames. */
static void test_input_budget(void **state)
{
	struct pc_server_cfg c;

	(void)state;
	tu_cfg(&c, 1);
	c.max_body = BIG_BODY;
	c.max_input_bytes = BUDGET;
	struct pc_server *srv = TU_SERVE(&c);
	int a = TU_CLIENT(srv), b = TU_CLIENT(srv), cc = TU_CLIENT(srv), good = TU_CLIENT(srv);

	send_part(a, BIG_BODY, 0, 30000);
	wait_buffered(srv, 30000);
	tu_sleep_ms(20); /* a later clock tick: B's frame is younger than A's */
	send_part(b, SMALL_BODY, 0, 1000);
	wait_buffered(srv, 31000);
	send_part(cc, BIG_BODY, 0, 20000);
	assert_true(TU_WAIT_STAT(srv, input_paused, 2));
	/* C is paused as soon as the total passes the budget: at 18,153 of
	 * its bytes or later, the rest waiting in the kernel. */
	tu_sleep_ms(50);
	struct pc_server_stats st = tu_stats(srv);
	uint64_t held = st.buffered_bytes;
	assert_true(held > BUDGET && held <= 51000);
	assert_int_equal(st.input_pauses, 2);
	assert_int_equal(st.input_shed, 0);
	/* Paused sessions are not read: C's next bytes stay in the kernel. */
	send_part(cc, BIG_BODY, 20000, 1000);
	assert_true(tu_echo_ok(good, 9, 100)); /* whole frames still served */
	tu_sleep_ms(50);
	st = tu_stats(srv);
	/* (A good frame split by the network made the good client a holder
	 * for a moment: when its frame completed, the shard saw every
	 * holder paused and dropped A already. Either way, C was not read.) */
	if (!st.input_shed)
		assert_int_equal(st.buffered_bytes, held);
	assert_true(st.buffered_bytes <= held);
	/* B is the only holder read; its next bytes leave none. */
	send_part(b, SMALL_BODY, 1000, 500);
	assert_true(TU_WAIT_STAT(srv, input_shed, 1));
	/* A gets an error reply (flags bit 1) and the connection ends. */
	struct pc_frame f = { .flags = 0 };
	assert_int_equal(tu_recv_frame(a, &f, NULL), 0);
	assert_true(f.flags & PC_FRAME_ERROR);
	assert_true(tu_closed(a));
	close(a);
	assert_true(TU_WAIT_STAT(srv, closed_reason[PC_CLOSE_NOMEM], 1));
	/* Under the low watermark: B and C read again, frames completed. */
	uint64_t end = pc_now_ns() + (uint64_t)TU_WAIT_MS * 1000000;
	while (tu_stats(srv).input_paused && pc_now_ns() < end)
		tu_sleep_ms(2);
	st = tu_stats(srv);
	assert_int_equal(st.input_paused, 0);
	assert_int_equal(st.input_shed, 1);
	assert_int_equal(st.input_pauses, 3);
	send_part(b, SMALL_BODY, 1500, PC_FRAME_HEADER_LEN + SMALL_BODY - 1500);
	assert_true(echoed(b, SMALL_BODY));
	send_part(cc, BIG_BODY, 21000, PC_FRAME_HEADER_LEN + BIG_BODY - 21000);
	assert_true(echoed(cc, BIG_BODY));
	assert_true(tu_echo_ok(good, 10, 100));
	wait_buffered(srv, 0);
	assert_int_equal(tu_stats(srv).closed_reason[PC_CLOSE_NOMEM], 1);
	close(b);
	close(cc);
	close(good);
	tu_stop(srv);
}

/* The largest frame the wire allows (16 MiB body) still goes through,
 * arriving in pieces (the input ring grows to its 32 MiB class, carved
 * from the arena) under a budget of exactly one such frame, twice. */
static void test_largest_frame(void **state)
{
	const uint32_t body = PC_FRAME_MAX_BODY_CAP;
	struct pc_server_cfg c;

	(void)state;
	tu_cfg(&c, 1);
	c.max_body = body;
	c.max_input_bytes = PC_FRAME_HEADER_LEN + (uint64_t)body;
	struct pc_server *srv = TU_SERVE(&c);
	int fd = TU_CLIENT(srv);
	for (int round = 0; round < 2; round++) {
		send_part(fd, body, 0, PC_FRAME_HEADER_LEN + body);
		assert_true(echoed(fd, body));
	}
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.input_pauses, 0);
	assert_int_equal(st.input_shed, 0);
	assert_true(st.buffer_maps >= 1 && st.buffer_maps <= 2);
	close(fd);
	tu_stop(srv);
}

/* A budget that one largest frame would exceed is refused, saying so. */
static void test_budget_below_one_frame(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv = NULL;
	char err[160] = "";

	(void)state;
	tu_cfg(&c, 1);
	c.max_body = 4096;
	c.max_input_bytes = 4096 + PC_FRAME_HEADER_LEN - 1;
	assert_int_equal(pc_server_start(&c, &srv, err, sizeof(err)), -EINVAL);
	assert_null(srv);
	assert_non_null(strstr(err, "max_input_bytes"));
	c.max_input_bytes++;
	srv = TU_SERVE(&c);
	tu_stop(srv);
}

/* A raw server that keeps every byte aside until a newline, as an
 * application buffering partial requests does, and says so. */
static size_t hold_until_newline(struct pc_session *s, const uint8_t *d, size_t n, void *user)
{
	uintptr_t held = (uintptr_t)pc_session_data(s) + n;

	(void)user;
	if (memchr(d, '\n', n)) {
		held = 0;
		pc_session_write(s, "ok\n", 3);
	}
	pc_session_set_data(s, (void *)held);
	pc_session_hold_input(s, held);
	return n;
}

/* Two clients each hold 5,000 bytes aside under a budget of 8,192: the
 * older is closed (shed), the other read again and served, and the
 * shard's count goes back to 0. */
static void test_app_held(void **state)
{
	struct pc_server_cfg c;
	uint8_t part[5000], line = '\n';
	char ok[3];

	(void)state;
	memset(part, 'h', sizeof(part));
	tu_cfg(&c, 1);
	c.raw = true;
	c.on_data = hold_until_newline;
	c.max_body = 4096;
	c.max_input_bytes = 8192;
	struct pc_server *srv = TU_SERVE(&c);
	int a = TU_CLIENT(srv), b = TU_CLIENT(srv);

	assert_int_equal(tu_send_all(a, part, sizeof(part)), 0);
	wait_buffered(srv, sizeof(part));
	tu_sleep_ms(20); /* a later clock tick: B's bytes are younger than A's */
	assert_int_equal(tu_send_all(b, part, sizeof(part)), 0);
	assert_true(TU_WAIT_STAT(srv, input_shed, 1));
	assert_true(tu_closed(a));
	wait_buffered(srv, sizeof(part));
	assert_int_equal(tu_send_all(b, &line, 1), 0);
	assert_int_equal(tu_recv_all(b, ok, sizeof(ok)), 0);
	assert_memory_equal(ok, "ok\n", 3);
	wait_buffered(srv, 0);
	assert_int_equal(tu_stats(srv).input_shed, 1);
	assert_int_equal(tu_stats(srv).input_paused, 0);
	close(a);
	close(b);
	tu_stop(srv);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_partial_frames),
		cmocka_unit_test(test_input_budget),
		cmocka_unit_test(test_largest_frame),
		cmocka_unit_test(test_budget_below_one_frame),
		cmocka_unit_test(test_app_held),
	};

	return pc_test_main(tests, argc, argv);
}
