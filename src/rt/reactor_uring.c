/* SPDX-License-Identifier: MIT */
/* percore rt: the reactor's io_uring backend.
 *
 * Readiness comes from one-shot IORING_OP_POLL_ADD requests, re-armed after
 * the fd's callback has run. Arming a poll checks the file at once, so an
 * fd that is still ready completes again on the next submit: the same
 * level-triggered behaviour the epoll backend gives (multishot polls only
 * report new wake-ups, which would be edge-triggered).
 *
 * A request's user_data holds the fd and the registration generation;
 * completions for a deleted or modified registration carry an old
 * generation and are dropped. Removal requests use UR_IGNORE.
 * Requests are queued in the submission ring and go to the kernel in one
 * io_uring_enter per turn, together with the wait. */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>

#include "rt/reactor_impl.h"

#define UR_ENTRIES 256
#define UR_IGNORE UINT64_MAX

struct ur_state {
	struct io_uring ring;
	/* A re-arm found no submission entry (the queue full and the kernel
	 * not taking more): retried before the next wait, so no fd, and not
	 * the wake-up eventfd, is left unwatched. */
	bool rearm;
};

static inline uint64_t ur_tag(int fd, uint32_t gen)
{
	return (uint32_t)fd | (uint64_t)gen << 32;
}

static unsigned poll_mask(unsigned events)
{
	return (events & PC_EV_IN ? POLLIN | POLLRDHUP : 0) | (events & PC_EV_OUT ? POLLOUT : 0);
}

static unsigned ready_mask(int res)
{
	if (res < 0)
		return PC_EV_ERR;
	return (res & (POLLIN | POLLRDHUP) ? PC_EV_IN : 0) | (res & POLLOUT ? PC_EV_OUT : 0) |
	       (res & POLLERR ? PC_EV_ERR : 0) | (res & POLLHUP ? PC_EV_HUP : 0);
}

/* A free submission entry, flushing the queue to the kernel when full. */
static struct io_uring_sqe *ur_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
	}
	return sqe;
}

static int ur_poll(struct io_uring *ring, int fd, unsigned mask, uint64_t tag)
{
	struct io_uring_sqe *sqe = ur_sqe(ring);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, fd, mask);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

static void ur_cancel(struct io_uring *ring, uint64_t tag)
{
	struct io_uring_sqe *sqe = ur_sqe(ring);

	/* Without an entry the old poll stays in flight; its completion then
	 * carries a stale generation and is dropped, so nothing runs twice. */
	if (!sqe)
		return;
	io_uring_prep_poll_remove(sqe, tag);
	io_uring_sqe_set_data64(sqe, UR_IGNORE);
}

static struct io_uring *ur_ring(struct pc_reactor *r)
{
	return &((struct ur_state *)r->backend_state)->ring;
}

static int ur_init(struct pc_reactor *r)
{
	struct ur_state *st = calloc(1, sizeof(*st));
	struct io_uring *ring = &st->ring;
	int rc;

	if (!st)
		return -ENOMEM;
	/* COOP_TASKRUN (5.19) spares us inter-processor interrupts; older
	 * kernels reject the flag, so retry without it. */
	rc = io_uring_queue_init(UR_ENTRIES, ring, IORING_SETUP_COOP_TASKRUN);
	if (rc == -EINVAL)
		rc = io_uring_queue_init(UR_ENTRIES, ring, 0);
	if (rc) {
		free(st);
		return rc;
	}
	r->backend_state = st;
	rc = ur_poll(ring, r->wake_fd, POLLIN, ur_tag(r->wake_fd, 0));
	r->wake_armed = rc == 0;
	if (rc) {
		io_uring_queue_exit(ring);
		free(st);
		r->backend_state = NULL;
	}
	return rc;
}

static void ur_fini(struct pc_reactor *r)
{
	io_uring_queue_exit(ur_ring(r));
	free(r->backend_state);
}

static int ur_add(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	int rc = ur_poll(ur_ring(r), fd, poll_mask(f->events), ur_tag(fd, f->gen));

	f->armed = rc == 0;
	return rc;
}

