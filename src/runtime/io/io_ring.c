/* SPDX-License-Identifier: MIT */
/* percore io: the shard's file ring. Requests are prepared as they leave
 * the queue and submitted together by one task at the end of the turn
 * (one io_uring_enter for a turn's worth). How completions reach the
 * shard: io.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>

#include "io/io.h"
#include "percore/reactor.h"
#include "rt/reactor_impl.h"

/* Submission entries: the queue never has more than IO_DEPTH_MAX
 * requests in the ring, so a prepared request always finds an entry;
 * the wait's poll takes one more, and the completion queue is twice as
 * large. */
#define RING_ENTRIES IO_DEPTH_MAX

/* The ring runs its completions' task work only when the shard asks
 * (DEFER_TASKRUN, made on the shard: the ring belongs to it), as fio's
 * does: a completion then never interrupts the shard's running turn, and
 * the kernel says in the shared flags when work waits (TASKRUN_FLAG), so
 * a poll finding none makes no system call; beside an io_uring reactor
 * the eventfd is signalled when such work is queued. At depth 32 on a
 * virtio disk the plain ring made 0.88-0.99x fio's IOPS with 1.3-1.4x
 * its p99, this one 1.09-1.22x with 0.91x (docs/BENCHMARKS.md, Files);
 * kv's append-only file (the eventfd case): 3-5% less CPU per SET in
 * three of four rows, the same in the fourth.
 * Older kernels get the plain ring. */
static int ring_init(struct io_shard *io)
{
	static const unsigned tries[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		0,
	};
	unsigned i;
	int rc = -EINVAL;

	for (i = 0; i < sizeof(tries) / sizeof(tries[0]) && rc == -EINVAL; i++)
		rc = io_uring_queue_init(RING_ENTRIES, &io->ring, tries[i]);
	io->taskrun_flag = rc == 0 && (tries[i - 1] & IORING_SETUP_TASKRUN_FLAG);
	return rc;
}

int io_ring_open(struct io_shard *io)
{
	int rc;

	io->wait_fd = rt_reactor_wait_fd(io->r);
	rc = ring_init(io);
	if (rc || io->wait_fd >= 0)
		return rc;
	rc = io_uring_register_eventfd(&io->ring, io->efd);
	if (rc)
		io_uring_queue_exit(&io->ring);
	return rc;
}

void io_ring_close(struct io_shard *io)
{
	io_uring_queue_exit(&io->ring);
}

static void submit_task(void *arg)
{
	struct io_shard *io = arg;

	io->submit_queued = false;
	io_uring_submit(&io->ring);
}

/* Reads and writes into the shard's registered region take its fixed
 * buffer: no page pinning per request. */
static void prep(struct io_uring_sqe *sqe, struct io_req *req)
{
	int fd = req->f->fd, fixed = io_fixed_index(req->io, req->buf, req->len);

	switch (req->op) {
	case IO_READ:
		if (fixed >= 0)
			io_uring_prep_read_fixed(sqe, fd, req->buf, (unsigned)req->len, req->off,
						 fixed);
		else
			io_uring_prep_read(sqe, fd, req->buf, (unsigned)req->len, req->off);
		break;
	case IO_WRITE:
		if (fixed >= 0)
			io_uring_prep_write_fixed(sqe, fd, req->buf, (unsigned)req->len, req->off,
						  fixed);
		else
			io_uring_prep_write(sqe, fd, req->buf, (unsigned)req->len, req->off);
		break;
	case IO_FSYNC:
		io_uring_prep_fsync(sqe, fd, 0);
		break;
	case IO_FDATASYNC:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case IO_ALLOCATE:
		io_uring_prep_fallocate(sqe, fd, 0, req->off, req->len);
		break;
	}
	io_uring_sqe_set_data(sqe, req);
}

/* An entry, submitting what waits when none is free (cannot happen
 * within the depth). */
static struct io_uring_sqe *get_sqe(struct io_shard *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);

	if (!sqe) {
		io_uring_submit(&io->ring);
		sqe = io_uring_get_sqe(&io->ring);
	}
	return sqe;
}

