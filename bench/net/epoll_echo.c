/* The plain epoll echo server: what a careful C programmer writes without a
 * framework. Level-triggered, one 64 KiB buffer per connection, reads until
 * the buffer is full, writes back what it can and waits for EPOLLOUT for the
 * rest. Everything runs on one thread. */
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

#define ECHO_BUF (64 * 1024)
#define ECHO_EVENTS 256

struct echo_conn {
	struct echo_conn *prev, *next; /* all open connections, for stop */
	int fd;
	uint32_t head, tail; /* unsent bytes are buf[head, tail) */
	char buf[ECHO_BUF];
};

struct epoll_echo {
	struct echo_conn conns; /* list head; only prev/next are used */
	int lfd, efd, stopfd, cpu;
	pthread_t thread;
};

static int listen_loopback(uint16_t *port)
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

static void conn_close(struct epoll_echo *s, struct echo_conn *c)
{
	epoll_ctl(s->efd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->prev->next = c->next;
	c->next->prev = c->prev;
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
		c = malloc(sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->head = c->tail = 0;
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

/* Write pending bytes; returns -1 when the connection must close. */
static int conn_flush(struct epoll_echo *s, struct echo_conn *c)
{
	struct epoll_event ev = { .data.ptr = c };

	while (c->head < c->tail) {
		ssize_t n = write(c->fd, c->buf + c->head, c->tail - c->head);
		if (n < 0) {
			if (errno != EAGAIN)
				return -1;
			ev.events = EPOLLOUT; /* stop reading until drained */
			epoll_ctl(s->efd, EPOLL_CTL_MOD, c->fd, &ev);
			return 0;
		}
		c->head += (uint32_t)n;
	}
	c->head = c->tail = 0;
	ev.events = EPOLLIN;
	epoll_ctl(s->efd, EPOLL_CTL_MOD, c->fd, &ev);
	return 0;
}

static void conn_event(struct epoll_echo *s, struct echo_conn *c, uint32_t events)
{
	if (events & EPOLLOUT) {
		if (conn_flush(s, c))
			conn_close(s, c);
		return;
	}
	ssize_t n = read(c->fd, c->buf, ECHO_BUF);
	if (n == 0 || (n < 0 && errno != EAGAIN)) {
		conn_close(s, c);
		return;
	}
	if (n < 0)
		return;
	c->head = 0;
	c->tail = (uint32_t)n;
	if (conn_flush(s, c))
		conn_close(s, c);
}

static void *serve(void *arg)
{
	struct epoll_echo *s = arg;
	struct epoll_event evs[ECHO_EVENTS];

	if (s->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(s->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	for (;;) {
		int n = epoll_wait(s->efd, evs, ECHO_EVENTS, -1);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &s->lfd)
				accept_all(s);
			else if (evs[i].data.ptr == &s->stopfd)
				return NULL;
			else
				conn_event(s, evs[i].data.ptr, evs[i].events);
		}
	}
}

int epoll_echo_start(struct epoll_echo **out, uint16_t *port, int cpu)
{
	struct epoll_echo *s = calloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLIN };
	int err;

	if (!s)
		return -ENOMEM;
	s->cpu = cpu;
	s->conns.next = s->conns.prev = &s->conns;
	s->lfd = listen_loopback(port);
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
		conn_close(s, s->conns.next);
	close(s->efd);
	close(s->lfd);
	close(s->stopfd);
	free(s);
}
