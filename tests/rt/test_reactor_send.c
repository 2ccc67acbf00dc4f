/* SPDX-License-Identifier: MIT */
/* The io_uring backend's sends (pc_reactor_send): bytes leave in order
 * across short completions, one send per fd at a time, the callback runs
 * once per send; deleting an fd whose send waits for room cancels it, the
 * callback says so inside the delete, and nothing is left in flight.
 * Backends without it answer -EOPNOTSUPP. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/reactor.h"
#include "testmain.h"
#include "uring_test.h"

struct sent {
	int calls, cancels, shorts;
	size_t bytes, asked;
	bool in_del;       /* set by the test around pc_reactor_del() */
	bool cancel_in_del;
};

static void on_sent(struct pc_reactor *r, int fd, ssize_t res, void *arg, void *token)
{
	struct sent *s = arg;

	(void)r;
	(void)fd;
	assert_ptr_equal(token, s);
	s->calls++;
	if (res == -ECANCELED) {
		s->cancels++;
		s->cancel_in_del = s->in_del;
		return;
	}
	assert_true(res > 0);
	if ((size_t)res < s->asked)
		s->shorts++;
	s->bytes += (size_t)res;
}

static void pair(int sv[2])
{
	int small = 16384;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
	/* A small send buffer, so big sends complete short. */
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
}

/* Only the wake-up poll in flight, no send. */
static void assert_quiet(struct pc_reactor *r)
{
	struct pc_reactor_io_stats st;

	for (int t = 0; t < 50; t++) {
		pc_reactor_io_stats(r, &st);
		if (st.requests == 1 && st.sends == 0)
			break;
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
	}
	pc_reactor_io_stats(r, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.sends, 0);
}

/* The end of a test: sv[0] deleted, the pair closed, nothing left in
 * flight, the reactor gone. */
static void finish_pair(struct pc_reactor *r, int sv[2])
{
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
	assert_quiet(r);
	pc_reactor_destroy(r);
}

/* 1 MiB in sends of up to 64 KiB in two pieces each, resumed where each
 * stopped, read on the other side as they go: every byte, in order. */
static void bytes_leave_in_order(void **state)
{
	enum { TOTAL = 1 << 20 };
	static uint8_t out[TOTAL], in[TOTAL];
	static struct sent s;
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	size_t got = 0;
	int sv[2];

	(void)state;
	memset(&s, 0, sizeof(s));
	for (size_t i = 0; i < TOTAL; i++)
		out[i] = (uint8_t)(i * 131 + (i >> 9));
	pair(sv);
	assert_int_equal(pc_reactor_add(r, sv[0], PC_EV_IN, uring_ignore_io, &s), 0);
	for (int turns = 0; got < TOTAL && turns < 100000; turns++) {
		if (s.bytes < TOTAL && !pc_reactor_sending(r, sv[0])) {
			size_t left = TOTAL - s.bytes, n = left < 65536 ? left : 65536;
			struct iovec iov[2] = { { out + s.bytes, n / 3 },
						{ out + s.bytes + n / 3, n - n / 3 } };

			s.asked = n;
			assert_int_equal(pc_reactor_send(r, sv[0], iov, 2, on_sent, &s), 0);
			assert_ptr_equal(pc_reactor_sending(r, sv[0]), &s);
			/* One at a time. */
			assert_int_equal(pc_reactor_send(r, sv[0], iov, 1, on_sent, &s), -EBUSY);
		}
		assert_true(pc_reactor_poll(r, 0) >= 0);
		ssize_t k = read(sv[1], in + got, TOTAL - got);
		if (k > 0)
			got += (size_t)k;
		else
			assert_true(k < 0 && errno == EAGAIN);
	}
	assert_int_equal(got, TOTAL);
	assert_int_equal(s.bytes, TOTAL);
	assert_memory_equal(in, out, TOTAL);
	assert_int_equal(s.cancels, 0);
	assert_true(s.shorts > 0); /* the resumption was exercised */
	assert_null(pc_reactor_sending(r, sv[0]));
	finish_pair(r, sv);
}

/* A send waiting for room (nobody reads) is cancelled by the delete: its
 * callback runs inside it with -ECANCELED, once, and the requests are
 * back; the same fd number registered again starts clean. */
