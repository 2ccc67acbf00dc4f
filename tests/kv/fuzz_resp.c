/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the RESP2 request parser: any input, split into
 * reads at points the fuzzer chooses, must parse to the same requests as
 * the whole input at once and as the input fed one byte at a time (which
 * never offers the parser a whole request before it has begun reading
 * it, so the one-pass reading of whole requests meets the incremental
 * one), must never read outside the buffer (ASan), and an error must
 * come with Redis's "Protocol error: " text. The look ahead
 * (kv_resp_peek) must agree with the parse on every request both take:
 * its length, its count and the arguments it keeps.
 *
 * Input: [split seed byte][stream...]. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "fuzz_check.h"


/* A digest of every request parsed, then the final status. */
struct outcome {
	uint64_t hash;
	unsigned requests;
	long status;   /* 0: input ended waiting; or the error */
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Parses in[0..len) in reads: the whole of it for seed 0, a byte a time
 * for BYTEWISE, otherwise 1 to 64 bytes as the seed's generator says. */
#define BYTEWISE 256u

static struct outcome run(const uint8_t *in, size_t len, unsigned seed)
{
	struct outcome o = { 0xcbf29ce484222325ull, 0, 0 };
	struct kv_parser p;
	struct kv_resp_req req;
	/* small limits so the fuzzer reaches them */
	struct kv_resp_limits lim = { .max_bulk = 4096, .max_args = 64 };
	CHECK(kv_resp_init(&p, &lim) == 0);
	size_t start = 0, have = 0;
	uint32_t x = seed | 1;
	while (start < len) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		size_t step = seed == BYTEWISE ? 1 : seed ? 1 + x % 64 : len;
		have = have + step > len - start ? len - start : have + step;
		long r;
		/* room for some of the arguments, chosen by the input */
		const char *argv[64];
		size_t argl[64];
		uint32_t room = 1 + (uint32_t)(len % 64);
		struct kv_resp_peeked q;
		size_t peeked;
		while ((peeked = seed ? 0 : kv_resp_peek((const char *)in + start, have, argv, argl, room, &q), 1) &&
		       (r = kv_resp_parse(&p, (const char *)in + start, have, &req)) > 0) {
			CHECK((size_t)r <= have);
			/* the parser may hold a partial request's state (split
			 * reads): the look ahead is compared on whole reads */
			if (peeked) {
				CHECK(peeked == (size_t)r && q.argc == req.argc);
				CHECK(q.kept == (req.argc < room ? req.argc : room));
				for (unsigned i = 0; i < q.kept; i++)
					CHECK(argv[i] == req.argv[i] && argl[i] == req.argl[i]);
			}
			for (unsigned i = 0; i < req.argc; i++) {
				o.hash = mix(o.hash, &req.argl[i], sizeof(req.argl[i]));
				o.hash = mix(o.hash, req.argv[i], req.argl[i]);
			}
			o.requests++;
			start += (size_t)r;
			have -= (size_t)r;
		}
		if (r < 0) {
			CHECK(r == -EPROTO);
			CHECK(strncmp(p.error, "Protocol error: ", 16) == 0);
			o.status = r;
			break;
		}
		if (have == len - start)
			break;   /* all of it offered: waiting for more */
	}
	kv_resp_free(&p);
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct outcome whole = run(data + 1, size - 1, 0);
	struct outcome split = run(data + 1, size - 1, data[0]);
	struct outcome bytes = run(data + 1, size - 1, BYTEWISE);
	CHECK(whole.requests == split.requests && whole.requests == bytes.requests);
	CHECK(whole.hash == split.hash && whole.hash == bytes.hash);
	CHECK(whole.status == split.status && whole.status == bytes.status);
	return 0;
}
