/* SPDX-License-Identifier: MIT */
/* percore rt: the reactor's io_uring backend.
 *
 * Two ways to watch an fd:
 *
 * Readiness (pc_reactor_add): one-shot IORING_OP_POLL_ADD requests,
 * re-armed after the fd's callback has run. Arming a poll checks the file
 * at once, so an fd that is still ready completes again on the next
 * submit: the same level-triggered behaviour the epoll backend gives
 * (multishot polls only report new wake-ups, which would be
 * edge-triggered).
 *
 * Completion receive (pc_reactor_add_recv): while PC_EV_IN is wanted, one
 * multishot IORING_OP_RECV per fd selects buffers from a ring of provided
 * buffers owned by the reactor (reactor_ubuf.c); each completion's bytes go
 * to the fd's receive callback and the buffer returns to the ring as soon
 * as it returns, so no fd holds a buffer between turns. Dropping PC_EV_IN
 * cancels the receive; what completes before the cancellation takes effect
 * is kept ("held") with its buffer and offered first when PC_EV_IN comes
 * back. A poll is armed beside it only for PC_EV_OUT, or for errors alone
 * when nothing is wanted.
 *
 * Completion accept (pc_reactor_add_accept): the same, with one multishot
 * IORING_OP_ACCEPT per listener handing each new connection to the fd's
 * accept callback. Sends (pc_reactor_send): reactor_usend.c.
 *
 * Wake-ups between shards (rt_reactor_wake_from): a message from the
 * waker's ring into the sleeper's (IORING_OP_MSG_RING, success posting
 * nothing on the waker's side), which ends the sleeper's wait with a
 * completion of its own: no eventfd written, read and polled again. It
 * leaves with the waker's next io_uring_enter, usually the wait it goes
 * to sleep in. The eventfd stays for wake-ups from other threads.
 *
 * A request's user_data holds its kind, the fd and a generation; a
 * completion whose generation is no longer the fd's is stale: dropped, its
 * buffer returned. Requests queue in the submission ring and go to the
 * kernel in one io_uring_enter per turn, together with the wait.
 *
 * Set-up, newest first, each step falling back to the next: a ring with
 * SINGLE_ISSUER | DEFER_TASKRUN (completions are processed only when the
 * owner waits: no interrupts, no task work at odd times), COOP_TASKRUN, or
 * neither. SINGLE_ISSUER binds the ring to one thread, and the reactor may
 * be created on one thread and run by another, so the ring starts disabled
 * and is enabled, with its fd registered, by the first wait. */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rt/reactor_uring.h"

static inline uint64_t ur_tag(enum ur_kind kind, int fd, uint32_t gen)
{
	return (uint32_t)fd | (uint64_t)(gen & UR_GEN_MASK) << 32 | (uint64_t)kind << UR_KIND_SHIFT;
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

/* A free submission entry, flushing the queue to the kernel when full.
 * Every entry taken is a request in flight until its last completion. */
struct io_uring_sqe *ur_sqe(struct ur_state *st)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&st->ring);

	/* Full before the first wait: the ring is bound to this thread now
	 * (the thread that sets a reactor up is almost always its owner). */
	if (!sqe && (st->enabled || ur_enable(st) == 0)) {
		io_uring_submit(&st->ring);
		sqe = io_uring_get_sqe(&st->ring);
	}
	if (sqe)
		st->requests++;
	return sqe;
}

static int ur_poll(struct ur_state *st, int fd, unsigned mask, uint64_t tag, bool multi)
{
	struct io_uring_sqe *sqe = ur_sqe(st);

	if (!sqe)
		return -EBUSY;
	if (multi)
		io_uring_prep_poll_multishot(sqe, fd, mask);
	else
		io_uring_prep_poll_add(sqe, fd, mask);
	io_uring_sqe_set_data64(sqe, tag);
	return 0;
}

/* Returns 0 when asked; without an entry the old request stays in flight
 * and its completions are sorted out by generation. */
static int ur_cancel(struct ur_state *st, uint64_t tag)
{
	struct io_uring_sqe *sqe = ur_sqe(st);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_cancel64(sqe, tag, 0);
	io_uring_sqe_set_data64(sqe, ur_tag(UR_CANCEL, 0, 0));
	return 0;
}

