/* SPDX-License-Identifier: MIT */
/* The io_uring backend's completion receive (pc_reactor_add_recv): bytes
 * arrive in order, are kept (never lost) while input is not wanted and
 * when the callback takes only part, the end of stream comes once, and a
 * deleted fd gets no callback, with every buffer and request back
 * afterwards. Backends without it say so (-EOPNOTSUPP). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/clock.h"
#include "percore/reactor.h"
#include "testmain.h"
#include "uring_test.h"

/* What one fd's receive callback saw. */
struct got {
	uint8_t bytes[1 << 16];
	size_t len;
	int calls, eofs, errors;
	size_t take_max;   /* 0: take everything offered */
	bool deleted;      /* set by the test: any later call is a failure */
};

static size_t on_recv(struct pc_reactor *r, int fd, const void *p, ssize_t n, void *arg)
{
	struct got *g = arg;
	size_t take;

	(void)r;
	(void)fd;
	assert_false(g->deleted);
	g->calls++;
	if (n == 0) {
		g->eofs++;
		return 0;
	}
	if (n < 0) {
		g->errors++;
		return 0;
	}
	take = g->take_max && g->take_max < (size_t)n ? g->take_max : (size_t)n;
	assert_true(g->len + take <= sizeof(g->bytes));
	memcpy(g->bytes + g->len, p, take);
	g->len += take;
	return take;
}

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

/* Idle: only the wake-up poll in flight and every buffer in the pool. */
static void assert_quiet(struct pc_reactor *r)
{
	struct pc_reactor_io_stats st;

	for (int t = 0; t < 50; t++) {
		pc_reactor_io_stats(r, &st);
		if (st.requests == 1 && st.buffers_out == 0)
			break;
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
	}
	pc_reactor_io_stats(r, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.buffers_out, 0);
}

static void bytes_arrive_in_order(void **state)
{
	static struct got g;
	static uint8_t want[40000];
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	int sv[2];

	(void)state;
	memset(&g, 0, sizeof(g));
	pair(sv);
	fill(want, sizeof(want), 3);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, on_recv, &g), 0);
	/* More than one buffer's worth, in pieces of odd sizes. */
	for (size_t off = 0; off < sizeof(want);) {
		size_t k = sizeof(want) - off < 1237 ? sizeof(want) - off : 1237;
		ssize_t w = write(sv[1], want + off, k);

		if (w < 0) {
			assert_int_equal(errno, EAGAIN);
			assert_true(pc_reactor_poll(r, 10000000) >= 0);
			continue;
		}
		off += (size_t)w;
	}
	POLL_UNTIL(r, g.len == sizeof(want));
	assert_int_equal(g.len, sizeof(want));
	assert_memory_equal(g.bytes, want, sizeof(want));
	close(sv[1]);
	POLL_UNTIL(r, g.eofs);
	assert_int_equal(g.eofs, 1);
	for (int t = 0; t < 5; t++)
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
	assert_int_equal(g.eofs, 1); /* offered once, never again */
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	close(sv[0]);
	assert_quiet(r);
	pc_reactor_destroy(r);
}

/* A poll that waits for nothing asks the kernel only when it has
 * something waiting (IORING_SQ_TASKRUN): with nothing arriving, polls
 * make no system call; bytes that arrive are still found by such polls
 * alone, never by a wait. */
