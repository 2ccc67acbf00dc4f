/* SPDX-License-Identifier: MIT */
/* percore io: the engine's file threads, for where io_uring cannot be
 * set up. Shards hand requests over through one locked list (the pool is
 * the slow path: a lock per operation is cheap beside the system call);
 * a worker performs the operation, posts the request to its shard's
 * completion ring and writes the shard's eventfd. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"
#include "percore/log.h"
#include "percore/mpsc.h"
#include "rt/rt.h"

#define POOL_THREADS 4

struct io_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct io_req *head, **tail; /* jobs, oldest first */
	bool stop;
	unsigned n;                  /* threads started */
	pthread_t threads[POOL_THREADS];
};

void io_perform(struct io_req *req)
{
	int fd = req->f->fd;
	ssize_t rc = 0;

	switch (req->op) {
	case IO_READ:
		rc = pread(fd, req->buf, req->len, (off_t)req->off);
		break;
	case IO_WRITE:
		rc = pwrite(fd, req->buf, req->len, (off_t)req->off);
		break;
	case IO_FSYNC:
		rc = fsync(fd);
		break;
	case IO_FDATASYNC:
		rc = fdatasync(fd);
		break;
	case IO_ALLOCATE:
		rc = fallocate(fd, 0, (off_t)req->off, (off_t)req->len);
		break;
	}
	req->res = rc < 0 ? -errno : rc;
}

static struct io_req *take(struct io_pool *p)
{
	struct io_req *req;

	pthread_mutex_lock(&p->lock);
	while (!p->head && !p->stop)
		pthread_cond_wait(&p->cond, &p->lock);
	req = p->head;
	if (req) {
		p->head = req->next;
		if (!p->head)
			p->tail = &p->head;
	}
	pthread_mutex_unlock(&p->lock);
	return req;
}

static void *worker(void *arg)
{
	struct io_pool *p = arg;
	struct io_req *req;
	uint64_t one = 1;

	while ((req = take(p))) {
		/* Once posted, req is the shard's: it may be freed and reused
		 * before the eventfd write, so the shard is read first. */
		struct io_shard *io = req->io;

		io_perform(req);
		/* Never full: a shard has at most IO_DEPTH_MAX requests out. */
		pc_mpsc_push(io->done, &req);
		if (write(io->efd, &one, sizeof(one)) < 0) {
			/* eventfd at its maximum count: already signalled */
		}
	}
	return NULL;
}

/* Stop the threads after the jobs already handed over. Engine teardown,
 * before the shards' contexts go. */
static void pool_free(void *arg)
{
	struct io_pool *p = arg;

	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static struct io_pool *pool_create(void)
{
	struct io_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->tail = &p->head;
	for (; p->n < POOL_THREADS; p->n++)
		if (pthread_create(&p->threads[p->n], NULL, worker, p))
			break;
	if (p->n == 0) {
		pool_free(p);
		return NULL;
	}
	return p;
}

static void log_once(int why)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;

	if (atomic_flag_test_and_set(&said))
		return;
	if (why == 0)
		pc_log(PC_LOG_INFO, "files: a pool of %d threads (PC_FILE_BACKEND=threads)",
		       POOL_THREADS);
	else
		pc_log(PC_LOG_WARN, "files: io_uring unavailable (%s), using a pool of %d threads",
		       strerror(-why), POOL_THREADS);
}

int io_pool_attach(struct io_shard *io, int why)
{
	struct pc_engine *e = io->e;

	io->done = pc_mpsc_create(IO_DEPTH_MAX, sizeof(struct io_req *));
	if (!io->done)
		return -ENOMEM;
	pthread_mutex_lock(&e->io_lock);
	if (!e->io_pool) {
		e->io_pool = pool_create();
		if (e->io_pool)
			e->io_pool_free = pool_free;
	}
	pthread_mutex_unlock(&e->io_lock);
	if (!e->io_pool)
		return -ENOMEM;
	log_once(why);
	return 0;
}

void io_pool_start(struct io_shard *io, struct io_req *req)
{
	struct io_pool *p = io->e->io_pool;

	req->next = NULL;
	pthread_mutex_lock(&p->lock);
	*p->tail = req;
	p->tail = &req->next;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* At most what was in flight when it began, as the ring's reap: a
 * callback's new request can be finished by a pool thread before this
 * loop ends, and taking it too can keep the shard from its loop. Those
 * posted before the eventfd was read come first (the ring is FIFO). */
void io_pool_reap(struct io_shard *io)
{
	unsigned left = io->inflight;
	struct io_req *req;

	while (left-- && pc_mpsc_pop(io->done, &req) == 0)
		io_complete(io, req);
}