static int ur_init(struct pc_reactor *r)
{
	struct ur_state *st = calloc(1, sizeof(*st));
	int rc;

	if (!st)
		return -ENOMEM;
	st->cb_fd = -1;
	rc = ur_setup(st, r->flags);
	if (rc) {
		free(st);
		return rc;
	}
	r->backend_state = st;
	rc = ur_poll(st, r->wake_fd, POLLIN, ur_tag(UR_POLL, r->wake_fd, 0), false);
	r->wake_armed = rc == 0;
	if (rc) {
		ur_teardown(st);
		free(st);
		r->backend_state = NULL;
	}
	return rc;
}

static void ur_fini(struct pc_reactor *r)
{
	ur_teardown(r->backend_state);
	free(r->backend_state);
}

/* The poll mask f needs now: a receiving or accepting fd polls only for
 * OUT, or for errors alone when it wants nothing (a mask of 0 still
 * reports them). */
static unsigned want_poll(const struct rt_fd *f, bool *need)
{
	unsigned ev = f->events;

	if ((f->recv || f->accept) && (ev & PC_EV_IN)) {
		*need = ev & PC_EV_OUT;
		return POLLOUT;
	}
	*need = true;
	return poll_mask(ev);
}

static int ur_add(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	bool need;
	unsigned mask = want_poll(f, &need);
	int rc = need ? ur_poll(r->backend_state, fd, mask, ur_tag(UR_POLL, fd, f->gen), f->peer_eof)
		      : 0;

	f->armed = need && rc == 0;
	return rc;
}

/* Start the multishot receive (or accept) when f wants input and none is
 * running. Held bytes go first: a new receive waits until they are taken. */