static void quiet_polls_skip_the_kernel_and_miss_nothing(void **state)
{
	static struct got g;
	static uint8_t want[3000];
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	struct pc_reactor_io_stats before, after;
	int sv[2];

	(void)state;
	memset(&g, 0, sizeof(g));
	pair(sv);
	fill(want, sizeof(want), 11);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, on_recv, &g), 0);
	assert_true(pc_reactor_poll(r, 1000000) >= 0); /* submits the receive */
	pc_reactor_io_stats(r, &before);
	if (!before.taskrun_flag) {
		pc_reactor_destroy(r);
		close(sv[0]);
		close(sv[1]);
		PC_SKIP("this kernel's io_uring has no IORING_SETUP_TASKRUN_FLAG");
	}
	for (int i = 0; i < 1000; i++)
		assert_int_equal(pc_reactor_poll(r, 0), 0);
	pc_reactor_io_stats(r, &after);
	assert_true(after.quiet_polls - before.quiet_polls >= 1000);
	assert_int_equal(g.len, 0);
	/* Three writes, each found by zero-timeout polls only. */
	for (size_t off = 0; off < sizeof(want); off += 1000) {
		uint64_t t0;

		assert_int_equal(write(sv[1], want + off, 1000), 1000);
		t0 = pc_now_ns();
		do
			assert_true(pc_reactor_poll(r, 0) >= 0);
		while (g.len < off + 1000 && pc_elapsed(pc_now_ns(), t0) < 5000000000ull);
		assert_int_equal(g.len, off + 1000);
	}
	assert_memory_equal(g.bytes, want, sizeof(want));
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
	pc_reactor_destroy(r);
}

/* A wait runs at most 20 items of deferred task work in recent kernels
 * (IO_LOCAL_TW_DEFAULT_MAX) and keeps the rest: they must still be found
 * by quiet polls, never stranded until the next wait (the kernel flags
 * them again). Bytes for 40 sockets at once: one wait, then
 * zero-timeout polls alone. */
static void cut_short_batches_are_finished_by_polls(void **state)
{
	enum { N = 40 };
	static struct got g[N];
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	int sv[N][2];
	size_t total = 0;
	uint64_t t0;

	(void)state;
	memset(g, 0, sizeof(g));
	for (int i = 0; i < N; i++) {
		pair(sv[i]);
		assert_int_equal(
			pc_reactor_add_recv(r, sv[i][0], PC_EV_IN, uring_ignore_io, on_recv, &g[i]), 0);
	}
	assert_true(pc_reactor_poll(r, 1000000) >= 0); /* submits the receives */
	for (int i = 0; i < N; i++)
		assert_int_equal(write(sv[i][1], "x", 1), 1);
	/* One wait (it runs a batch), then zero-timeout polls alone. */
	assert_true(pc_reactor_poll(r, 1000000) > 0);
	t0 = pc_now_ns();
	do {
		assert_true(pc_reactor_poll(r, 0) >= 0);
		total = 0;
		for (int i = 0; i < N; i++)
			total += g[i].len;
	} while (total < N && pc_elapsed(pc_now_ns(), t0) < 5000000000ull);
	assert_int_equal(total, N);
	for (int i = 0; i < N; i++) {
		assert_int_equal(pc_reactor_del(r, sv[i][0]), 0);
		close(sv[i][0]);
		close(sv[i][1]);
	}
	pc_reactor_destroy(r);
}

/* Without PC_EV_IN nothing is offered; once it is back, everything sent
 * meanwhile comes, in order. */
static void interest_off_keeps_bytes(void **state)
{
	static struct got g;
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	int sv[2];

	(void)state;
	memset(&g, 0, sizeof(g));
	pair(sv);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, on_recv, &g), 0);
	assert_int_equal(write(sv[1], "abc", 3), 3);
	/* Dropped in the same turn as the bytes arrive: the receive may
	 * complete before its cancellation does. */
	assert_int_equal(pc_reactor_mod(r, sv[0], 0), 0);
	for (int t = 0; t < 5; t++)
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
	assert_int_equal(write(sv[1], "def", 3), 3);
	for (int t = 0; t < 5; t++)
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
	assert_int_equal(g.calls, 0);
	assert_int_equal(pc_reactor_mod(r, sv[0], PC_EV_IN), 0);
	POLL_UNTIL(r, g.len == 6);
	assert_int_equal(g.len, 6);
	assert_memory_equal(g.bytes, "abcdef", 6);
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
	assert_quiet(r);
	pc_reactor_destroy(r);
}

