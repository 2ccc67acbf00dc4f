/* SPDX-License-Identifier: MIT */
/* FramePipeline/{64,512,4096}: shard 0 encodes a frame (header written,
 * body copied into a buffer from its own pool), passes the buffer over the
 * mesh; shard 1 decodes it in place (pc_frame_parse), reads every body
 * byte, and sends the buffer home for reuse. Bytes/s of frames (header
 * included) through both cores. The pool bounds the frames in flight, as
 * a session's output queue would. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/defs.h"
#include "percore/frame.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "rt_bench.h"

/* Frames in flight. Ring capacity 1024 keeps 768 slots for non-replies, so
 * neither the frames nor their buffers coming home are ever refused. */
#define POOL 256
#define RING 1024

struct pipe_state {
	struct rtb *b;
	size_t body;                 /* body bytes per frame */
	uint8_t *src;                /* what shard 0 encodes from */
	uint8_t *bufs[POOL];         /* frame buffers, owned by shard 0 */
	/* shard 0 only */
	uint8_t *free_stack[POOL];
	unsigned nfree;
	uint64_t sent;
	/* shard 1 only */
	PC_CACHE_ALIGNED uint64_t received;
	uint64_t bad, sink;
};

static struct pipe_state pipe_st;

static void pipe_recycle(void *buf)
{
	pipe_st.free_stack[pipe_st.nfree++] = buf;
}

/* Shard 1: decode in place, read every body byte, send the buffer home. */
static void pipe_decode(void *arg)
{
	struct pipe_state *p = &pipe_st;
	uint8_t *buf = arg;
	struct pc_frame f;
	uint64_t acc = 0, w;

	if (pc_frame_parse(buf, PC_FRAME_HEADER_LEN + p->body, 0, &f) || f.len != p->body) {
		p->bad++;
	} else {
		for (size_t i = 0; i + 8 <= f.len; i += 8) {
			memcpy(&w, f.body + i, 8);
			acc ^= w;
		}
		p->sink += acc;
	}
	if (pc_shard_submit(0, pipe_recycle, buf))
		p->bad++; /* cannot happen with POOL <= RING * 3/4 */
	if (++p->received == p->b->iterations)
		rtb_finish(p->b);
}

/* Shard 0: encode into every free buffer, then again next turn. */
static void pipe_pump(void *arg)
{
	struct pipe_state *p = arg;

	while (p->nfree && p->sent < p->b->iterations) {
		uint8_t *buf = p->free_stack[--p->nfree];

		pc_frame_header_encode(buf, (uint32_t)p->sent, 0, p->body);
		memcpy(buf + PC_FRAME_HEADER_LEN, p->src, p->body);
		if (pc_shard_submit(1, pipe_decode, buf)) {
			p->free_stack[p->nfree++] = buf;
			break;
		}
		p->sent++;
	}
	if (p->sent < p->b->iterations)
		pc_reactor_defer(pc_shard_reactor(), pipe_pump, p);
}

/* Shard 0: first touch of the pool here, on shard 0's node. */
static int pipe_alloc(struct pipe_state *p)
{
	size_t size = (PC_FRAME_HEADER_LEN + p->body + PC_CACHE_LINE - 1) & ~(size_t)(PC_CACHE_LINE - 1);

	for (unsigned i = 0; i < POOL; i++) {
		p->bufs[i] = aligned_alloc(PC_CACHE_LINE, size);
		if (!p->bufs[i])
			return -ENOMEM;
		memset(p->bufs[i], 0, size);
	}
	p->src = malloc(p->body);
	if (!p->src)
		return -ENOMEM;
	for (size_t i = 0; i < p->body; i++)
		p->src[i] = (uint8_t)(i * 131 + 7);
	return 0;
}

static void pipe_job(void *arg)
{
	struct rtb *b = arg;
	struct pipe_state *p = b->user;

	if (!p->src && pipe_alloc(p)) {
		rtb_finish(b);
		return;
	}
	p->b = b;
	p->nfree = POOL;
	for (unsigned i = 0; i < POOL; i++)
		p->free_stack[i] = p->bufs[i];
	p->sent = 0;
	p->received = 0;
	b->items = b->iterations;
	b->bytes = b->iterations * (PC_FRAME_HEADER_LEN + p->body);
	rtb_begin(b);
	pipe_pump(p);
}

static int pipe_setup(struct pc_bench_state *st)
{
	memset(&pipe_st, 0, sizeof(pipe_st));
	pipe_st.body = (size_t)st->bench->arg;
	return rtb_setup(st, 2, PC_IDLE_SPIN, RING, &pipe_st);
}

static void pipe_run(struct pc_bench_state *st)
{
	rtb_run(st, 0, pipe_job);
	if (pipe_st.bad)
		pc_bench_counter(st, "bad_frames", (double)pipe_st.bad);
}

static void pipe_teardown(struct pc_bench_state *st)
{
	rtb_teardown(st);
	for (unsigned i = 0; i < POOL; i++)
		free(pipe_st.bufs[i]);
	free(pipe_st.src);
}

#define PIPE(n)                                                                  \
	{ .name = "FramePipeline/" #n, .arg = n,                                 \
	  .flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,                     \
	  .setup = pipe_setup, .run = pipe_run, .teardown = pipe_teardown }

static const struct pc_bench pipe_rows[] = { PIPE(64), PIPE(512), PIPE(4096) };

__attribute__((constructor)) static void register_pipe_rows(void)
{
	for (size_t i = 0; i < PC_ARRAY_LEN(pipe_rows); i++)
		pc_bench_register(&pipe_rows[i]);
}
