/* SPDX-License-Identifier: MIT */
/* percore: a write-ahead log per shard.
 *
 * A journal is a directory of segments, files named by the log sequence
 * number (LSN) of their first record, preallocated to a size and replaced
 * by a new one when a batch would pass it. A record is a 16-byte header
 * (little-endian: payload length, CRC32C, LSN) and its payload; the CRC
 * covers the length, the LSN and the payload. LSNs start at 1 and rise by
 * one per record, across segments.
 *
 * Group commit: the records appended during one turn of the shard, and
 * those appended while a write or sync is in flight, go out in one write
 * and one fdatasync. Each record's callback runs once its record is as
 * durable as the mode promises:
 *   PC_JOURNAL_SYNC_ALWAYS    after the fdatasync that covers it;
 *   PC_JOURNAL_SYNC_INTERVAL  after the next periodic fdatasync;
 *   PC_JOURNAL_SYNC_NEVER     after its write (in the page cache only).
 * An error of a write, sync or preallocation is final: every record not
 * yet confirmed gets it in its callback, and appends are refused with it
 * from then on. The journal never retries a failed fdatasync, since the
 * kernel may have dropped the dirty pages it could not write.
 *
 * A journal belongs to the shard that opened it: every pc_journal_*
 * function but the recovery iterator's must be called there (they return
 * -EPERM elsewhere).
 *
 * Recovery reads the segments in order with an iterator (any thread, no
 * shard needed, plain blocking reads) and stops at the first record that
 * is torn (cut short) or corrupt (bad CRC, an LSN out of sequence), saying
 * where; it never returns a record after that point.
 *
 * A raw journal (pc_journal_open_file) is one file whose records are the
 * caller's bytes alone: no header, no CRC, no preallocation, no rotation,
 * appended at the file's end. It is for a format that frames itself (the
 * kv server's append-only files hold Redis commands, which Redis's tools
 * read); its group commit, modes, callbacks and final error are those
 * above, and recovery is the format's own (the iterator reads only framed
 * journals).
 */
#ifndef PERCORE_JOURNAL_H
#define PERCORE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct pc_journal;
struct pc_journal_iter;

/* Bytes of a record's header. */
#define PC_JOURNAL_HEADER 16u
/* The largest payload of one record. */
#define PC_JOURNAL_MAX_RECORD (64u << 20)

/* When a record counts as durable (see above). */
enum pc_journal_sync {
	PC_JOURNAL_SYNC_ALWAYS = 0,
	PC_JOURNAL_SYNC_INTERVAL = 1,
	PC_JOURNAL_SYNC_NEVER = 2,
};

/* Options of pc_journal_open(); start from pc_journal_opts_init(). */
struct pc_journal_opts {
	enum pc_journal_sync sync;
	uint32_t interval_ms;   /* PC_JOURNAL_SYNC_INTERVAL's period */
	uint64_t segment_size;  /* preallocated bytes per segment */
	/* At open: cut a torn or corrupt tail off (losing it) instead of
	 * refusing to open with -EBADMSG. */
	bool truncate_bad_tail;
	/* PC_JOURNAL_SYNC_NEVER and _INTERVAL: a batch that could leave waits
	 * up to this long for more records (or until it holds 256 KiB), so
	 * that records appended over many turns share one write; 0 (the
	 * default): it leaves at the end of the turn. A process killed
	 * meanwhile loses what waits. Not for records owed a sync (always). */
	uint32_t gather_us;
	/* PC_JOURNAL_SYNC_ALWAYS: while this file's syncs have lately taken
	 * less than this (a moving average), a batch's write and fdatasync
	 * run on the shard's thread, blocking it, as a single-threaded
	 * server's do: no hand-off to the backend and no wake-up for the
	 * completion, and what arrives meanwhile is read together
	 * afterwards. A slow sync raises the average past it and the next
	 * ones go to the backend until they are quick again, so a slow disk
	 * stalls the shard about once. 0 (the default): never. */
	uint32_t inline_sync_us;
	/* A raw journal's batches owed a sync: when one would pass the
	 * file's end, the file is extended this many bytes past it in the
	 * same write, filled with pad_byte, so that the syncs of the batches
	 * written over the padding after it find the file's size already
	 * durable and write the data alone (on ext4, no journal commit per
	 * sync). The file then ends in padding, which the format must read
	 * as nothing (the kv server's '#': a comment line to redis-server
	 * and redis-check-aof); closing the journal cuts it off, and a
	 * process killed meanwhile leaves it for the reader to cut. Padding
	 * the disk has no room for is given up, not an error. 0 (the
	 * default): the file grows by each batch. Framed journals ignore it
	 * (their segments are preallocated). */
	uint32_t extend_ahead;
	unsigned char pad_byte;
};

/* A record's fate: err 0 once it is durable (per the mode), else the
 * journal's final -errno. Runs on the journal's shard. */
typedef void (*pc_journal_fn)(uint64_t lsn, int err, void *arg);

/* Defaults: sync on every commit, a 10 ms interval when asked for one,
 * 64 MiB segments, no truncation. */
