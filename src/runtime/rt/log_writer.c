/* SPDX-License-Identifier: MIT */
/* percore rt: the log's writer thread.
 *
 * Shards never signal the writer (that would be a system call on the
 * shard): it wakes every RT_LOG_PERIOD_MS, or at once for a flush or a
 * stop, drains every ring into a buffer and writes the buffer when it is
 * full and at the end of the pass. A ring whose shard has gone is drained
 * one last time and freed.
 *
 * A pass that found nothing doubles the wait before the next, up to
 * RT_LOG_IDLE_MS; a pass that found a line goes back to RT_LOG_PERIOD_MS.
 * Each wake-up costs the process tens of microseconds of CPU on a
 * virtual machine (the timer, two context switches, the locks): 100 a
 * second were 2-5% of a busy echo server's CPU, which logs nothing while
 * it serves. The price: the first line after a quiet spell waits up to
 * RT_LOG_IDLE_MS, and its ring (64 KiB by default) must hold what the
 * shard logs meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt/log_impl.h"

#define RT_LOG_PERIOD_MS 10
#define RT_LOG_IDLE_MS 80

_Atomic int rt_log_reopen_flag;
static struct sigaction old_hup;

struct pass {
	struct rt_log *l;
	char *out;            /* RT_LOG_OUT + RT_LOG_LINE_MAX bytes */
	size_t used;
	unsigned char rec[RT_LOG_REC_MAX];
};

int rt_log_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	return fd < 0 ? -errno : fd;
}

void rt_log_write_all(int fd, const char *text, size_t len)
{
	while (len) {
		ssize_t n = write(fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* nowhere to say so: the line is lost */
		text += n;
		len -= (size_t)n;
	}
}

static void on_hup(int sig)
{
	(void)sig;
	atomic_store(&rt_log_reopen_flag, 1);
}

/* SIGHUP reopens the file, unless the program already does something
 * with the signal (then it calls pc_log_reopen itself). */
static void hup_install(struct rt_log *l)
{
	struct sigaction cur, sa = { .sa_handler = on_hup, .sa_flags = SA_RESTART };

	if (!l->path || sigaction(SIGHUP, NULL, &cur) || cur.sa_handler != SIG_DFL)
		return;
	sigemptyset(&sa.sa_mask);
	if (!sigaction(SIGHUP, &sa, &old_hup))
		l->sighup = true;
}

static void flush_out(struct pass *p)
{
	rt_log_write_all(p->l->fd, p->out, p->used);
	p->used = 0;
}

static void emit(struct pass *p, const unsigned char *rec, int shard)
{
	p->used += rt_log_render((const struct rt_log_rec *)rec, shard, p->l->cfg.format,
				 p->out + p->used);
	if (p->used >= RT_LOG_OUT)
		flush_out(p);
}

/* Lines a closed ring dropped after its last line that fit: nothing
 * would ever announce them otherwise. The producer is gone, so its
 * private counts are read here (after the acquire of closed). */
static void announce_last_drops(struct pass *p, struct rt_log_ring *r)
{
	if (r->drops == r->reported)
		return;
	rt_log_encode_drops(p->rec, r->drops - r->reported);
	emit(p, p->rec, r->shard);
	r->reported = r->drops;
}

/* Returns how many records it took. */
static unsigned drain(struct pass *p, struct rt_log_ring *r)
{
	unsigned n = 0;

	for (; rt_log_ring_take(r, p->rec); n++)
		emit(p, p->rec, r->shard);
	return n;
}

static void reopen(struct pass *p)
{
	struct rt_log *l = p->l;
	int fd;

	if (!atomic_exchange(&rt_log_reopen_flag, 0) || !l->path)
		return;
	flush_out(p);
	fd = rt_log_open_file(l->path);
	if (fd < 0)
		return; /* keep writing where we were */
	close(l->fd);
	l->fd = fd;
}

/* One pass over every ring. The list lock keeps attaching shards out;
 * producers never take it. Returns whether it found anything to write. */
static bool pass(struct pass *p)
{
	struct rt_log *l = p->l;
	struct rt_log_ring **link;
	unsigned found;

	reopen(p);
	pthread_mutex_lock(&l->other_lock);
	found = drain(p, l->other);
	pthread_mutex_unlock(&l->other_lock);
	pthread_mutex_lock(&l->lock);
	for (link = &l->rings; *link;) {
		struct rt_log_ring *r = *link;
		bool closed = atomic_load_explicit(&r->closed, memory_order_acquire);

		found += drain(p, r);
		if (closed) {
			announce_last_drops(p, r);
			*link = r->next;
			rt_log_ring_free(r);
		} else {
			link = &r->next;
		}
	}
	pthread_mutex_unlock(&l->lock);
	found += p->used != 0; /* drops announced */
	flush_out(p);
	return found != 0;
}

/* Under l->lock: until ms have passed, or a flush is pending (asked
 * for and not yet done: asked during the last pass, too), a stop or a
 * reopen. */
static void wait_period(struct rt_log *l, unsigned ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (long)ms * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (!l->stop && l->flush_req == l->flush_done && !atomic_load(&rt_log_reopen_flag))
		if (pthread_cond_timedwait(&l->wake, &l->lock, &until) == ETIMEDOUT)
			break;
}

static void *writer_main(void *arg)
{
	struct pass p = { .l = arg, .out = ((struct rt_log *)arg)->out };
	struct rt_log *l = p.l;
	bool stop = false;
	unsigned ms = RT_LOG_PERIOD_MS;

	while (!stop) {
		uint64_t ticket;

		pthread_mutex_lock(&l->lock);
		wait_period(l, ms);
		/* Lines logged before a flush request or the stop are in
		 * their rings now: this pass writes them. */
		ticket = l->flush_req;
		stop = l->stop;
		pthread_mutex_unlock(&l->lock);
		if (pass(&p))
			ms = RT_LOG_PERIOD_MS;
		else
			ms = ms * 2 < RT_LOG_IDLE_MS ? ms * 2 : RT_LOG_IDLE_MS;
		pthread_mutex_lock(&l->lock);
		l->flush_done = ticket;
		pthread_cond_broadcast(&l->done);
		pthread_mutex_unlock(&l->lock);
	}
	return NULL;
}

int rt_log_writer_start(struct rt_log *l)
{
	sigset_t all, old;
	int rc;

	/* The writer takes no signal: SIGHUP's handler and the program's
	 * own run elsewhere. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&l->writer, NULL, writer_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc)
		hup_install(l);
	return rc;
}

void rt_log_writer_stop(struct rt_log *l)
{
	if (l->sighup)
		sigaction(SIGHUP, &old_hup, NULL);
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->writer, NULL);
	/* Rings of shards still attached: their lines were written by the
	 * last pass. */
	while (l->rings) {
		struct rt_log_ring *r = l->rings;

		l->rings = r->next;
		rt_log_ring_free(r);
	}
}
