/* SPDX-License-Identifier: MIT */
/* RESP2 request parsing: see resp.h. The error texts and the limits follow
 * Redis 7 so that clients see what they would see from Redis. */
#include "resp.h"

#include "errors.h"
#include "num.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROW_FIRST 16u
/* The most arguments a request read whole gets room for at once. */
#define WHOLE_ARGS_MAX 64u

int kv_resp_init(struct kv_parser *p, const struct kv_resp_limits *lim)
{
	memset(p, 0, sizeof(*p));
	p->lim.max_bulk = lim ? lim->max_bulk : KV_RESP_MAX_BULK_DEFAULT;
	p->lim.max_args = lim ? lim->max_args : KV_RESP_MAX_ARGS_DEFAULT;
	p->want = -1;
	p->bulk = -1;
	return 0;
}

void kv_resp_free(struct kv_parser *p)
{
	free(p->spans);
	free(p->argv);
	free(p->argl);
	free(p->scratch);
	memset(p, 0, sizeof(*p));
	p->want = -1;
	p->bulk = -1;
}

void kv_resp_reset(struct kv_parser *p)
{
	p->pos = 0;
	p->want = -1;
	p->bulk = -1;
	p->argc = 0;
}

/* Room for at least n arguments. Grows by doubling, so a request that
 * announces a million arguments costs memory only as they arrive. */
static int reserve(struct kv_parser *p, uint32_t n)
{
	if (n <= p->cap)
		return 0;
	uint32_t cap = p->cap ? p->cap : GROW_FIRST;
	while (cap < n)
		cap *= 2;
	struct kv_resp_span *spans = realloc(p->spans, cap * sizeof(*spans));
	if (spans)
		p->spans = spans;
	const char **argv = realloc(p->argv, cap * sizeof(*argv));
	if (argv)
		p->argv = argv;
	size_t *argl = realloc(p->argl, cap * sizeof(*argl));
	if (argl)
		p->argl = argl;
	if (!spans || !argv || !argl)
		return -ENOMEM;
	p->cap = cap;
	return 0;
}

static long fail(struct kv_parser *p, const char *text)
{
	snprintf(p->error, sizeof(p->error), KV_PROTO_FMT, text);
	return -EPROTO;
}

static long finish(struct kv_parser *p, const char *base, struct kv_resp_req *req)
{
	for (uint32_t i = 0; i < p->argc; i++) {
		p->argv[i] = base + p->spans[i].off;
		p->argl[i] = p->spans[i].len;
	}
	req->argc = p->argc;
	req->argv = p->argv;
	req->argl = p->argl;
	long total = (long)p->pos;
	kv_resp_reset(p);
	return total;
}

/* A count line ('*' or '$') at p->pos: 1 with *n set and p->pos past the
 * line, 0 for more input, or the protocol error Redis gives: too_long
 * when no line end came within its inline limit, bad for anything but a
 * decimal number. */
static long read_count(struct kv_parser *p, const char *buf, size_t len, int64_t *n,
		       const char *too_long, const char *bad)
{
	const char *start = buf + p->pos;
	const char *cr = memchr(start, '\r', len - p->pos);

	if (!cr)
		return len - p->pos > KV_RESP_MAX_INLINE ? fail(p, too_long) : 0;
	/* Redis waits for the byte after '\r' and skips it unread. */
	if ((size_t)(cr - buf) + 1 >= len)
		return 0;
	if (!kv_str2ll(start + 1, (size_t)(cr - start - 1), n))
		return fail(p, bad);
	p->pos = (size_t)(cr - buf) + 2;
	return 1;
}

/* The usual count line, at once: 1 to 18 digits, the first not 0, then
 * '\r' and the byte after it. Returns 1 with *n set and p->pos past the
 * line; 0 for any other line, complete or not, which read_count() then
 * reads (its result is the same for the lines this one takes: Redis's
 * number rules refuse a leading 0 and stop short of overflow). */
