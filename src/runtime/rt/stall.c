/* SPDX-License-Identifier: MIT */
/* percore rt: the stall detector.
 *
 * A watchdog thread per engine looks at every shard a few times per
 * threshold. A shard is making progress when its turn count (which the
 * loop stores anyway, relaxed) has moved since the last look, or when it
 * is blocked in its reactor's kernel wait (the reactor's waiting flag,
 * stored around that system call only). A shard that has done neither
 * for the threshold is stuck in something it called: the watchdog sends
 * its thread RT_STALL_SIGNAL, whose handler records backtrace() into one
 * slot, and logs one warning with the time stuck and the symbolized
 * frames, and counts it in the shard's stalls. When the shard comes back
 * an info line says after how long. The shards' hot path gains nothing.
 *
 * What counts is the shard's own run time: the CPU time its thread used
 * (the first field of /proc/self/task/TID/schedstat, read only for a
 * shard that is not making progress) since the first look that saw none.
 * A thread the scheduler preempted on a crowded machine is runnable, not
 * running, and one asleep in a call is not running either: neither is
 * its own code holding the CPU, and warning about them would make the
 * warning noise. Without schedstat, wall time counts. The time is at
 * most one look period short. */
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "percore/clock.h"
#include "percore/log.h"
#include "rt/reactor_impl.h"
#include "rt/rt.h"

#define RT_STALL_FRAMES 32
/* Frames written into the warning, and its backtrace field's bytes. */
#define RT_STALL_TEXT 1400
/* Warnings per engine per minute: a machine so slow or crowded that
 * shards stall all the time (an emulator, a swap storm) gets a few, with
 * the number left out, not a backtrace taken from every shard every
 * threshold. Every stall is counted either way. */
#define RT_STALL_REPORTS 5
#define RT_STALL_MINUTE_NS 60000000000ull
/* How long the watchdog waits for the stuck thread's handler. */
#define RT_STALL_GRAB_NS 200000000ull

/* The watchdog's view of one shard. */
struct stall_view {
	uint64_t turns;      /* the count at the last progress seen */
	uint64_t since;      /* when that was (pc_now_ns); 0: not looked yet */
	uint64_t ran0;       /* the thread's run time (or, without schedstat,
	                      * the time) at the first look without progress */
	bool based;          /* ran0 is set for this stretch */
	bool wall;           /* ran0 is wall time */
	bool warned;         /* this stall has been counted */
	bool reported;       /* and had its warning */
	int fd;              /* its schedstat; -1: not open, -2: unavailable */
};

struct rt_stall {
	struct pc_engine *e;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* CLOCK_MONOTONIC; signalled to stop */
	bool stop;
	uint64_t threshold_ns, period_ns;
	/* Reports (warnings with a backtrace) in the current minute, and
	 * stalls counted but not reported since the last report. */
	uint64_t minute_start;
	unsigned reports;
	uint64_t suppressed;
	struct stall_view view[];
};

/* The one backtrace being taken, for any engine's watchdog (grab_lock).
 *
 * The request lives in one word, so that a handler never reads anything
 * else of the watchdog's to decide whether it was asked: state is
 * GRAB_IDLE, the kernel thread id of the thread asked (> 0), GRAB_BUSY
 * while that thread's handler writes n and frames, or GRAB_DONE once it
 * has. A handler takes the request only by swapping its own thread id
 * for GRAB_BUSY, so a handler that runs late (the watchdog gave up on it;
 * a sanitizer delays signals) either finds no request for its thread and
 * does nothing, or answers a newer request made to that same thread,
 * which wants exactly the frames it takes. A watchdog that gives up swaps
 * its request back to GRAB_IDLE, and if that fails the handler is writing
 * and will finish: it waits for GRAB_DONE. So n and frames have one
 * writer at a time, handed over by these orders:
 *   - the request store is release and the handler's swap acquire: the
 *     last reader of frames (frames_text, under grab_lock, before the
 *     next request) is done before a handler writes them again;
 *   - GRAB_DONE is stored release and loaded acquire: the frames the
 *     handler wrote are visible to the watchdog that reads them. */
