/* SPDX-License-Identifier: MIT */
/* percore rt: the log's internals.
 *
 * log_fmt.c    a line as a record (the producer's encoding) and a record
 *              as text (logfmt or JSON, the writer's rendering);
 * log_ring.c   the single-producer ring of records and its drop count;
 * log.c        the public calls: open, close, flush, log a line;
 * log_writer.c the thread that drains the rings to the file.
 *
 * A record is a header, the message, then each field as
 * [kind u8][key length u8][value length u16][key][value]. Records run on
 * across the ring's end (copied in two parts), so no space is wasted.
 */
#ifndef PERCORE_SRC_RT_LOG_IMPL_H
#define PERCORE_SRC_RT_LOG_IMPL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"
#include "percore/log.h"

struct rt_log_rec {
	uint32_t len;        /* the whole record, header included */
	uint8_t level;
	uint8_t nfields;
	uint16_t msglen;
	uint64_t ts_ns;      /* CLOCK_REALTIME */
};

#define RT_LOG_REC_MAX (sizeof(struct rt_log_rec) + PC_LOG_MAX_RECORD)
/* Text of one rendered line at most: every byte escaped as \u00XX. */
#define RT_LOG_LINE_MAX (6 * PC_LOG_MAX_RECORD + 256)

/* Encode a line into buf (RT_LOG_REC_MAX bytes). Fields past the space
 * left are left out. Returns the record's length. */
size_t rt_log_encode(unsigned char *buf, enum pc_log_level level, const struct pc_log_field *f,
		     unsigned n, const char *fmt, va_list ap);
/* The "dropped N lines" record. */
size_t rt_log_encode_drops(unsigned char *buf, uint64_t n);
/* Render a record as one line ending in '\n' into out (RT_LOG_LINE_MAX
 * bytes). Returns the line's length. */
size_t rt_log_render(const struct rt_log_rec *r, int shard, enum pc_log_format format, char *out);

struct rt_log_ring {
	/* Producer block: the shard (or whoever holds the other threads'
	 * lock). */
	PC_CACHE_ALIGNED _Atomic uint64_t head; /* bytes published */
	uint64_t tail_seen;          /* the writer's tail, last read */
	uint64_t drops;              /* lines dropped, all time */
	uint64_t reported;           /* of those, announced by a line */
	uint64_t *stat;              /* the shard's log_dropped, or NULL */
	_Atomic uint64_t dropped;    /* = drops, for readers elsewhere */
	/* Writer block. */
	PC_CACHE_ALIGNED _Atomic uint64_t tail; /* bytes consumed */
	struct rt_log_ring *next;    /* the writer's list, under its lock */
	_Atomic bool closed;         /* the producer has gone */
	int shard;                   /* -1: threads that are not shards */
	uint32_t size;               /* power of two */
	unsigned char *buf;
};

struct rt_log_ring *rt_log_ring_new(uint32_t size, int shard, uint64_t *stat);
void rt_log_ring_free(struct rt_log_ring *r);
/* Producer: put a record, announcing earlier drops first. Returns false
 * (and counts a drop) when it does not fit. */
bool rt_log_ring_put(struct rt_log_ring *r, const unsigned char *rec, size_t len);
/* Writer: copy the next record into buf (RT_LOG_REC_MAX bytes) and
 * consume it. Returns false when the ring is empty. */
bool rt_log_ring_take(struct rt_log_ring *r, unsigned char *buf);

/* The open log (log.c and log_writer.c). */
struct rt_log {
	struct pc_log_cfg cfg;
	char *path;                  /* cfg.file's copy, or NULL */
	int fd;
	bool own_fd;
	bool sighup;                 /* our SIGHUP handler is installed */
	pthread_t writer;
	pthread_mutex_t lock;        /* rings list, flush tickets, stop */
	pthread_cond_t wake, done;
	struct rt_log_ring *rings;
	uint64_t flush_req, flush_done;
	bool stop;
	pthread_mutex_t other_lock;  /* producers of the shared ring */
	struct rt_log_ring *other;
	char *out;                   /* the writer's RT_LOG_OUT_SIZE bytes */
};

/* The writer writes when this much is buffered (and after each pass). */
#define RT_LOG_OUT (64u * 1024)
#define RT_LOG_OUT_SIZE (RT_LOG_OUT + RT_LOG_LINE_MAX)

/* log_writer.c */
int rt_log_writer_start(struct rt_log *l);
void rt_log_writer_stop(struct rt_log *l);   /* writes everything first */
int rt_log_open_file(const char *path);      /* returns the fd or -errno */
extern _Atomic int rt_log_reopen_flag;

/* Write all of text to fd, going on after short writes and EINTR. */
void rt_log_write_all(int fd, const char *text, size_t len);

#endif
