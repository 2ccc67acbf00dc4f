/* SPDX-License-Identifier: MIT */
/* percore rt: the io_uring backend's sends (pc_reactor_send()).
 *
 * A send is one IORING_OP_SEND (one piece) or IORING_OP_SENDMSG (several)
 * queued in the submission ring; it goes to the kernel with the next
 * wait's io_uring_enter, so every send of a turn and the wait share one
 * system call. The request's user_data points at its object, which holds
 * the iovecs and the message header the kernel reads at submission, the
 * callback and the token; objects are recycled through a free list.
 *
 * At most one send per fd is in flight (the common part refuses a
 * second), so the bytes of an fd leave in the order they were sent.
 * Deleting the fd cancels its send and runs the task work that finishes
 * it, so that the caller may free the bytes and close the fd as soon as
 * pc_reactor_del() returns (a send still queued would otherwise reach
 * whatever socket reuses the number). Its callback runs then, with
 * -ECANCELED; the request's own completion, whatever it says, only gives
 * the object back. */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "rt/reactor_uring.h"

struct ur_send {
	struct msghdr msg;
	struct iovec iov[PC_REACTOR_SEND_IOV];
	pc_sent_fn fn;
	void *token;
	int fd;                 /* -1: its fd was deleted */
	struct ur_send *next;   /* free list */
	struct ur_send *all;    /* every object, for the teardown */
};

static uint64_t send_tag(const struct ur_send *o)
{
	return (uint64_t)(uintptr_t)o | (uint64_t)UR_SEND << UR_KIND_SHIFT;
}

static struct ur_send *send_get(struct ur_state *st)
{
	struct ur_send *o = st->sends_free;

	if (o) {
		st->sends_free = o->next;
		return o;
	}
	o = malloc(sizeof(*o));
	if (o) {
		o->all = st->sends_all;
		st->sends_all = o;
	}
	return o;
}

static void send_put(struct ur_state *st, struct ur_send *o)
{
	o->next = st->sends_free;
	st->sends_free = o;
}

int ur_send(struct pc_reactor *r, int fd, struct rt_fd *f, const struct iovec *iov, int iovcnt,
	    pc_sent_fn fn, void *token)
{
	struct ur_state *st = r->backend_state;
	struct io_uring_sqe *sqe;
	struct ur_send *o;

	if (!st->completion)
		return -EOPNOTSUPP;
	o = send_get(st);
	if (!o)
		return -ENOMEM;
	sqe = ur_sqe(st);
	if (!sqe) {
		send_put(st, o);
		return -EBUSY;
	}
	memcpy(o->iov, iov, (size_t)iovcnt * sizeof(*iov));
	o->fn = fn;
	o->token = token;
	o->fd = fd;
	/* MSG_NOSIGNAL: a client gone is an error, not SIGPIPE. */
	if (iovcnt == 1) {
		io_uring_prep_send(sqe, fd, o->iov[0].iov_base, o->iov[0].iov_len, MSG_NOSIGNAL);
	} else {
		o->msg = (struct msghdr){ .msg_iov = o->iov, .msg_iovlen = (size_t)iovcnt };
		io_uring_prep_sendmsg(sqe, fd, &o->msg, MSG_NOSIGNAL);
	}
	io_uring_sqe_set_data64(sqe, send_tag(o));
	f->send = o;
	f->send_token = token;
	st->sends++;
	return 0;
}

int ur_send_done(struct pc_reactor *r, uint64_t tag, int res)
{
	struct ur_state *st = r->backend_state;
	struct ur_send *o = (struct ur_send *)(uintptr_t)(tag & ((1ull << UR_KIND_SHIFT) - 1));
	int fd = o->fd;
	struct rt_fd *f = fd >= 0 ? rt_reactor_slot(r, fd) : NULL;
	pc_sent_fn fn = o->fn;
	void *token = o->token;

	/* Back first: the callback may send again. */
	send_put(st, o);
	if (fd < 0 || !f || f->send != o)
		return 0; /* cancelled by a delete, which ran the callback */
	f->send = f->send_token = NULL;
	st->sends--;
	fn(r, fd, res, f->arg, token);
	return 1;
}

void ur_send_cancel(struct pc_reactor *r, int fd, struct rt_fd *f)
{
	struct ur_state *st = r->backend_state;
	struct ur_send *o = f->send;
	struct io_uring_sqe *sqe;

	if (!o)
		return;
	sqe = ur_sqe(st);
	if (sqe) {
		io_uring_prep_cancel64(sqe, send_tag(o), 0);
		io_uring_sqe_set_data64(sqe, (uint64_t)UR_CANCEL << UR_KIND_SHIFT);
	}
	/* Submit the send (if still queued) and its cancellation, and run
	 * the task work that ends it: the kernel is done with the bytes. */
	if (st->enabled || ur_enable(st) == 0)
		io_uring_submit_and_get_events(&st->ring);
	o->fd = -1;
	f->send = f->send_token = NULL;
	st->sends--;
	o->fn(r, fd, -ECANCELED, f->arg, o->token);
}

void ur_sends_free(struct ur_state *st)
{
	while (st->sends_all) {
		struct ur_send *o = st->sends_all;

		st->sends_all = o->all;
		free(o);
	}
	st->sends_free = NULL;
}
