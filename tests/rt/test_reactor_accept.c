/* SPDX-License-Identifier: MIT */
/* The io_uring backend's completion accept (pc_reactor_add_accept): every
 * connection comes to the callback once, as a working non-blocking socket;
 * after the listener is deleted nothing more is accepted and no request is
 * left; backends without it (epoll, a ring without completion requests)
 * answer -EOPNOTSUPP and readiness still works there. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/listener.h"
#include "percore/reactor.h"
#include "testmain.h"
#include "uring_test.h"

enum { MAXC = 64 };

struct acc {
	int fds[MAXC];
	int n, errors, readiness;
	bool deleted;      /* set by the test: any later call is a failure */
};

static void on_conn(struct pc_reactor *r, int lfd, int fd, void *arg)
{
	struct acc *a = arg;

	(void)r;
	(void)lfd;
	assert_false(a->deleted);
	if (fd < 0) {
		a->errors++;
		return;
	}
	assert_true(a->n < MAXC);
	a->fds[a->n++] = fd;
}

static void on_ready(struct pc_reactor *r, int fd, unsigned ev, void *arg)
{
	struct acc *a = arg;

	(void)r;
	(void)fd;
	(void)ev;
	a->readiness++;
}

static int listener(uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int fd;

	assert_int_equal(pc_sockaddr_parse("127.0.0.1", 0, &ss, &len), 0);
	fd = pc_listen((struct sockaddr *)&ss, len, 128, 0);
	assert_true(fd >= 0);
	assert_int_equal(pc_socket_local(fd, &ss, &len), 0);
	*port = pc_sockaddr_port((struct sockaddr *)&ss);
	return fd;
}

static int dial(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Every connection once, each a non-blocking socket joined to its client. */
static void every_connection_once(void **state)
{
	static struct acc a;
	struct pc_reactor *r = uring_reactor(URING_NEED_ACCEPT);
	struct pc_reactor_io_stats st;
	int cli[20];
	uint16_t port;
	int lfd = listener(&port);
	char b[8];

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_int_equal(pc_reactor_add_accept(r, lfd, on_ready, on_conn, &a), 0);
	for (int i = 0; i < 20; i++)
		cli[i] = dial(port);
	POLL_UNTIL(r, a.n == 20);
	assert_int_equal(a.n, 20);
	assert_int_equal(a.errors, 0);
	assert_int_equal(a.readiness, 0);
	for (int i = 0; i < 20; i++) {
		assert_true(fcntl(a.fds[i], F_GETFL) & O_NONBLOCK);
		assert_true(fcntl(a.fds[i], F_GETFD) & FD_CLOEXEC);
	}
	/* Each accepted socket talks to one client: write on each client,
	 * read the same byte on exactly one accepted socket. */
	for (int i = 0; i < 20; i++)
		assert_int_equal(write(cli[i], &(char){ (char)('a' + i) }, 1), 1);
	for (int i = 0; i < 20; i++) {
		int got = -1;
		for (int t = 0; t < 1000 && got < 0; t++) {
			ssize_t k = read(a.fds[i], b, sizeof(b));
			if (k == 1)
				got = b[0] - 'a';
			else
				usleep(1000);
		}
		assert_true(got >= 0 && got < 20);
	}
	assert_int_equal(pc_reactor_del(r, lfd), 0);
	a.deleted = true;
	pc_reactor_io_stats(r, &st);
	for (int t = 0; t < 50 && st.requests != 1; t++) {
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
		pc_reactor_io_stats(r, &st);
	}
	assert_int_equal(st.requests, 1); /* the wake-up poll alone */
	for (int i = 0; i < 20; i++) {
		close(cli[i]);
		close(a.fds[i]);
	}
	close(lfd);
	pc_reactor_destroy(r);
}

/* Deleted, the listener accepts nothing more: a connection made after the
 * delete waits in the backlog, and is taken by accept() itself. */
static void delete_stops_accepting(void **state)
{
	static struct acc a;
	struct pc_reactor *r = uring_reactor(URING_NEED_ACCEPT);
	uint16_t port;
	int lfd = listener(&port), c1, c2, s2;

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_int_equal(pc_reactor_add_accept(r, lfd, on_ready, on_conn, &a), 0);
	c1 = dial(port);
	POLL_UNTIL(r, a.n == 1);
	assert_int_equal(a.n, 1);
	assert_int_equal(pc_reactor_del(r, lfd), 0);
	a.deleted = true;
	c2 = dial(port);
	for (int t = 0; t < 5; t++)
		assert_true(pc_reactor_poll(r, 1000000) >= 0);
	s2 = accept(lfd, NULL, NULL);
	assert_true(s2 >= 0);
	/* Watched again, it accepts again. */
	a.deleted = false;
	assert_int_equal(pc_reactor_add_accept(r, lfd, on_ready, on_conn, &a), 0);
	close(dial(port));
	POLL_UNTIL(r, a.n == 2);
	assert_int_equal(a.n, 2);
	assert_int_equal(pc_reactor_del(r, lfd), 0);
	close(c1);
	close(c2);
	close(s2);
	close(a.fds[0]);
	close(a.fds[1]);
	close(lfd);
	pc_reactor_destroy(r);
}

/* The fallback: -EOPNOTSUPP, nothing registered. */
static void not_offered_by_epoll(void **state)
{
	static struct acc a;
	struct pc_reactor *r;
	uint16_t port;
	int lfd = listener(&port);

	(void)state;
	memset(&a, 0, sizeof(a));
	assert_int_equal(pc_reactor_create(&r, PC_BACKEND_EPOLL, 0), 0);
	assert_int_equal(pc_reactor_add_accept(r, lfd, on_ready, on_conn, &a), -EOPNOTSUPP);
	assert_int_equal(pc_reactor_add_accept(r, lfd, on_ready, NULL, &a), -EINVAL);
	assert_int_equal(pc_reactor_nfds(r), 0);
	pc_reactor_destroy(r);
	close(lfd);
}

/* The same fallback on io_uring without completion-based I/O, where
 * readiness still works. */
static void not_offered_without_completion(void **state)
{
	static struct acc a;
	struct pc_reactor *r;
	uint16_t port;
	int lfd, c;

	(void)state;
	memset(&a, 0, sizeof(a));
	if (pc_reactor_create(&r, PC_BACKEND_URING, PC_REACTOR_NO_FALLBACK | PC_REACTOR_NO_COMPLETION))
		PC_SKIP("io_uring cannot be set up here: its fallback went unchecked");
	lfd = listener(&port);
	assert_int_equal(pc_reactor_add_accept(r, lfd, on_ready, on_conn, &a), -EOPNOTSUPP);
	assert_int_equal(pc_reactor_nfds(r), 0);
	assert_int_equal(pc_reactor_add(r, lfd, PC_EV_IN, on_ready, &a), 0);
	c = dial(port);
	POLL_UNTIL(r, a.readiness);
	assert_true(a.readiness > 0);
	assert_int_equal(a.n, 0);
	assert_int_equal(pc_reactor_del(r, lfd), 0);
	pc_reactor_destroy(r);
	close(c);
	close(lfd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_connection_once),
		cmocka_unit_test(delete_stops_accepting),
		cmocka_unit_test(not_offered_by_epoll),
		cmocka_unit_test(not_offered_without_completion),
	};
	return pc_test_main(tests, argc, argv);
}
