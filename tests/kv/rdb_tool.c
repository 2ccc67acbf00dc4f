/* SPDX-License-Identifier: MIT */
/* DUMP payloads through the value codec alone, for every type (lists and
 * sorted sets too, whatever commands exist for them): each payload read
 * from stdin is checked, decoded and encoded again, and the new payload
 * written to stdout. Framing both ways: a 4-byte little-endian length,
 * then the bytes; a payload refused comes back as length 0xffffffff
 * followed by a length-prefixed reason. Exit 0, or 1 on an I/O or
 * memory failure. rdb_oracle.py drives it beside redis-server. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdb.h"

static int read_frame(uint8_t **p, uint32_t *n)
{
	uint8_t h[4];
	if (fread(h, 1, 4, stdin) != 4)
		return 0;
	*n = h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
	*p = malloc(*n ? *n : 1);
	return *p && fread(*p, 1, *n, stdin) == *n ? 1 : -1;
}

static void write_frame(const void *p, uint32_t n)
{
	uint8_t h[4] = { (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };
	fwrite(h, 1, 4, stdout);
	if (n != UINT32_MAX)
		fwrite(p, 1, n, stdout);
}

static void refuse(const char *why)
{
	write_frame(NULL, UINT32_MAX);
	write_frame(why, (uint32_t)strlen(why));
}

/* One payload in, its re-encoding out; false on a memory failure. */
static bool reencode(const uint8_t *p, uint32_t n)
{
	struct kv_rdb_reader r = { .p = p, .len = n >= 10 ? n - 10 : 0 };
	struct kv_rdb_value v;
	struct kv_rdb_buf b = KV_RDB_BUF_INIT;
	if (!kv_rdb_dump_check(p, n)) {
		refuse("version or checksum");
		return true;
	}
	int err = kv_rdb_get_value(&r, &kv_rdb_default_limits, &v);
	if (err == -ENOMEM)
		return false;
	if (err) {
		refuse(r.why);
		return true;
	}
	kv_rdb_dump(&b, &v, true);
	kv_rdb_value_free(&v);
	if (b.failed)
		return false;
	write_frame(b.p, (uint32_t)b.len);
	kv_rdb_buf_free(&b);
	return true;
}

int main(void)
{
	uint8_t *p;
	uint32_t n;
	int got;
	while ((got = read_frame(&p, &n)) > 0) {
		bool ok = reencode(p, n);
		free(p);
		if (!ok)
			return 1;
		fflush(stdout);
	}
	return got < 0 || fflush(stdout) ? 1 : 0;
}
