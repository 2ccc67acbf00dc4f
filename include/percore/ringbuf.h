/* SPDX-License-Identifier: MIT */
/* percore: a byte ring buffer for socket input and output.
 *
 * Bytes go in at the tail and come out at the head; both are 64-bit byte
 * counts that only grow, so used = tail - head needs no "full" flag. The
 * capacity is a power of two. Spans hand out the contiguous free or readable
 * region so recv() and send() work straight on the buffer (zero copy);
 * commit and consume then move the tail and head.
 *
 * Two modes:
 * - mirrored: the same pages are mapped twice, back to back (memfd_create
 *   and two MAP_FIXED mmaps into one reserved range), so buf[i] and
 *   buf[i + capacity] are the same byte. Every readable and every free
 *   region is contiguous, linearize costs nothing, and a frame that wraps is
 *   decoded in place. The memfd is closed after mapping: a ring holds no
 *   file descriptor. Capacity is also a multiple of the page size.
 * - plain: one heap allocation of twice the capacity. A region that wraps
 *   is made contiguous by copying its wrapped part (only that part) into
 *   the second half, right after the end of the ring.
 *
 * A write larger than the free space is refused whole, never truncated:
 * -EAGAIN when it would fit once the reader consumes, -EMSGSIZE when it is
 * larger than the capacity and never can.
 *
 * Single-threaded: a ring belongs to one shard (one session); only that
 * shard's thread may use it.
 */
#ifndef PERCORE_RINGBUF_H
#define PERCORE_RINGBUF_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* Flags of pc_ringbuf_init(). */
#define PC_RINGBUF_MIRRORED 1u

/* Largest capacity accepted: 1 TiB. */
#define PC_RINGBUF_MAX_CAPACITY ((size_t)1 << 40)

/* Fields starting with _ are private. */
struct pc_ringbuf {
	uint8_t *_buf;    /* capacity bytes, then the mirror or the scratch half */
	size_t _mask;     /* capacity - 1 */
	uint64_t _head;   /* bytes consumed since init or reset */
	uint64_t _tail;   /* bytes committed since init or reset */
	bool _mirrored;
	bool _lent;       /* the memory is the caller's (pc_ringbuf_init_at) */
};

/* Set up an empty ring of at least `capacity` bytes (rounded up to a power
 * of two; mirrored: and to the page size). flags: 0 or PC_RINGBUF_MIRRORED.
 * Returns 0; -EINVAL for capacity 0, above PC_RINGBUF_MAX_CAPACITY or
 * unknown flags; -ENOMEM; mirrored: the negative errno of memfd_create,
 * ftruncate or mmap (for example -ENOSYS or -EPERM where a sandbox forbids
 * memfd: use plain mode then). rb is untouched on failure. */
PC_API int pc_ringbuf_init(struct pc_ringbuf *rb, size_t capacity, unsigned flags);

/* Set up an empty plain ring on memory the caller owns: mem holds
 * 2 * capacity bytes (the ring and the half a wrapped region is copied
 * into), capacity a power of two within PC_RINGBUF_MAX_CAPACITY. For a
 * pool that carves many rings from one mapping. The memory stays the
 * caller's: pc_ringbuf_destroy() leaves it alone. Returns 0, or -EINVAL
 * for a NULL mem or a bad capacity (rb untouched). */
PC_API int pc_ringbuf_init_at(struct pc_ringbuf *rb, void *mem, size_t capacity);

/* Release the memory (not a pc_ringbuf_init_at() caller's). rb may be
 * re-initialised afterwards. */
PC_API void pc_ringbuf_destroy(struct pc_ringbuf *rb);

/* Check the invariants: a buffer, a power-of-two capacity within
 * PC_RINGBUF_MAX_CAPACITY (mirrored: a whole number of pages, and the
 * mirror showing the same bytes), and used = tail - head within the
 * capacity. Returns 0, or -EINVAL and, when err is not NULL, what broke in
 * err (errlen bytes): the field, the value found, the range expected. For
 * tests; owner thread only. */
PC_API int pc_ringbuf_validate(const struct pc_ringbuf *rb, char *err, size_t errlen);

/* Discard every byte: the ring is empty and may serve a new user (a pool of
 * mapped rings is cheaper than mapping one per session). */
static inline void pc_ringbuf_reset(struct pc_ringbuf *rb)
{
	rb->_head = rb->_tail = 0;
}

/* The capacity in bytes, as rounded at init. */
static inline size_t pc_ringbuf_capacity(const struct pc_ringbuf *rb)
{
	return rb->_mask + 1;
}

/* Whether the buffer is mirrored (PC_RINGBUF_MIRRORED), so that every
 * readable and writable span is contiguous. */
static inline bool pc_ringbuf_mirrored(const struct pc_ringbuf *rb)
{
	return rb->_mirrored;
}

/* Bytes readable. */
static inline size_t pc_ringbuf_used(const struct pc_ringbuf *rb)
{
	return (size_t)(rb->_tail - rb->_head);
}

/* Bytes writable. */
static inline size_t pc_ringbuf_space(const struct pc_ringbuf *rb)
{
	return pc_ringbuf_capacity(rb) - pc_ringbuf_used(rb);
}

/* The n bytes from position pos: how many are contiguous from there (all
 * of them when mirrored), and where they start. */
static inline uint8_t *pc__ringbuf_span(const struct pc_ringbuf *rb, uint64_t pos, size_t n,
					size_t *len)
{
	size_t off = (size_t)pos & rb->_mask, to_end = pc_ringbuf_capacity(rb) - off;

	*len = rb->_mirrored || n <= to_end ? n : to_end;
	return rb->_buf + off;
}

