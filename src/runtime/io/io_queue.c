/* SPDX-License-Identifier: MIT */
/* percore io: the shard's I/O context and queue. At most `depth`
 * operations are in a backend at once; the rest wait in two classes,
 * reads and the others, and a freed slot goes to the class that was not
 * served last when both wait: a flood of writes delays a read by at most
 * one write's turn, however many writes are queued. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "io/io.h"
#include "percore/clock.h"
#include "percore/hist.h"
#include "percore/mpsc.h"
#include "percore/reactor.h"
#include "percore/slab.h"
#include "rt/rt.h"

static void fifo_init(struct io_fifo *q)
{
	q->head = NULL;
	q->tail = &q->head;
}

static void fifo_push(struct io_fifo *q, struct io_req *req)
{
	req->next = NULL;
	*q->tail = req;
	q->tail = &req->next;
}

static struct io_req *fifo_pop(struct io_fifo *q)
{
	struct io_req *req = q->head;

	if (req) {
		q->head = req->next;
		if (!q->head)
			q->tail = &q->head;
	}
	return req;
}

static unsigned op_class(enum io_op op)
{
	return op == IO_READ ? IO_CLASS_READ : IO_CLASS_WRITE;
}

/* Only the shard writes its figures; the store is atomic (relaxed) so
 * that the metrics thread may read them at any time
 * (pc_engine_file_stats_read). */
#define IO_STAT_SET(io, field, v) __atomic_store_n(&(io)->st.field, (v), __ATOMIC_RELAXED)
#define IO_STAT_ADD(io, field, n) IO_STAT_SET(io, field, (io)->st.field + (n))

/* Upper bounds of the latency counters, ns (PC_FILE_LATENCY_BOUNDS). */
static const uint64_t lat_bounds[PC_FILE_LATENCY_BOUNDS] = {
	10000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 100000000,
	1000000000,
};

static void note_depth(struct io_shard *io)
{
	uint64_t d = io->st.queued + io->st.inflight;

	if (d > io->st.depth_high)
		IO_STAT_SET(io, depth_high, d);
}

/* Move waiting requests into the backend while the depth allows. */
static void dispatch(struct io_shard *io)
{
	while (io->inflight < io->depth) {
		unsigned c = io->next_class;
		struct io_req *req = fifo_pop(&io->q[c]);

		if (!req) {
			c ^= 1;
			req = fifo_pop(&io->q[c]);
			if (!req)
				return;
		}
		io->next_class = c ^ 1;
		IO_STAT_SET(io, queued, io->st.queued - 1);
		io->inflight++;
		IO_STAT_SET(io, inflight, io->inflight);
		if (io->uring)
			io_ring_start(io, req);
		else
			io_pool_start(io, req);
	}
}

void io_queue_issue(struct io_shard *io, struct io_req *req)
{
	req->t0 = pc_now_ns();
	req->f->pending++;
	fifo_push(&io->q[op_class(req->op)], req);
	IO_STAT_ADD(io, queued, 1);
	note_depth(io);
	dispatch(io);
}

static void apply_fault(struct pc_file *f, struct io_req *req)
{
	if (!f->fault_err || !(f->fault_ops & (1u << req->op)) || req->res < 0)
		return;
	if (f->fault_after) {
		f->fault_after--;
		return;
	}
	req->res = f->fault_err;
}

static void account(struct io_shard *io, const struct io_req *req)
{
	uint64_t ns = pc_elapsed(pc_now_ns(), req->t0);

	pc_hist_record(io->lat, ns);
	for (unsigned b = 0; b < PC_FILE_LATENCY_BOUNDS; b++)
		if (ns <= lat_bounds[b])
			IO_STAT_ADD(io, within[b], 1);
	if (req->res < 0) {
		IO_STAT_ADD(io, errors, 1);
		return;
	}
	switch (req->op) {
	case IO_READ:
		IO_STAT_ADD(io, reads, 1);
		IO_STAT_ADD(io, read_bytes, (uint64_t)req->res);
		break;
	case IO_WRITE:
		IO_STAT_ADD(io, writes, 1);
		IO_STAT_ADD(io, write_bytes, (uint64_t)req->res);
		break;
	case IO_FSYNC:
	case IO_FDATASYNC:
		IO_STAT_ADD(io, syncs, 1);
		break;
	case IO_ALLOCATE:
		IO_STAT_ADD(io, allocates, 1);
		break;
	}
}

void io_complete(struct io_shard *io, struct io_req *req)
{
	struct pc_file *f = req->f;
	pc_file_fn fn = req->fn;
	void *arg = req->arg;
	ssize_t res;

	io->inflight--;
	IO_STAT_SET(io, inflight, io->inflight);
	apply_fault(f, req);
	account(io, req);
	res = req->res;
	f->pending--;
	pc_slab_free(pc_shard_slab(sizeof(*req)), req);
	dispatch(io);
	fn(f, res, arg);
}

ssize_t io_queue_run_now(struct io_shard *io, struct io_req *req)
{
	req->t0 = pc_now_ns();
	io_perform(req);
	apply_fault(req->f, req);
	account(io, req);
	return req->res;
}