/* A callback that takes part of what it is offered gets the rest first. */
static void partial_take_offers_rest(void **state)
{
	static struct got g;
	static uint8_t want[3000];
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	int sv[2];

	(void)state;
	memset(&g, 0, sizeof(g));
	g.take_max = 100;
	pair(sv);
	fill(want, sizeof(want), 11);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, on_recv, &g), 0);
	assert_int_equal(write(sv[1], want, 1500), 1500);
	assert_true(pc_reactor_poll(r, 10000000) >= 0);
	assert_int_equal(write(sv[1], want + 1500, 1500), 1500);
	POLL_UNTIL(r, g.len == sizeof(want));
	assert_int_equal(g.len, sizeof(want));
	assert_memory_equal(g.bytes, want, sizeof(want));
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
	assert_quiet(r);
	pc_reactor_destroy(r);
}

/* Kept bytes are offered at the start of the next wait; what their
 * callback queues (a task: a session's output flush) must end that wait
 * at once, not wait for a later event. */
static int offered_tasks;

static void count_task(void *arg)
{
	(void)arg;
	offered_tasks++;
}

static size_t take_and_defer(struct pc_reactor *r, int fd, const void *p, ssize_t n, void *arg)
{
	assert_int_equal(pc_reactor_defer(r, count_task, NULL), 0);
	return on_recv(r, fd, p, n, arg);
}

static void kept_bytes_tasks_end_the_wait(void **state)
{
	static struct got g;
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	int64_t bound = 5000000000; /* a wait that runs out is the failure */
	struct timespec t0, t1;
	int sv[2];

	(void)state;
	memset(&g, 0, sizeof(g));
	offered_tasks = 0;
	g.take_max = 1;
	pair(sv);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, take_and_defer,
					     &g), 0);
	assert_int_equal(write(sv[1], "abcdef", 6), 6);
	POLL_UNTIL(r, g.len == 1 && offered_tasks == 1); /* "bcdef" kept */
	g.take_max = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_true(pc_reactor_poll(r, bound) >= 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(g.len, 6);
	assert_int_equal(offered_tasks, 2);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec) < bound / 2);
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
	assert_quiet(r);
	pc_reactor_destroy(r);
}

/* Deleted with bytes received and kept, and more in flight: no callback
 * afterwards, and all buffers and requests come back. */
static void delete_leaves_nothing(void **state)
{
	enum { N = 300 }; /* more fds than the pool has buffers */
	static struct got g[N];
	static int sv[N][2];
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);

	(void)state;
	for (int i = 0; i < N; i++) {
		memset(&g[i], 0, sizeof(g[i]));
		pair(sv[i]);
		assert_int_equal(pc_reactor_add_recv(r, sv[i][0], PC_EV_IN, uring_ignore_io, on_recv, &g[i]), 0);
		assert_int_equal(write(sv[i][1], "0123456789", 10), 10);
	}
	/* A third keep what they receive (no interest), a third take part. */
	for (int i = 0; i < N; i += 3)
		assert_int_equal(pc_reactor_mod(r, sv[i][0], 0), 0);
	for (int i = 1; i < N; i += 3)
		g[i].take_max = 4;
	assert_true(pc_reactor_poll(r, 10000000) >= 0);
	for (int i = 0; i < N; i++) {
		assert_int_equal(write(sv[i][1], "abcdefghij", 10), 10);
		assert_int_equal(pc_reactor_del(r, sv[i][0]), 0);
		g[i].deleted = true;
		close(sv[i][0]);
		close(sv[i][1]);
	}
	assert_quiet(r);
	assert_int_equal(pc_reactor_nfds(r), 0);
	pc_reactor_destroy(r);
}

/* What a keeping callback saw, and what its deferred task found there. */
struct keeper {
	struct pc_reactor *r;
	const uint8_t *at[64];
	uint8_t copy[64][256];
	size_t len[64];
	int n, checked, bad, out_in_task;
};

