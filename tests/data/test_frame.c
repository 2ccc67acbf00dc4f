/* SPDX-License-Identifier: MIT */
/* Frame codec: round trips of every size class in both ring modes and
 * across the wrap; every malformed header refused as soon as its bytes
 * arrive, losing nothing; streams split at every byte boundary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "percore/frame.h"
#include "testutil.h"

/* Head and tail at pos, so the next frame starts there. */
static void move_to(struct pc_ringbuf *rb, size_t pos)
{
	pc_ringbuf_reset(rb);
	size_t len;
	pc_ringbuf_write_span(rb, &len);
	assert_int_equal(pc_ringbuf_commit(rb, pos), 0);
	assert_int_equal(pc_ringbuf_consume(rb, pos), 0);
}

static void fill_body(uint8_t *b, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 31 + seed);
}

static void expect_frame(struct pc_ringbuf *rb, uint32_t max, uint32_t id, uint8_t flags,
			 const uint8_t *body, size_t len)
{
	struct pc_frame f = { 0 };

	assert_int_equal(pc_frame_peek(rb, max, &f), 0);
	assert_int_equal(f.msg_id, id);
	assert_int_equal(f.flags, flags);
	assert_int_equal(f.len, len);
	if (len)
		assert_memory_equal(f.body, body, len);
	assert_int_equal(pc_frame_consume(rb, &f), 0);
}

static void round_trips_of_every_size_class(void **state)
{
	static const size_t sizes[] = { 0, 1, 2, 11, 12, 13, 255, 256, 257, 4095, 4096, 4097,
					65535, 65536, 65537, PC_FRAME_MAX_BODY_DEFAULT };
	size_t cap = 2 * PC_FRAME_MAX_BODY_DEFAULT;
	uint8_t *body = malloc(PC_FRAME_MAX_BODY_DEFAULT);
	(void)state;
	assert_non_null(body);
	for (int mode = 0; mode < 2; mode++) {
		struct pc_ringbuf rb;
		assert_int_equal(pc_ringbuf_init(&rb, cap, mode ? PC_RINGBUF_MIRRORED : 0), 0);
		for (size_t i = 0; i < PC_ARRAY_LEN(sizes); i++) {
			size_t len = sizes[i];
			/* At the start, and with the frame (header too) wrapping. */
			size_t starts[] = { 0, cap - len / 2 - 1, cap - 5 };
			for (size_t s = 0; s < PC_ARRAY_LEN(starts); s++) {
				uint32_t id = (uint32_t)(0xfedcba98u ^ (i << 8) ^ s);
				uint8_t flags = (uint8_t)((i + s) & PC_FRAME_FLAGS_KNOWN);
				fill_body(body, len, id);
				move_to(&rb, starts[s]);
				assert_int_equal(pc_frame_write(&rb, id, flags, body, len), 0);
				assert_int_equal(pc_ringbuf_used(&rb), PC_FRAME_HEADER_LEN + len);
				expect_frame(&rb, 0, id, flags, body, len);
				assert_int_equal(pc_ringbuf_used(&rb), 0);

				/* The iovec encoding gives the same bytes. */
				uint8_t h[PC_FRAME_HEADER_LEN];
				struct iovec iov[2] = { { 0 } };
				assert_int_equal(pc_frame_encode_iov(h, iov, id, flags, body, len), 0);
				assert_ptr_equal(iov[1].iov_base, body);
				assert_int_equal(pc_ringbuf_write(&rb, iov[0].iov_base, iov[0].iov_len), 0);
				assert_int_equal(pc_ringbuf_write(&rb, iov[1].iov_base, iov[1].iov_len), 0);
				expect_frame(&rb, 0, id, flags, body, len);
			}
		}
		pc_ringbuf_destroy(&rb);
	}
	free(body);
}

