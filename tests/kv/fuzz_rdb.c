/* SPDX-License-Identifier: MIT */
/* libFuzzer target for the RDB value codec: any bytes read as a value
 * must be refused with a reason or read, never read outside the input
 * (ASan) or leak; a value read must encode (with and without LZF) to a
 * payload that passes the DUMP check and reads back to a value of the
 * same type and size (a string: the same bytes). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyhash.h"
#include "kvlist.h"
#include "kvzset.h"
#include "rdb.h"
#include "fuzz_check.h"

/* Encodes v as a DUMP payload into b. */
static void dump(struct kv_rdb_buf *b, const struct kv_rdb_value *v, bool compress)
{
	kv_rdb_dump(b, v, compress);
	CHECK(!b->failed);
	CHECK(kv_rdb_dump_check(b->p, b->len));
}

/* Elements (a string: bytes) of a value. */
static size_t size(const struct kv_rdb_value *v)
{
	switch (v->type) {
	case KV_STRING: return v->len;
	case KV_LIST: return kv_list_len(v->obj);
	case KV_ZSET: return kv_zset_len(v->obj);
	default: return kv_coll_len(v->obj);
	}
}

/* Reads a payload of ours back: the same type and size as v. */
static void reread(const struct kv_rdb_buf *b, const struct kv_rdb_value *v)
{
	struct kv_rdb_reader r = { .p = b->p, .len = b->len - 10 };
	struct kv_rdb_value w;
	CHECK(kv_rdb_get_value(&r, &kv_rdb_default_limits, &w) == 0);
	CHECK(r.pos == r.len);
	CHECK(w.type == v->type && size(&w) == size(v));
	CHECK(v->type != KV_STRING || memcmp(w.str, v->str, v->len) == 0);
	kv_rdb_value_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t len)
{
	static bool ready;
	if (!ready) {
		CHECK(kv_keyhash_init() == 0);
		ready = true;
	}
	struct kv_rdb_reader r = { .p = in, .len = len };
	struct kv_rdb_value v;
	int err = kv_rdb_get_value(&r, &kv_rdb_default_limits, &v);
	if (err) {
		CHECK(err == -EINVAL || err == -ENOTSUP);
		CHECK(r.why[0] != 0);
		CHECK(r.pos <= r.len);
		return 0;
	}
	for (int compress = 0; compress < 2; compress++) {
		struct kv_rdb_buf b = KV_RDB_BUF_INIT;
		dump(&b, &v, compress);
		reread(&b, &v);
		kv_rdb_buf_free(&b);
	}
	kv_rdb_value_free(&v);
	return 0;
}
