/* SPDX-License-Identifier: MIT */
/* percore rt: what the reactor's common part and its backends share.
 *
 * The common part (reactor.c) keeps the fd table, the task queue and the
 * timers; a backend only arms, disarms and waits, calling
 * rt_reactor_ready() for each ready fd. A backend is a const struct of
 * these few functions, chosen once in pc_reactor_create(). */
#ifndef PERCORE_SRC_RT_REACTOR_IMPL_H
#define PERCORE_SRC_RT_REACTOR_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "percore/reactor.h"

/* One registered fd, indexed by the fd number. */
struct rt_fd {
	pc_io_fn fn;
	void *arg;
	unsigned events;     /* interest: PC_EV_IN | PC_EV_OUT; 0 = free slot */
	uint32_t gen;        /* bumped on every (re)registration; stale
	                      * completions carry an older one */
	uint8_t armed;       /* uring: a poll request is in flight */
	/* uring: a poll saw the peer's EOF (POLLRDHUP) while IN was not
	 * wanted. io_uring reports it to every poll, asked or not, and it
	 * stays: a one-shot poll armed again would complete at once, for
	 * ever. The fd's polls are multishot from then on, completing only
	 * when something changes (reactor_uring.c, ur_poll_done). */
	uint8_t peer_eof;
	/* Completion receive (pc_reactor_add_recv(), io_uring only). */
	uint8_t recv;        /* bytes go to rfn instead of IN readiness */
	uint8_t accept;      /* connections go to afn instead of IN readiness
	                      * (pc_reactor_add_accept(); the recv_* fields
	                      * then describe the multishot accept) */
	uint8_t recv_armed;  /* a multishot receive is in flight */
	uint8_t recv_cancel; /* its cancellation is asked */
	uint8_t recv_done;   /* end of stream or error delivered: not re-armed */
	uint16_t held;       /* completions kept back for it (interest off) */
	uint32_t rgen;       /* the receive's generation: bumped by delete only,
	                      * so bytes that complete after IN is dropped are
	                      * kept, never taken for stale */
	uint32_t pass;       /* last delivery pass that kept bytes back */
	pc_recv_fn rfn;
	pc_accept_fn afn;
	void *send;          /* uring: the send in flight (reactor_usend.c) */
	void *send_token;    /* its pc_reactor_send() token */
};

struct rt_task {
	pc_task_fn fn;
	void *arg;
};

struct rt_backend_ops {
	const char *name;
	int (*init)(struct pc_reactor *r);
	void (*fini)(struct pc_reactor *r);
	/* Start watching f (new registration). */
	int (*add)(struct pc_reactor *r, int fd, struct rt_fd *f);
	/* f->events changed. */
	int (*mod)(struct pc_reactor *r, int fd, struct rt_fd *f);
	/* f is being removed (f still holds its last events and gen). */
	void (*del)(struct pc_reactor *r, int fd, struct rt_fd *f);
	/* Wait up to timeout_ns (<0: forever; 0: not at all) and report ready
	 * fds through rt_reactor_ready(). Returns how many fd callbacks ran,
	 * or -errno. */
	int (*wait)(struct pc_reactor *r, int64_t timeout_ns);
	/* Start watching f with completion receive, or completion accept
	 * when f->accept (NULL: neither offered; -EOPNOTSUPP: this one not). */
	int (*add_recv)(struct pc_reactor *r, int fd, struct rt_fd *f);
	/* Send in the kernel (pc_reactor_send(); NULL: not offered). */
	int (*send)(struct pc_reactor *r, int fd, struct rt_fd *f, const struct iovec *iov,
		    int iovcnt, pc_sent_fn fn, void *token);
	/* Received bytes not yet offered to f's rfn (NULL: never any). */
	bool (*recv_pending)(struct pc_reactor *r, int fd, const struct rt_fd *f);
	/* No receive of f's still running in the kernel (NULL: never one). */
	bool (*recv_stopped)(struct pc_reactor *r, int fd, const struct rt_fd *f);
	/* f's kept-back bytes to fn instead of its rfn (NULL: never any). */
	int (*recv_take)(struct pc_reactor *r, int fd, struct rt_fd *f, pc_recv_fn fn, void *arg);
	/* Fill in the io_uring figures of pc_reactor_io_stats() (NULL: none). */
	void (*stats)(const struct pc_reactor *r, struct pc_reactor_io_stats *st);
	/* One descriptor that polls readable whenever a wait would return
	 * at once (NULL: none). */
	int (*wait_fd)(const struct pc_reactor *r);
	/* Queue, in r's own queue, a wake-up of `to`, another reactor of the
	 * same backend that may be sleeping in its wait: 0, or -errno (the
	 * caller writes to's eventfd instead). NULL: not offered. */
	int (*wake_peer)(struct pc_reactor *r, struct pc_reactor *to);
	/* Hand what wake_peer queued to the kernel now. */
	void (*push)(struct pc_reactor *r);
};