static inline int quick_count(struct kv_parser *p, const char *buf, size_t len, int64_t *n)
{
	size_t i = p->pos + 1, end = len - i < 18 ? len : i + 18;
	int64_t v = 0;

	if (i >= len || buf[i] < '1' || buf[i] > '9')
		return 0;
	while (i < end && buf[i] >= '0' && buf[i] <= '9')
		v = v * 10 + (buf[i++] - '0');
	if (i + 1 >= len || buf[i] != '\r')
		return 0;
	p->pos = i + 2;
	*n = v;
	return 1;
}

/* The '$' line of the next argument: 1 when read, 0 for more input, or an
 * error. */
static long bulk_header(struct kv_parser *p, const char *buf, size_t len)
{
	if (buf[p->pos] != '$') {
		char what[40];
		snprintf(what, sizeof(what), KV_PROTO_EXPECTED_FMT, buf[p->pos]);
		return fail(p, what);
	}
	int64_t n;
	long r = quick_count(p, buf, len, &n);
	if (!r)
		r = read_count(p, buf, len, &n, KV_PROTO_BULK_COUNT, KV_PROTO_BULK_LEN);
	if (r <= 0)
		return r;
	if (n < 0 || (uint64_t)n > p->lim.max_bulk)
		return fail(p, KV_PROTO_BULK_LEN);
	p->bulk = n;
	return 1;
}

