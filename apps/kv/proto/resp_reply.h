/* SPDX-License-Identifier: MIT */
/* A growable buffer of RESP2 replies, and the encoders the commands use.
 *
 * Encoders never fail visibly: when memory runs out the buffer keeps the
 * replies it held, stops taking more and says so through kv_reply_failed(),
 * so a command's code needs no error path for its own output. The owner
 * (the connection) then closes, as Redis does when it cannot buffer a reply.
 *
 * One buffer belongs to one connection, so to one shard. */
#ifndef KV_REPLY_H
#define KV_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kv_reply {
	char *buf;
	size_t len;      /* bytes of complete replies */
	size_t cap;
	bool failed;     /* an append found no memory: later appends are dropped */
	bool borrowed;   /* buf is the owner's room (kv_reply_init_in), not malloc's */
};

/* An empty buffer (no memory until the first reply). */
void kv_reply_init(struct kv_reply *r);

/* An empty buffer that starts in room[0..cap), memory of the caller's
 * that outlives it: replies that fit need no allocation, and a larger one
 * moves to the heap. Why: a reply written on one thread and freed on
 * another would make the two contend for the allocator's lock. */
void kv_reply_init_in(struct kv_reply *r, char *room, size_t cap);

/* Frees the buffer; it may be initialised again. */
void kv_reply_free(struct kv_reply *r);

/* Forgets the bytes (they were sent), keeping the memory and clearing a
 * failure. */
void kv_reply_clear(struct kv_reply *r);

/* Drops the bytes after the first len (replies written since len was
 * read, taken back before anyone saw them). */
static inline void kv_reply_truncate(struct kv_reply *r, size_t len)
{
	if (len < r->len)
		r->len = len;
}

static inline bool kv_reply_failed(const struct kv_reply *r)
{
	return r->failed;
}

/* Appends n raw bytes (already RESP). */
void kv_reply_raw(struct kv_reply *r, const void *p, size_t n);

/* +text\r\n. text must hold no CR or LF. */
void kv_reply_status(struct kv_reply *r, const char *text);

/* -text\r\n. text is the whole error ("ERR syntax error", "WRONGTYPE ...")
 * without the '-'; CR and LF in it become spaces, as Redis does, so a
 * client's bytes quoted in an error cannot break the protocol. */
void kv_reply_error(struct kv_reply *r, const char *text, size_t n);

/* kv_reply_error() of a printf-formatted text, its leading and trailing CR
 * and LF dropped first (Redis's addReplyErrorFormat). */
void kv_reply_errorf(struct kv_reply *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* :v\r\n */
void kv_reply_int(struct kv_reply *r, int64_t v);

/* $n\r\n<n bytes>\r\n */
void kv_reply_bulk(struct kv_reply *r, const void *p, size_t n);

/* $-1\r\n, RESP2's null bulk string */
void kv_reply_null(struct kv_reply *r);

/* *n\r\n, the header of an array of n replies that follow */
void kv_reply_array(struct kv_reply *r, size_t n);

/* A bulk string of v as INCRBYFLOAT prints it. v must be finite. */
void kv_reply_double(struct kv_reply *r, long double v);

/* Room for n more bytes at r->buf + r->len: a pointer to them, or NULL
 * (and the buffer marked failed). The caller writes them and adds n to
 * r->len. */
char *kv_reply_reserve(struct kv_reply *r, size_t n);

#endif
