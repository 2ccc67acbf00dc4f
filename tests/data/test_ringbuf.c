/* SPDX-License-Identifier: MIT */
/* Ring buffer: both modes against a byte-exact model over millions of
 * random writes and reads across the wrap; refusals change nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <dirent.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/ringbuf.h"
#include "testutil.h"

/* The model: the stream is an endless byte sequence, byte p being pat(p);
 * the ring must hold exactly stream[read, written). */
static uint8_t pat(uint64_t p)
{
	uint64_t z = p * 0x9e3779b97f4a7c15ull;
	return (uint8_t)(z >> 56);
}

static void fill(uint8_t *dst, uint64_t from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = pat(from + i);
}

static void check(const uint8_t *src, uint64_t from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (src[i] != pat(from + i)) {
			fprintf(stderr, "byte %llu: got %u want %u\n",
				(unsigned long long)(from + i), src[i], pat(from + i));
			fail();
		}
}

static void init_rounds_and_refuses(void **state)
{
	struct pc_ringbuf rb;
	(void)state;
	memset(&rb, 0x55, sizeof(rb));
	assert_int_equal(pc_ringbuf_init(&rb, 0, 0), -EINVAL);
	assert_int_equal(pc_ringbuf_init(&rb, PC_RINGBUF_MAX_CAPACITY + 1, 0), -EINVAL);
	assert_int_equal(pc_ringbuf_init(&rb, 64, 0x10), -EINVAL);
	/* rb untouched by the refusals */
	assert_int_equal(rb._mask, 0x5555555555555555ull);
	assert_int_equal(pc_ringbuf_init(&rb, 1000, 0), 0);
	assert_int_equal(pc_ringbuf_capacity(&rb), 1024);
	assert_false(pc_ringbuf_mirrored(&rb));
	assert_int_equal(pc_ringbuf_used(&rb), 0);
	assert_int_equal(pc_ringbuf_space(&rb), 1024);
	pc_ringbuf_destroy(&rb);
	pc_ringbuf_destroy(&rb);  /* twice is harmless */
	/* Mirrored rings must map wherever Linux runs: asserted, never
	 * skipped. */
	assert_int_equal(pc_ringbuf_init(&rb, 100, PC_RINGBUF_MIRRORED), 0);
	assert_int_equal(pc_ringbuf_capacity(&rb), (size_t)sysconf(_SC_PAGESIZE));
	assert_true(pc_ringbuf_mirrored(&rb));
	pc_ringbuf_destroy(&rb);
}

/* A plain ring on the caller's memory: refusals leave rb alone, a wrapped
 * frame is made contiguous inside the 2 x capacity given, and destroy
 * leaves the memory to its owner. */
static void init_at_uses_the_callers_memory(void **state)
{
	static uint8_t mem[2 * 256 + 16];
	struct pc_ringbuf rb;
	uint8_t in[200], out[200];

	(void)state;
	memset(&rb, 0x55, sizeof(rb));
	assert_int_equal(pc_ringbuf_init_at(&rb, NULL, 256), -EINVAL);
	assert_int_equal(pc_ringbuf_init_at(&rb, mem, 0), -EINVAL);
	assert_int_equal(pc_ringbuf_init_at(&rb, mem, 300), -EINVAL);
	assert_int_equal(rb._mask, 0x5555555555555555ull);
	memset(mem + 2 * 256, 0xee, 16); /* past the end: must stay */
	assert_int_equal(pc_ringbuf_init_at(&rb, mem, 256), 0);
	assert_int_equal(pc_ringbuf_capacity(&rb), 256);
	assert_false(pc_ringbuf_mirrored(&rb));
	fill(in, 0, 200);
	assert_int_equal(pc_ringbuf_write(&rb, in, 200), 0);
	assert_int_equal(pc_ringbuf_consume(&rb, 200), 0);
	fill(in, 200, 200);
	assert_int_equal(pc_ringbuf_write(&rb, in, 200), 0); /* wraps after 56 */
	const uint8_t *p = pc_ringbuf_linearize(&rb, 200);
	assert_ptr_equal(p, mem + 200);
	check(p, 200, 200);
	assert_int_equal(pc_ringbuf_read(&rb, out, 200), 0);
	check(out, 200, 200);
	for (int i = 0; i < 16; i++)
		assert_int_equal(mem[2 * 256 + i], 0xee);
	assert_int_equal(pc_ringbuf_validate(&rb, NULL, 0), 0);
	pc_ringbuf_destroy(&rb);
	mem[0] = 1; /* still ours (ASan would see a free of static memory) */
}