static void header_is_big_endian(void **state)
{
	uint8_t h[PC_FRAME_HEADER_LEN];
	static const uint8_t want[PC_FRAME_HEADER_LEN] = { 1, 3, 0x12, 0x34, 0x56, 0x78,
							   0, 0x01, 0x02, 0x03, 0, 0 };
	struct pc_frame f = { 0 };
	(void)state;
	assert_int_equal(pc_frame_header_encode(h, 0x12345678, 3, 0x010203), 0);
	assert_memory_equal(h, want, sizeof(want));
	/* A parse of a contiguous buffer needs the whole body. */
	assert_int_equal(pc_frame_parse(h, sizeof(h), PC_FRAME_MAX_BODY_CAP, &f), -EAGAIN);
	assert_int_equal(f.len, 0x010203);
	assert_int_equal(f.msg_id, 0x12345678);
}

/* A valid header with one field spoiled. */
struct bad {
	const char *what;
	unsigned byte;        /* the byte that shows the fault */
	uint8_t value;
	int err;
};

static const struct bad bads[] = {
	{ "version 0", 0, 0, -EPROTO },
	{ "version 2", 0, 2, -EPROTO },
	{ "version 255", 0, 255, -EPROTO },
	{ "flag bit 2", 1, 0x04, -EPROTO },
	{ "flag bit 3", 1, 0x08, -EPROTO },
	{ "flag bit 4", 1, 0x10, -EPROTO },
	{ "flag bit 5", 1, 0x20, -EPROTO },
	{ "flag bit 6", 1, 0x40, -EPROTO },
	{ "flag bit 7", 1, 0x80, -EPROTO },
	{ "reserved high byte", 10, 0x01, -EPROTO },
	{ "reserved low byte", 11, 0x80, -EPROTO },
	{ "length 2^24", 6, 0x01, -EMSGSIZE },
	{ "length 2^32-1", 6, 0xff, -EMSGSIZE },
};

static void make_bad(uint8_t *h, const struct bad *b)
{
	assert_int_equal(pc_frame_header_encode(h, 7, 0, 100), 0);
	h[b->byte] = b->value;
	if (!strcmp(b->what, "length 2^32-1"))
		memset(h + 6, 0xff, 4);
}

/* Each fault is refused once the byte showing it has arrived (not before),
 * whatever the ring mode or position, and the ring keeps every byte. */
static void malformed_headers_refused_early_losing_nothing(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct pc_ringbuf rb;
		assert_int_equal(pc_ringbuf_init(&rb, 4096, mode ? PC_RINGBUF_MIRRORED : 0), 0);
		for (size_t i = 0; i < PC_ARRAY_LEN(bads); i++) {
			for (size_t start = 4096 - 13; start <= 4096; start++) {
				uint8_t h[PC_FRAME_HEADER_LEN];
				unsigned shows = bads[i].byte;
				struct pc_frame f = { 0 };
				make_bad(h, &bads[i]);
				if (bads[i].err == -EMSGSIZE)
					shows = 9;  /* the length's last byte */
				move_to(&rb, start);
				for (unsigned k = 0; k < PC_FRAME_HEADER_LEN; k++) {
					assert_int_equal(pc_ringbuf_write(&rb, h + k, 1), 0);
					int err = pc_frame_peek(&rb, 0, &f);
					if (err != (k < shows ? -EAGAIN : bads[i].err)) {
						fprintf(stderr, "%s, %u bytes: %d\n", bads[i].what, k + 1, err);
						fail();
					}
					assert_int_equal(pc_ringbuf_used(&rb), k + 1);
				}
				uint8_t back[PC_FRAME_HEADER_LEN];
				assert_int_equal(pc_ringbuf_peek(&rb, back, sizeof(back)), 0);
				assert_memory_equal(back, h, sizeof(h));
			}
		}
		pc_ringbuf_destroy(&rb);
	}
}