static void check_kept(void *arg)
{
	struct keeper *k = arg;
	struct pc_reactor_io_stats st;

	pc_reactor_io_stats(k->r, &st);
	k->out_in_task = (int)st.buffers_out;
	for (; k->checked < k->n; k->checked++)
		if (memcmp(k->at[k->checked], k->copy[k->checked], k->len[k->checked]))
			k->bad++;
}

static size_t on_recv_keep(struct pc_reactor *r, int fd, const void *p, ssize_t n, void *arg)
{
	struct keeper *k = arg;
	size_t len = n > 0 ? (size_t)n : 0;

	(void)fd;
	if (!len || k->n == 64)
		return len;
	len = len < sizeof(k->copy[0]) ? len : sizeof(k->copy[0]);
	k->at[k->n] = p;
	k->len[k->n] = len;
	memcpy(k->copy[k->n++], p, len);
	pc_reactor_recv_keep(r);
	assert_int_equal(pc_reactor_defer(r, check_kept, k), 0);
	return (size_t)n;
}

/* A kept buffer holds its bytes until the turn's tasks have run, and
 * goes back to the pool at the next wait. */
static void kept_bytes_last_the_turn(void **state)
{
	static struct keeper k;
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	uint8_t b[200];
	int sv[2];

	(void)state;
	memset(&k, 0, sizeof(k));
	k.r = r;
	pair(sv);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, on_recv_keep, &k), 0);
	for (int i = 0; i < 20; i++) {
		fill(b, sizeof(b), (unsigned)i);
		assert_int_equal(write(sv[1], b, sizeof(b)), (ssize_t)sizeof(b));
		POLL_UNTIL(r, k.checked > i);
		assert_int_equal(k.checked, i + 1);
	}
	assert_int_equal(k.bad, 0);
	/* the task ran while the buffer was still out (without the keep it
	 * is back in the pool when the callback returns) */
	assert_true(k.out_in_task >= 1);
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	assert_quiet(r);
	close(sv[0]);
	close(sv[1]);
	pc_reactor_destroy(r);
}

static void not_offered_elsewhere(void **state)
{
	static struct got g;
	struct pc_reactor *r;
	int sv[2];

	(void)state;
	pair(sv);
	assert_int_equal(pc_reactor_create(&r, PC_BACKEND_EPOLL, 0), 0);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, on_recv, &g), -EOPNOTSUPP);
	assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, NULL, &g), -EINVAL);
	assert_int_equal(pc_reactor_nfds(r), 0);
	pc_reactor_destroy(r);
	if (pc_reactor_create(&r, PC_BACKEND_URING, PC_REACTOR_NO_FALLBACK | PC_REACTOR_NO_COMPLETION) == 0) {
		assert_int_equal(pc_reactor_add_recv(r, sv[0], PC_EV_IN, uring_ignore_io, on_recv, &g),
				 -EOPNOTSUPP);
		assert_int_equal(pc_reactor_nfds(r), 0);
		/* Readiness still works on that ring. */
		assert_int_equal(pc_reactor_add(r, sv[0], PC_EV_IN, uring_ignore_io, &g), 0);
		assert_int_equal(pc_reactor_del(r, sv[0]), 0);
		pc_reactor_destroy(r);
	}
	close(sv[0]);
	close(sv[1]);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytes_arrive_in_order),
		cmocka_unit_test(interest_off_keeps_bytes),
		cmocka_unit_test(partial_take_offers_rest),
		cmocka_unit_test(kept_bytes_tasks_end_the_wait),
		cmocka_unit_test(delete_leaves_nothing),
		cmocka_unit_test(kept_bytes_last_the_turn),
		cmocka_unit_test(not_offered_elsewhere),
		cmocka_unit_test(quiet_polls_skip_the_kernel_and_miss_nothing),
		cmocka_unit_test(cut_short_batches_are_finished_by_polls),
	};
	return pc_test_main(tests, argc, argv);
}