static size_t count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	size_t n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* The two mappings alias, and the memfd is not kept open. */
static void mirror_aliases_and_holds_no_fd(void **state)
{
	struct pc_ringbuf rb[16];
	size_t len;
	(void)state;
	size_t fds = count_fds();
	for (int i = 0; i < 16; i++)
		assert_int_equal(pc_ringbuf_init(&rb[i], 8192, PC_RINGBUF_MIRRORED), 0);
	assert_int_equal(count_fds(), fds);
	uint8_t *w = pc_ringbuf_write_span(&rb[0], &len);
	assert_int_equal(len, 8192);
	w[5] = 77;
	assert_int_equal(w[8192 + 5], 77);
	w[8192 + 9] = 99;
	assert_int_equal(w[9], 99);
	for (int i = 0; i < 16; i++)
		pc_ringbuf_destroy(&rb[i]);
}

/* Put a ring at a given position: head = tail = pos. */
static void move_to(struct pc_ringbuf *rb, uint64_t pos)
{
	uint8_t junk[256];
	pc_ringbuf_reset(rb);
	while (pos) {
		size_t n = pos < sizeof(junk) ? (size_t)pos : sizeof(junk);
		if (n > pc_ringbuf_capacity(rb))
			n = pc_ringbuf_capacity(rb);
		assert_int_equal(pc_ringbuf_write(rb, junk, n), 0);
		assert_int_equal(pc_ringbuf_consume(rb, n), 0);
		pos -= n;
	}
}

static void refusals_change_nothing(void **state)
{
	for (int mode = 0; mode < 2; mode++) {
		struct pc_ringbuf rb;
		uint8_t buf[5000], out[5000];
		(void)state;
		assert_int_equal(pc_ringbuf_init(&rb, 4096, mode ? PC_RINGBUF_MIRRORED : 0), 0);
		move_to(&rb, 4000);
		fill(buf, 0, sizeof(buf));
		assert_int_equal(pc_ringbuf_write(&rb, buf, 4097), -EMSGSIZE);
		assert_int_equal(pc_ringbuf_used(&rb), 0);
		assert_int_equal(pc_ringbuf_write(&rb, buf, 3000), 0);
		assert_int_equal(pc_ringbuf_write(&rb, buf + 3000, 1097), -EAGAIN);
		assert_int_equal(pc_ringbuf_used(&rb), 3000);
		assert_int_equal(pc_ringbuf_commit(&rb, 1097), -EINVAL);
		assert_int_equal(pc_ringbuf_consume(&rb, 3001), -EINVAL);
		assert_int_equal(pc_ringbuf_read(&rb, out, 3001), -EAGAIN);
		assert_int_equal(pc_ringbuf_peek(&rb, out, 3001), -EAGAIN);
		assert_null(pc_ringbuf_linearize(&rb, 3001));
		assert_int_equal(pc_ringbuf_used(&rb), 3000);
		/* Everything still there, in order. */
		assert_int_equal(pc_ringbuf_write(&rb, buf + 3000, 1096), 0);
		assert_int_equal(pc_ringbuf_space(&rb), 0);
		assert_int_equal(pc_ringbuf_write(&rb, buf, 1), -EAGAIN);
		assert_int_equal(pc_ringbuf_write(&rb, NULL, 0), 0);
		check(pc_ringbuf_linearize(&rb, 4096), 0, 4096);
		assert_int_equal(pc_ringbuf_read(&rb, out, 4096), 0);
		check(out, 0, 4096);
		pc_ringbuf_destroy(&rb);
	}
}