#define GRAB_IDLE 0
#define GRAB_BUSY (-1)
#define GRAB_DONE (-2)
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && sizeof(pid_t) == sizeof(int),
	       "the signal handler needs a lock-free state word");
static struct {
	_Atomic pid_t state;
	int n;
	void *frames[RT_STALL_FRAMES];
} grab;
static pthread_mutex_t grab_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int handler_ready; /* 1: ours, -1: the signal is taken */

#define RT_STALL_SIGNAL (SIGRTMAX - 2)

/* Async-signal-safe: gettid(2), lock-free atomics and backtrace(), whose
 * unwinder handler_install() loaded before the handler could run. */
static void on_stall_signal(int sig)
{
	int saved = errno;
	pid_t expect = gettid();

	(void)sig;
	if (atomic_compare_exchange_strong_explicit(&grab.state, &expect, GRAB_BUSY,
						    memory_order_acquire,
						    memory_order_relaxed)) {
		grab.n = backtrace(grab.frames, RT_STALL_FRAMES);
		atomic_store_explicit(&grab.state, GRAB_DONE, memory_order_release);
	}
	errno = saved;
}

/* Once per process: our handler, unless the program uses the signal. */
static bool handler_install(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct sigaction cur, sa = { .sa_handler = on_stall_signal, .sa_flags = SA_RESTART };
	void *warm[2];

	pthread_mutex_lock(&lock);
	if (!atomic_load(&handler_ready)) {
		backtrace(warm, 2); /* loads the unwinder here, not in the handler */
		sigemptyset(&sa.sa_mask);
		bool free_sig = !sigaction(RT_STALL_SIGNAL, NULL, &cur) &&
				!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
		atomic_store(&handler_ready,
			     free_sig && !sigaction(RT_STALL_SIGNAL, &sa, NULL) ? 1 : -1);
	}
	pthread_mutex_unlock(&lock);
	return atomic_load(&handler_ready) == 1;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	nanosleep(&ts, NULL);
}

/* Ask the thread for its backtrace; returns the frames taken (0: none
 * came in time). Under grab_lock, with the thread alive (stall_lock). */
static int grab_frames(pthread_t t, pid_t tid)
{
	uint64_t t0 = pc_now_ns();
	pid_t expect = tid;
	bool sent;

	atomic_store_explicit(&grab.state, tid, memory_order_release);
	sent = !pthread_kill(t, RT_STALL_SIGNAL);
	/* Not sent or not answered: the request is withdrawn the same way,
	 * since a late handler of an earlier request may have taken it. */
	while (sent && atomic_load_explicit(&grab.state, memory_order_relaxed) == tid &&
	       pc_elapsed(pc_now_ns(), t0) < RT_STALL_GRAB_NS)
		nap(1000000);
	/* Too late: the handler, if it still runs, will find nothing asked. */
	if (atomic_compare_exchange_strong_explicit(&grab.state, &expect, GRAB_IDLE,
						    memory_order_relaxed, memory_order_relaxed))
		return 0;
	while (atomic_load_explicit(&grab.state, memory_order_acquire) != GRAB_DONE)
		nap(100000);
	atomic_store_explicit(&grab.state, GRAB_IDLE, memory_order_relaxed);
	return grab.n;
}

/* The frames as text, "#k symbol" joined by newlines, the handler's own
 * frame left out. Under grab_lock. */
static void frames_text(int n, char *out, size_t cap)
{
	char **sym = n > 1 ? backtrace_symbols(grab.frames + 1, n - 1) : NULL;
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; sym && i < n - 1 && used + 1 < cap; i++) {
		int k = snprintf(out + used, cap - used, "%s#%d %s", i ? "\n" : "", i, sym[i]);

		if (k < 0)
			break;
		used += (size_t)k < cap - used ? (size_t)k : cap - used - 1;
	}
	free(sym);
}

