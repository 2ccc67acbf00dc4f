/* SPDX-License-Identifier: MIT */
/* percore: the reactor, one event loop per shard.
 *
 * A reactor watches file descriptors for readiness, runs deferred tasks and
 * drives a timing wheel (percore/wheel.h) whose next expiry bounds the wait. It is owned by one thread (its shard): every
 * function here except pc_reactor_wake() must be called on that thread.
 *
 * Two backends implement the same small interface: epoll, and io_uring
 * (liburing, one-shot poll requests re-armed after each event, so both give
 * level-triggered readiness). The backend is chosen once, at creation.
 *
 * One turn of pc_reactor_poll():
 *   1. wait for readiness, at most until the next timer is due (no wait
 *      when deferred tasks are queued), and run the fd callbacks;
 *   2. fire the timers that are due;
 *   3. run the deferred tasks queued before this step began (a task that
 *      defers another leaves it for the next turn, so a task chain cannot
 *      starve fds and timers);
 *   4. run the end-of-turn tasks queued so far (pc_reactor_defer_end()),
 *      those step 3 queued included.
 */
#ifndef PERCORE_REACTOR_H
#define PERCORE_REACTOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "percore/defs.h"
#include "percore/wheel.h"

PC_BEGIN_DECLS

struct pc_reactor;

/* One tick of the reactor's timing wheel: timers fire on tick boundaries,
 * never before their time and at most about a tick after it. */
#define PC_REACTOR_TICK_NS 1000000ull

/* The reactor's kernel interface. */
enum pc_backend {
	PC_BACKEND_EPOLL = 0,
	PC_BACKEND_URING = 1,
};

/* Readiness bits, for pc_reactor_add() interest and callback results. */
enum {
	PC_EV_IN = 1u << 0,   /* readable (or a peer closed: read sees 0) */
	PC_EV_OUT = 1u << 1,  /* writable */
	PC_EV_ERR = 1u << 2,  /* error pending; always reported */
	PC_EV_HUP = 1u << 3,  /* hang-up; always reported */
};

/* Flags of pc_reactor_create(). */
enum {
	/* With PC_BACKEND_URING: fail with the io_uring error instead of
	 * falling back to epoll (tests use it to skip visibly). */
	PC_REACTOR_NO_FALLBACK = 1u << 0,
	/* With PC_BACKEND_URING: readiness polling only, no completion
	 * receive or accept (pc_reactor_add_recv() and
	 * pc_reactor_add_accept() answer -EOPNOTSUPP); the path a kernel
	 * without multishot receive gets. */
	PC_REACTOR_NO_COMPLETION = 1u << 1,
};

/* A descriptor is ready: events is the PC_EV_* that happened. Runs on the
 * reactor's thread. */
typedef void (*pc_io_fn)(struct pc_reactor *r, int fd, unsigned events, void *arg);
/* Deferred work (pc_reactor_defer()), run on the reactor's thread. */
typedef void (*pc_task_fn)(void *arg);
/* Bytes received for fd (pc_reactor_add_recv()): n > 0 bytes at p; 0 the
 * peer closed its side; < 0 -errno. Returns how many of the n bytes it
 * took; the rest are kept and offered again, first, the next time PC_EV_IN
 * is in fd's interest (taking none while keeping PC_EV_IN set waits for
 * the next turn). The end of stream and errors are offered once. */
typedef size_t (*pc_recv_fn)(struct pc_reactor *r, int fd, const void *p, ssize_t n, void *arg);
/* A connection accepted on lfd (pc_reactor_add_accept()): fd >= 0 is the
 * new socket, non-blocking and close-on-exec, now the callee's to keep or
 * close; fd < 0 is -errno (the listener stays watched unless deleted). */
typedef void (*pc_accept_fn)(struct pc_reactor *r, int lfd, int fd, void *arg);
/* A send of pc_reactor_send() finished: res bytes of it went out (fewer
 * than asked when the socket took only part), or -errno; -ECANCELED when
 * fd was deleted first (then it runs inside pc_reactor_del()). arg is
 * fd's registration's, token the send's. */
typedef void (*pc_sent_fn)(struct pc_reactor *r, int fd, ssize_t res, void *arg, void *token);

/* Create a reactor with the asked backend. When io_uring cannot be set up
 * (kernel.io_uring_disabled, seccomp, an old kernel) it falls back to epoll
 * and prints one line to stderr, once per process, unless
 * PC_REACTOR_NO_FALLBACK is given. Any thread; the reactor then belongs to
 * the thread that polls it. Returns 0, -ENOMEM, or the backend's -errno. */
PC_API int pc_reactor_create(struct pc_reactor **out, enum pc_backend backend, unsigned flags);

/* Free the reactor. Registered fds are forgotten, not closed; queued tasks
 * are dropped without running. Owner thread (or any thread once the owner
 * has finished). NULL is ignored. */
PC_API void pc_reactor_destroy(struct pc_reactor *r);

