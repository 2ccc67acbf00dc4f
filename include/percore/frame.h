/* SPDX-License-Identifier: MIT */
/* percore: the frame codec (wire format of docs/ARCHITECTURE.md).
 *
 * A frame is a 12-byte header and a body; integers are big-endian:
 *   0  version   1 byte, must be 1
 *   1  flags     1 byte, bit 0 heartbeat, bit 1 error reply, bits 2-7 zero
 *   2  msg id    4 bytes
 *   6  body len  4 bytes, at most the receiver's maximum
 *  10  reserved  2 bytes, zero
 *
 * Decoding is in place: pc_frame_peek() returns a view into the ring
 * buffer. The header is checked field by field in byte order as soon as the
 * bytes have arrived, so garbage is refused after its first byte and an
 * oversized length before any body byte is waited for (and nothing is ever
 * allocated for a body). A flag bit other than the two defined ones is
 * malformed, like a non-zero reserved field: a future meaning for those
 * bits must not be silently ignored by an old receiver.
 *
 * Single-threaded, like the ring buffers it works on.
 */
#ifndef PERCORE_FRAME_H
#define PERCORE_FRAME_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "percore/defs.h"
#include "percore/ringbuf.h"

PC_BEGIN_DECLS

#define PC_FRAME_HEADER_LEN  12u
#define PC_FRAME_VERSION     1u
#define PC_FRAME_HEARTBEAT   0x01u
#define PC_FRAME_ERROR       0x02u
#define PC_FRAME_FLAGS_KNOWN (PC_FRAME_HEARTBEAT | PC_FRAME_ERROR)
/* Body size limits: the default receive maximum, and the hard cap no
 * configuration can raise (a 4-byte length could say 4 GiB). */
#define PC_FRAME_MAX_BODY_DEFAULT (1u << 20)
#define PC_FRAME_MAX_BODY_CAP     (16u << 20)

/* A decoded frame: a view, valid until its bytes are consumed. */
struct pc_frame {
	uint32_t msg_id;
	uint8_t flags;
	uint32_t len;          /* body length */
	const uint8_t *body;   /* len bytes */
};

/* The effective receive maximum for a configured one: 0 means the default,
 * anything above the hard cap is the hard cap. */
static inline uint32_t pc_frame_max_body(uint32_t configured)
{
	if (configured == 0)
		return PC_FRAME_MAX_BODY_DEFAULT;
	return configured > PC_FRAME_MAX_BODY_CAP ? PC_FRAME_MAX_BODY_CAP : configured;
}

static inline uint32_t pc__be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return __builtin_bswap32(v);
}

static inline void pc__put_be32(uint8_t *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, sizeof(v));
}

/* Check the first `avail` bytes of a header (any number, even 0) in byte
 * order. Returns -EPROTO (bad version, unknown flag, non-zero reserved) or
 * -EMSGSIZE (body over pc_frame_max_body(max_body)) as soon as the bytes
 * that show it are present; else -EAGAIN while fewer than 12 bytes are
 * there; else 0 with f's msg_id, flags and len filled in (body untouched). */
static inline int pc_frame_header_check(const uint8_t *h, size_t avail, uint32_t max_body,
					struct pc_frame *f)
{
	if (PC_LIKELY(avail >= PC_FRAME_HEADER_LEN)) {
		uint32_t len = pc__be32(h + 6);
		if (PC_UNLIKELY(h[0] != PC_FRAME_VERSION || (h[1] & ~PC_FRAME_FLAGS_KNOWN)))
			return -EPROTO;
		if (PC_UNLIKELY(len > pc_frame_max_body(max_body)))
			return -EMSGSIZE;
		if (PC_UNLIKELY(h[10] | h[11]))
			return -EPROTO;
		f->msg_id = pc__be32(h + 2);
		f->flags = h[1];
		f->len = len;
		return 0;
	}
	if ((avail >= 1 && h[0] != PC_FRAME_VERSION) ||
	    (avail >= 2 && (h[1] & ~PC_FRAME_FLAGS_KNOWN)))
		return -EPROTO;
	if (avail >= 10 && pc__be32(h + 6) > pc_frame_max_body(max_body))
		return -EMSGSIZE;
	if (avail >= 11 && h[10])
		return -EPROTO;
	return -EAGAIN;
}

/* Decode the frame at the start of a contiguous buffer of len bytes.
 * Returns 0 with f viewing into buf; -EAGAIN while the frame is incomplete;
 * -EPROTO or -EMSGSIZE as pc_frame_header_check(). */
static inline int pc_frame_parse(const void *buf, size_t len, uint32_t max_body, struct pc_frame *f)
{
	const uint8_t *p = (const uint8_t *)buf;
	int err = pc_frame_header_check(p, len, max_body, f);

	if (err)
		return err;
	if (len - PC_FRAME_HEADER_LEN < f->len)
		return -EAGAIN;
	f->body = p + PC_FRAME_HEADER_LEN;
	return 0;
}

