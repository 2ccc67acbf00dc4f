/* SPDX-License-Identifier: MIT */
/* percore io: the shard's file ring. Requests are prepared as they leave
 * the queue and submitted together by one task at the end of the turn
 * (one io_uring_enter for a turn's worth); the ring's registered eventfd
 * wakes the reactor, whichever backend the reactor itself uses. */
#include <errno.h>
#include <fcntl.h>

#include "io/io.h"
#include "percore/reactor.h"

/* Submission entries: the queue never has more than IO_DEPTH_MAX
 * requests in the ring, so a prepared request always finds an entry. */
#define RING_ENTRIES IO_DEPTH_MAX

int io_ring_open(struct io_shard *io)
{
	int rc = io_uring_queue_init(RING_ENTRIES, &io->ring, 0);

	if (rc)
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

static void prep(struct io_uring_sqe *sqe, struct io_req *req)
{
	int fd = req->f->fd;

	switch (req->op) {
	case IO_READ:
		io_uring_prep_read(sqe, fd, req->buf, (unsigned)req->len, req->off);
		break;
	case IO_WRITE:
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

void io_ring_start(struct io_shard *io, struct io_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);

	if (!sqe) { /* cannot happen within the depth; submit and retry */
		io_uring_submit(&io->ring);
		sqe = io_uring_get_sqe(&io->ring);
	}
	prep(sqe, req);
	if (!io->submit_queued && pc_reactor_defer(io->r, submit_task, io) == 0)
		io->submit_queued = true;
	else if (!io->submit_queued)
		io_uring_submit(&io->ring);
}

void io_ring_reap(struct io_shard *io)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&io->ring, &cqe) == 0) {
		struct io_req *req = io_uring_cqe_get_data(cqe);

		req->res = cqe->res;
		io_uring_cqe_seen(&io->ring, cqe);
		io_complete(io, req);
	}
}
