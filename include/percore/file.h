/* SPDX-License-Identifier: MIT */
/* percore: asynchronous files, owned by a shard.
 *
 * A shard opens a file and issues reads, writes, syncs and preallocations
 * on it; each finishes later with a callback on that same shard (never
 * inside the call that issued it). The kernel path is io_uring whatever the
 * shard's network backend: the shard keeps a file ring whose completions
 * signal an eventfd its reactor watches. Where io_uring cannot be set up
 * (kernel.io_uring_disabled, a seccomp profile, an old kernel) a small
 * thread pool of the engine does the same operations with pread, pwrite,
 * fdatasync and fallocate and posts the completions back; one line is
 * logged when that happens. PC_FILE_BACKEND=threads in the environment
 * forces the pool (tests run both paths with it).
 *
 * Every shard has an I/O queue in front of the kernel: at most a depth of
 * operations are in flight at once, the rest wait in two classes, reads
 * and the others (writes, syncs, preallocations), served in turn, so that
 * a flood of writes cannot starve reads. Operations on one file carry no
 * order between them: a caller that needs one (write, then sync) issues
 * the second from the first's callback.
 *
 * With PC_FILE_DIRECT the file is opened O_DIRECT: buffers, lengths and
 * offsets must be multiples of PC_FILE_ALIGN (buffers from
 * pc_file_buf_alloc() are, and live on the shard's NUMA node).
 *
 * Every function here must be called on a shard; off a shard they return
 * -EPERM (NULL for pc_file_buf_alloc).
 */
#ifndef PERCORE_FILE_H
#define PERCORE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct pc_file;
struct pc_hist;

/* Alignment of O_DIRECT buffers, lengths and offsets. */
#define PC_FILE_ALIGN 4096u

/* The deepest a shard's I/O queue may be (pc_file_queue_depth()). */
#define PC_FILE_DEPTH_MAX 256u

/* Flags of pc_file_open(). */
enum {
	PC_FILE_DIRECT = 1u << 0, /* O_DIRECT: no page cache */
};

/* An operation finished: res is the bytes moved (a read or write may move
 * fewer than asked), 0 for a sync or preallocation, or -errno. Runs on the
 * shard that issued the operation. */
typedef void (*pc_file_fn)(struct pc_file *f, ssize_t res, void *arg);

/* Open path (open(2) flags and mode; O_CLOEXEC is added) for this shard.
 * Returns 0 and the file in *out, -EINVAL for unknown opts, -EPERM off a
 * shard, -ENOMEM, or open's -errno. */
PC_API int pc_file_open(struct pc_file **out, const char *path, int flags, mode_t mode,
			unsigned opts);

/* Close the file. Returns 0, -EBUSY while operations on it are pending
 * (nothing is closed: wait for their callbacks), or close's -errno (the
 * file is gone either way). NULL returns 0. Owner shard. */
PC_API int pc_file_close(struct pc_file *f);

/* The file's descriptor (for fstat and the like; do not close it). */
PC_API int pc_file_fd(const struct pc_file *f);

/* Read len bytes at off into buf, which must stay valid until fn runs.
 * Returns 0 (fn will run), -EINVAL (misaligned under PC_FILE_DIRECT, or
 * NULL fn), -ENOMEM, -EPERM. */
PC_API int pc_file_read(struct pc_file *f, void *buf, size_t len, uint64_t off, pc_file_fn fn,
			void *arg);

/* Write len bytes of buf at off; buf stays valid until fn runs. Returns as
 * pc_file_read(). */
PC_API int pc_file_write(struct pc_file *f, const void *buf, size_t len, uint64_t off,
			 pc_file_fn fn, void *arg);

/* Flush the file to stable storage: fdatasync when data_only (the data
 * and what is needed to read it back, such as the size), else fsync.
 * Covers the writes whose callbacks ran before this call. Returns as
 * pc_file_read(). */
PC_API int pc_file_sync(struct pc_file *f, bool data_only, pc_file_fn fn, void *arg);

/* pc_file_write() and pc_file_sync() on the calling shard's thread,
 * blocking it until the kernel is done, for a caller that would rather
 * wait a short operation out than be woken for it (no hand-off to the
 * backend, no wake-up): a buffered write into the page cache, a sync
 * known to be quick. Counted in the shard's statistics as the queued
 * ones. Return the bytes written or 0, -EPERM off a shard, -EINVAL as
 * the queued ones, or the system call's -errno. */
PC_API ssize_t pc_file_write_now(struct pc_file *f, const void *buf, size_t len, uint64_t off);
PC_API int pc_file_sync_now(struct pc_file *f, bool data_only);

/* Reserve [off, off + len) on disk (fallocate mode 0: the size grows to
 * cover it, the new bytes read as zeros). Returns as pc_file_read(). */
PC_API int pc_file_allocate(struct pc_file *f, uint64_t off, uint64_t len, pc_file_fn fn,
			    void *arg);

/* len bytes (rounded up to PC_FILE_ALIGN), zeroed, PC_FILE_ALIGN-aligned,
 * on this shard's NUMA node. On an io_uring shard they come from a 1 MiB
 * region registered with its file ring while it lasts, and reads and
 * writes into them on this shard skip pinning the pages per request.
 * Free with pc_file_buf_free() and the same len, on any thread, also
 * after the engine is gone. NULL off a shard, for len 0, or when memory
 * runs out. */
PC_API void *pc_file_buf_alloc(size_t len);
PC_API void pc_file_buf_free(void *p, size_t len);

/* Set this shard's I/O queue depth: operations in the kernel at once
 * (default 128, at most PC_FILE_DEPTH_MAX). Returns 0, -EINVAL for 0 or
 * above the maximum,
 * -EPERM, or the -errno of setting the queue up. */
PC_API int pc_file_queue_depth(unsigned depth);

/* Which path this shard's files take: "io_uring" or "threads" (setting
 * the queue up if needed). NULL off a shard or when neither works. */
PC_API const char *pc_file_backend(void);

/* Latency counters of struct pc_file_stats: operations finished within
 * 10, 50, 100, 250, 500 us, 1, 2.5, 5, 10, 100 ms and 1 s of their issue. */
#define PC_FILE_LATENCY_BOUNDS 11

/* A shard's file I/O figures, since its first file operation. Every field
 * is a uint64_t. */
struct pc_file_stats {
	uint64_t reads, writes, syncs, allocates; /* operations finished */
	uint64_t read_bytes, write_bytes;         /* bytes they moved */
	uint64_t errors;                          /* finished with -errno */
	uint64_t queued;      /* waiting in the queue now */
	uint64_t inflight;    /* in the kernel (or the pool) now */
	uint64_t depth_high;  /* the most queued + in flight at once */
	uint64_t within[PC_FILE_LATENCY_BOUNDS]; /* finished within bound b
	                                          * (cumulative) */
};

/* Copy this shard's figures into *out and, when lat is not NULL, add the
 * latencies of its finished operations (issue to completion, nanoseconds)
 * into lat (percore/hist.h). Returns 0 or -EPERM. */
PC_API int pc_file_stats_read(struct pc_file_stats *out, struct pc_hist *lat);

struct pc_engine;

/* Shard i's figures, from any thread: each is one the shard recently
 * stored (all zero before its first file operation). Returns 0 or
 * -EINVAL for a bad i. */
PC_API int pc_engine_file_stats_read(const struct pc_engine *e, unsigned i,
				     struct pc_file_stats *out);

PC_END_DECLS

#endif