PC_API void pc_journal_opts_init(struct pc_journal_opts *o);

/* Open the journal in dir (made if missing) for appending on this shard.
 * It reads the existing segments to find the next LSN and starts a new
 * segment after them; this is blocking I/O, meant for start-up. Returns 0
 * and *out, -EBADMSG when the existing log ends in a bad record and
 * truncate_bad_tail is off, -EINVAL for bad options (a segment smaller
 * than 4 KiB, a zero interval in interval mode), -EPERM off a shard,
 * -ENOMEM, or a system call's -errno. */
PC_API int pc_journal_open(struct pc_journal **out, const char *dir,
			   const struct pc_journal_opts *o);

/* Open the raw journal at path (the file made if missing, its name made
 * durable by an fsync of its directory) for appending at its end on this
 * shard. o->segment_size and o->truncate_bad_tail are not used. Returns
 * 0 and *out, -EINVAL for a zero interval in interval mode, -EPERM off a
 * shard, -ENOMEM, or a system call's -errno. */
PC_API int pc_journal_open_file(struct pc_journal **out, const char *path,
				const struct pc_journal_opts *o);

/* Bytes of the journal's file known written: a raw journal's size at
 * open plus every batch written since, its padding not counted (a framed
 * journal's: the current segment's). */
PC_API uint64_t pc_journal_written(const struct pc_journal *j);

/* Append len bytes (copied now; a raw journal's as they are) as the next
 * record; fn(lsn, err, arg)
 * runs later, never inside this call. *lsn gets the record's LSN when lsn
 * is not NULL. Returns 0, the journal's final error once it failed,
 * -EMSGSIZE above PC_JOURNAL_MAX_RECORD, -EINVAL for a NULL fn, -ENOMEM,
 * -EPERM. */
PC_API int pc_journal_append(struct pc_journal *j, const void *p, size_t len, pc_journal_fn fn,
			     void *arg, uint64_t *lsn);

/* Change the mode between PC_JOURNAL_SYNC_ALWAYS and
 * PC_JOURNAL_SYNC_NEVER for the records appended from now on; those
 * appended before keep their mode's promise (after a change away from
 * always, their callbacks still wait for an fdatasync). Returns 0,
 * -EINVAL when either mode is PC_JOURNAL_SYNC_INTERVAL, -EPERM. */
PC_API int pc_journal_set_sync(struct pc_journal *j, enum pc_journal_sync mode);

/* The journal's final error (0 while healthy). */
PC_API int pc_journal_error(const struct pc_journal *j);

/* The LSN the next append will get. */
PC_API uint64_t pc_journal_next_lsn(const struct pc_journal *j);

/* Close the journal, a raw one's padding cut off (extend_ahead; not
 * synced: padding back after a crash is harmless). Returns 0, or -EBUSY
 * while records wait for their callbacks (nothing is closed: call again
 * once they ran). NULL returns 0. */
PC_API int pc_journal_close(struct pc_journal *j);

/* Close the journal at the end of its shard's life, when the shard's
 * loop no longer runs (its stop hook): a batch on its way is waited for
 * (polling the shard's reactor, up to 10 s), then the records not yet
 * written are written, blocking, the padding cut off, the file synced
 * unless the mode is never, the records confirmed (their callbacks run
 * inside this call), and the journal freed. Returns 0, the journal's
 * final error, or a system call's -errno (the records then got it);
 * -EBUSY, nothing closed, when the batch on its way never landed. NULL
 * returns 0. */
PC_API int pc_journal_close_final(struct pc_journal *j);

/* Start reading the journal in dir from its first record. Returns 0 and
 * *out (an empty or missing directory reads as an empty log), -ENOMEM, or
 * a system call's -errno. */
PC_API int pc_journal_iter_open(struct pc_journal_iter **out, const char *dir);

/* The next record: returns 1 with its LSN, payload and length (valid
 * until the next call), 0 at the clean end of the log, -EBADMSG at a
 * torn or corrupt record (pc_journal_iter_where() says where; every
 * later call returns -EBADMSG again), or a read's -errno. */
PC_API int pc_journal_iter_next(struct pc_journal_iter *it, uint64_t *lsn, const void **p,
				size_t *len);

/* Where the iterator stands: the segment's path and the byte offset of
 * the record it would read next (after -EBADMSG: the bad record's). path
 * is valid until the iterator moves or closes; NULL past the last
 * segment. */
PC_API const char *pc_journal_iter_where(const struct pc_journal_iter *it, uint64_t *offset);

/* After -EBADMSG: cut the log at the bad record (truncate its segment
 * there, remove the later segments) and make that durable. Returns 0,
 * -EINVAL when the iterator has not stopped at a bad record, or a system
 * call's -errno. */
PC_API int pc_journal_iter_truncate(struct pc_journal_iter *it);

/* Free the iterator. NULL is ignored. */
PC_API void pc_journal_iter_close(struct pc_journal_iter *it);

PC_END_DECLS

#endif