/* The backend in use after any fallback. */
PC_API enum pc_backend pc_reactor_backend(const struct pc_reactor *r);
PC_API const char *pc_backend_name(enum pc_backend b);

/* Watch fd for events (PC_EV_IN and/or PC_EV_OUT; ERR and HUP are always
 * reported). fn(r, fd, ready, arg) runs on the owner thread while the
 * condition holds (level-triggered). Returns 0, -EINVAL (bad fd or no
 * interest bits), -EEXIST (fd already registered), -ENOMEM, or the
 * backend's -errno (e.g. -EPERM for a regular file under epoll). */
PC_API int pc_reactor_add(struct pc_reactor *r, int fd, unsigned events, pc_io_fn fn, void *arg);

/* Like pc_reactor_add(), but while PC_EV_IN is in fd's interest the
 * backend receives into buffers of its own (one pool per reactor; an fd
 * holds none between turns) and hands the bytes to rfn instead of
 * reporting PC_EV_IN; fn still gets PC_EV_OUT, ERR and HUP. Dropping
 * PC_EV_IN (pc_reactor_mod()) stops receiving; bytes already received are
 * kept for rfn, never lost. Owner thread. Returns -EOPNOTSUPP when the
 * backend has no completion receive (epoll, io_uring without multishot
 * receive or provided buffer rings: use pc_reactor_add()), else as
 * pc_reactor_add(). */
PC_API int pc_reactor_add_recv(struct pc_reactor *r, int fd, unsigned events, pc_io_fn fn,
			       pc_recv_fn rfn, void *arg);

/* Inside an rfn callback: the bytes just offered stay valid and unmoved
 * until this reactor's next wait begins (after the tasks deferred this
 * turn have run), not only for the call, so replies may point into them
 * until a deferred task writes them. Their buffer is out of the pool
 * until then. Owner thread; does nothing outside an rfn callback. */
PC_API void pc_reactor_recv_keep(struct pc_reactor *r);

/* Whether bytes fd's socket has already given up are still on their way
 * to its rfn: kept back while PC_EV_IN is off, or completed and not yet
 * handed over this turn. With the socket's own unread bytes (FIONREAD,
 * asked first: a completion may take them meanwhile), this says that
 * everything received so far has been offered. false for an fd without
 * completion receive. Owner thread. */
PC_API bool pc_reactor_recv_pending(struct pc_reactor *r, int fd);

/* Whether fd's completion receive has stopped in the kernel since PC_EV_IN
 * left its interest: nothing more can complete for it, so the bytes kept
 * back for it are all its socket gave up (what comes later stays in the
 * socket). true for an fd without completion receive, whose bytes never
 * leave the socket before a read. Owner thread. */
PC_API bool pc_reactor_recv_stopped(struct pc_reactor *r, int fd);

/* Hand the bytes kept back for fd (received while PC_EV_IN was off) to fn
 * instead of fd's rfn, oldest first, each piece as an rfn gets it (n 0:
 * the peer's EOF, < 0: -errno); fn takes them all, whatever it returns.
 * Returns how many pieces it was given. With pc_reactor_recv_stopped(),
 * this moves an fd's input elsewhere without losing a byte (a session
 * moving to another shard). Owner thread. */
PC_API int pc_reactor_recv_take(struct pc_reactor *r, int fd, pc_recv_fn fn, void *arg);

/* Watch the listening socket lfd and accept its connections in the
 * kernel (io_uring multishot accept): afn gets each one, and fn only
 * errors and hang-ups of lfd. Deleting lfd stops accepting before
 * pc_reactor_del() returns; a connection accepted before that and not
 * yet delivered is closed. Owner thread. Returns -EOPNOTSUPP where the
 * backend cannot (epoll, an io_uring without multishot accept, or
 * PC_REACTOR_NO_COMPLETION): watch lfd with pc_reactor_add() and accept
 * on readiness instead. Else as pc_reactor_add(). */
PC_API int pc_reactor_add_accept(struct pc_reactor *r, int lfd, pc_io_fn fn, pc_accept_fn afn,
				 void *arg);

/* Most pieces one pc_reactor_send() gathers. */
#define PC_REACTOR_SEND_IOV 8

/* Send iov[0..iovcnt) on the registered fd in the kernel: the request goes
 * with the next wait's system call (one per turn, however many sends),
 * and fn(r, fd, res, arg, token) runs on the owner thread when it is done,
 * exactly once. The iovec array is copied; the bytes it points at must
 * stay where they are, unchanged, until fn runs. One send per fd at a
 * time, so sends leave in order: -EBUSY while one is in flight. Deleting
 * fd cancels its send, and when pc_reactor_del() returns the kernel no
 * longer reads the bytes. token is any non-NULL value, handed back to fn
 * and by pc_reactor_sending(). Owner thread. Returns 0, -EINVAL (no
 * pieces, more than PC_REACTOR_SEND_IOV, NULL fn or token), -ENOENT (fd
 * not registered), -EBUSY, or -EOPNOTSUPP where the backend cannot (epoll,
 * an io_uring without completion requests): write directly instead. */