/* Whether this stall may be reported (see RT_STALL_REPORTS). */
static bool may_report(struct rt_stall *st, uint64_t now)
{
	if (!st->minute_start || pc_elapsed(now, st->minute_start) >= RT_STALL_MINUTE_NS) {
		st->minute_start = now;
		st->reports = 0;
	}
	if (st->reports == RT_STALL_REPORTS) {
		st->suppressed++;
		return false;
	}
	st->reports++;
	return true;
}

/* Count the stall; report it unless too many were this minute. Returns
 * whether it was reported. */
static bool warn(struct rt_stall *st, struct rt_shard *s, uint64_t stuck_ns, uint64_t now)
{
	char text[RT_STALL_TEXT] = "";
	int n = 0;

	if (!may_report(st, now)) {
		atomic_fetch_add_explicit(&s->stalls, 1, memory_order_relaxed);
		return false;
	}

	/* Under the shard's stall_lock: its thread is alive until we let go. */
	pthread_mutex_lock(&s->stall_lock);
	if (atomic_load_explicit(&s->looping, memory_order_acquire) && handler_install()) {
		pthread_mutex_lock(&grab_lock);
		n = grab_frames(s->self, s->tid);
		frames_text(n, text, sizeof(text));
		pthread_mutex_unlock(&grab_lock);
	}
	pthread_mutex_unlock(&s->stall_lock);
	/* Counted once the frames are taken: code that waits for the count
	 * (a test's spinning handler) is still in the stall they show. */
	atomic_fetch_add_explicit(&s->stalls, 1, memory_order_relaxed);
	struct pc_log_field f[] = {
		PC_LOG_UINT("stuck_ms", stuck_ns / 1000000),
		PC_LOG_UINT("stalled_shard", s->id),
		PC_LOG_UINT("threshold_ms", st->threshold_ns / 1000000),
		PC_LOG_UINT("unreported_before", st->suppressed),
		PC_LOG_STR("backtrace", n ? text : "(none: the thread did not answer)"),
	};
	st->suppressed = 0;
	pc_log_fields(PC_LOG_WARN, f, PC_ARRAY_LEN(f),
		      "shard %u stalled: not back to its loop for %llu ms of its own run time", s->id,
		      (unsigned long long)(stuck_ns / 1000000));
	return true;
}

/* Nanoseconds the shard's thread has run on a CPU, or now when the
 * kernel does not say (no schedstat: wall time counts then; *wall says
 * which). */
static uint64_t ran_ns(struct stall_view *v, const struct rt_shard *s, uint64_t now, bool *wall)
{
	char buf[96];
	ssize_t n;

	if (v->fd == -1) {
		snprintf(buf, sizeof(buf), "/proc/self/task/%d/schedstat", (int)s->tid);
		v->fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (v->fd < 0)
			v->fd = -2;
	}
	*wall = v->fd < 0 || (n = pread(v->fd, buf, sizeof(buf) - 1, 0)) <= 0;
	if (*wall)
		return now;
	buf[n] = '\0';
	/* "time on the CPU, time waiting for it, slices" */
	return strtoull(buf, NULL, 10);
}

/* Time stuck: the run time since the first look without progress. */
static uint64_t stuck_ns(struct stall_view *v, const struct rt_shard *s, uint64_t now)
{
	bool wall;
	uint64_t ran = ran_ns(v, s, now, &wall);

	/* A clock that changed (schedstat gone) starts the stretch again. */
	if (!v->based || wall != v->wall) {
		v->ran0 = ran;
		v->wall = wall;
		v->based = true;
	}
	return pc_elapsed(ran, v->ran0);
}

