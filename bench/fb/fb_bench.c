/* SPDX-License-Identifier: MIT */
/* FlatBuffers: the cost of building, verifying and reading chat bodies.
 *
 *   FlatBuffers/Build/64     one chat Message whose buffer is 64 bytes (a
 *                            fan-out message: the server's commonest body)
 *   FlatBuffers/Build/4096   a History of Messages, about 4096 bytes
 *   FlatBuffers/Verify/4096  verify that History (what every received body
 *                            costs before a handler sees it)
 *   FlatBuffers/Read/4096    verify it, then read every field of every
 *                            message (strings touched, not just located)
 *
 * Rates are bytes of finished buffer per second. Build rebuilds into the
 * same space each iteration, as a session does into its output space. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/bench.h"
#include "percore/fb_chat.h"

#define SPACE 8192

struct fb_ctx {
	uint8_t *space;         /* SPACE bytes, 64-aligned */
	size_t text_len;        /* Build/64: text length giving 64 bytes */
	unsigned nmsgs;         /* 4096: messages giving about 4096 bytes */
	const void *buf;        /* Verify, Read: the built History */
	size_t len;
};

static const char text[] = "The quick brown fox jumps over the lazy dog; "
			   "pack my box with five dozen liquor jugs.";

/* Three strings and a u64 need 64 bytes at the least, so Build/64 uses
 * short names and as much text as still fits. */
static int build_message(struct pc_fb_builder *b, size_t text_len, uint64_t seq)
{
	pc_fb_builder_reset(b);
	return pc_fb_message_build(b, "go", 2, "al", 2, text, text_len, seq);
}

/* A History of n messages of varied text length. */
static int build_history(struct pc_fb_builder *b, unsigned n)
{
	pc_fb_ref m[128];
	static const char *users[] = { "ann", "bob", "carol", "dave" };

	pc_fb_builder_reset(b);
	for (unsigned i = 0; i < n; i++)
		m[i] = pc_fb_message_create(b, "lobby", 5, users[i % 4], strlen(users[i % 4]),
					    text, 20 + (i * 7) % 60, 1000 + i);
	return pc_fb_history_build(b, "lobby", 5, m, n);
}

/* Sizes are found by building, so the figures stay true if the format
 * details (padding, vtable sharing) change. */
static int size_to(struct fb_ctx *c, struct pc_fb_builder *b, size_t target)
{
	size_t len = 0;

	if (target <= 256) {
		for (c->text_len = 0; c->text_len < sizeof(text) - 1; c->text_len++) {
			if (build_message(b, c->text_len + 1, 1) ||
			    (pc_fb_builder_data(b, &len), len > target))
				break;
		}
		return build_message(b, c->text_len, 1);
	}
	for (c->nmsgs = 1; c->nmsgs < 128; c->nmsgs++) {
		if (build_history(b, c->nmsgs + 1) || (pc_fb_builder_data(b, &len), len > target))
			break;
	}
	return build_history(b, c->nmsgs);
}

static int fb_setup(struct pc_bench_state *st)
{
	struct fb_ctx *c = calloc(1, sizeof(*c));
	struct pc_fb_builder b;
	int err;

	if (!c)
		return -ENOMEM;
	c->space = aligned_alloc(64, SPACE);
	err = c->space ? pc_fb_builder_init(&b, c->space, SPACE) : -ENOMEM;
	if (!err)
		err = size_to(c, &b, (size_t)st->bench->arg);
	if (err) {
		free(c->space);
		free(c);
		return err;
	}
	c->buf = pc_fb_builder_data(&b, &c->len);
	st->ctx = c;
	return 0;
}

/* The size the search settled on, so a row says what it measured. */
static void describe(struct pc_bench_state *st)
{
	const struct fb_ctx *c = st->ctx;

	pc_bench_counter(st, "buffer_bytes", (double)c->len);
	pc_bench_counter(st, "messages", c->nmsgs ? c->nmsgs : 1);
}

static void fb_teardown(struct pc_bench_state *st)
{
	struct fb_ctx *c = st->ctx;

	free(c->space);
	free(c);
}

static void build_run(struct pc_bench_state *st)
{
	struct fb_ctx *c = st->ctx;
	struct pc_fb_builder b;
	size_t len = 0;

	pc_fb_builder_init(&b, c->space, SPACE);
	for (uint64_t i = 0; i < st->iterations; i++) {
		if (c->nmsgs)
			build_history(&b, c->nmsgs);
		else
			build_message(&b, c->text_len, i);
		PC_DO_NOT_OPTIMIZE(pc_fb_builder_data(&b, &len));
	}
	st->bytes = st->iterations * len;
	describe(st);
}

static void verify_run(struct pc_bench_state *st)
{
	struct fb_ctx *c = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++) {
		int err = pc_fb_verify(c->buf, c->len, &pc_fb_history_desc, NULL, NULL);

		PC_DO_NOT_OPTIMIZE(err);
	}
	st->bytes = st->iterations * c->len;
	describe(st);
}

/* Fold a string in: its length and its first and last bytes, so every
 * string is located and touched. */
static uint64_t touch(const char *s, uint32_t n)
{
	return n + (uint8_t)s[0] + (n ? (uint8_t)s[n - 1] : 0);
}

static uint64_t read_all(const struct fb_ctx *c)
{
	const struct pc_fb_history *h;
	const void *msgs;
	uint32_t n, len;
	uint64_t sum;

	if (pc_fb_history_read(c->buf, c->len, &h))
		return 0;
	sum = touch(pc_fb_history_room(h, &len), len);
	msgs = pc_fb_history_messages(h, &n);
	for (uint32_t i = 0; i < n; i++) {
		const struct pc_fb_message *m = pc_fb_history_message(msgs, i);
		const char *s;

		s = pc_fb_message_room(m, &len);
		sum += touch(s, len);
		s = pc_fb_message_user(m, &len);
		sum += touch(s, len);
		s = pc_fb_message_text(m, &len);
		sum += touch(s, len);
		sum += pc_fb_message_seq(m);
	}
	return sum;
}

static void read_run(struct pc_bench_state *st)
{
	struct fb_ctx *c = st->ctx;

	for (uint64_t i = 0; i < st->iterations; i++) {
		uint64_t sum = read_all(c);

		PC_DO_NOT_OPTIMIZE(sum);
	}
	st->bytes = st->iterations * c->len;
	describe(st);
}

#define FB_BENCH(var, nm, size, fn)                                           \
	static const struct pc_bench var = {                                  \
		.name = nm, .arg = size, .setup = fb_setup, .run = fn,        \
		.teardown = fb_teardown,                                      \
	};                                                                    \
	PC_BENCH_REGISTER(var)

FB_BENCH(fb_build_64, "FlatBuffers/Build/64", 64, build_run)
FB_BENCH(fb_build_4096, "FlatBuffers/Build/4096", 4096, build_run)
FB_BENCH(fb_verify_4096, "FlatBuffers/Verify/4096", 4096, verify_run)
FB_BENCH(fb_read_4096, "FlatBuffers/Read/4096", 4096, read_run)
