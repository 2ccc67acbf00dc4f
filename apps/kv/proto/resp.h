/* SPDX-License-Identifier: MIT */
/* RESP2 request parser for the kv server: multibulk requests
 * (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and inline commands (`GET k\r\n`, as
 * typed into nc), with Redis's limits and protocol error texts.
 *
 * The parser is incremental: it keeps how far it got through the request at
 * the head of the input, so a request that arrives in many reads is scanned
 * once, not once per read. Multibulk arguments point into the caller's
 * buffer (no copy); inline arguments, which may carry escapes, are unquoted
 * into the parser's own scratch space.
 *
 * One parser belongs to one connection and so to one shard. */
#ifndef KV_RESP_H
#define KV_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Redis's defaults: proto-max-bulk-len 512 MiB, 1,048,576 arguments a
 * request, 64 KiB for an inline request or a count line. */
#define KV_RESP_MAX_BULK_DEFAULT   (512ull * 1024 * 1024)
#define KV_RESP_MAX_ARGS_DEFAULT   (1024u * 1024u)
#define KV_RESP_MAX_INLINE         (64u * 1024u)

struct kv_resp_limits {
	uint64_t max_bulk;   /* longest argument, bytes */
	uint32_t max_args;   /* most arguments in one multibulk request */
};

/* Where an argument lies: offset from the start of the request (multibulk)
 * or of the scratch space (inline), and its length. Offsets, not pointers,
 * because the caller's buffer may move between calls. */
struct kv_resp_span {
	size_t off;
	size_t len;
};

struct kv_parser {
	struct kv_resp_limits lim;
	/* progress through the request at the head of the input */
	size_t pos;          /* bytes of it parsed so far */
	int64_t want;        /* arguments announced; -1 before the count line */
	int64_t bulk;        /* length of the argument being read; -1 before its $ line */
	uint32_t argc;       /* arguments complete so far */
	int inline_req;      /* the last request was inline: spans are in scratch */
	struct kv_resp_span *spans;  /* where each argument lies */
	const char **argv;           /* what the finished request hands out */
	size_t *argl;
	uint32_t cap;                /* slots in spans, argv and argl */
	char *scratch;       /* unquoted inline arguments */
	size_t scratch_cap;
	char error[96];      /* the protocol error, after -EPROTO */
};

/* A complete request: argc arguments, argv[i] of argl[i] bytes. Valid until
 * the next kv_resp_parse() or kv_resp_reset() on the same parser, and while
 * the buffer it was parsed from is unchanged. */
struct kv_resp_req {
	uint32_t argc;
	const char **argv;
	size_t *argl;
};

/* Sets up a parser with these limits (NULL: Redis's defaults). Returns 0 or
 * -ENOMEM. */
int kv_resp_init(struct kv_parser *p, const struct kv_resp_limits *lim);

/* Frees what the parser holds. The parser may be initialised again. */
void kv_resp_free(struct kv_parser *p);

/* Parses the request at the head of buf[0..len). buf must start where the
 * previous call's request started (the caller drops only consumed bytes).
 * Returns the request's length in bytes, with *req filled (argc 0 for an
 * empty request such as a blank line or `*0`, which Redis ignores); 0 when
 * the request is not complete yet; -EPROTO for a request Redis would refuse,
 * with the text of Redis's error (without the "-ERR " prefix) in p->error;
 * -ENOMEM when arguments could not be stored. After -EPROTO the connection
 * is beyond repair: reply with the error and close. */
long kv_resp_parse(struct kv_parser *p, const char *buf, size_t len, struct kv_resp_req *req);

/* What a look ahead read of one request. */
struct kv_resp_peeked {
	uint32_t argc;          /* the request's arguments */
	uint32_t kept;          /* the first of them stored: min(argc, room) */
};

/* A look ahead: the length of the multibulk request at the head of
 * buf[0..len) when it is whole and in the form kv_resp_parse() reads in
 * one pass (counts without a leading 0, CRLF after every line), with its
 * argument count in *out and its first arguments, as many as `room`, in
 * argv and argl; 0 for anything else (not whole, inline, unusual).
 * Nothing is checked against the limits and nothing is kept. A request
 * whose arguments were all kept and are within the limits is exactly
 * what kv_resp_parse() would return for it from a fresh start, so the
 * caller may run it without parsing it again. */
size_t kv_resp_peek(const char *buf, size_t len, const char **argv, size_t *argl, uint32_t room,
		    struct kv_resp_peeked *out);

/* Forgets a partly parsed request (the input it came from was dropped). */
void kv_resp_reset(struct kv_parser *p);

#endif
