/* SPDX-License-Identifier: MIT */
/* percore rt: the reactor's common part (fd table, tasks, turn order).
 * Backends: reactor_epoll.c, reactor_uring.c. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "percore/clock.h"
#include "percore/log.h"
#include "rt/reactor_impl.h"

const char *pc_backend_name(enum pc_backend b)
{
	return b == PC_BACKEND_URING ? "io_uring" : "epoll";
}

/* Say once per process that io_uring was asked for and not available. */
static void report_fallback(int err)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;

	if (atomic_flag_test_and_set(&said))
		return;
	pc_log(PC_LOG_WARN, "io_uring unavailable (%s%s), using epoll", strerror(-err),
	       err == -EPERM ? ": kernel.io_uring_disabled or seccomp" :
	       err == -ENOSYS ? ": kernel without io_uring" : "");
}

static int backend_init(struct pc_reactor *r, enum pc_backend backend, unsigned flags)
{
	int rc;

	if (backend == PC_BACKEND_URING) {
		r->ops = &rt_backend_uring;
		r->backend = PC_BACKEND_URING;
		rc = r->ops->init(r);
		if (rc == 0 || (flags & PC_REACTOR_NO_FALLBACK) || rc == -ENOMEM)
			return rc;
		report_fallback(rc);
	}
	r->ops = &rt_backend_epoll;
	r->backend = PC_BACKEND_EPOLL;
	return r->ops->init(r);
}

int pc_reactor_create(struct pc_reactor **out, enum pc_backend backend, unsigned flags)
{
	struct pc_reactor *r;
	int rc;

	*out = NULL;
	if (backend != PC_BACKEND_EPOLL && backend != PC_BACKEND_URING)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->wake_fd < 0) {
		rc = -errno;
		free(r);
		return rc;
	}
	pc_wheel_init(&r->wheel, pc_now_ns() / PC_REACTOR_TICK_NS);
	r->flags = flags;
	rc = backend_init(r, backend, flags);
	if (rc) {
		close(r->wake_fd);
		free(r);
		return rc;
	}
	*out = r;
	return 0;
}

void pc_reactor_destroy(struct pc_reactor *r)
{
	if (!r)
		return;
	r->ops->fini(r);
	close(r->wake_fd);
	free(r->fds);
	free(r->tasks);
	free(r->ends);
	free(r);
}

enum pc_backend pc_reactor_backend(const struct pc_reactor *r)
{
	return r->backend;
}

unsigned pc_reactor_nfds(const struct pc_reactor *r)
{
	return r->nfds;
}

bool pc_reactor_has_tasks(const struct pc_reactor *r)
{
	return r->task_count || r->ends_n;
}

static int fds_reserve(struct pc_reactor *r, int fd)
{
	unsigned cap = r->fds_cap ? r->fds_cap : 64;
	struct rt_fd *n;

	if ((unsigned)fd < r->fds_cap)
		return 0;
	while (cap <= (unsigned)fd)
		cap *= 2;
	n = realloc(r->fds, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + r->fds_cap, 0, (cap - r->fds_cap) * sizeof(*n));
	r->fds = n;
	r->fds_cap = cap;
	return 0;
}

static bool events_valid(unsigned events)
{
	return events && !(events & ~(unsigned)(PC_EV_IN | PC_EV_OUT | PC_EV_ERR | PC_EV_HUP)) &&
	       (events & (PC_EV_IN | PC_EV_OUT));
}

static int add_fd(struct pc_reactor *r, int fd, unsigned events, pc_io_fn fn, pc_recv_fn rfn,
		  pc_accept_fn afn, void *arg)
{
	struct rt_fd *f;
	int rc;

	if (fd < 0 || fd == r->wake_fd || !fn || !events_valid(events))
		return -EINVAL;
	if (rt_reactor_slot(r, fd))
		return -EEXIST;
	rc = fds_reserve(r, fd);
	if (rc)
		return rc;
	f = &r->fds[fd];
	f->fn = fn;
	f->rfn = rfn;
	f->afn = afn;
	f->arg = arg;
	f->events = events & (PC_EV_IN | PC_EV_OUT);
	f->gen++;
	f->armed = 0;
	f->peer_eof = 0;
	f->recv = rfn != NULL;
	f->accept = afn != NULL;
	f->recv_armed = f->recv_cancel = f->recv_done = 0;
	f->held = 0;
	f->send = f->send_token = NULL;
	rc = rfn || afn ? r->ops->add_recv(r, fd, f) : r->ops->add(r, fd, f);
	if (rc) {
		f->events = 0;
		f->recv = f->accept = 0;
		return rc;
	}
	r->nfds++;
	return 0;
}

int pc_reactor_add(struct pc_reactor *r, int fd, unsigned events, pc_io_fn fn, void *arg)
{
	return add_fd(r, fd, events, fn, NULL, NULL, arg);
}