static int ur_recv_arm(struct ur_state *st, int fd, struct rt_fd *f)
{
	struct io_uring_sqe *sqe;

	if (!(f->recv || f->accept) || !(f->events & PC_EV_IN) || f->recv_armed || f->recv_done ||
	    f->held)
		return 0;
	sqe = ur_sqe(st);
	if (!sqe)
		return -EBUSY;
	if (f->accept) {
		io_uring_prep_multishot_accept(sqe, fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		io_uring_sqe_set_data64(sqe, ur_tag(UR_ACCEPT, fd, f->rgen));
	} else {
		io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = UR_BGID;
		io_uring_sqe_set_data64(sqe, ur_tag(UR_RECV, fd, f->rgen));
	}
	f->recv_armed = 1;
	f->recv_cancel = 0;
	return 0;
}

/* The tag of f's multishot request. */
static uint64_t recv_tag(int fd, const struct rt_fd *f)
{
	return ur_tag(f->accept ? UR_ACCEPT : UR_RECV, fd, f->rgen);
}

/* Stop the receive of an fd that no longer wants input. */
static void ur_recv_stop(struct ur_state *st, int fd, struct rt_fd *f)
{
	if (f->recv_armed && !f->recv_cancel && ur_cancel(st, recv_tag(fd, f)) == 0)
		f->recv_cancel = 1;
}

/* Bring f's receive in line with its interest; 0 or -EBUSY (retried). */
int ur_recv_sync(struct ur_state *st, int fd, struct rt_fd *f)
{
	if (!f->recv && !f->accept)
		return 0;
	if (!(f->events & PC_EV_IN)) {
		ur_recv_stop(st, fd, f);
		return 0;
	}
	return ur_recv_arm(st, fd, f);
}

static int ur_add_recv(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	struct ur_state *st = r->backend_state;
	int rc;

	if (f->accept ? !st->accept : !st->completion)
		return -EOPNOTSUPP;
	f->rgen++;
	rc = ur_add(r, fd, f);
	if (!rc)
		rc = ur_recv_sync(st, fd, f);
	if (rc && f->armed)
		ur_cancel(st, ur_tag(UR_POLL, fd, f->gen));
	return rc;
}

/* Arm again what a full submission queue left unarmed. */
static void ur_rearm_all(struct pc_reactor *r)
{
	struct ur_state *st = r->backend_state;

	st->rearm = false;
	if (!r->wake_armed &&
	    ur_poll(st, r->wake_fd, POLLIN, ur_tag(UR_POLL, r->wake_fd, 0), false) == 0)
		r->wake_armed = true;
	st->rearm = !r->wake_armed;
	for (unsigned fd = 0; fd < r->fds_cap; fd++) {
		struct rt_fd *f = &r->fds[fd];
		bool need;

		if (!f->events)
			continue;
		want_poll(f, &need);
		if (need && !f->armed && ur_add(r, (int)fd, f))
			st->rearm = true;
		if (ur_recv_sync(st, (int)fd, f))
			st->rearm = true;
	}
}

static int ur_mod(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	struct ur_state *st = r->backend_state;
	int rc = 0;

	if (f->armed) {
		/* Not inside its callback: replace the poll (its old
		 * completion, if any, is stale by generation). */
		ur_cancel(st, ur_tag(UR_POLL, fd, f->gen));
		f->gen++;
		f->armed = 0;
		rc = ur_add(r, fd, f);
	} else if ((f->recv || f->accept) && st->cb_fd != fd) {
		rc = ur_add(r, fd, f);
	}
	if (!rc && ur_recv_sync(st, fd, f))
		st->rearm = true;
	return rc;
}

static void ur_del(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	struct ur_state *st = r->backend_state;

	if (f->armed)
		ur_cancel(st, ur_tag(UR_POLL, fd, f->gen));
	ur_send_cancel(r, fd, f);
	if (f->recv_armed && !f->recv_cancel && ur_cancel(st, recv_tag(fd, f)) == 0 &&
	    st->enabled) {
		/* The receive (or accept) holds a reference to the socket:
		 * until it is gone, the close() that follows a delete would
		 * neither send the FIN nor the reset, nor stop a listener.
		 * Cancel now and run the task work that frees the request; its
		 * completion is stale by generation. */
		io_uring_submit_and_get_events(&st->ring);
	}
	if (f->held)
		ur_held_drop(st, fd);
	f->held = 0;
	f->recv_armed = 0;
}

/* Whether a poll that waits for nothing would find nothing to do in the
 * kernel: nothing to submit, no task work waiting to post completions
 * (the kernel sets IORING_SQ_TASKRUN when it queues some), no overflowed
 * completions to flush. A shard polling between turns then makes no
 * system call: with deferred task work, every poll used to be an
 * io_uring_enter, ten per transaction across two shards. Completions
 * already posted are read from the ring by the caller either way. */
static bool ur_idle_poll(struct ur_state *st)
{
	unsigned flags;

	if (!st->taskrun_flag || !st->enabled || io_uring_sq_ready(&st->ring))
		return false;
	flags = __atomic_load_n(st->ring.sq.kflags, __ATOMIC_ACQUIRE);
	if (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))
		return false;
	st->quiet_polls++;
	return true;
}

static int ur_enter(struct ur_state *st, int64_t timeout_ns)
{
	struct io_uring *ring = &st->ring;
	struct io_uring_cqe *cqe;
	int rc;

	if (!st->enabled && (rc = ur_enable(st)))
		return rc;
	/* Without DEFER_TASKRUN completions are posted on their own; with
	 * it, only a call that asks for events runs their task work. */
	if (timeout_ns == 0)
		return ur_idle_poll(st) ? 0 : io_uring_submit_and_get_events(ring);
	if (timeout_ns < 0)
		return io_uring_submit_and_wait(ring, 1);
	struct __kernel_timespec ts = { .tv_sec = timeout_ns / 1000000000,
					.tv_nsec = timeout_ns % 1000000000 };
	rc = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL);
	return rc == -ETIME ? 0 : rc;
}

/* Whether a poll's result is the peer's EOF alone, which f did not ask
 * for: then the fd's polls turn multishot (rt_fd.peer_eof). */
static bool eof_unasked(struct rt_fd *f, int *res)
{
	if (*res <= 0 || !(*res & POLLRDHUP) || (f->events & PC_EV_IN))
		return false;
	f->peer_eof = 1;
	*res &= ~POLLRDHUP;
	return !(*res & (POLLOUT | POLLERR | POLLHUP));
}