static void iov_cover_the_wrap(void **state)
{
	struct pc_ringbuf rb;
	struct iovec iov[2] = { { 0 } };
	(void)state;
	assert_int_equal(pc_ringbuf_init(&rb, 256, 0), 0);
	move_to(&rb, 200);
	assert_int_equal(pc_ringbuf_write_iov(&rb, iov), 2);
	assert_int_equal(iov[0].iov_len, 56);
	assert_int_equal(iov[1].iov_len, 200);
	fill(iov[0].iov_base, 0, 56);
	fill(iov[1].iov_base, 56, 100);
	assert_int_equal(pc_ringbuf_commit(&rb, 156), 0);
	assert_int_equal(pc_ringbuf_read_iov(&rb, iov), 2);
	check(iov[0].iov_base, 0, iov[0].iov_len);
	check(iov[1].iov_base, iov[0].iov_len, iov[1].iov_len);
	assert_int_equal(iov[0].iov_len + iov[1].iov_len, 156);
	assert_int_equal(pc_ringbuf_consume(&rb, 156), 0);
	assert_int_equal(pc_ringbuf_read_iov(&rb, iov), 0);
	uint8_t full[256] = { 0 };
	move_to(&rb, 0);
	assert_int_equal(pc_ringbuf_write(&rb, full, 256), 0);
	assert_int_equal(pc_ringbuf_write_iov(&rb, iov), 0);
	pc_ringbuf_destroy(&rb);
}

/* One random operation; the model is [rd, wr) of the pattern stream. */
static void random_op(struct pc_ringbuf *rb, struct rng *r, uint64_t *rd, uint64_t *wr,
		      uint8_t *tmp)
{
	size_t cap = pc_ringbuf_capacity(rb), used = (size_t)(*wr - *rd);
	size_t n = (size_t)rng_below(r, cap + cap / 8 + 2), len;
	struct iovec iov[2] = { { 0 } };
	int err;

	switch (rng_below(r, 8)) {
	case 0: /* copy in */
		fill(tmp, *wr, n);
		err = pc_ringbuf_write(rb, tmp, n);
		assert_int_equal(err, n > cap ? -EMSGSIZE : n > cap - used ? -EAGAIN : 0);
		if (!err)
			*wr += n;
		break;
	case 1: { /* recv-style: span, then commit part of it */
		uint8_t *p = pc_ringbuf_write_span(rb, &len);
		n = len ? (size_t)rng_below(r, len + 1) : 0;
		fill(p, *wr, n);
		assert_int_equal(pc_ringbuf_commit(rb, n), 0);
		*wr += n;
		break;
	}
	case 2: { /* readv-style */
		int k = pc_ringbuf_write_iov(rb, iov);
		size_t done = 0;
		for (int i = 0; i < k; i++) {
			fill(iov[i].iov_base, *wr + done, iov[i].iov_len);
			done += iov[i].iov_len;
		}
		assert_int_equal(done, cap - used);
		n = (size_t)rng_below(r, done + 1);
		assert_int_equal(pc_ringbuf_commit(rb, n), 0);
		*wr += n;
		break;
	}
	case 3: /* copy out */
		err = pc_ringbuf_read(rb, tmp, n);
		assert_int_equal(err, n > used ? -EAGAIN : 0);
		if (!err) {
			check(tmp, *rd, n);
			*rd += n;
		}
		break;
	case 4: { /* send-style: span, then consume part of it */
		const uint8_t *p = pc_ringbuf_read_span(rb, &len);
		check(p, *rd, len);
		n = len ? (size_t)rng_below(r, len + 1) : 0;
		assert_int_equal(pc_ringbuf_consume(rb, n), 0);
		*rd += n;
		break;
	}
	case 5: { /* writev-style */
		int k = pc_ringbuf_read_iov(rb, iov);
		size_t done = 0;
		for (int i = 0; i < k; i++) {
			check(iov[i].iov_base, *rd + done, iov[i].iov_len);
			done += iov[i].iov_len;
		}
		assert_int_equal(done, used);
		break;
	}
	case 6: { /* linearize, then consume it */
		const uint8_t *p = pc_ringbuf_linearize(rb, n);
		if (n > used) {
			assert_null(p);
			break;
		}
		check(p, *rd, n);
		assert_int_equal(pc_ringbuf_consume(rb, n), 0);
		*rd += n;
		break;
	}
	default: /* refusals */
		assert_int_equal(pc_ringbuf_commit(rb, cap - used + 1 + n), -EINVAL);
		assert_int_equal(pc_ringbuf_consume(rb, used + 1 + n), -EINVAL);
		if (n <= used) {
			assert_int_equal(pc_ringbuf_peek(rb, tmp, n), 0);
			check(tmp, *rd, n);
		}
	}
	assert_int_equal(pc_ringbuf_used(rb), *wr - *rd);
	assert_int_equal(pc_ringbuf_space(rb), cap - (*wr - *rd));
	assert_int_equal(pc_ringbuf_validate(rb, NULL, 0), 0);
}