/* The same region as up to two iovecs; returns how many (0 when n is 0). */
static inline int pc__ringbuf_iov(const struct pc_ringbuf *rb, uint64_t pos, size_t n,
				  struct iovec iov[2])
{
	size_t len;

	if (!n)
		return 0;
	iov[0].iov_base = pc__ringbuf_span(rb, pos, n, &len);
	iov[0].iov_len = len;
	if (len == n)
		return 1;
	iov[1].iov_base = rb->_buf;
	iov[1].iov_len = n - len;
	return 2;
}

/* The contiguous free region at the tail: *len bytes (0 when full) a
 * recv() may fill before pc_ringbuf_commit(). Mirrored: all the free space.
 * Plain: up to the end of the buffer; pc_ringbuf_write_iov() gives both
 * parts. */
static inline uint8_t *pc_ringbuf_write_span(struct pc_ringbuf *rb, size_t *len)
{
	return pc__ringbuf_span(rb, rb->_tail, pc_ringbuf_space(rb), len);
}

/* The free space as up to two iovecs for readv()/recvmsg(). Returns how
 * many iovecs it filled (0 when full). */
static inline int pc_ringbuf_write_iov(struct pc_ringbuf *rb, struct iovec iov[2])
{
	return pc__ringbuf_iov(rb, rb->_tail, pc_ringbuf_space(rb), iov);
}

/* Make n bytes written into the free space readable. Returns 0, or -EINVAL
 * when n exceeds the free space (nothing changes). */
static inline int pc_ringbuf_commit(struct pc_ringbuf *rb, size_t n)
{
	if (PC_UNLIKELY(n > pc_ringbuf_space(rb)))
		return -EINVAL;
	rb->_tail += n;
	return 0;
}

/* The contiguous readable region at the head: *len bytes (0 when empty).
 * Mirrored: everything readable. Plain: up to the end of the buffer. */
static inline const uint8_t *pc_ringbuf_read_span(const struct pc_ringbuf *rb, size_t *len)
{
	return pc__ringbuf_span(rb, rb->_head, pc_ringbuf_used(rb), len);
}

/* The readable bytes as up to two iovecs for writev()/sendmsg(). Returns
 * how many iovecs it filled (0 when empty). */
static inline int pc_ringbuf_read_iov(const struct pc_ringbuf *rb, struct iovec iov[2])
{
	return pc__ringbuf_iov(rb, rb->_head, pc_ringbuf_used(rb), iov);
}

/* Drop n bytes from the head. Returns 0, or -EINVAL when fewer than n
 * bytes are readable (nothing changes). */
static inline int pc_ringbuf_consume(struct pc_ringbuf *rb, size_t n)
{
	if (PC_UNLIKELY(n > pc_ringbuf_used(rb)))
		return -EINVAL;
	rb->_head += n;
	return 0;
}

/* Copy n bytes in at the tail, all or nothing (src may be NULL when n is
 * 0). Returns 0; -EAGAIN when they do not fit now (retry after the reader
 * consumed); -EMSGSIZE when n exceeds the capacity. Nothing is written on
 * failure. */
static inline int pc_ringbuf_write(struct pc_ringbuf *rb, const void *src, size_t n)
{
	size_t len;

	if (PC_UNLIKELY(n > pc_ringbuf_space(rb)))
		return n > pc_ringbuf_capacity(rb) ? -EMSGSIZE : -EAGAIN;
	if (PC_UNLIKELY(n == 0))
		return 0;
	uint8_t *p = pc__ringbuf_span(rb, rb->_tail, n, &len);
	memcpy(p, src, len);
	if (PC_UNLIKELY(len < n))
		memcpy(rb->_buf, (const uint8_t *)src + len, n - len);
	rb->_tail += n;
	return 0;
}

/* Copy the first n readable bytes out without consuming them. Returns 0,
 * or -EAGAIN when fewer than n are readable (dst untouched). */
static inline int pc_ringbuf_peek(const struct pc_ringbuf *rb, void *dst, size_t n)
{
	size_t len;

	if (PC_UNLIKELY(n > pc_ringbuf_used(rb)))
		return -EAGAIN;
	const uint8_t *p = pc__ringbuf_span(rb, rb->_head, n, &len);
	memcpy(dst, p, len);
	if (PC_UNLIKELY(len < n))
		memcpy((uint8_t *)dst + len, rb->_buf, n - len);
	return 0;
}

/* Copy n bytes out and consume them, all or nothing. Returns 0, or -EAGAIN
 * when fewer than n are readable (nothing changes). */
static inline int pc_ringbuf_read(struct pc_ringbuf *rb, void *dst, size_t n)
{
	int err = pc_ringbuf_peek(rb, dst, n);

	if (!err)
		rb->_head += n;
	return err;
}

/* Copy the wrapped part of a plain ring's first n readable bytes after the
 * buffer's end (out of line: the uncommon case). */
PC_API const uint8_t *pc__ringbuf_unwrap(struct pc_ringbuf *rb, size_t n);

/* The first n readable bytes as one contiguous region, or NULL when fewer
 * than n are readable. Mirrored: always in place, no copy. Plain: in place
 * unless the region wraps; then its wrapped part is copied after the
 * buffer's end, and the pointer stays valid until the next linearize, reset
 * or destroy (writes and consumes of other bytes do not disturb it). */
static inline const uint8_t *pc_ringbuf_linearize(struct pc_ringbuf *rb, size_t n)
{
	size_t len;

	if (PC_UNLIKELY(n > pc_ringbuf_used(rb)))
		return NULL;
	const uint8_t *p = pc__ringbuf_span(rb, rb->_head, n, &len);
	return PC_LIKELY(len == n) ? p : pc__ringbuf_unwrap(rb, n);
}

PC_END_DECLS

#endif
