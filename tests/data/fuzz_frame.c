/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a byte stream fed in random chunks through a ring
 * buffer (either mode, several capacities) and decoded frame by frame must
 * give exactly what decoding the whole stream at once gives, must never
 * read outside the buffer (ASan), and every frame must survive
 * decode(encode(x)) == x.
 *
 * Input: [config byte][8-byte chunking seed][stream...]. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/frame.h"
#include "fuzz_check.h"


/* Rings live across inputs: mapping one per input would make the fuzzer
 * spend its time in mmap. Index: config bits 0-2. */
static const struct { size_t cap; unsigned flags; } configs[8] = {
	{ 16, 0 }, { 64, 0 }, { 4096, 0 }, { 65536, 0 },
	{ 4096, PC_RINGBUF_MIRRORED }, { 8192, PC_RINGBUF_MIRRORED },
	{ 65536, PC_RINGBUF_MIRRORED }, { 200, 0 },
};
static struct pc_ringbuf rings[8];
static bool ready[8];
static struct pc_ringbuf scratch;   /* for re-encoding */

static const uint32_t max_bodies[4] = { 0, 40, 1000, PC_FRAME_MAX_BODY_CAP };

static struct pc_ringbuf *ring(unsigned i)
{
	if (!ready[i]) {
		int err = pc_ringbuf_init(&rings[i], configs[i].cap, configs[i].flags);
		if (err && configs[i].flags) /* no memfd here: plain instead */
			err = pc_ringbuf_init(&rings[i], configs[i].cap, 0);
		CHECK(err == 0);
		ready[i] = true;
	}
	pc_ringbuf_reset(&rings[i]);
	return &rings[i];
}

static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Decoding the stream as one buffer: the frames' offsets and how it ends
 * (an error, or -EAGAIN for an incomplete tail). A frame larger than the
 * ring can never be completed in it: the ring says -EMSGSIZE for that. */
struct reference {
	size_t n, *at;
	int end;
	size_t end_at;
};

static void decode_whole(const uint8_t *s, size_t len, uint32_t max, size_t cap,
			 struct reference *ref)
{
	struct pc_frame f = { 0 };
	size_t at = 0;

	ref->n = 0;
	for (;;) {
		int err = pc_frame_parse(s + at, len - at, max, &f);
		if (!err && pc_frame_size(&f) > cap)
			err = -EMSGSIZE;
		if (err == -EAGAIN) {
			/* Complete header of a frame that cannot fit: refused
			 * as soon as the header is in. */
			if (len - at >= PC_FRAME_HEADER_LEN &&
			    pc_frame_header_check(s + at, len - at, max, &f) == 0 &&
			    pc_frame_size(&f) > cap)
				err = -EMSGSIZE;
		}
		if (err) {
			ref->end = err;
			ref->end_at = at;
			return;
		}
		ref->at[ref->n++] = at;
		at += pc_frame_size(&f);
	}
}

static void same_frame(const struct pc_frame *f, const uint8_t *s, size_t at)
{
	struct pc_frame g;

	CHECK(pc_frame_parse(s + at, PC_FRAME_HEADER_LEN + f->len, PC_FRAME_MAX_BODY_CAP, &g) == 0);
	CHECK(f->msg_id == g.msg_id && f->flags == g.flags && f->len == g.len);
	CHECK(memcmp(f->body, g.body, f->len) == 0);
}

/* decode(encode(x)) == x, through a ring and through an iovec pair. */
static void round_trip(const struct pc_frame *x)
{
	struct pc_frame y;
	uint8_t h[PC_FRAME_HEADER_LEN];
	struct iovec iov[2] = { { 0 } };

	if (!scratch._buf)
		CHECK(pc_ringbuf_init(&scratch, 1 << 17, 0) == 0);
	pc_ringbuf_reset(&scratch);
	if (x->len > (1 << 17) - PC_FRAME_HEADER_LEN)
		return;
	CHECK(pc_frame_write(&scratch, x->msg_id, x->flags, x->body, x->len) == 0);
	CHECK(pc_frame_peek(&scratch, PC_FRAME_MAX_BODY_CAP, &y) == 0);
	CHECK(y.msg_id == x->msg_id && y.flags == x->flags && y.len == x->len);
	CHECK(memcmp(y.body, x->body, x->len) == 0);
	CHECK(pc_frame_consume(&scratch, &y) == 0 && pc_ringbuf_used(&scratch) == 0);

	CHECK(pc_frame_encode_iov(h, iov, x->msg_id, x->flags, x->body, x->len) == 0);
	CHECK(pc_ringbuf_write(&scratch, iov[0].iov_base, iov[0].iov_len) == 0);
	CHECK(pc_ringbuf_write(&scratch, iov[1].iov_base, iov[1].iov_len) == 0);
	CHECK(pc_frame_peek(&scratch, PC_FRAME_MAX_BODY_CAP, &y) == 0);
	CHECK(y.msg_id == x->msg_id && y.flags == x->flags && y.len == x->len);
	CHECK(memcmp(y.body, x->body, x->len) == 0);
}

/* Copy as much of the chunk as fits, the way recv() fills the spans. */
static size_t feed(struct pc_ringbuf *rb, const uint8_t *p, size_t n)
{
	struct iovec iov[2] = { { 0 } };
	int k = pc_ringbuf_write_iov(rb, iov);
	size_t done = 0;

	for (int i = 0; i < k && done < n; i++) {
		size_t c = iov[i].iov_len < n - done ? iov[i].iov_len : n - done;
		memcpy(iov[i].iov_base, p + done, c);
		done += c;
	}
	CHECK(pc_ringbuf_commit(rb, done) == 0);
	return done;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 9)
		return 0;
	unsigned config = data[0];
	uint64_t seed;
	memcpy(&seed, data + 1, sizeof(seed));
	const uint8_t *s = data + 9;
	size_t len = size - 9;
	struct pc_ringbuf *rb = ring(config & 7);
	uint32_t max = max_bodies[(config >> 3) & 3];
	size_t max_chunk = (config & 0x20) ? 1 + (size_t)(config >> 6) * 7 : len + 1;

	struct reference ref = { .at = malloc((len / PC_FRAME_HEADER_LEN + 1) * sizeof(size_t)) };
	CHECK(ref.at);
	decode_whole(s, len, max, pc_ringbuf_capacity(rb), &ref);

	size_t fed = 0, next = 0;
	int end = -EAGAIN;
	while (end == -EAGAIN) {
		size_t chunk = 1 + (size_t)(next_rand(&seed) % max_chunk);
		if (chunk > len - fed)
			chunk = len - fed;
		fed += feed(rb, s + fed, chunk);
		struct pc_frame f = { 0 };
		while ((end = pc_frame_peek(rb, max, &f)) == 0) {
			CHECK(next < ref.n);
			same_frame(&f, s, ref.at[next++]);
			round_trip(&f);
			CHECK(pc_frame_consume(rb, &f) == 0);
		}
		if (fed == len)
			break;
	}
	/* The same frames, and the same ending at the same place. */
	CHECK(next == ref.n);
	CHECK(end == ref.end);
	CHECK(fed - pc_ringbuf_used(rb) == ref.end_at);

	/* The input itself as a body, with an id and flags from its head. */
	struct pc_frame x = { .msg_id = (uint32_t)seed, .flags = (uint8_t)(config & 3),
			      .len = (uint32_t)(len > 65536 ? 65536 : len), .body = s };
	round_trip(&x);
	free(ref.at);
	return 0;
}