/* A poll completion; returns 1 when a user callback ran. */
static int ur_poll_done(struct pc_reactor *r, int fd, uint32_t gen, int res, unsigned flags)
{
	struct ur_state *st = r->backend_state;
	struct rt_fd *f;
	int ran;

	if (fd == r->wake_fd) {
		rt_reactor_drain_wake(r);
		r->wake_armed = ur_poll(st, fd, POLLIN, ur_tag(UR_POLL, fd, 0), false) == 0;
		if (!r->wake_armed)
			st->rearm = true;
		return 0;
	}
	f = rt_reactor_slot(r, fd);
	if (!f || (f->gen & UR_GEN_MASK) != gen)
		return 0; /* cancelled or superseded registration */
	if (!(flags & IORING_CQE_F_MORE))
		f->armed = 0;
	gen = f->gen;
	ran = 0;
	if (!eof_unasked(f, &res)) {
		st->cb_fd = fd;
		ran = rt_reactor_ready(r, fd, gen, ready_mask(res));
		st->cb_fd = -1;
	}
	/* The callback may have deleted or modified the registration. */
	f = rt_reactor_slot(r, fd);
	if (f && f->gen == gen && !f->armed) {
		bool need;

		want_poll(f, &need);
		if ((need && ur_add(r, fd, f)) || ur_recv_sync(st, fd, f))
			st->rearm = true;
	}
	return ran;
}

/* A multishot accept's completion: res a new connection or -errno.
 * Returns 1 when the callback ran. */
static int ur_accept_done(struct pc_reactor *r, int fd, uint32_t gen, int res, unsigned flags)
{
	struct ur_state *st = r->backend_state;
	struct rt_fd *f = rt_reactor_slot(r, fd);

	if (!f || !f->accept || (f->rgen & UR_GEN_MASK) != gen) {
		if (res >= 0)
			close(res); /* accepted for a listener deleted since */
		return 0;
	}
	if (!(flags & IORING_CQE_F_MORE))
		f->recv_armed = f->recv_cancel = 0;
	if (res != -ECANCELED)
		f->afn(r, fd, res, f->arg);
	/* The callback may have deleted the listener (moving the table). */
	f = rt_reactor_slot(r, fd);
	if (f && f->accept && (f->rgen & UR_GEN_MASK) == gen && ur_recv_sync(st, fd, f))
		st->rearm = true;
	return res != -ECANCELED;
}

/* ---- wake-ups from ring to ring ------------------------------------------- */

/* The message a wake-up posts into the woken ring carries no pointer; on
 * the sender's ring, where only a failure completes (success is
 * skipped), its request carries the reactor it was for. */
static uint64_t wake_tag(struct pc_reactor *to)
{
	return (uint64_t)(uintptr_t)to | (uint64_t)UR_WAKE << UR_KIND_SHIFT;
}