static void body_limits(void **state)
{
	struct pc_ringbuf rb;
	uint8_t h[PC_FRAME_HEADER_LEN];
	struct pc_frame f = { 0 };
	(void)state;
	assert_int_equal(pc_ringbuf_init(&rb, 1 << 16, 0), 0);
	/* The configured maximum, the default and the hard cap. */
	assert_int_equal(pc_frame_max_body(0), PC_FRAME_MAX_BODY_DEFAULT);
	assert_int_equal(pc_frame_max_body(100), 100);
	assert_int_equal(pc_frame_max_body(UINT32_MAX), PC_FRAME_MAX_BODY_CAP);
	assert_int_equal(pc_frame_header_encode(h, 1, 0, 101), 0);
	assert_int_equal(pc_ringbuf_write(&rb, h, sizeof(h)), 0);
	assert_int_equal(pc_frame_peek(&rb, 100, &f), -EMSGSIZE);
	assert_int_equal(pc_frame_peek(&rb, 101, &f), -EAGAIN);
	pc_ringbuf_reset(&rb);
	assert_int_equal(pc_frame_header_encode(h, 1, 0, PC_FRAME_MAX_BODY_DEFAULT + 1), 0);
	assert_int_equal(pc_ringbuf_write(&rb, h, sizeof(h)), 0);
	assert_int_equal(pc_frame_peek(&rb, 0, &f), -EMSGSIZE);
	pc_ringbuf_reset(&rb);
	assert_int_equal(pc_frame_header_encode(h, 1, 0, PC_FRAME_MAX_BODY_CAP), 0);
	assert_int_equal(pc_ringbuf_write(&rb, h, sizeof(h)), 0);
	/* Allowed by the maximum, but larger than this ring: never completes. */
	assert_int_equal(pc_frame_peek(&rb, UINT32_MAX, &f), -EMSGSIZE);
	pc_ringbuf_reset(&rb);
	/* Above the hard cap even when the configuration asks for more. */
	h[6] = 0x01; h[7] = 0; h[8] = 0; h[9] = 1;
	assert_int_equal(pc_ringbuf_write(&rb, h, sizeof(h)), 0);
	assert_int_equal(pc_frame_peek(&rb, UINT32_MAX, &f), -EMSGSIZE);
	pc_ringbuf_destroy(&rb);
}

static void encode_refusals_write_nothing(void **state)
{
	struct pc_ringbuf rb;
	uint8_t h[PC_FRAME_HEADER_LEN], body[256] = { 0 };
	struct iovec iov[2] = { { 0 } };
	(void)state;
	assert_int_equal(pc_ringbuf_init(&rb, 256, 0), 0);
	for (unsigned bit = 2; bit < 8; bit++) {
		assert_int_equal(pc_frame_write(&rb, 1, (uint8_t)(1u << bit), body, 1), -EINVAL);
		assert_int_equal(pc_frame_encode_iov(h, iov, 1, (uint8_t)(1u << bit), body, 1), -EINVAL);
	}
	assert_int_equal(pc_frame_header_encode(h, 1, 0, PC_FRAME_MAX_BODY_CAP + 1), -EMSGSIZE);
	assert_int_equal(pc_frame_write(&rb, 1, 0, body, 256 - 11), -EMSGSIZE);
	assert_int_equal(pc_frame_write(&rb, 1, 0, body, 200), 0);
	assert_int_equal(pc_frame_write(&rb, 2, 0, body, 50), -EAGAIN);
	assert_int_equal(pc_ringbuf_used(&rb), 212);
	assert_int_equal(pc_frame_write(&rb, 3, PC_FRAME_HEARTBEAT, NULL, 0), 0);
	expect_frame(&rb, 0, 1, 0, body, 200);
	expect_frame(&rb, 0, 3, PC_FRAME_HEARTBEAT, NULL, 0);
	assert_int_equal(pc_ringbuf_used(&rb), 0);
	struct pc_frame f = { .len = 5 };
	assert_int_equal(pc_frame_consume(&rb, &f), -EINVAL);
	pc_ringbuf_destroy(&rb);
}

/* A stream of frames of assorted sizes and flags, as bytes. */
static size_t build_stream(uint8_t *out, size_t cap, uint32_t *ids, size_t *lens, size_t *n)
{
	static const size_t sizes[] = { 0, 1, 5, 11, 12, 13, 40, 0, 100, 3 };
	uint8_t body[128];
	size_t used = 0;

	for (size_t i = 0; i < PC_ARRAY_LEN(sizes); i++) {
		uint8_t h[PC_FRAME_HEADER_LEN];
		ids[i] = (uint32_t)(i * 0x01010101u);
		lens[i] = sizes[i];
		fill_body(body, sizes[i], ids[i]);
		assert_int_equal(pc_frame_header_encode(h, ids[i], (uint8_t)(i & 3), sizes[i]), 0);
		assert_true(used + sizeof(h) + sizes[i] <= cap);
		memcpy(out + used, h, sizeof(h));
		memcpy(out + used + sizeof(h), body, sizes[i]);
		used += sizeof(h) + sizes[i];
	}
	*n = PC_ARRAY_LEN(sizes);
	return used;
}