int pc_reactor_add_recv(struct pc_reactor *r, int fd, unsigned events, pc_io_fn fn,
			pc_recv_fn rfn, void *arg)
{
	if (!rfn)
		return -EINVAL;
	if (!r->ops->add_recv)
		return -EOPNOTSUPP;
	return add_fd(r, fd, events, fn, rfn, NULL, arg);
}

void pc_reactor_recv_keep(struct pc_reactor *r)
{
	r->recv_keep = true;
}

bool pc_reactor_recv_pending(struct pc_reactor *r, int fd)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);

	return f && f->recv && r->ops->recv_pending && r->ops->recv_pending(r, fd, f);
}

bool pc_reactor_recv_stopped(struct pc_reactor *r, int fd)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);

	return !f || !f->recv || !r->ops->recv_stopped || r->ops->recv_stopped(r, fd, f);
}

int pc_reactor_recv_take(struct pc_reactor *r, int fd, pc_recv_fn fn, void *arg)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);

	if (!fn)
		return -EINVAL;
	return f && f->recv && r->ops->recv_take ? r->ops->recv_take(r, fd, f, fn, arg) : 0;
}

int pc_reactor_add_accept(struct pc_reactor *r, int lfd, pc_io_fn fn, pc_accept_fn afn, void *arg)
{
	if (!afn)
		return -EINVAL;
	if (!r->ops->add_recv)
		return -EOPNOTSUPP;
	return add_fd(r, lfd, PC_EV_IN, fn, NULL, afn, arg);
}

int pc_reactor_send(struct pc_reactor *r, int fd, const struct iovec *iov, int iovcnt,
		    pc_sent_fn fn, void *token)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);

	if (!r->ops->send)
		return -EOPNOTSUPP;
	if (!iov || iovcnt <= 0 || iovcnt > PC_REACTOR_SEND_IOV || !fn || !token)
		return -EINVAL;
	if (!f)
		return -ENOENT;
	return f->send ? -EBUSY : r->ops->send(r, fd, f, iov, iovcnt, fn, token);
}

void *pc_reactor_sending(const struct pc_reactor *r, int fd)
{
	const struct rt_fd *f = rt_reactor_slot((struct pc_reactor *)r, fd);

	return f ? f->send_token : NULL;
}

void pc_reactor_io_stats(const struct pc_reactor *r, struct pc_reactor_io_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (r->ops->stats)
		r->ops->stats(r, st);
}

int pc_reactor_mod(struct pc_reactor *r, int fd, unsigned events)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);
	unsigned old;
	int rc;

	if (!f)
		return -ENOENT;
	/* 0: errors and hang-ups only (a connection not read for now) */
	if (events && !events_valid(events))
		return -EINVAL;
	old = f->events;
	/* A registered fd's events are never 0 (0 marks a free slot): ERR
	 * alone stands for "errors and hang-ups only", which both backends
	 * turn into an empty interest mask. */
	f->events = events ? events & (PC_EV_IN | PC_EV_OUT) : PC_EV_ERR;
	if (f->events == old)
		return 0;
	rc = r->ops->mod(r, fd, f);
	if (rc)
		f->events = old;
	return rc;
}

int pc_reactor_del(struct pc_reactor *r, int fd)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);

	if (!f)
		return -ENOENT;
	r->ops->del(r, fd, f);
	f->events = 0;
	f->gen++;        /* anything already collected for fd is now stale */
	f->rgen++;
	f->armed = 0;
	f->recv = f->accept = 0;
	r->nfds--;
	return 0;
}

int rt_reactor_ready(struct pc_reactor *r, int fd, uint32_t gen, unsigned ready)
{
	struct rt_fd *f = rt_reactor_slot(r, fd);

	if (!f || gen != f->gen)
		return 0;
	ready &= f->events | PC_EV_ERR | PC_EV_HUP;
	if (!ready)
		return 0;
	f->fn(r, fd, ready, f->arg);
	return 1;
}

void rt_reactor_drain_wake(struct pc_reactor *r)
{
	uint64_t v;

	/* Non-blocking: EAGAIN just means another drain got there first. */
	if (read(r->wake_fd, &v, sizeof(v)) < 0)
		return;
}

void pc_reactor_wake(struct pc_reactor *r)
{
	uint64_t one = 1;
	int saved = errno; /* signal handlers must leave errno as they found it */

	/* EAGAIN: the count is saturated, which only an edge-triggered
	 * watcher that never reads it back (epoll) could let happen, and a
	 * write that fails wakes no one: empty it and write again. */
	ssize_t n = write(r->wake_fd, &one, sizeof(one));

	if (n < 0 && errno == EAGAIN) {
		rt_reactor_drain_wake(r);
		n = write(r->wake_fd, &one, sizeof(one));
	}
	(void)n;
	errno = saved;
}

void rt_reactor_wake_from(struct pc_reactor *from, struct pc_reactor *to)
{
	if (from && from->ops == to->ops && from->ops->wake_peer &&
	    from->ops->wake_peer(from, to) == 0) {
		from->wakes_queued = true;
		return;
	}
	pc_reactor_wake(to);
}