static int ur_wake_peer(struct pc_reactor *r, struct pc_reactor *to)
{
	struct ur_state *st = r->backend_state;
	struct ur_state *dst = to->backend_state;
	struct io_uring_sqe *sqe;

	if (!st->msg_ring || (!st->enabled && ur_enable(st)))
		return -EOPNOTSUPP;
	if (!atomic_load_explicit(&dst->live, memory_order_acquire))
		return -EAGAIN;
	/* Not through ur_sqe(): no completion will count it finished. */
	sqe = io_uring_get_sqe(&st->ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_msg_ring(sqe, dst->ring.ring_fd, 0, wake_tag(NULL), 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	io_uring_sqe_set_data64(sqe, wake_tag(to));
	st->wakes_sent++;
	return 0;
}

static void ur_push(struct pc_reactor *r)
{
	struct ur_state *st = r->backend_state;

	io_uring_submit(&st->ring);
}

/* A wake-up's completion: here, one another ring sent (nothing to do:
 * it ended the wait); or one this ring sent that the kernel refused:
 * then the eventfd, as without. */
static void ur_wake_done(struct pc_reactor *r, uint64_t tag)
{
	struct ur_state *st = r->backend_state;
	struct pc_reactor *to = (struct pc_reactor *)(uintptr_t)(tag & ~wake_tag(NULL));

	if (to)
		pc_reactor_wake(to);
	else
		st->wakes_in++;
}

static int ur_complete(struct pc_reactor *r, uint64_t tag, int res, unsigned flags)
{
	struct ur_state *st = r->backend_state;
	enum ur_kind kind = (enum ur_kind)(tag >> UR_KIND_SHIFT);
	int fd = (int)(uint32_t)tag;
	uint32_t gen = (uint32_t)(tag >> 32) & UR_GEN_MASK;

	if (kind == UR_WAKE) {
		ur_wake_done(r, tag);
		return 0;
	}
	if (!(flags & IORING_CQE_F_MORE))
		st->requests--;
	if (kind == UR_CANCEL)
		return 0;
	if (kind == UR_POLL)
		return ur_poll_done(r, fd, gen, res, flags);
	if (kind == UR_ACCEPT)
		return ur_accept_done(r, fd, gen, res, flags);
	if (kind == UR_SEND)
		return ur_send_done(r, tag, res);
	return ur_recv_done(r, fd, gen, res, flags);
}

static int ur_wait(struct pc_reactor *r, int64_t timeout_ns)
{
	struct ur_state *st = r->backend_state;
	struct io_uring *ring = &st->ring;
	struct io_uring_cqe *cqe;
	int rc, ran = 0;

	/* The turn's tasks have run: what callbacks kept is free again. */
	ur_kept_return(st);
	/* Bytes kept for fds that want them again go first; any still
	 * waiting for a taker that wants input must not sleep. */
	if (st->nheld) {
		ran += ur_held_offer(r);
		if (ur_held_ready(r))
			timeout_ns = 0;
		/* Their callbacks may have queued tasks (a session's output
		 * flush) or timers: the wait must not pass them by. */
		timeout_ns = rt_reactor_wait_bound(r, timeout_ns);
	}
	if (st->rearm) {
		ur_rearm_all(r);
		/* Still short of entries: do not sleep on what is unwatched. */
		if (st->rearm && timeout_ns != 0)
			timeout_ns = 1000000;
	}
	r->wakes_queued = false; /* submitted by this enter */
	rt_reactor_waiting(r, timeout_ns, 1);
	rc = ur_enter(st, timeout_ns);
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
		unsigned flags = cqe->flags;

		io_uring_cqe_seen(ring, cqe);
		ran += ur_complete(r, tag, res, flags);
	}
	return ran;
}

static bool ur_recv_stopped(struct pc_reactor *r, int fd, const struct rt_fd *f)
{
	(void)r;
	(void)fd;
	/* Cleared by the request's last completion, once reaped. */
	return !f->recv_armed;
}

/* Held back, or completed and not yet reaped: the completion ring is
 * read without consuming anything (the wait's loop takes what it holds). */
static bool ur_recv_pending(struct pc_reactor *r, int fd, const struct rt_fd *f)
{
	struct ur_state *st = r->backend_state;
	struct io_uring_cqe *cqe;
	unsigned head;

	if (f->held)
		return true;
	io_uring_for_each_cqe(&st->ring, head, cqe) {
		uint64_t tag = io_uring_cqe_get_data64(cqe);

		if ((enum ur_kind)(tag >> UR_KIND_SHIFT) == UR_RECV && (int)(uint32_t)tag == fd &&
		    ((uint32_t)(tag >> 32) & UR_GEN_MASK) == (f->rgen & UR_GEN_MASK))
			return true;
	}
	return false;
}

static void ur_stats(const struct pc_reactor *r, struct pc_reactor_io_stats *out)
{
	const struct ur_state *st = r->backend_state;

	out->requests = st->requests;
	out->buffers = st->completion ? UR_BUFS : 0;
	out->buffers_out = st->bufs_out;
	out->completion = st->completion;
	out->accept = st->accept;
	out->sends = st->sends;
	out->defer_taskrun = st->defer_taskrun;
	out->taskrun_flag = st->taskrun_flag;
	out->quiet_polls = st->quiet_polls;
	out->ring_wake = st->msg_ring;
	out->ring_wakes_sent = st->wakes_sent;
	out->ring_wakes_received = st->wakes_in;
}

const struct rt_backend_ops rt_backend_uring = {
	.name = "io_uring",
	.init = ur_init,
	.fini = ur_fini,
	.add = ur_add,
	.mod = ur_mod,
	.del = ur_del,
	.wait = ur_wait,
	.add_recv = ur_add_recv,
	.recv_pending = ur_recv_pending,
	.recv_stopped = ur_recv_stopped,
	.recv_take = ur_recv_take,
	.send = ur_send,
	.stats = ur_stats,
	.wake_peer = ur_wake_peer,
	.push = ur_push,
};