static void random_operations_match_the_model(void **state)
{
	static const size_t plain_caps[] = { 1, 2, 16, 100, 4096 };
	struct rng r = test_rng("test_ringbuf");
	uint64_t ops = test_ops(2000000);
	uint8_t *tmp = malloc(8192 + 1024 + 2);
	(void)state;
	assert_non_null(tmp);
	for (int config = 0; config < 7; config++) {
		struct pc_ringbuf rb;
		bool m = config >= 5;
		size_t cap = m ? 4096u << (config - 5) : plain_caps[config];
		uint64_t rd = 0, wr = 0;

		assert_int_equal(pc_ringbuf_init(&rb, cap, m ? PC_RINGBUF_MIRRORED : 0), 0);
		for (uint64_t i = 0; i < ops / 7; i++)
			random_op(&rb, &r, &rd, &wr, tmp);
		/* Many laps around the buffer. */
		assert_true(wr / pc_ringbuf_capacity(&rb) > 50);
		pc_ringbuf_destroy(&rb);
	}
	free(tmp);
}

/* rb is corrupt: the validator says -EINVAL and its message holds every
 * fragment given (which field, the value found, the range expected). */
static void expect_broken(const struct pc_ringbuf *rb, const char *a, const char *b)
{
	char why[256] = "";

	assert_int_equal(pc_ringbuf_validate(rb, why, sizeof(why)), -EINVAL);
	if (!strstr(why, a) || (b && !strstr(why, b)))
		fail_msg("validator said \"%s\", expected \"%s\"%s%s", why, a, b ? " and " : "",
			 b ? b : "");
}

static void validator_names_what_broke(void **state)
{
	struct pc_ringbuf rb, bad;
	char why[8];

	(void)state;
	assert_int_equal(pc_ringbuf_init(&rb, 4096, 0), 0);
	assert_int_equal(pc_ringbuf_write(&rb, "abcdef", 6), 0);
	memcpy(why, "intact", 7);
	assert_int_equal(pc_ringbuf_validate(&rb, why, sizeof(why)), 0);
	assert_string_equal(why, "intact"); /* untouched when nothing broke */

	bad = rb;
	bad._head = bad._tail + 1; /* consumed a byte never written */
	expect_broken(&bad, "head 7, tail 6", "expected 0..4096");
	bad = rb;
	bad._tail = bad._head + 4097; /* more used than the capacity */
	expect_broken(&bad, "4097 bytes used", "expected 0..4096");
	bad = rb;
	bad._mask = 5;
	expect_broken(&bad, "capacity 6", "power of two");
	bad = rb;
	bad._buf = NULL;
	expect_broken(&bad, "no buffer", NULL);
	expect_broken(NULL, "no buffer", NULL);
	/* Called mirrored, the plain ring's scratch half differs from the
	 * ring: the mirror check names the byte and both values. */
	bad = rb;
	bad._mirrored = true;
	bad._buf[4096] = (uint8_t)(bad._buf[0] ^ 0xff);
	if (sysconf(_SC_PAGESIZE) <= 4096)
		expect_broken(&bad, "byte 0 is 0x61", "mirror at 4096 is 0x9e");
	bad._mask = 2047; /* 2 KiB is less than a page: cannot be mirrored */
	expect_broken(&bad, "capacity 2048", "page size");

	/* A short buffer gets a truncated, terminated message; no buffer, none. */
	bad = rb;
	bad._mask = 5;
	assert_int_equal(pc_ringbuf_validate(&bad, why, sizeof(why)), -EINVAL);
	assert_int_equal(strlen(why), sizeof(why) - 1);
	assert_int_equal(pc_ringbuf_validate(&bad, NULL, 0), -EINVAL);
	pc_ringbuf_destroy(&rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(init_rounds_and_refuses),
		cmocka_unit_test(init_at_uses_the_callers_memory),
		cmocka_unit_test(mirror_aliases_and_holds_no_fd),
		cmocka_unit_test(refusals_change_nothing),
		cmocka_unit_test(iov_cover_the_wrap),
		cmocka_unit_test(random_operations_match_the_model),
		cmocka_unit_test(validator_names_what_broke),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