/* Arm again what a full submission queue left unarmed. */
static void ur_rearm_all(struct pc_reactor *r)
{
	struct ur_state *st = r->backend_state;

	st->rearm = false;
	if (!r->wake_armed && ur_poll(&st->ring, r->wake_fd, POLLIN, ur_tag(r->wake_fd, 0)) == 0)
		r->wake_armed = true;
	st->rearm = !r->wake_armed;
	for (unsigned fd = 0; fd < r->fds_cap; fd++) {
		struct rt_fd *f = &r->fds[fd];

		if (f->events && !f->armed && ur_add(r, (int)fd, f))
			st->rearm = true;
	}
}

static int ur_mod(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	if (!f->armed)
		return 0; /* inside its callback: the re-arm uses the new events */
	ur_cancel(ur_ring(r), ur_tag(fd, f->gen));
	f->gen++;
	return ur_add(r, fd, f);
}

static void ur_del(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	if (f->armed)
		ur_cancel(ur_ring(r), ur_tag(fd, f->gen));
}

static int ur_enter(struct io_uring *ring, int64_t timeout_ns)
{
	struct io_uring_cqe *cqe;
	int rc;

	if (timeout_ns == 0)
		return io_uring_submit(ring);
	if (timeout_ns < 0)
		return io_uring_submit_and_wait(ring, 1);
	struct __kernel_timespec ts = { .tv_sec = timeout_ns / 1000000000,
					.tv_nsec = timeout_ns % 1000000000 };
	rc = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL);
	return rc == -ETIME ? 0 : rc;
}

/* Handle one completion; returns 1 when a user callback ran. */
static int ur_complete(struct pc_reactor *r, uint64_t tag, int res)
{
	int fd = (int)(uint32_t)tag;
	uint32_t gen = (uint32_t)(tag >> 32);
	struct rt_fd *f;
	int ran;

	if (tag == UR_IGNORE)
		return 0;
	if (fd == r->wake_fd) {
		rt_reactor_drain_wake(r);
		r->wake_armed = ur_poll(ur_ring(r), fd, POLLIN, tag) == 0;
		if (!r->wake_armed)
			((struct ur_state *)r->backend_state)->rearm = true;
		return 0;
	}
	f = rt_reactor_slot(r, fd);
	if (!f || f->gen != gen)
		return 0; /* cancelled or superseded registration */
	f->armed = 0;
	ran = rt_reactor_ready(r, fd, gen, ready_mask(res));
	/* The callback may have deleted or modified the registration. */
	f = rt_reactor_slot(r, fd);
	if (f && f->gen == gen && !f->armed && ur_add(r, fd, f))
		((struct ur_state *)r->backend_state)->rearm = true;
	return ran;
}

static int ur_wait(struct pc_reactor *r, int64_t timeout_ns)
{
	struct io_uring *ring = ur_ring(r);
	struct io_uring_cqe *cqe;
	int rc, ran = 0;

	if (((struct ur_state *)r->backend_state)->rearm) {
		ur_rearm_all(r);
		/* Still short of entries: do not sleep on what is unwatched. */
		if (((struct ur_state *)r->backend_state)->rearm && timeout_ns != 0)
			timeout_ns = 1000000;
	}
	rt_reactor_waiting(r, timeout_ns, 1);
	rc = ur_enter(ring, timeout_ns);
	rt_reactor_waiting(r, timeout_ns, 0);
	if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN)
		return rc;
	/* Only what completed before this point: a re-arm that overflows the
	 * submission queue is submitted at once, and a still-ready fd would
	 * then complete again within this loop, forever. Each entry is
	 * consumed before its callback runs, so callbacks never find the
	 * completion ring full. */
	for (unsigned n = io_uring_cq_ready(ring); n && io_uring_peek_cqe(ring, &cqe) == 0; n--) {
		uint64_t tag = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(ring, cqe);
		ran += ur_complete(r, tag, res);
	}
	return ran;
}

const struct rt_backend_ops rt_backend_uring = {
	.name = "io_uring",
	.init = ur_init,
	.fini = ur_fini,
	.add = ur_add,
	.mod = ur_mod,
	.del = ur_del,
	.wait = ur_wait,
};