static void delete_cancels_send(void **state)
{
	static uint8_t big[1 << 18];
	static struct sent s;
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	struct iovec iov = { big, sizeof(big) };
	int sv[2];

	(void)state;
	memset(&s, 0, sizeof(s));
	pair(sv);
	assert_int_equal(pc_reactor_add(r, sv[0], PC_EV_IN, uring_ignore_io, &s), 0);
	/* Fill the socket: sends complete short until one has to wait. */
	for (int t = 0; t < 100; t++) {
		if (!pc_reactor_sending(r, sv[0])) {
			s.asked = sizeof(big);
			assert_int_equal(pc_reactor_send(r, sv[0], &iov, 1, on_sent, &s), 0);
		}
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
	}
	assert_non_null(pc_reactor_sending(r, sv[0]));
	int before = s.calls;
	s.in_del = true;
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	s.in_del = false;
	assert_int_equal(s.calls, before + 1);
	assert_int_equal(s.cancels, 1);
	assert_true(s.cancel_in_del);
	assert_null(pc_reactor_sending(r, sv[0]));
	assert_quiet(r);
	assert_int_equal(s.calls, before + 1); /* never again */
	assert_int_equal(pc_reactor_add(r, sv[0], PC_EV_IN, uring_ignore_io, &s), 0);
	assert_null(pc_reactor_sending(r, sv[0]));
	finish_pair(r, sv);
}

static void bad_arguments(void **state)
{
	static struct sent s;
	struct pc_reactor *r = uring_reactor(URING_NEED_RECV);
	char b[4] = "abc";
	struct iovec iov[PC_REACTOR_SEND_IOV + 1];
	int sv[2];

	(void)state;
	for (int i = 0; i <= PC_REACTOR_SEND_IOV; i++)
		iov[i] = (struct iovec){ b, 1 };
	pair(sv);
	assert_int_equal(pc_reactor_send(r, sv[0], iov, 1, on_sent, &s), -ENOENT);
	assert_int_equal(pc_reactor_add(r, sv[0], PC_EV_IN, uring_ignore_io, &s), 0);
	assert_int_equal(pc_reactor_send(r, sv[0], iov, 0, on_sent, &s), -EINVAL);
	assert_int_equal(pc_reactor_send(r, sv[0], iov, PC_REACTOR_SEND_IOV + 1, on_sent, &s),
			 -EINVAL);
	assert_int_equal(pc_reactor_send(r, sv[0], iov, 1, NULL, &s), -EINVAL);
	assert_int_equal(pc_reactor_send(r, sv[0], iov, 1, on_sent, NULL), -EINVAL);
	assert_null(pc_reactor_sending(r, sv[0]));
	assert_null(pc_reactor_sending(r, -1));
	assert_int_equal(pc_reactor_del(r, sv[0]), 0);
	close(sv[0]);
	close(sv[1]);
	pc_reactor_destroy(r);
}

/* The fallback: -EOPNOTSUPP, nothing in flight; write directly there. */
static void not_offered_by_epoll(void **state)
{
	static struct sent s;
	struct pc_reactor *r;
	struct iovec iov = { "x", 1 };
	int sv[2];

	(void)state;
	pair(sv);
	assert_int_equal(pc_reactor_create(&r, PC_BACKEND_EPOLL, 0), 0);
	assert_int_equal(pc_reactor_add(r, sv[0], PC_EV_IN, uring_ignore_io, &s), 0);
	assert_int_equal(pc_reactor_send(r, sv[0], &iov, 1, on_sent, &s), -EOPNOTSUPP);
	assert_null(pc_reactor_sending(r, sv[0]));
	pc_reactor_destroy(r);
	assert_int_equal(s.calls, 0);
	close(sv[0]);
	close(sv[1]);
}

/* The same fallback on io_uring without completion-based I/O. */
static void not_offered_without_completion(void **state)
{
	static struct sent s;
	struct pc_reactor *r;
	struct iovec iov = { "x", 1 };
	int sv[2];

	(void)state;
	if (pc_reactor_create(&r, PC_BACKEND_URING, PC_REACTOR_NO_FALLBACK | PC_REACTOR_NO_COMPLETION))
		PC_SKIP("io_uring cannot be set up here: its fallback went unchecked");
	pair(sv);
	assert_int_equal(pc_reactor_add(r, sv[0], PC_EV_IN, uring_ignore_io, &s), 0);
	assert_int_equal(pc_reactor_send(r, sv[0], &iov, 1, on_sent, &s), -EOPNOTSUPP);
	assert_null(pc_reactor_sending(r, sv[0]));
	pc_reactor_destroy(r);
	assert_int_equal(s.calls, 0);
	close(sv[0]);
	close(sv[1]);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytes_leave_in_order),
		cmocka_unit_test(delete_cancels_send),
		cmocka_unit_test(bad_arguments),
		cmocka_unit_test(not_offered_by_epoll),
		cmocka_unit_test(not_offered_without_completion),
	};
	return pc_test_main(tests, argc, argv);
}