/* A request issued by a completion's callback goes out at once, one
 * io_uring_enter each, as fio's do: the device just freed that slot, and
 * waiting for the turn's end left it short of work. At depth 32 on a
 * virtio disk, submitting once per turn made 0.80-0.88x fio's rate,
 * once after each batch of completions no better, and at once 0.88-1.10x
 * (docs/BENCHMARKS.md, Files). Requests issued by the rest of a turn
 * still share one submission. */
void io_ring_start(struct io_shard *io, struct io_req *req)
{
	prep(get_sqe(io), req);
	if (io->reaping) {
		io_uring_submit(&io->ring);
		return;
	}
	if (!io->submit_queued && pc_reactor_defer(io->r, submit_task, io) == 0)
		io->submit_queued = true;
	else if (!io->submit_queued)
		io_uring_submit(&io->ring);
}

/* Run the completions' task work the kernel flagged (io_ring_open). */
static void fetch_flagged(struct io_shard *io)
{
	unsigned flags;

	if (!io->taskrun_flag)
		return;
	flags = __atomic_load_n(io->ring.sq.kflags, __ATOMIC_ACQUIRE);
	if (flags & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW))
		io_uring_get_events(&io->ring);
}

bool io_ring_ready(struct io_shard *io)
{
	fetch_flagged(io);
	return io_uring_cq_ready(&io->ring) != 0;
}

/* Only what was posted when it began: a callback's submission can post
 * more (the kernel runs completions' task work on the way out), and at
 * depth a loop taking those too never ended, keeping the shard from its
 * loop for 40-120 ms at a time. The rest is the next turn's: the loop
 * polls a ring it does not sleep in, and beside an io_uring reactor the
 * kernel signals the eventfd for each later posting and for task work
 * queued after the last run (a reap leaves nothing that went unsignalled). */
unsigned io_ring_reap(struct io_shard *io)
{
	struct io_uring_cqe *cqe;
	unsigned n = 0, left;

	fetch_flagged(io);
	left = io_uring_cq_ready(&io->ring);
	io->reaping = true;
	while (left-- && io_uring_peek_cqe(&io->ring, &cqe) == 0) {
		struct io_req *req = io_uring_cqe_get_data(cqe);

		if (!req) { /* the wait's poll on the reactor's descriptor */
			io->wait_armed = false;
			io_uring_cqe_seen(&io->ring, cqe);
			continue;
		}
		req->res = cqe->res;
		io_uring_cqe_seen(&io->ring, cqe);
		io_complete(io, req);
		n++;
	}
	io->reaping = false;
	return n;
}

/* Wait in the ring for a completion or the reactor's descriptor, at most
 * timeout_ns (< 0: no limit), submitting what is prepared. The poll is
 * one-shot: readiness at the time it is armed completes it at once, so a
 * wake-up written before the wait is not lost. */
static void wait_in_ring(struct io_shard *io, int64_t timeout_ns)
{
	struct __kernel_timespec ts = { .tv_sec = timeout_ns / 1000000000,
					.tv_nsec = timeout_ns % 1000000000 };
	struct io_uring_cqe *cqe;

	if (!io->wait_armed) {
		struct io_uring_sqe *sqe = get_sqe(io);

		io_uring_prep_poll_add(sqe, io->wait_fd, POLLIN);
		io_uring_sqe_set_data(sqe, NULL);
		io->wait_armed = true;
	}
	rt_reactor_waiting(io->r, timeout_ns, 1);
	io_uring_submit_and_wait_timeout(&io->ring, &cqe, 1, timeout_ns < 0 ? NULL : &ts, NULL);
	rt_reactor_waiting(io->r, timeout_ns, 0);
}

int io_ring_sleep(struct io_shard *io, int64_t timeout_ns)
{
	unsigned n;
	int k;

	if (!io->inflight)
		return pc_reactor_poll(io->r, timeout_ns);
	timeout_ns = rt_reactor_wait_bound(io->r, timeout_ns);
	if (timeout_ns != 0 && !io_ring_ready(io))
		wait_in_ring(io, timeout_ns);
	n = io_ring_reap(io);
	k = pc_reactor_poll(io->r, 0);
	return k < 0 ? k : k + (int)n;
}
