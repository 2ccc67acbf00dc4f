/* SPDX-License-Identifier: MIT */
/* percore: the log, which never blocks a shard.
 *
 * A line is a level, a printf-style message and key=value fields. A shard
 * formats its message into its own single-producer ring of bytes, with no
 * lock and no system call; one writer thread drains every ring and writes
 * whole lines to stderr or a file, as logfmt
 *   ts=2026-12-01T16:12:40.123456Z level=info shard=0 msg="listening" port=7000
 * or as JSON lines
 *   {"ts":"2026-12-01T16:12:40.123456Z","level":"info","shard":0,"msg":"listening","port":7000}
 * (shard -1: a thread that is not a shard). A full ring drops the line and
 * counts it; the shard's next line that fits is preceded by one line
 * "dropped N lines" (level warn, field dropped=N). Threads that are not
 * shards share one ring under a mutex.
 *
 * Before pc_log_open() (or after pc_log_close()) lines go straight to
 * stderr in logfmt, written by the calling thread. pc_engine_start() opens
 * the log with its configuration's log fields unless the program opened it
 * first, and closes it in pc_engine_destroy() when it opened it.
 */
#ifndef PERCORE_LOG_H
#define PERCORE_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* How severe a log line is; a line above the configured level is not
 * written. */
enum pc_log_level {
	PC_LOG_ERROR = 0,
	PC_LOG_WARN = 1,
	PC_LOG_INFO = 2,  /* the default threshold */
	PC_LOG_DEBUG = 3,
};

/* How a log line is written. */
enum pc_log_format {
	PC_LOG_LOGFMT = 0, /* the default */
	PC_LOG_JSON = 1,
};

/* Bytes of each shard's ring when the configuration says 0. */
#define PC_LOG_DEFAULT_RING (64u * 1024)
/* The longest line a ring takes (message and fields together, before
 * quoting); a longer message is cut at this length. */
#define PC_LOG_MAX_RECORD 2048u

/* The log's configuration (the engine's log field). */
struct pc_log_cfg {
	enum pc_log_level level;   /* lines above it are not logged */
	enum pc_log_format format;
	/* File to append to; NULL: stderr. Reopened by name on SIGHUP (a
	 * handler the log installs when the signal has its default action)
	 * and by pc_log_reopen(). */
	const char *file;
	/* Bytes of each shard's ring (and of the one other threads share):
	 * a power of two from 4 KiB to 1 GiB; 0: PC_LOG_DEFAULT_RING. */
	uint32_t ring_size;
};

/* One key=value field. A string value is quoted as the format needs; a
 * number is written bare. Build them with the macros below. */
enum pc_log_kind { PC_LOG_FIELD_STR = 0, PC_LOG_FIELD_INT = 1, PC_LOG_FIELD_UINT = 2 };
/* One key=value field of a structured log line. */
struct pc_log_field {
	const char *key;   /* letters, digits, '_', '.', '-'; others become '_' */
	enum pc_log_kind kind;
	const char *str;
	int64_t i;
	uint64_t u;
};
#define PC_LOG_STR(k, v)  { (k), PC_LOG_FIELD_STR, (v), 0, 0 }
#define PC_LOG_INT(k, v)  { (k), PC_LOG_FIELD_INT, NULL, (int64_t)(v), 0 }
#define PC_LOG_UINT(k, v) { (k), PC_LOG_FIELD_UINT, NULL, 0, (uint64_t)(v) }

/* Defaults: info, logfmt, stderr, PC_LOG_DEFAULT_RING. */
PC_API void pc_log_cfg_init(struct pc_log_cfg *cfg);

/* Open the log and start its writer thread. Returns 0, -EBUSY when it is
 * open already, -EINVAL for a bad level, format or ring size (err says
 * which), the -errno of opening the file, or -ENOMEM. err may be NULL.
 * Any thread that is not a shard; shards started afterwards get their
 * rings (shards already running keep writing to stderr directly). */
PC_API int pc_log_open(const struct pc_log_cfg *cfg, char *err, size_t errlen);

/* Write every line logged so far, stop the writer and go back to direct
 * stderr output. Not from a shard; no shard may still be running with a
 * ring. Closing a log that is not open does nothing. */
PC_API void pc_log_close(void);

/* Return once every line logged before the call (by any thread) has been
 * written. Returns 0, or -ENOTCONN when the log is not open (lines are
 * then written at once anyway). Not from a shard: it waits. */
PC_API int pc_log_flush(void);

/* Reopen the file by name at the writer's next pass (logrotate moves the
 * file, then signals). Any thread, async-signal-safe. */
PC_API void pc_log_reopen(void);

/* Log a line: level, fields (n of them, f may be NULL when n is 0) and a
 * printf-style message. Any thread; on a shard it only formats into the
 * shard's ring: no lock, no system call, never waits. A line above the
 * threshold costs one comparison. */
PC_API void pc_log_fields(enum pc_log_level level, const struct pc_log_field *f, unsigned n,
			  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
PC_API void pc_log_vfields(enum pc_log_level level, const struct pc_log_field *f, unsigned n,
			   const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
/* The same without fields. */
PC_API void pc_log(enum pc_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Whether a line of this level would be logged. Any thread. */
PC_API int pc_log_enabled(enum pc_log_level level);

/* Lines dropped so far by threads that are not shards (their shared ring
 * was full). Each shard's drops are in its pc_shard_stats.log_dropped.
 * Any thread (a relaxed read). */
PC_API uint64_t pc_log_dropped_other(void);

/* "error", "warn", "info", "debug"; parse returns 0 or -EINVAL. */
PC_API const char *pc_log_level_name(enum pc_log_level level);
PC_API int pc_log_level_parse(const char *name, enum pc_log_level *out);
/* "logfmt", "json"; parse returns 0 or -EINVAL. */
PC_API const char *pc_log_format_name(enum pc_log_format format);
PC_API int pc_log_format_parse(const char *name, enum pc_log_format *out);

PC_END_DECLS

#endif
