/* SPDX-License-Identifier: MIT */
/* Ring buffer and frame codec, beside Peer/memcpy/4096 (bench/baseline).
 *
 * RingBuffer/WriteRead/4096/{plain,mirrored}: the byte path of a session:
 *   4,096 bytes copied in (pc_ringbuf_write, the one copy recv() makes),
 *   then taken out in place through the readable span(s) and consumed, as
 *   the frame decoder does. One copy per byte, like the memcpy peer, so
 *   the ratio is the ring's own overhead. Positions stay 64-byte aligned
 *   like the peer's buffers (a misaligned memcpy is itself about 1.5x
 *   slower here); every fourth write and read wraps (two pieces in plain
 *   mode).
 * RingBuffer/Linearize/4096/{plain,mirrored}: a 4,096-byte region that
 *   straddles the end of the buffer (2,048 + 2,048) made contiguous; the
 *   call alone, without the commit and consume around it.
 * FrameCodec/Encode/4096: a frame with a 4,096-byte body appended to a
 *   16 KiB mirrored ring (header built, body copied), emptied when full;
 *   bytes are wire bytes (header and body).
 * FrameCodec/Decode/16384: frames with 16,384-byte bodies peeked (header
 *   validated, body viewed in place) and consumed from a mirrored ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/bench.h"
#include "percore/frame.h"
#include "percore/ringbuf.h"
#include "bench_util.h"

struct ring_ctx {
	struct pc_ringbuf rb;
	uint8_t *src;
	size_t n;
	uint64_t sink;
};

static void ring_teardown(struct pc_bench_state *st)
{
	struct ring_ctx *c = st->ctx;

	pc_ringbuf_destroy(&c->rb);
	free(c->src);
	free(c);
}

/* A ring of cap bytes (mode from arg2), a source of n bytes, and head and
 * tail both at offset `at`. */
static int ring_setup_at(struct pc_bench_state *st, size_t cap, size_t at)
{
	struct ring_ctx *c = calloc(1, sizeof(*c));
	size_t len;

	if (!c)
		return -ENOMEM;
	st->ctx = c;
	c->n = (size_t)st->bench->arg;
	int err = pc_ringbuf_init(&c->rb, cap, st->bench->arg2 ? PC_RINGBUF_MIRRORED : 0);
	if (err)
		return err;
	c->src = aligned_alloc(64, (c->n + 63) & ~(size_t)63);
	if (!c->src)
		return -ENOMEM;
	memset(c->src, 0x5a, c->n);
	/* Touch every page of the ring once so no run pays a first fault. */
	uint8_t *span = pc_ringbuf_write_span(&c->rb, &len);
	memset(span, 0, len);
	pc_ringbuf_commit(&c->rb, at);
	pc_ringbuf_consume(&c->rb, at);
	return 0;
}

static int writeread_setup(struct pc_bench_state *st)
{
	return ring_setup_at(st, 16384, 1024);
}

static void writeread_run(struct pc_bench_state *st)
{
	struct ring_ctx *c = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++) {
		pc_ringbuf_write(&c->rb, c->src, c->n);
		size_t len;
		do {
			const uint8_t *p = pc_ringbuf_read_span(&c->rb, &len);
			PC_DO_NOT_OPTIMIZE(p);
			pc_ringbuf_consume(&c->rb, len);
		} while (pc_ringbuf_used(&c->rb));
	}
	st->bytes = st->iterations * c->n;
}

static int linearize_setup(struct pc_bench_state *st)
{
	/* n bytes readable, starting n/2 before the end of a 2n-byte ring. */
	size_t n = (size_t)st->bench->arg;
	int err = ring_setup_at(st, 2 * n, 2 * n - n / 2);

	if (!err)
		err = pc_ringbuf_commit(&((struct ring_ctx *)st->ctx)->rb, n);
	return err;
}

/* Linearize alone: it does not change the ring, so every call makes the
 * same wrapped region contiguous again (plain mode copies each time). */
static void linearize_run(struct pc_bench_state *st)
{
	struct ring_ctx *c = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++) {
		const uint8_t *p = pc_ringbuf_linearize(&c->rb, c->n);
		PC_DO_NOT_OPTIMIZE(p);
	}
	st->bytes = st->iterations * c->n;
}

static int encode_setup(struct pc_bench_state *st)
{
	/* Room for three frames: ring and body stay in L1, as memcpy's do. */
	return ring_setup_at(st, 16384, 0);
}

static void encode_run(struct pc_bench_state *st)
{
	struct ring_ctx *c = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++) {
		if (pc_frame_write(&c->rb, (uint32_t)i, 0, c->src, c->n) == -EAGAIN) {
			pc_ringbuf_consume(&c->rb, pc_ringbuf_used(&c->rb));
			pc_frame_write(&c->rb, (uint32_t)i, 0, c->src, c->n);
		}
	}
	st->bytes = st->iterations * (PC_FRAME_HEADER_LEN + c->n);
}

/* As many frames as fit, written once; a run re-reads them by rewinding. */
static int decode_setup(struct pc_bench_state *st)
{
	int err = ring_setup_at(st, 262144, 0);
	struct ring_ctx *c = st->ctx;

	if (err)
		return err;
	while (pc_frame_write(&c->rb, 7, 0, c->src, c->n) == 0)
		;
	return 0;
}

static void decode_run(struct pc_bench_state *st)
{
	struct ring_ctx *c = st->ctx;
	size_t filled = pc_ringbuf_used(&c->rb);
	struct pc_frame f;

	for (uint64_t i = 0; i < st->iterations; i++) {
		if (PC_UNLIKELY(pc_frame_peek(&c->rb, PC_FRAME_MAX_BODY_CAP, &f))) {
			/* All read: the bytes are still in the ring's memory. */
			pc_ringbuf_reset(&c->rb);
			pc_ringbuf_commit(&c->rb, filled);
			pc_frame_peek(&c->rb, PC_FRAME_MAX_BODY_CAP, &f);
		}
		c->sink += f.len;
		PC_DO_NOT_OPTIMIZE(f.body);
		pc_frame_consume(&c->rb, &f);
	}
	PC_DO_NOT_OPTIMIZE(c->sink);
	st->bytes = st->iterations * (PC_FRAME_HEADER_LEN + c->n);
}

#define RING_BENCH(var, title, op, n, a2) DATA_BENCH(var, title, op, n, a2, ring_teardown)

RING_BENCH(wr_plain, "RingBuffer/WriteRead/4096/plain", writeread, 4096, 0)
RING_BENCH(wr_mirrored, "RingBuffer/WriteRead/4096/mirrored", writeread, 4096, 1)
RING_BENCH(lin_plain, "RingBuffer/Linearize/4096/plain", linearize, 4096, 0)
RING_BENCH(lin_mirrored, "RingBuffer/Linearize/4096/mirrored", linearize, 4096, 1)
RING_BENCH(frame_encode, "FrameCodec/Encode/4096", encode, 4096, 1)
RING_BENCH(frame_decode, "FrameCodec/Decode/16384", decode, 16384, 1)
