/* SPDX-License-Identifier: MIT */
/* percore rt: the log's public calls.
 *
 * One log per process. A line goes to the calling shard's ring when it has
 * one (no lock, no system call), else to the ring the other threads share
 * (under a mutex), else, with no log open, straight to stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/shard.h"
#include "rt/rt.h"
#include "sys/errmsg.h"
#include "rt/log_impl.h"

static _Atomic int log_level = PC_LOG_INFO;
/* The open log; NULL when closed. Written by open and close under
 * open_lock; loaded (acquire) by producers. */
static _Atomic(struct rt_log *) log_open;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t other_dropped_total;
/* Engines sharing the log they opened (rt_log_engine_open); 0 when the
 * program opened it. Under open_lock. */
static unsigned engine_refs;
/* The calling shard's ring (rt_log_attach). */
static __thread struct rt_log_ring *log_self;

void pc_log_cfg_init(struct pc_log_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->level = PC_LOG_INFO;
	cfg->format = PC_LOG_LOGFMT;
}

static int check_cfg(const struct pc_log_cfg *c, char *err, size_t len)
{
	if ((unsigned)c->level > PC_LOG_DEBUG)
		return sys_errmsg(err, len, -EINVAL, "unknown log level");
	if ((unsigned)c->format > PC_LOG_JSON)
		return sys_errmsg(err, len, -EINVAL, "unknown log format");
	if (c->ring_size && (!PC_IS_POW2(c->ring_size) || c->ring_size < 4096 ||
			     c->ring_size > 1u << 30))
		return sys_errmsg(err, len, -EINVAL, "log ring size must be a power of two from 4K to 1G");
	return 0;
}

static void log_free(struct rt_log *l)
{
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->other_lock);
	pthread_cond_destroy(&l->wake);
	pthread_cond_destroy(&l->done);
	rt_log_ring_free(l->other);
	free(l->out);
	if (l->own_fd)
		close(l->fd);
	free(l->path);
	free(l);
}

static struct rt_log *log_new(const struct pc_log_cfg *cfg, int *rc)
{
	struct rt_log *l = calloc(1, sizeof(*l));
	pthread_condattr_t ca;

	*rc = -ENOMEM;
	if (!l)
		return NULL;
	l->cfg = *cfg;
	if (!l->cfg.ring_size)
		l->cfg.ring_size = PC_LOG_DEFAULT_RING;
	l->fd = 2;
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->other_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&l->done, NULL);
	l->other = rt_log_ring_new(l->cfg.ring_size, -1, NULL);
	l->path = cfg->file ? strdup(cfg->file) : NULL;
	l->out = malloc(RT_LOG_OUT_SIZE);
	if (!l->other || !l->out || (cfg->file && !l->path)) {
		log_free(l);
		return NULL;
	}
	if (l->path) {
		*rc = rt_log_open_file(l->path);
		if (*rc < 0) {
			log_free(l);
			return NULL;
		}
		l->fd = *rc;
		l->own_fd = true;
	}
	*rc = 0;
	return l;
}

/* Under open_lock, with the log closed. */
static int open_locked(const struct pc_log_cfg *cfg, char *err, size_t errlen)
{
	struct rt_log *l;
	int rc = check_cfg(cfg, err, errlen);

	if (rc)
		return rc;
	l = log_new(cfg, &rc);
	if (!l && rc == -ENOMEM)
		return sys_errmsg(err, errlen, rc, "out of memory");
	if (!l)
		return sys_errmsg(err, errlen, rc, "cannot open the log file %s: %s", cfg->file,
				  strerror(-rc));
	rc = rt_log_writer_start(l);
	if (rc) {
		log_free(l);
		return sys_errmsg(err, errlen, rc, "cannot start the log writer thread");
	}
	atomic_store(&log_level, cfg->level);
	atomic_store_explicit(&log_open, l, memory_order_release);
	return 0;
}

int pc_log_open(const struct pc_log_cfg *cfg, char *err, size_t errlen)
{
	int rc = -EBUSY;

	pthread_mutex_lock(&open_lock);
	if (!atomic_load(&log_open))
		rc = open_locked(cfg, err, errlen);
	else
		sys_errmsg(err, errlen, rc, "the log is open already");
	pthread_mutex_unlock(&open_lock);
	return rc;
}

static void close_locked(void)
{
	struct rt_log *l = atomic_exchange(&log_open, NULL);

	engine_refs = 0;
	if (!l)
		return;
	rt_log_writer_stop(l);
	log_free(l);
	atomic_store(&log_level, PC_LOG_INFO);
}