struct pc_reactor {
	const struct rt_backend_ops *ops;
	enum pc_backend backend;
	int wake_fd;                 /* eventfd; written by pc_reactor_wake() */
	bool wake_armed;             /* uring: a poll on wake_fd is in flight */
	bool wakes_queued;           /* wake_peer queued some, not yet submitted */
	unsigned flags;              /* of pc_reactor_create() */

	struct rt_fd *fds;           /* indexed by fd */
	unsigned fds_cap;
	unsigned nfds;

	struct rt_task *tasks;       /* FIFO ring, power-of-two capacity */
	unsigned tasks_cap, task_head, task_count;
	struct rt_task *ends;        /* end-of-turn tasks, in order */
	unsigned ends_cap, ends_n;

	void *backend_state;         /* epoll fd or struct io_uring, etc. */
	bool recv_keep;              /* pc_reactor_recv_keep() in this rfn call */
	struct pc_wheel wheel;       /* ticks of PC_REACTOR_TICK_NS */

	/* What the polls ran. Written by the owner alone, stored relaxed so
	 * that another thread may read them (pc_engine_stats_read). */
	uint64_t fd_events, timers_fired, tasks_run;
	/* 1 while blocked in the kernel's wait (a wait with a timeout):
	 * the stall watchdog takes such a shard for idle, not stuck.
	 * Written by the owner around that system call only. */
	_Atomic uint32_t waiting;
};

/* Around a wait that may block (timeout_ns not 0). Relaxed: the watchdog
 * reads it as a hint, and a stale 1 only delays a warning by a period. */
static inline void rt_reactor_waiting(struct pc_reactor *r, int64_t timeout_ns, uint32_t on)
{
	if (timeout_ns)
		atomic_store_explicit(&r->waiting, on, memory_order_relaxed);
}

extern const struct rt_backend_ops rt_backend_epoll;
extern const struct rt_backend_ops rt_backend_uring;

/* Backend -> common: fd is ready with ready (PC_EV_* bits). gen must match
 * the slot's, else the report is stale (fd deleted or re-registered since
 * the backend collected it) and is ignored.
 * Returns 1 when a callback ran, 0 otherwise. */
int rt_reactor_ready(struct pc_reactor *r, int fd, uint32_t gen, unsigned ready);

/* Wake `to`, whose owner may be asleep in its wait, from the owner
 * thread of `from` (NULL: any other thread). Between two io_uring
 * reactors the wake-up is a message from ring to ring, queued in from's
 * submission queue: the kernel posts it into to's completion ring, which
 * ends to's wait with nothing to read or re-arm, and it leaves with
 * from's next entry into the kernel (its wait, or
 * rt_reactor_push_wakes()). Otherwise, or when that fails, to's eventfd
 * is written at once. */
void rt_reactor_wake_from(struct pc_reactor *from, struct pc_reactor *to);

/* Submit the wake-ups rt_reactor_wake_from() queued in r and its wait
 * has not yet taken along. Owner thread. */
static inline void rt_reactor_push_wakes(struct pc_reactor *r)
{
	if (r->wakes_queued) {
		r->wakes_queued = false;
		r->ops->push(r);
	}
}

/* Backend -> common: the wake-up eventfd fired; empty its counter. */
void rt_reactor_drain_wake(struct pc_reactor *r);

/* How long a wait that asked for timeout_ns may last: 0 while tasks are
 * queued, else at most until the next timer is due. */
int64_t rt_reactor_wait_bound(struct pc_reactor *r, int64_t timeout_ns);

/* What pc_reactor_poll() runs after its wait: the timers due and the
 * tasks queued before the call. Returns how many ran. Owner thread. */
int rt_reactor_run_due(struct pc_reactor *r);

/* A descriptor that polls readable when the reactor has something to
 * report (a watched fd ready, or a wake-up), so that a thread may sleep
 * elsewhere (in the shard's file ring) and still hear the reactor; -1
 * where the backend offers none (io_uring: file rings signal an eventfd
 * it watches instead). */
int rt_reactor_wait_fd(const struct pc_reactor *r);

/* The slot for fd, or NULL when fd is not registered. */
static inline struct rt_fd *rt_reactor_slot(struct pc_reactor *r, int fd)
{
	if (fd < 0 || (unsigned)fd >= r->fds_cap || !r->fds[fd].events)
		return NULL;
	return &r->fds[fd];
}

/* True when a non-blocking poll may find work: fds are watched, tasks are
 * queued or timers are scheduled. The engine skips the poll (and its
 * system call) otherwise. */
static inline bool rt_reactor_wants_poll(const struct pc_reactor *r)
{
	return r->nfds || r->task_count || r->ends_n || pc_wheel_count(&r->wheel);
}

#endif