/* Either backend finished something: the ring's CQEs and the pool's
 * posts are both behind this eventfd. */
static void on_ready(struct pc_reactor *r, int fd, unsigned events, void *arg)
{
	struct io_shard *io = arg;
	uint64_t n;

	(void)r;
	(void)events;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	if (io->uring)
		io_ring_reap(io);
	else
		io_pool_reap(io);
}

static void io_shard_free(void *p)
{
	struct io_shard *io = p;

	if (io->uring)
		io_ring_close(io);
	io_fixed_close(io);
	pc_mpsc_destroy(io->done);
	if (io->efd >= 0)
		close(io->efd);
	pc_hist_destroy(io->lat);
	free(io);
}

static bool pool_forced(void)
{
	const char *v = getenv("PC_FILE_BACKEND");

	return v && !strcmp(v, "threads");
}

/* The file ring without an eventfd: the shard's loop polls it. */
static bool ring_polled(const struct io_shard *io)
{
	return io->uring && io->wait_fd >= 0;
}

static int io_shard_open(struct io_shard *io)
{
	int rc;

	io->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	io->lat = pc_hist_create();
	if (io->efd < 0 || !io->lat)
		return io->efd < 0 ? -errno : -ENOMEM;
	rc = pool_forced() ? 1 : io_ring_open(io);
	io->uring = rc == 0;
	if (io->uring)
		io_fixed_open(io);
	if (rc)
		rc = io_pool_attach(io, rc > 0 ? 0 : rc);
	if (!rc && !ring_polled(io))
		rc = pc_reactor_add(io->r, io->efd, PC_EV_IN, on_ready, io);
	return rc;
}

/* The shard's loop hooks for a ring that signals no eventfd (io.h). */
static unsigned shard_poll(void *p)
{
	struct io_shard *io = p;

	return io_ring_ready(io) ? io_ring_reap(io) : 0;
}

static int shard_sleep(void *p, int64_t timeout_ns)
{
	return io_ring_sleep(p, timeout_ns);
}

void io_shard_turn(int64_t timeout_ns)
{
	struct rt_shard *s = rt_self;

	if (s->io_poll && s->io_poll(s->io))
		return;
	if (s->io_sleep)
		s->io_sleep(s->io, timeout_ns);
	else
		pc_reactor_poll(s->reactor, timeout_ns);
}

struct io_shard *io_shard_get(void)
{
	struct rt_shard *s = rt_self;
	struct io_shard *io;

	if (!s)
		return NULL;
	if (s->io)
		return s->io;
	io = calloc(1, sizeof(*io));
	if (!io)
		return NULL;
	io->r = s->reactor;
	io->e = s->e;
	io->node = s->node;
	io->efd = -1;
	io->wait_fd = -1;
	io->depth = IO_DEPTH_DEFAULT;
	for (unsigned c = 0; c < IO_CLASSES; c++)
		fifo_init(&io->q[c]);
	if (io_shard_open(io)) {
		io_shard_free(io);
		return NULL;
	}
	s->io_free = io_shard_free;
	if (ring_polled(io)) {
		s->io_poll = shard_poll;
		s->io_sleep = shard_sleep;
	}
	/* published for pc_engine_file_stats_read on other threads */
	__atomic_store_n(&s->io, io, __ATOMIC_RELEASE);
	return io;
}

int pc_file_queue_depth(unsigned depth)
{
	struct io_shard *io;

	if (!rt_self)
		return -EPERM;
	if (depth == 0 || depth > IO_DEPTH_MAX)
		return -EINVAL;
	io = io_shard_get();
	if (!io)
		return -ENOMEM;
	io->depth = depth;
	dispatch(io);
	return 0;
}

const char *pc_file_backend(void)
{
	struct io_shard *io = io_shard_get();

	if (!io)
		return NULL;
	return io->uring ? "io_uring" : "threads";
}

int pc_file_stats_read(struct pc_file_stats *out, struct pc_hist *lat)
{
	struct io_shard *io;

	if (!rt_self)
		return -EPERM;
	io = rt_self->io;
	if (!io) {
		memset(out, 0, sizeof(*out));
		return 0;
	}
	*out = io->st;
	if (lat)
		pc_hist_merge(lat, io->lat);
	return 0;
}

_Static_assert(sizeof(struct pc_file_stats) % sizeof(uint64_t) == 0,
	       "pc_file_stats is read as an array of uint64_t");

int pc_engine_file_stats_read(const struct pc_engine *e, unsigned i, struct pc_file_stats *out)
{
	const struct io_shard *io;
	const uint64_t *from;
	uint64_t *to = (uint64_t *)out;

	if (i >= e->n)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	io = __atomic_load_n(&e->shards[i].io, __ATOMIC_ACQUIRE);
	if (!io)
		return 0;
	/* every field is a uint64_t the shard stores relaxed */
	from = (const uint64_t *)&io->st;
	for (size_t k = 0; k < sizeof(*out) / sizeof(uint64_t); k++)
		to[k] = __atomic_load_n(&from[k], __ATOMIC_RELAXED);
	return 0;
}