int pc_reactor_defer(struct pc_reactor *r, pc_task_fn fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	if (r->task_count == r->tasks_cap) {
		unsigned cap = r->tasks_cap ? r->tasks_cap * 2 : 64;
		struct rt_task *n = malloc(cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		/* Unroll the old ring into the front of the new one. */
		for (unsigned i = 0; i < r->task_count; i++)
			n[i] = r->tasks[(r->task_head + i) & (r->tasks_cap - 1)];
		free(r->tasks);
		r->tasks = n;
		r->tasks_cap = cap;
		r->task_head = 0;
	}
	r->tasks[(r->task_head + r->task_count) & (r->tasks_cap - 1)] = (struct rt_task){ fn, arg };
	r->task_count++;
	return 0;
}

int pc_reactor_defer_end(struct pc_reactor *r, pc_task_fn fn, void *arg)
{
	if (!fn)
		return -EINVAL;
	if (r->ends_n == r->ends_cap) {
		unsigned cap = r->ends_cap ? r->ends_cap * 2 : 16;
		struct rt_task *n = realloc(r->ends, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->ends = n;
		r->ends_cap = cap;
	}
	r->ends[r->ends_n++] = (struct rt_task){ fn, arg };
	return 0;
}

/* Run the end-of-turn tasks queued before this call; those they queue
 * wait for the next turn's end. */
static int run_ends(struct pc_reactor *r)
{
	unsigned n = r->ends_n;

	if (!n)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct rt_task t = r->ends[i]; /* the array may move meanwhile */

		t.fn(t.arg);
	}
	r->ends_n -= n;
	memmove(r->ends, r->ends + n, r->ends_n * sizeof(*r->ends));
	return (int)n;
}

/* Run the tasks queued before this call; later ones wait for the next turn. */
static int run_tasks(struct pc_reactor *r)
{
	unsigned n = r->task_count;

	for (unsigned i = 0; i < n; i++) {
		struct rt_task t = r->tasks[r->task_head];

		r->task_head = (r->task_head + 1) & (r->tasks_cap - 1);
		r->task_count--;
		t.fn(t.arg);
	}
	return (int)n;
}

struct pc_wheel *pc_reactor_wheel(struct pc_reactor *r)
{
	return &r->wheel;
}

uint64_t pc_reactor_tick_after(const struct pc_reactor *r, uint64_t delay_ns)
{
	(void)r;
	return (pc_now_ns() + delay_ns + PC_REACTOR_TICK_NS - 1) / PC_REACTOR_TICK_NS;
}

void pc_reactor_timer_after(struct pc_reactor *r, struct pc_timer *t, uint64_t delay_ns)
{
	pc_wheel_schedule(&r->wheel, t, pc_reactor_tick_after(r, delay_ns));
}

/* Shorten the wait so it ends when the wheel has work. */
static int64_t timer_timeout(struct pc_reactor *r, int64_t timeout_ns)
{
	uint64_t next = pc_wheel_next(&r->wheel), now, at;
	int64_t left;

	if (next == UINT64_MAX || timeout_ns == 0)
		return timeout_ns;
	now = pc_now_ns();
	at = next * PC_REACTOR_TICK_NS;
	left = (int64_t)pc_elapsed(at, now); /* time until the tick */
	return timeout_ns < 0 || left < timeout_ns ? left : timeout_ns;
}

/* Count n into one of the reactor's figures (owner only). */
static void count(uint64_t *fig, int n)
{
	if (n > 0)
		__atomic_store_n(fig, *fig + (uint64_t)n, __ATOMIC_RELAXED);
}

int64_t rt_reactor_wait_bound(struct pc_reactor *r, int64_t timeout_ns)
{
	if (r->task_count || r->ends_n)
		return 0;
	if (pc_wheel_count(&r->wheel))
		return timer_timeout(r, timeout_ns);
	return timeout_ns;
}

int rt_reactor_wait_fd(const struct pc_reactor *r)
{
	return r->ops->wait_fd ? r->ops->wait_fd(r) : -1;
}

int rt_reactor_run_due(struct pc_reactor *r)
{
	int ran = 0, n;

	if (pc_wheel_count(&r->wheel)) {
		n = (int)pc_wheel_advance(&r->wheel, pc_now_ns() / PC_REACTOR_TICK_NS);
		count(&r->timers_fired, n);
		ran += n;
	}
	n = run_tasks(r);
	n += run_ends(r);
	count(&r->tasks_run, n);
	return ran + n;
}

int pc_reactor_poll(struct pc_reactor *r, int64_t timeout_ns)
{
	int ran = 0;

	timeout_ns = rt_reactor_wait_bound(r, timeout_ns);
	/* Nothing to wait for and nothing watched: skip the system call. */
	if (timeout_ns != 0 || r->nfds) {
		ran = r->ops->wait(r, timeout_ns);
		if (ran < 0)
			return ran;
		count(&r->fd_events, ran);
	}
	return ran + rt_reactor_run_due(r);
}