void pc_log_close(void)
{
	pthread_mutex_lock(&open_lock);
	close_locked();
	pthread_mutex_unlock(&open_lock);
}

int rt_log_engine_open(const struct pc_engine_cfg *c, bool *owner, char *err, size_t len)
{
	struct pc_log_cfg lc = { .level = c->log_level, .format = c->log_format,
				 .file = c->log_file, .ring_size = c->log_ring_size };
	int rc = 0;

	*owner = false;
	pthread_mutex_lock(&open_lock);
	if (!atomic_load(&log_open)) {
		rc = open_locked(&lc, err, len);
		*owner = !rc;
	} else if (engine_refs) {
		*owner = true; /* another engine's log: shared, closed by the last */
	}
	if (*owner)
		engine_refs++;
	pthread_mutex_unlock(&open_lock);
	return rc;
}

void rt_log_engine_close(bool owner)
{
	if (!owner)
		return;
	pthread_mutex_lock(&open_lock);
	if (engine_refs && !--engine_refs)
		close_locked();
	pthread_mutex_unlock(&open_lock);
}

int pc_log_flush(void)
{
	struct rt_log *l;

	pthread_mutex_lock(&open_lock);
	l = atomic_load(&log_open);
	if (l) {
		pthread_mutex_lock(&l->lock);
		uint64_t ticket = ++l->flush_req;
		pthread_cond_signal(&l->wake);
		while (l->flush_done < ticket)
			pthread_cond_wait(&l->done, &l->lock);
		pthread_mutex_unlock(&l->lock);
	}
	pthread_mutex_unlock(&open_lock);
	return l ? 0 : -ENOTCONN;
}

void pc_log_reopen(void)
{
	atomic_store(&rt_log_reopen_flag, 1);
}

int pc_log_enabled(enum pc_log_level level)
{
	return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

uint64_t pc_log_dropped_other(void)
{
	return atomic_load_explicit(&other_dropped_total, memory_order_relaxed);
}

/* No log open: render here and write to stderr. */
static void write_direct(const unsigned char *rec)
{
	char *line = malloc(RT_LOG_LINE_MAX);

	if (!line)
		return;
	rt_log_write_all(2, line, rt_log_render((const struct rt_log_rec *)rec, pc_shard_id(),
						  PC_LOG_LOGFMT, line));
	free(line);
}

static void put_other(struct rt_log *l, const unsigned char *rec, size_t len)
{
	pthread_mutex_lock(&l->other_lock);
	if (!rt_log_ring_put(l->other, rec, len))
		atomic_fetch_add_explicit(&other_dropped_total, 1, memory_order_relaxed);
	pthread_mutex_unlock(&l->other_lock);
}

void pc_log_vfields(enum pc_log_level level, const struct pc_log_field *f, unsigned n,
		    const char *fmt, va_list ap)
{
	unsigned char rec[RT_LOG_REC_MAX];
	struct rt_log *l;
	size_t len;

	if (!pc_log_enabled(level))
		return;
	len = rt_log_encode(rec, level, f, n, fmt, ap);
	if (log_self) {
		rt_log_ring_put(log_self, rec, len);
		return;
	}
	l = atomic_load_explicit(&log_open, memory_order_acquire);
	if (l)
		put_other(l, rec, len);
	else
		write_direct(rec);
}

void pc_log_fields(enum pc_log_level level, const struct pc_log_field *f, unsigned n,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pc_log_vfields(level, f, n, fmt, ap);
	va_end(ap);
}

void pc_log(enum pc_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pc_log_vfields(level, NULL, 0, fmt, ap);
	va_end(ap);
}

/* ---- shards -------------------------------------------------------- */

void rt_log_attach(int shard, uint64_t *stat)
{
	struct rt_log *l;
	struct rt_log_ring *r;

	pthread_mutex_lock(&open_lock);
	l = atomic_load(&log_open);
	r = l ? rt_log_ring_new(l->cfg.ring_size, shard, stat) : NULL;
	if (r) {
		pthread_mutex_lock(&l->lock);
		r->next = l->rings;
		l->rings = r;
		pthread_mutex_unlock(&l->lock);
	}
	log_self = r;
	pthread_mutex_unlock(&open_lock);
}

void rt_log_detach(void)
{
	if (!log_self)
		return;
	/* release: every record put before is visible to the writer that
	 * sees the ring closed, which then drains and frees it. */
	atomic_store_explicit(&log_self->closed, true, memory_order_release);
	log_self = NULL;
}
