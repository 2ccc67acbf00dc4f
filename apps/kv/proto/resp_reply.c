/* SPDX-License-Identifier: MIT */
/* RESP2 reply encoders: see reply.h. */
#include "resp_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"

#define FIRST_CAP 256u

void kv_reply_init(struct kv_reply *r)
{
	memset(r, 0, sizeof(*r));
}

void kv_reply_init_in(struct kv_reply *r, char *room, size_t cap)
{
	kv_reply_init(r);
	r->buf = room;
	r->cap = cap;
	r->borrowed = true;
}

void kv_reply_free(struct kv_reply *r)
{
	if (!r->borrowed)
		free(r->buf);
	kv_reply_init(r);
}

/* Moves a borrowed buffer's bytes to the heap, cap bytes. */
static char *unborrow(struct kv_reply *r, size_t cap)
{
	char *b = malloc(cap);

	if (b && r->len)
		memcpy(b, r->buf, r->len);
	if (b)
		r->borrowed = false;
	return b;
}

void kv_reply_clear(struct kv_reply *r)
{
	r->len = 0;
	r->failed = false;
}

char *kv_reply_reserve(struct kv_reply *r, size_t n)
{
	if (r->failed)
		return NULL;
	if (n <= r->cap - r->len)
		return r->buf + r->len;
	size_t cap = r->cap ? r->cap : FIRST_CAP;
	while (cap - r->len < n) {
		if (cap > SIZE_MAX / 2) {
			r->failed = true;
			return NULL;
		}
		cap *= 2;
	}
	char *b = r->borrowed ? unborrow(r, cap) : realloc(r->buf, cap);
	if (!b) {
		r->failed = true;
		return NULL;
	}
	r->buf = b;
	r->cap = cap;
	return b + r->len;
}

void kv_reply_raw(struct kv_reply *r, const void *p, size_t n)
{
	char *d = kv_reply_reserve(r, n);
	if (!d)
		return;
	if (n)
		memcpy(d, p, n);
	r->len += n;
}

/* <lead><v>\r\n: the shared shape of integers and length headers */
static void number_line(struct kv_reply *r, char lead, int64_t v)
{
	char *d = kv_reply_reserve(r, 24);
	if (!d)
		return;
	d[0] = lead;
	size_t l = 1 + kv_ll2str(d + 1, v);
	d[l++] = '\r';
	d[l++] = '\n';
	r->len += l;
}

void kv_reply_status(struct kv_reply *r, const char *text)
{
	size_t n = strlen(text);
	char *d = kv_reply_reserve(r, n + 3);
	if (!d)
		return;
	d[0] = '+';
	memcpy(d + 1, text, n);
	memcpy(d + 1 + n, "\r\n", 2);
	r->len += n + 3;
}

void kv_reply_error(struct kv_reply *r, const char *text, size_t n)
{
	char *d = kv_reply_reserve(r, n + 3);
	if (!d)
		return;
	d[0] = '-';
	for (size_t i = 0; i < n; i++)
		d[1 + i] = text[i] == '\r' || text[i] == '\n' ? ' ' : text[i];
	memcpy(d + 1 + n, "\r\n", 2);
	r->len += n + 3;
}

void kv_reply_errorf(struct kv_reply *r, const char *fmt, ...)
{
	char small[256];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	char *text = small;
	if ((size_t)n >= sizeof(small)) {
		text = malloc((size_t)n + 1);
		if (!text) {
			r->failed = true;
			return;
		}
		va_start(ap, fmt);
		vsnprintf(text, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	const char *s = text, *e = text + n;
	while (s < e && (*s == '\r' || *s == '\n'))
		s++;
	while (e > s && (e[-1] == '\r' || e[-1] == '\n'))
		e--;
	kv_reply_error(r, s, (size_t)(e - s));
	if (text != small)
		free(text);
}

void kv_reply_int(struct kv_reply *r, int64_t v)
{
	number_line(r, ':', v);
}

void kv_reply_bulk(struct kv_reply *r, const void *p, size_t n)
{
	/* header and body reserved together, so a failure leaves no half */
	char *d = kv_reply_reserve(r, n + 26);
	if (!d)
		return;
	d[0] = '$';
	size_t l = 1 + kv_ll2str(d + 1, (int64_t)n);
	memcpy(d + l, "\r\n", 2);
	if (n)
		memcpy(d + l + 2, p, n);
	memcpy(d + l + 2 + n, "\r\n", 2);
	r->len += l + 4 + n;
}

void kv_reply_null(struct kv_reply *r)
{
	kv_reply_raw(r, "$-1\r\n", 5);
}

void kv_reply_array(struct kv_reply *r, size_t n)
{
	number_line(r, '*', (int64_t)n);
}

void kv_reply_double(struct kv_reply *r, long double v)
{
	char buf[KV_LD_MAX_CHARS + 1];
	size_t n = kv_ld2str(buf, v);
	kv_reply_bulk(r, buf, n);
}