PC_API int pc_reactor_send(struct pc_reactor *r, int fd, const struct iovec *iov, int iovcnt,
			   pc_sent_fn fn, void *token);

/* The token of fd's send in flight (pc_reactor_send()), or NULL when none
 * is. Owner thread. */
PC_API void *pc_reactor_sending(const struct pc_reactor *r, int fd);

/* What the io_uring backend has in flight (all 0 under epoll). */
struct pc_reactor_io_stats {
	uint32_t requests;     /* kernel requests not yet finished */
	uint32_t buffers;      /* receive buffers in the pool */
	uint32_t buffers_out;  /* of which taken by completions, not yet back */
	bool completion;       /* completion receive is available */
	bool accept;           /* completion accept is available */
	uint32_t sends;        /* pc_reactor_send() requests in flight */
	bool defer_taskrun;    /* IORING_SETUP_DEFER_TASKRUN in use */
	bool taskrun_flag;     /* IORING_SETUP_TASKRUN_FLAG in use: idle polls
				* skip the kernel when it has nothing waiting */
	uint64_t quiet_polls;  /* polls that found nothing waiting and made
				* no system call */
	/* Shards of one engine, all on io_uring, wake each other with a
	 * message from ring to ring (IORING_OP_MSG_RING) where the kernel
	 * has it (ring_wake), not by writing the woken one's eventfd: */
	bool ring_wake;
	uint64_t ring_wakes_sent;     /* such wake-ups this ring sent */
	uint64_t ring_wakes_received; /* and those that reached it */
};

/* Fill *st. Owner thread. */
PC_API void pc_reactor_io_stats(const struct pc_reactor *r, struct pc_reactor_io_stats *st);

/* Change the events watched on a registered fd; 0 watches only for
 * errors and hang-ups (always reported). Returns 0, -ENOENT (not
 * registered), -EINVAL, or the backend's -errno. */
PC_API int pc_reactor_mod(struct pc_reactor *r, int fd, unsigned events);

/* Stop watching fd; its callback never runs again, even for an event
 * already collected in this turn. May be called from a callback. Close the
 * fd after this, not before. Returns 0 or -ENOENT. */
PC_API int pc_reactor_del(struct pc_reactor *r, int fd);

/* Run fn(arg) on the owner thread at the next turn. Tasks run in the order
 * they were deferred. Returns 0 or -ENOMEM. */
PC_API int pc_reactor_defer(struct pc_reactor *r, pc_task_fn fn, void *arg);

/* Run fn(arg) on the owner thread at the end of this turn, after its
 * deferred tasks, before the next wait: for work that gathers what the
 * whole turn produced, such as writing its replies, so that a reply a
 * deferred task makes (a record found durable) leaves in the same turn.
 * One queued from an end task runs at the end of the next turn. In the
 * order queued. Returns 0 or -ENOMEM. */
PC_API int pc_reactor_defer_end(struct pc_reactor *r, pc_task_fn fn, void *arg);

/* One turn (see above). timeout_ns < 0 waits until an fd is ready, a timer
 * is due or pc_reactor_wake() is called; 0 never blocks; otherwise waits at
 * most that long. Returns the number of callbacks run (fd, timer, task;
 * a wake-up alone counts 0), or -errno when the backend's wait fails
 * (EINTR is not a failure: it returns what ran). Owner thread. */
PC_API int pc_reactor_poll(struct pc_reactor *r, int64_t timeout_ns);

/* Interrupt a blocking pc_reactor_poll() (or make the next one return at
 * once). Any thread, and async-signal-safe: one eventfd write. */
PC_API void pc_reactor_wake(struct pc_reactor *r);

/* The reactor's timing wheel, ticking every PC_REACTOR_TICK_NS of
 * CLOCK_MONOTONIC. Schedule on it with pc_reactor_timer_after() or with
 * pc_wheel_schedule(w, t, pc_reactor_tick_after(r, ns)); cancel with
 * pc_wheel_cancel(). Callbacks run inside pc_reactor_poll(). Owner
 * thread. */
PC_API struct pc_wheel *pc_reactor_wheel(struct pc_reactor *r);

/* The first tick at or after now + delay_ns (so a timer never fires
 * early). */
PC_API uint64_t pc_reactor_tick_after(const struct pc_reactor *r, uint64_t delay_ns);

/* Schedule (or reschedule) t to fire delay_ns from now. t must have been
 * prepared with pc_timer_init(). Owner thread. */
PC_API void pc_reactor_timer_after(struct pc_reactor *r, struct pc_timer *t, uint64_t delay_ns);

/* True when the next poll has something to do without waiting for the
 * kernel: deferred or end-of-turn tasks are queued. Owner thread. */
PC_API bool pc_reactor_has_tasks(const struct pc_reactor *r);

/* Number of fds registered by users (the wake-up eventfd not counted). */
PC_API unsigned pc_reactor_nfds(const struct pc_reactor *r);

PC_END_DECLS

#endif
