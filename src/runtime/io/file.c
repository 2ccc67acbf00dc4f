/* SPDX-License-Identifier: MIT */
/* percore io: files (percore/file.h). A file is a descriptor and the
 * count of its operations in flight; each operation becomes a request in
 * the shard's slab and goes through the shard's queue (io_queue.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/io.h"
#include "mem/pages.h"
#include "percore/slab.h"
#include "rt/rt.h"

int pc_file_open(struct pc_file **out, const char *path, int flags, mode_t mode, unsigned opts)
{
	struct io_shard *io;
	struct pc_file *f;

	if (!rt_self)
		return -EPERM;
	if (opts & ~(unsigned)PC_FILE_DIRECT)
		return -EINVAL;
	io = io_shard_get();
	f = io ? calloc(1, sizeof(*f)) : NULL;
	if (!f)
		return -ENOMEM;
	if (opts & PC_FILE_DIRECT)
		flags |= O_DIRECT;
	f->fd = open(path, flags | O_CLOEXEC, mode);
	if (f->fd < 0) {
		int rc = -errno;

		free(f);
		return rc;
	}
	f->opts = opts;
	f->io = io;
	*out = f;
	return 0;
}

int pc_file_close(struct pc_file *f)
{
	int rc;

	if (!f)
		return 0;
	if (f->pending)
		return -EBUSY;
	rc = close(f->fd) ? -errno : 0;
	free(f);
	return rc;
}

int pc_file_fd(const struct pc_file *f)
{
	return f->fd;
}

static bool aligned(uint64_t v)
{
	return v % PC_FILE_ALIGN == 0;
}

/* O_DIRECT transfers are aligned in memory, length and offset. */
static bool request_fits(const struct pc_file *f, enum io_op op, const void *buf, uint64_t len,
			 uint64_t off)
{
	return !(f->opts & PC_FILE_DIRECT) || (op != IO_READ && op != IO_WRITE) ||
	       (aligned((uintptr_t)buf) && aligned(len) && aligned(off));
}

/* Check, fill and queue one request. */
static int issue(struct pc_file *f, enum io_op op, void *buf, uint64_t len, uint64_t off,
		 pc_file_fn fn, void *arg)
{
	struct io_req *req;

	if (!rt_self)
		return -EPERM;
	if (!fn || !f || !request_fits(f, op, buf, len, off))
		return -EINVAL;
	req = pc_slab_alloc(pc_shard_slab(sizeof(*req)));
	if (!req)
		return -ENOMEM;
	*req = (struct io_req){
		.f = f, .io = f->io, .buf = buf, .len = len, .off = off,
		.fn = fn, .arg = arg, .op = op,
	};
	io_queue_issue(f->io, req);
	return 0;
}

int pc_file_read(struct pc_file *f, void *buf, size_t len, uint64_t off, pc_file_fn fn,
		 void *arg)
{
	return issue(f, IO_READ, buf, len, off, fn, arg);
}

int pc_file_write(struct pc_file *f, const void *buf, size_t len, uint64_t off, pc_file_fn fn,
		  void *arg)
{
	/* The request keeps one buffer pointer for both directions. */
	return issue(f, IO_WRITE, (void *)buf, len, off, fn, arg);
}

int pc_file_sync(struct pc_file *f, bool data_only, pc_file_fn fn, void *arg)
{
	return issue(f, data_only ? IO_FDATASYNC : IO_FSYNC, NULL, 0, 0, fn, arg);
}

/* Check one request and run it on the calling thread (pc_file_*_now). */
static ssize_t run_now(struct pc_file *f, enum io_op op, void *buf, uint64_t len, uint64_t off)
{
	struct io_req req;

	if (!rt_self)
		return -EPERM;
	if (!f || !request_fits(f, op, buf, len, off))
		return -EINVAL;
	req = (struct io_req){ .f = f, .io = f->io, .buf = buf, .len = len, .off = off, .op = op };
	return io_queue_run_now(f->io, &req);
}

ssize_t pc_file_write_now(struct pc_file *f, const void *buf, size_t len, uint64_t off)
{
	return run_now(f, IO_WRITE, (void *)buf, len, off);
}

int pc_file_sync_now(struct pc_file *f, bool data_only)
{
	return (int)run_now(f, data_only ? IO_FDATASYNC : IO_FSYNC, NULL, 0, 0);
}

int pc_file_allocate(struct pc_file *f, uint64_t off, uint64_t len, pc_file_fn fn, void *arg)
{
	if (len == 0)
		return -EINVAL;
	return issue(f, IO_ALLOCATE, NULL, len, off, fn, arg);
}

void *pc_file_buf_alloc(size_t len)
{
	size_t n = mem_pages_round(len);
	void *p;

	if (!rt_self || len == 0 || n == 0)
		return NULL;
	p = io_fixed_alloc(io_shard_get(), n);
	return p ? p : mem_pages_alloc(n, rt_self->node);
}

void pc_file_buf_free(void *p, size_t len)
{
	if (p && !io_fixed_free(p, mem_pages_round(len)))
		mem_pages_free(p, mem_pages_round(len));
}

void io_file_fault(struct pc_file *f, unsigned ops, int err, uint64_t after)
{
	f->fault_ops = ops;
	f->fault_err = err;
	f->fault_after = after;
}