/* Decode every complete frame; returns how many were checked. */
static size_t drain(struct pc_ringbuf *rb, const uint32_t *ids, const size_t *lens, size_t next)
{
	struct pc_frame f = { 0 };
	uint8_t body[128];
	int err;

	while ((err = pc_frame_peek(rb, 0, &f)) == 0) {
		fill_body(body, lens[next], ids[next]);
		assert_int_equal(f.msg_id, ids[next]);
		assert_int_equal(f.flags, next & 3);
		assert_int_equal(f.len, lens[next]);
		if (f.len)
			assert_memory_equal(f.body, body, f.len);
		assert_int_equal(pc_frame_consume(rb, &f), 0);
		next++;
	}
	assert_int_equal(err, -EAGAIN);
	return next;
}

static void streams_split_at_every_byte(void **state)
{
	uint8_t stream[512];
	uint32_t ids[16];
	size_t lens[16], n;
	size_t total = build_stream(stream, sizeof(stream), ids, lens, &n);
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct pc_ringbuf rb;
		assert_int_equal(pc_ringbuf_init(&rb, 4096, mode ? PC_RINGBUF_MIRRORED : 0), 0);
		size_t cap = pc_ringbuf_capacity(&rb);
		for (size_t split = 0; split <= total; split++) {
			/* Two places: no wrap, and the split at the buffer's end. */
			size_t starts[] = { 0, cap - split };
			for (size_t s = 0; s < 2; s++) {
				move_to(&rb, starts[s] % cap);
				assert_int_equal(pc_ringbuf_write(&rb, stream, split), 0);
				size_t done = drain(&rb, ids, lens, 0);
				assert_int_equal(pc_ringbuf_write(&rb, stream + split, total - split), 0);
				assert_int_equal(drain(&rb, ids, lens, done), n);
				assert_int_equal(pc_ringbuf_used(&rb), 0);
			}
		}
		/* One byte at a time. */
		move_to(&rb, cap - 100);
		size_t done = 0;
		for (size_t i = 0; i < total; i++) {
			assert_int_equal(pc_ringbuf_write(&rb, stream + i, 1), 0);
			done = drain(&rb, ids, lens, done);
		}
		assert_int_equal(done, n);
		pc_ringbuf_destroy(&rb);
	}
}

/* pc_frame_parse on a contiguous buffer: every prefix of the stream is
 * either incomplete or the same frame. */
static void parse_every_prefix(void **state)
{
	uint8_t stream[512];
	uint32_t ids[16];
	size_t lens[16], n;
	size_t total = build_stream(stream, sizeof(stream), ids, lens, &n), at = 0;
	(void)state;
	for (size_t i = 0; i < n; i++) {
		struct pc_frame f = { 0 };
		size_t size = PC_FRAME_HEADER_LEN + lens[i];
		for (size_t k = 0; k < size; k++)
			assert_int_equal(pc_frame_parse(stream + at, k, 0, &f), -EAGAIN);
		assert_int_equal(pc_frame_parse(stream + at, total - at, 0, &f), 0);
		assert_int_equal(f.msg_id, ids[i]);
		assert_int_equal(pc_frame_size(&f), size);
		assert_ptr_equal(f.body, stream + at + PC_FRAME_HEADER_LEN);
		at += size;
	}
	assert_int_equal(at, total);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trips_of_every_size_class),
		cmocka_unit_test(header_is_big_endian),
		cmocka_unit_test(malformed_headers_refused_early_losing_nothing),
		cmocka_unit_test(body_limits),
		cmocka_unit_test(encode_refusals_write_nothing),
		cmocka_unit_test(streams_split_at_every_byte),
		cmocka_unit_test(parse_every_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
