/* SPDX-License-Identifier: MIT */
/* Reading the replies the shards wrote, to merge the parts of a command
 * that ran on several shards: item lengths, integers, SCAN cursors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

/* The decimal number of p[0..n) (an optional '-' first); false for
 * anything else or past 64 bits. */
static bool dec(const char *p, size_t n, int64_t *v)
{
	bool neg = n && p[0] == '-';
	uint64_t x = 0;
	size_t i = neg;

	if (i == n || n - i > 19)
		return false;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(p[i] - '0');
	}
	if (x > (uint64_t)INT64_MAX)
		return false;
	*v = neg ? -(int64_t)x : (int64_t)x;
	return true;
}

/* Length of the line at p up to its CR LF, CR LF not included; 0 when
 * there is none. */
static size_t line(const char *p, size_t n)
{
	const char *e = n > 1 ? memchr(p, '\r', n - 1) : NULL;

	return e && e[1] == '\n' ? (size_t)(e - p) : 0;
}

size_t kv_item_len(const char *p, size_t n)
{
	size_t l = n ? line(p, n) : 0;
	int64_t count;
	size_t at;

	if (!l)
		return 0;
	at = l + 2;
	switch (p[0]) {
	case '+':
	case '-':
	case ':':
		return at;
	case '$':
		if (!dec(p + 1, l - 1, &count) || count < -1)
			return 0;
		if (count < 0)
			return at;
		return n - at >= (uint64_t)count + 2 ? at + (size_t)count + 2 : 0;
	case '*':
		if (!dec(p + 1, l - 1, &count) || count < -1)
			return 0;
		for (int64_t i = 0; i < count; i++) {
			size_t k = kv_item_len(p + at, n - at);

			if (!k)
				return 0;
			at += k;
		}
		return at;
	}
	return 0;
}

bool kv_item_int(const struct kv_reply *r, int64_t *v)
{
	size_t l = r->len ? line(r->buf, r->len) : 0;

	return l && r->buf[0] == ':' && dec(r->buf + 1, l - 1, v);
}

bool kv_scan_route(const char *p, size_t len, unsigned n, unsigned *shard, uint64_t *cursor)
{
	uint64_t x = 0;

	if (len > 20)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(p[i] - '0');

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*shard = (unsigned)(x % n);
	*cursor = x / n;
	return true;
}

bool kv_scan_rewrite(struct kv_reply *r, unsigned s, unsigned n)
{
	static const char head[] = "*2\r\n$";
	struct kv_reply o;
	size_t l, at;
	int64_t clen, sc;
	uint64_t next;
	char text[24];

	if (r->len < sizeof(head) || memcmp(r->buf, head, sizeof(head) - 1))
		return false;
	l = line(r->buf + 4, r->len - 4);
	if (!l || !dec(r->buf + 5, l - 1, &clen) || clen < 1)
		return false;
	at = 4 + l + 2;
	if (r->len - at < (size_t)clen + 2 || !dec(r->buf + at, (size_t)clen, &sc))
		return false;
	if (sc == 0)
		next = s + 1 < n ? s + 1 : 0;
	else if ((uint64_t)sc > (UINT64_MAX - s) / n)
		return false; /* beyond any table a shard can hold */
	else
		next = (uint64_t)sc * n + s;
	at += (size_t)clen + 2;
	kv_reply_init(&o);
	kv_reply_array(&o, 2);
	kv_reply_bulk(&o, text, (size_t)snprintf(text, sizeof(text), "%llu",
						   (unsigned long long)next));
	kv_reply_raw(&o, r->buf + at, r->len - at);
	kv_reply_free(r);
	*r = o;
	return true;
}