static long parse_multibulk(struct kv_parser *p, const char *buf, size_t len,
			    struct kv_resp_req *req)
{
	if (p->want < 0) {
		int64_t n;
		long r = quick_count(p, buf, len, &n);
		if (!r)
			r = read_count(p, buf, len, &n, KV_PROTO_MBULK_COUNT,
				       KV_PROTO_MBULK_LEN);
		if (r <= 0)
			return r;
		if (n > (int64_t)p->lim.max_args)
			return fail(p, KV_PROTO_MBULK_LEN);
		if (n <= 0)   /* Redis ignores `*0` and `*-1` */
			return finish(p, buf, req);
		p->want = n;
	}
	while (p->argc < p->want) {
		if (p->bulk < 0) {
			if (p->pos >= len)
				return 0;
			long r = bulk_header(p, buf, len);
			if (r <= 0)
				return r;
		}
		/* the argument and the two bytes after it, which Redis skips */
		if (len - p->pos < (uint64_t)p->bulk + 2)
			return 0;
		if (reserve(p, p->argc + 1) < 0)
			return -ENOMEM;
		p->spans[p->argc++] = (struct kv_resp_span){ p->pos, (size_t)p->bulk };
		p->pos += (size_t)p->bulk + 2;
		p->bulk = -1;
	}
	return finish(p, buf, req);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* One character inside double quotes at s[*i] (end e), appended to out.
 * Returns 1 for a character, 0 at the closing quote, -1 for unbalanced. */
static int dquoted_char(const char *s, size_t *i, size_t e, char *out, size_t *n)
{
	char c = s[*i];
	if (c == '\\' && *i + 3 < e && s[*i + 1] == 'x' && hex_digit(s[*i + 2]) >= 0 &&
	    hex_digit(s[*i + 3]) >= 0) {
		out[(*n)++] = (char)(hex_digit(s[*i + 2]) * 16 + hex_digit(s[*i + 3]));
		*i += 4;
		return 1;
	}
	if (c == '\\' && *i + 1 < e) {
		static const char from[] = "nrtba", to[] = "\n\r\t\b\a";
		char x = s[*i + 1];
		const char *m = x ? strchr(from, x) : NULL;
		out[(*n)++] = m ? to[m - from] : x;
		*i += 2;
		return 1;
	}
	if (c == '"')
		return *i + 1 < e && !is_space(s[*i + 1]) ? -1 : (++*i, 0);
	out[(*n)++] = c;
	++*i;
	return 1;
}

/* One character inside single quotes; as dquoted_char(). */
static int squoted_char(const char *s, size_t *i, size_t e, char *out, size_t *n)
{
	if (s[*i] == '\\' && *i + 1 < e && s[*i + 1] == '\'') {
		out[(*n)++] = '\'';
		*i += 2;
		return 1;
	}
	if (s[*i] == '\'')
		return *i + 1 < e && !is_space(s[*i + 1]) ? -1 : (++*i, 0);
	out[(*n)++] = s[*i];
	++*i;
	return 1;
}

/* One inline argument starting at s[*i], unquoted into out (*n bytes so
 * far). Quotes may open mid-word, as in Redis. Returns 0 or -1 for
 * unbalanced quotes. */
static int inline_word(const char *s, size_t *i, size_t e, char *out, size_t *n)
{
	while (*i < e) {
		char c = s[*i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			return 0;
		if (c != '"' && c != '\'') {
			out[(*n)++] = c;
			++*i;
			continue;
		}
		++*i;
		int r;
		do {
			if (*i >= e)
				return -1;   /* the line ended inside quotes */
			r = c == '"' ? dquoted_char(s, i, e, out, n) : squoted_char(s, i, e, out, n);
		} while (r > 0);
		if (r < 0)
			return -1;
		return 0;   /* a closing quote ends the word */
	}
	return 0;
}

static long parse_inline(struct kv_parser *p, const char *buf, size_t len,
			 struct kv_resp_req *req)
{
	/* Redis looks for the newline in a C string: a NUL byte before it
	 * hides it, and the request never completes (it waits, then is too
	 * big once 64 KiB are held). */
	const char *nul = memchr(buf, '\0', len);
	const char *nl = memchr(buf, '\n', nul ? (size_t)(nul - buf) : len);
	if (!nl)
		return len > KV_RESP_MAX_INLINE ? fail(p, KV_PROTO_INLINE) : 0;
	size_t e = (size_t)(nl - buf);
	if (e > 0 && buf[e - 1] == '\r')
		e--;
	/* A line over the limit is refused even when its newline came with
	 * it. Redis refuses it when a read leaves more than 64 KiB without a
	 * newline, so with its 16 KiB reads it may still take a line of up to
	 * 80 KiB; kv's rule does not depend on how the bytes arrived. */
	if (e > KV_RESP_MAX_INLINE)
		return fail(p, KV_PROTO_INLINE);
	if (e > p->scratch_cap) {
		char *s = realloc(p->scratch, e);
		if (!s)
			return -ENOMEM;
		p->scratch = s;
		p->scratch_cap = e;
	}
	size_t i = 0, n = 0;
	p->argc = 0;
	for (;;) {
		while (i < e && is_space(buf[i]))
			i++;
		if (i >= e)
			break;
		size_t start = n;
		if (inline_word(buf, &i, e, p->scratch, &n) < 0) {
			p->argc = 0;
			return fail(p, KV_PROTO_QUOTES);
		}
		if (reserve(p, p->argc + 1) < 0)
			return -ENOMEM;
		p->spans[p->argc++] = (struct kv_resp_span){ start, n - start };
	}
	p->pos = (size_t)(nl - buf) + 1;
	return finish(p, p->scratch, req);
}

/* A count line in its usual form at *at: `lead`, then 1 to 10 digits
 * without a leading 0 (or a lone 0), then CRLF; false for anything else,
 * whole or not. Redis reads these lines the same (its number rules
 * refuse a leading 0), so a request read this way parses as the
 * incremental reading would parse it. Inlined: it runs for every
 * argument of every request. */
static inline __attribute__((always_inline)) bool usual_count(const char **at, const char *end,
							       char lead, uint64_t *out)
{
	const char *s = *at, *d = s + 1, *stop;
	uint64_t n = 0;

	if (end - s < 4 || s[0] != lead)
		return false;
	/* one digit or two, as most counts and lengths are */
	unsigned hi = (unsigned char)d[0] - '0', lo = (unsigned char)d[1] - '0';
	if (hi - 1 < 9 && d[1] == '\r' && d[2] == '\n') {
		*at = s + 4;
		*out = hi;
		return true;
	}
	if (hi - 1 < 9 && lo < 10 && end - s >= 5 && d[2] == '\r' && d[3] == '\n') {
		*at = s + 5;
		*out = hi * 10 + lo;
		return true;
	}
	if (*d == '0') {
		d++;
	} else {
		stop = end - d > 10 ? d + 10 : end;
		while (d < stop && (unsigned char)(*d - '0') <= 9)
			n = n * 10 + (uint64_t)(*d++ - '0');
		if (d == s + 1)
			return false;
	}
	if (end - d < 2 || d[0] != '\r' || d[1] != '\n')
		return false;
	*at = d + 2;
	*out = n;
	return true;
}

/* The argc arguments of a multibulk request from `at` on, all whole and
 * in the usual form (usual_count(), each argument followed by CRLF), none
 * longer than max_bulk. Returns the request's end, or NULL. Stores the
 * first `keep` arguments in argv and argl. Inlined so that each caller's
 * loop is built for its own limits. */
static inline __attribute__((always_inline)) const char *
usual_args(const char *at, const char *end, uint64_t argc, uint64_t max_bulk, uint64_t keep,
	   const char **argv, size_t *argl)
{
	for (uint64_t i = 0; i < argc; i++) {
		uint64_t l;

		if (!usual_count(&at, end, '$', &l) || l > max_bulk ||
		    (uint64_t)(end - at) < l + 2 || at[l] != '\r' || at[l + 1] != '\n')
			return NULL;
		if (i < keep) {
			argv[i] = at;
			argl[i] = (size_t)l;
		}
		at += l + 2;
	}
	return at;
}

/* Most requests arrive whole and in the usual form: read in one pass,
 * their arguments stored where the request hands them out, with no
 * progress kept. Returns the request's length, or 0 when it is not such
 * a request (not whole, a count or length out of the usual form, a
 * limit passed, more arguments than a small table holds): the
 * incremental reading then starts on it and gives Redis's answer. */
static long parse_whole(struct kv_parser *p, const char *buf, size_t len,
			struct kv_resp_req *req)
{
	const char *at = buf, *end = buf + len;
	uint64_t argc;

	if (!usual_count(&at, end, '*', &argc) || !argc || argc > p->lim.max_args)
		return 0;
	/* a request announcing many arguments reserves room only as they
	 * arrive, in the incremental reading */
	if (argc > p->cap && (argc > WHOLE_ARGS_MAX || reserve(p, (uint32_t)argc) < 0))
		return 0;
	at = usual_args(at, end, argc, p->lim.max_bulk, argc, p->argv, p->argl);
	if (!at)
		return 0;
	req->argc = (uint32_t)argc;
	req->argv = p->argv;
	req->argl = p->argl;
	return at - buf;
}

long kv_resp_parse(struct kv_parser *p, const char *buf, size_t len, struct kv_resp_req *req)
{
	long n;

	req->argc = 0;
	if (len == 0)
		return 0;
	if (buf[0] != '*')
		return parse_inline(p, buf, len, req);
	if (p->pos == 0 && (n = parse_whole(p, buf, len, req)) > 0)
		return n;
	return parse_multibulk(p, buf, len, req);
}

size_t kv_resp_peek(const char *buf, size_t len, const char **argv, size_t *argl, uint32_t room,
		    struct kv_resp_peeked *out)
{
	const char *at = buf, *end = buf + len;
	uint64_t argc;

	out->argc = out->kept = 0;
	if (!usual_count(&at, end, '*', &argc) || !argc || argc > UINT32_MAX)
		return 0;
	at = usual_args(at, end, argc, UINT64_MAX, room, argv, argl);
	if (!at)
		return 0;
	out->argc = (uint32_t)argc;
	out->kept = argc < room ? (uint32_t)argc : room;
	return (size_t)(at - buf);
}
