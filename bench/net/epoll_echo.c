/* SPDX-License-Identifier: MIT */
/* The plain epoll echo servers: what a careful C programmer writes without
 * a framework, on one thread.
 *
 * Level-triggered. Each connection is registered once for EPOLLIN and stays
 * so while its writes complete: a readable connection is read into one
 * 64 KiB buffer the thread shares with every connection, and what was read
 * is written straight back. Only a short write changes the registration:
 * the unsent rest is copied into the connection's own pending buffer (grown
 * on demand, kept for the next time), the connection switches to EPOLLOUT
 * and stops being read until that buffer has drained, then switches back.
 * A closed descriptor leaves the epoll set by itself, so closing is one
 * close(). The epoll_ctl calls are the ones the traffic needs: one ADD per
 * connection, two MODs per stall. Sends use MSG_NOSIGNAL: a client gone
 * mid-reply is an error on that connection, not SIGPIPE for the process.
 *
 * The sleeping server waits in epoll_wait(-1) like most servers; the busy
 * one calls epoll_wait with a zero timeout in a loop and never sleeps, as a
 * server that spins on its core does (percore's idle:spin). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "epoll_echo.h"

#define ECHO_READ_BUF (64 * 1024)
#define ECHO_EVENTS 256

struct echo_conn {
	struct echo_conn *prev, *next; /* all open connections, for stop */
	int fd;
	uint32_t head, tail, cap;      /* unsent bytes are pend[head, tail) */
	char *pend;                    /* NULL until a write is first short */
};

struct epoll_echo {
	struct echo_conn conns; /* list head; only prev/next are used */
	int lfd, efd, stopfd, cpu;
	bool busy;
	pthread_t thread;
	char buf[ECHO_READ_BUF]; /* every read lands here; the thread owns it */
};

int echo_listen_loopback(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4096) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen)) {
		int err = -errno;
		close(fd);
		return err;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static void conn_close(struct echo_conn *c)
{
	close(c->fd);
	c->prev->next = c->next;
	c->next->prev = c->prev;
	free(c->pend);
	free(c);
}

static void accept_all(struct epoll_echo *s)
{
	for (;;) {
		int one = 1, fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct echo_conn *c;
		struct epoll_event ev = { .events = EPOLLIN };

		if (fd < 0)
			return;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		ev.data.ptr = c;
		if (epoll_ctl(s->efd, EPOLL_CTL_ADD, fd, &ev)) {
			close(fd);
			free(c);
			continue;
		}
		c->next = s->conns.next;
		c->prev = &s->conns;
		c->next->prev = c;
		s->conns.next = c;
	}
}

/* Write p[0, n) to the connection; what the socket does not take is kept
 * in its pending buffer. Returns 1 when bytes are left pending, 0 when all
 * went out, -1 when the connection must close. */
static int conn_write(struct echo_conn *c, const char *p, uint32_t n)
{
	while (n) {
		ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno != EAGAIN)
				return -1;
			break;
		}
		p += k;
		n -= (uint32_t)k;
	}
	if (!n)
		return 0;
	if (n > c->cap) {
		char *grown = realloc(c->pend, n);
		if (!grown)
			return -1;
		c->pend = grown;
		c->cap = n;
	}
	memcpy(c->pend, p, n);
	c->head = 0;
	c->tail = n;
	return 1;
}

/* Switch the connection between reading and draining its pending bytes. */
static int conn_watch(struct epoll_echo *s, struct echo_conn *c, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	return epoll_ctl(s->efd, EPOLL_CTL_MOD, c->fd, &ev) ? -1 : 0;
}

static int conn_readable(struct epoll_echo *s, struct echo_conn *c)
{
	ssize_t n = read(c->fd, s->buf, sizeof(s->buf));
	int rc;

	if (n <= 0)
		return n < 0 && errno == EAGAIN ? 0 : -1;
	rc = conn_write(c, s->buf, (uint32_t)n);
	return rc > 0 ? conn_watch(s, c, EPOLLOUT) : rc;
}

static int conn_writable(struct epoll_echo *s, struct echo_conn *c)
{
	while (c->head < c->tail) {
		ssize_t k = send(c->fd, c->pend + c->head, c->tail - c->head, MSG_NOSIGNAL);
		if (k < 0)
			return errno == EAGAIN ? 0 : -1;
		c->head += (uint32_t)k;
	}
	c->head = c->tail = 0;
	return conn_watch(s, c, EPOLLIN);
}

static void *serve(void *arg)
{
	struct epoll_echo *s = arg;
	struct epoll_event evs[ECHO_EVENTS];
	int timeout = s->busy ? 0 : -1;

	if (s->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(s->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	for (;;) {
		int n = epoll_wait(s->efd, evs, ECHO_EVENTS, timeout);
		for (int i = 0; i < n; i++) {
			struct echo_conn *c = evs[i].data.ptr;
			if (evs[i].data.ptr == &s->lfd)
				accept_all(s);
			else if (evs[i].data.ptr == &s->stopfd)
				return NULL;
			else if ((c->tail ? conn_writable(s, c) : conn_readable(s, c)) < 0)
				conn_close(c);
		}
	}
}

int epoll_echo_start(struct epoll_echo **out, uint16_t *port, int cpu, bool busy)
{
	struct epoll_echo *s = calloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLIN };
	int err;

	if (!s)
		return -ENOMEM;
	s->cpu = cpu;
	s->busy = busy;
	s->conns.next = s->conns.prev = &s->conns;
	s->lfd = echo_listen_loopback(port);
	s->efd = epoll_create1(EPOLL_CLOEXEC);
	s->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	err = s->lfd < 0 ? s->lfd : (s->efd < 0 || s->stopfd < 0) ? -errno : 0;
	if (!err) {
		ev.data.ptr = &s->lfd;
		epoll_ctl(s->efd, EPOLL_CTL_ADD, s->lfd, &ev);
		ev.data.ptr = &s->stopfd;
		epoll_ctl(s->efd, EPOLL_CTL_ADD, s->stopfd, &ev);
		err = -pthread_create(&s->thread, NULL, serve, s);
	}
	if (err) {
		if (s->lfd >= 0)
			close(s->lfd);
		if (s->efd >= 0)
			close(s->efd);
		if (s->stopfd >= 0)
			close(s->stopfd);
		free(s);
		return err;
	}
	*out = s;
	return 0;
}

void epoll_echo_stop(struct epoll_echo *s)
{
	uint64_t one = 1;

	if (write(s->stopfd, &one, sizeof(one)) != sizeof(one))
		return; /* cannot happen on a fresh eventfd; leak rather than hang */
	pthread_join(s->thread, NULL);
	while (s->conns.next != &s->conns)
		conn_close(s->conns.next);
	close(s->efd);
	close(s->lfd);
	close(s->stopfd);
	free(s);
}
