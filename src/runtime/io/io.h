/* SPDX-License-Identifier: MIT */
/* percore io: the shard's file I/O context, its queue and its two kernel
 * paths (io_uring, and the engine's thread pool), behind percore/file.h.
 *
 * One context per shard, made on its first file operation and freed with
 * the engine. Requests wait in the queue (io_queue.c) until the depth
 * allows them into a backend; a backend finishes a request by handing it
 * to io_complete() on the shard. The pool posts to the shard's completion
 * ring and writes an eventfd the reactor watches. The file ring beside an
 * epoll reactor signals nothing: the shard's loop looks at its completion
 * queue each turn, and at the flag the kernel sets when completions wait
 * to be run (memory reads; io_ring.c), and a shard that sleeps with file
 * operations in flight sleeps in the ring's own wait, which the reactor's
 * epoll descriptor ends too (a poll request on it). That is one system
 * call per wait, as fio makes, instead of epoll, an eventfd read and the
 * eventfd signal. Beside an io_uring reactor the ring keeps a registered
 * eventfd. */
#ifndef PERCORE_SRC_IO_IO_H
#define PERCORE_SRC_IO_IO_H

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

#include "percore/file.h"

struct pc_engine;
struct pc_mpsc;
struct pc_reactor;

/* The most operations one shard has in a backend at once. */
#define IO_DEPTH_MAX PC_FILE_DEPTH_MAX
#define IO_DEPTH_DEFAULT 128u

enum io_op { IO_READ, IO_WRITE, IO_FSYNC, IO_FDATASYNC, IO_ALLOCATE };

/* The two service classes of the queue: reads, and everything else. */
enum { IO_CLASS_READ, IO_CLASS_WRITE, IO_CLASSES };

struct io_shard;

/* One operation, from issue to callback. In the shard's slab. */
struct io_req {
	struct io_req *next;  /* queue link; the pool's job list link */
	struct pc_file *f;
	struct io_shard *io;  /* the shard it returns to */
	void *buf;
	uint64_t len, off;
	uint64_t t0;          /* issued, for the latency histogram */
	ssize_t res;          /* set by the backend */
	pc_file_fn fn;
	void *arg;
	enum io_op op;
};

struct pc_file {
	int fd;
	unsigned opts;
	unsigned pending;     /* issued, callback not yet run */
	struct io_shard *io;
	/* Fault injection (io_file_fault): ops in fault_ops fail with
	 * fault_err once fault_after more of them have succeeded. */
	unsigned fault_ops;
	int fault_err;
	uint64_t fault_after;
};

struct io_fifo {
	struct io_req *head, **tail;
};

struct io_shard {
	struct pc_reactor *r;
	struct pc_engine *e;
	int node;
	int efd;              /* the pool signals it (and the ring, when
	                       * wait_fd < 0); the reactor watches */
	int wait_fd;          /* the reactor's (rt_reactor_wait_fd), or -1 */
	bool uring;           /* else the engine's pool */
	bool submit_queued;   /* a submit task is deferred for this turn */
	bool wait_armed;      /* the ring's poll on wait_fd is in flight */
	bool reaping;         /* callbacks of ring completions are running */
	bool taskrun_flag;    /* the kernel flags completions' task work */
	struct io_uring ring;
	struct io_fixed *fixed; /* the registered buffer region, or NULL */
	struct pc_mpsc *done; /* the pool's finished requests, to this shard */
	struct io_fifo q[IO_CLASSES];
	unsigned next_class;  /* the class served first when both wait */
	unsigned depth, inflight;
	struct pc_file_stats st;
	struct pc_hist *lat;
};

/* io_queue.c: this shard's context, made on first use (NULL off a shard
 * or when neither backend can be set up). */
struct io_shard *io_shard_get(void);
/* One turn of the calling shard's loop for file completions, outside
 * that loop (a shard stopping): what the ring finished completes, else
 * it waits up to timeout_ns as the loop would sleep. */
void io_shard_turn(int64_t timeout_ns);
/* Queue req and start what the depth allows. */
void io_queue_issue(struct io_shard *io, struct io_req *req);
/* A backend finished req: account, run its callback, start more. */
void io_complete(struct io_shard *io, struct io_req *req);
/* Perform req on the calling thread now, with the fault hook and the
 * statistics of a queued one; returns its result. */
ssize_t io_queue_run_now(struct io_shard *io, struct io_req *req);

/* io_ring.c: the shard's file ring. */
int io_ring_open(struct io_shard *io);
void io_ring_start(struct io_shard *io, struct io_req *req);
/* Whether the ring has finished something (running the task work the
 * kernel flagged, which posts it); io_ring_reap() completes it and returns
 * how many callbacks ran. */
bool io_ring_ready(struct io_shard *io);
unsigned io_ring_reap(struct io_shard *io);
/* The shard's sleep when the ring signals no eventfd (wait_fd >= 0): as
 * pc_reactor_poll(r, timeout_ns), but with operations in flight it waits
 * in the ring, for a completion or the reactor's descriptor. */
int io_ring_sleep(struct io_shard *io, int64_t timeout_ns);
void io_ring_close(struct io_shard *io);

/* io_fixed.c: the ring's registered buffer region. io_fixed_open()
 * registers one (none when the kernel refuses: buffers are then plain
 * pages); io_fixed_alloc() hands out bytes of it (NULL when no region or
 * no run of free pages is left); io_fixed_free() takes back what came
 * from any shard's region (false: not a region's); io_fixed_index() is the
 * registered buffer index of [buf, buf + len), or -1. */
struct io_fixed;
void io_fixed_open(struct io_shard *io);
void io_fixed_close(struct io_shard *io);
void *io_fixed_alloc(struct io_shard *io, size_t bytes);
bool io_fixed_free(void *p, size_t bytes);
int io_fixed_index(const struct io_shard *io, const void *buf, size_t len);

/* io_pool.c: the engine's threads. io_pool_attach() ensures the engine
 * has its pool (logging once per process that files take it, and why:
 * why is io_uring's -errno, or 0 when the environment chose the pool); then
 * io_pool_start() hands it a request, io_pool_reap() collects this
 * shard's finished ones. */
int io_pool_attach(struct io_shard *io, int why);
void io_pool_start(struct io_shard *io, struct io_req *req);
void io_pool_reap(struct io_shard *io);
/* Perform req with plain system calls; sets req->res. Any thread. */
void io_perform(struct io_req *req);

/* Test hook: ops (a mask of 1u << enum io_op) on f fail with err (a
 * negative errno) after `after` more of them succeed; err 0 disarms. The
 * operation itself still runs: the error is what its caller sees, like a
 * write-back error the kernel reports late. Owner shard. */
void io_file_fault(struct pc_file *f, unsigned ops, int err, uint64_t after);

/* journal.c, for tests: the segment a journal appends to now, to arm
 * io_file_fault() on. */
struct pc_journal;
struct pc_file *io_journal_file(struct pc_journal *j);

#endif