static void look(struct rt_stall *st, unsigned i, uint64_t now)
{
	struct rt_shard *s = &st->e->shards[i];
	struct stall_view *v = &st->view[i];
	uint64_t turns = __atomic_load_n(&s->stats.turns, __ATOMIC_RELAXED);
	bool waiting = s->reactor &&
		       atomic_load_explicit(&s->reactor->waiting, memory_order_relaxed);

	if (!atomic_load_explicit(&s->looping, memory_order_acquire) || waiting ||
	    turns != v->turns || !v->since) {
		if (v->reported)
			pc_log_fields(PC_LOG_INFO, NULL, 0, "shard %u back in its loop after %llu ms",
				      s->id, (unsigned long long)(pc_elapsed(now, v->since) / 1000000));
		v->warned = v->reported = false;
		v->turns = turns;
		v->since = now;
		v->based = false;
		return;
	}
	if (!v->warned) {
		uint64_t stuck = stuck_ns(v, s, now);

		if (stuck >= st->threshold_ns) {
			v->warned = true;
			v->reported = warn(st, s, stuck, now);
		}
	}
}

/* Wait one period or until told to stop; returns false to stop. */
static bool wait_period(struct rt_stall *st)
{
	struct timespec until;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(st->period_ns / 1000000000u);
	until.tv_nsec += (long)(st->period_ns % 1000000000u);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&st->lock);
	while (!st->stop && pthread_cond_timedwait(&st->cond, &st->lock, &until) != ETIMEDOUT)
		;
	stop = st->stop;
	pthread_mutex_unlock(&st->lock);
	return !stop;
}

static void *watchdog_main(void *arg)
{
	struct rt_stall *st = arg;
	struct pc_engine *e = st->e;

	while (wait_period(st)) {
		uint64_t now = pc_now_ns();

		/* A stopping engine's shards wait for each other at the end:
		 * not stalls. */
		if (pc_engine_stopping(e))
			continue;
		for (unsigned i = 0; i < e->n; i++)
			look(st, i, now);
	}
	return NULL;
}

static struct rt_stall *stall_new(struct pc_engine *e)
{
	struct rt_stall *st = calloc(1, sizeof(*st) + e->n * sizeof(st->view[0]));
	pthread_condattr_t ca;

	if (!st)
		return NULL;
	st->e = e;
	for (unsigned i = 0; i < e->n; i++)
		st->view[i].fd = -1;
	st->threshold_ns = (uint64_t)e->cfg.stall_threshold_ms * 1000000;
	/* Four looks per threshold, 1 ms to 250 ms apart. */
	st->period_ns = st->threshold_ns / 4;
	st->period_ns = st->period_ns < 1000000 ? 1000000 :
			st->period_ns > 250000000 ? 250000000 : st->period_ns;
	pthread_mutex_init(&st->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->cond, &ca);
	pthread_condattr_destroy(&ca);
	return st;
}

static void stall_free(struct rt_stall *st)
{
	for (unsigned i = 0; i < st->e->n; i++)
		if (st->view[i].fd >= 0)
			close(st->view[i].fd);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->cond);
	free(st);
}

void rt_stall_start(struct pc_engine *e)
{
	struct rt_stall *st;
	sigset_t all, old;
	int rc;

	if (!e->cfg.stall_threshold_ms)
		return;
	st = stall_new(e);
	if (!st) {
		pc_log(PC_LOG_WARN, "no stall detector: out of memory");
		return;
	}
	/* The watchdog takes no signal of the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&st->thread, NULL, watchdog_main, st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pc_log(PC_LOG_WARN, "no stall detector: %s", strerror(rc));
		stall_free(st);
		return;
	}
	e->stall = st;
}

void rt_stall_stop(struct pc_engine *e)
{
	struct rt_stall *st = e->stall;

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	st->stop = true;
	pthread_cond_signal(&st->cond);
	pthread_mutex_unlock(&st->lock);
	pthread_join(st->thread, NULL);
	stall_free(st);
	e->stall = NULL;
}

void rt_stall_loop_begin(struct rt_shard *s)
{
	s->self = pthread_self();
	s->tid = gettid();
	/* release: self is set before the watchdog may signal it */
	atomic_store_explicit(&s->looping, 1, memory_order_release);
}

void rt_stall_loop_end(struct rt_shard *s)
{
	pthread_mutex_lock(&s->stall_lock);
	atomic_store_explicit(&s->looping, 0, memory_order_relaxed);
	pthread_mutex_unlock(&s->stall_lock);
}