/* Bytes the frame takes on the wire. */
static inline size_t pc_frame_size(const struct pc_frame *f)
{
	return PC_FRAME_HEADER_LEN + (size_t)f->len;
}

/* Decode the frame at the head of rb without consuming it. Returns 0 with
 * f->body pointing into rb (contiguous even when the frame wraps: in place
 * for a mirrored ring, see pc_ringbuf_linearize() for a plain one); -EAGAIN
 * while bytes are missing; -EPROTO for a bad version, flag or reserved
 * field; -EMSGSIZE for a body over pc_frame_max_body(max_body) or a frame
 * larger than rb's capacity (it could never be completed). The ring is not
 * changed by a refusal: the caller decides (error reply, close). */
static inline int pc_frame_peek(struct pc_ringbuf *rb, uint32_t max_body, struct pc_frame *f)
{
	size_t used = pc_ringbuf_used(rb), span;
	const uint8_t *h = pc_ringbuf_read_span(rb, &span);
	uint8_t copy[PC_FRAME_HEADER_LEN];

	if (PC_UNLIKELY(span < PC_FRAME_HEADER_LEN && span < used)) {
		/* Plain ring, header split by the end of the buffer. */
		span = used < PC_FRAME_HEADER_LEN ? used : PC_FRAME_HEADER_LEN;
		memset(copy, 0, sizeof(copy));  /* the compiler cannot see peek fill it */
		pc_ringbuf_peek(rb, copy, span);
		h = copy;
	}
	int err = pc_frame_header_check(h, span, max_body, f);
	if (err)
		return err;
	size_t size = pc_frame_size(f);
	if (PC_UNLIKELY(size > pc_ringbuf_capacity(rb)))
		return -EMSGSIZE;
	if (used < size)
		return -EAGAIN;
	f->body = pc_ringbuf_linearize(rb, size) + PC_FRAME_HEADER_LEN;
	return 0;
}

/* Drop a frame pc_frame_peek() returned (its view becomes invalid).
 * Returns 0, or -EINVAL if f is not the frame at the head. */
static inline int pc_frame_consume(struct pc_ringbuf *rb, const struct pc_frame *f)
{
	return pc_ringbuf_consume(rb, pc_frame_size(f));
}

/* Write a header. Returns 0; -EINVAL for a flag bit other than heartbeat
 * and error; -EMSGSIZE for a body over the hard cap. */
static inline int pc_frame_header_encode(uint8_t h[PC_FRAME_HEADER_LEN], uint32_t msg_id,
					 uint8_t flags, size_t len)
{
	if (PC_UNLIKELY(flags & ~PC_FRAME_FLAGS_KNOWN))
		return -EINVAL;
	if (PC_UNLIKELY(len > PC_FRAME_MAX_BODY_CAP))
		return -EMSGSIZE;
	h[0] = PC_FRAME_VERSION;
	h[1] = flags;
	pc__put_be32(h + 2, msg_id);
	pc__put_be32(h + 6, (uint32_t)len);
	h[10] = h[11] = 0;
	return 0;
}

/* Encode a frame as an iovec pair for writev()/sendmsg(): iov[0] the header
 * (written into h, which must outlive the send), iov[1] the body, not
 * copied. Returns 0, or the errors of pc_frame_header_encode(). */
static inline int pc_frame_encode_iov(uint8_t h[PC_FRAME_HEADER_LEN], struct iovec iov[2],
				      uint32_t msg_id, uint8_t flags, const void *body, size_t len)
{
	int err = pc_frame_header_encode(h, msg_id, flags, len);

	if (err)
		return err;
	iov[0].iov_base = h;
	iov[0].iov_len = PC_FRAME_HEADER_LEN;
	iov[1].iov_base = (void *)body;
	iov[1].iov_len = len;
	return 0;
}

/* Append a whole frame to rb, all or nothing. Returns 0; -EINVAL for an
 * unknown flag; -EMSGSIZE for a body over the hard cap or a frame larger
 * than rb's capacity; -EAGAIN when it does not fit in the free space now.
 * Nothing is written on failure. */
static inline int pc_frame_write(struct pc_ringbuf *rb, uint32_t msg_id, uint8_t flags,
				 const void *body, size_t len)
{
	uint8_t h[PC_FRAME_HEADER_LEN];
	int err = pc_frame_header_encode(h, msg_id, flags, len);

	if (err)
		return err;
	size_t size = PC_FRAME_HEADER_LEN + len;
	if (PC_UNLIKELY(size > pc_ringbuf_space(rb)))
		return size > pc_ringbuf_capacity(rb) ? -EMSGSIZE : -EAGAIN;
	pc_ringbuf_write(rb, h, PC_FRAME_HEADER_LEN);
	pc_ringbuf_write(rb, body, len);
	return 0;
}

PC_END_DECLS

#endif
