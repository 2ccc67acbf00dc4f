/* SPDX-License-Identifier: MIT */
/* percore rt: the reactor's epoll backend (level-triggered).
 *
 * The epoll_event's data carries the fd and its registration's generation:
 * a callback that deletes another fd collected in the same batch, or even
 * closes it and registers a new fd that reuses the number, is safe because
 * rt_reactor_ready() drops a report whose generation is not the slot's. Waits use epoll_pwait2 for nanosecond
 * timeouts and fall back to epoll_wait (milliseconds, rounded up so a
 * timer is never early) on kernels before 5.11.
 *
 * The wake-up eventfd alone is edge-triggered: every write to an eventfd
 * wakes its waiters, so every pc_reactor_wake() reports it once, and the
 * count it adds up is never read back, a system call a wake-up saved
 * (pc_reactor_wake() empties a count that ever saturates). */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "rt/reactor_impl.h"

#define EP_BATCH 64

struct ep_state {
	int epfd;
	int no_pwait2;   /* epoll_pwait2 returned ENOSYS once */
};

static uint32_t ep_mask(unsigned events)
{
	return (events & PC_EV_IN ? EPOLLIN | EPOLLRDHUP : 0) | (events & PC_EV_OUT ? EPOLLOUT : 0);
}

static unsigned ready_mask(uint32_t ev)
{
	return (ev & (EPOLLIN | EPOLLRDHUP) ? PC_EV_IN : 0) | (ev & EPOLLOUT ? PC_EV_OUT : 0) |
	       (ev & EPOLLERR ? PC_EV_ERR : 0) | (ev & EPOLLHUP ? PC_EV_HUP : 0);
}

static int ep_ctl(struct pc_reactor *r, int op, int fd, uint32_t gen, uint32_t mask)
{
	struct ep_state *s = r->backend_state;
	struct epoll_event ev = { .events = mask, .data.u64 = (uint32_t)fd | (uint64_t)gen << 32 };

	return epoll_ctl(s->epfd, op, fd, &ev) ? -errno : 0;
}

static int ep_init(struct pc_reactor *r)
{
	struct ep_state *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		rc = -errno;
		free(s);
		return rc;
	}
	r->backend_state = s;
	rc = ep_ctl(r, EPOLL_CTL_ADD, r->wake_fd, 0, EPOLLIN | EPOLLET);
	if (rc) {
		close(s->epfd);
		free(s);
		r->backend_state = NULL;
	}
	return rc;
}

static void ep_fini(struct pc_reactor *r)
{
	struct ep_state *s = r->backend_state;

	close(s->epfd);
	free(s);
}

static int ep_add(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	return ep_ctl(r, EPOLL_CTL_ADD, fd, f->gen, ep_mask(f->events));
}

static int ep_mod(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	return ep_ctl(r, EPOLL_CTL_MOD, fd, f->gen, ep_mask(f->events));
}

static void ep_del(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	/* Fails only when fd was closed first; forgetting it is all we need. */
	ep_ctl(r, EPOLL_CTL_DEL, fd, f->gen, 0);
}

static int ep_wait_raw(struct ep_state *s, struct epoll_event *evs, int64_t timeout_ns)
{
	if (timeout_ns < 0)
		return epoll_wait(s->epfd, evs, EP_BATCH, -1);
	if (!s->no_pwait2) {
		struct timespec ts = { .tv_sec = timeout_ns / 1000000000,
				       .tv_nsec = timeout_ns % 1000000000 };
		int n = epoll_pwait2(s->epfd, evs, EP_BATCH, &ts, NULL);

		if (n >= 0 || errno != ENOSYS)
			return n;
		s->no_pwait2 = 1;
	}
	int64_t ms = (timeout_ns + 999999) / 1000000;
	return epoll_wait(s->epfd, evs, EP_BATCH, ms > 1000000000 ? 1000000000 : (int)ms);
}

static int ep_wait(struct pc_reactor *r, int64_t timeout_ns)
{
	struct ep_state *s = r->backend_state;
	struct epoll_event evs[EP_BATCH];
	int n, ran = 0;

	rt_reactor_waiting(r, timeout_ns, 1);
	n = ep_wait_raw(s, evs, timeout_ns);
	rt_reactor_waiting(r, timeout_ns, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		int fd = (int)(uint32_t)evs[i].data.u64;

		if (fd != r->wake_fd)
			ran += rt_reactor_ready(r, fd, (uint32_t)(evs[i].data.u64 >> 32),
						ready_mask(evs[i].events));
	}
	return ran;
}

static int ep_wait_fd(const struct pc_reactor *r)
{
	const struct ep_state *s = r->backend_state;

	return s->epfd;
}

const struct rt_backend_ops rt_backend_epoll = {
	.name = "epoll",
	.init = ep_init,
	.fini = ep_fini,
	.add = ep_add,
	.mod = ep_mod,
	.del = ep_del,
	.wait = ep_wait,
	.wait_fd = ep_wait_fd,
};
