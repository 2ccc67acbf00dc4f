/* SPDX-License-Identifier: MIT */
/* Bytes per key of one shard's keyspace: adds N keys of 16 bytes with
 * 32-byte values (Redis's usual memory yardstick) and prints how much the
 * allocator's in-use bytes (mallinfo2, mapped blocks included) and the keyspace's own count grew,
 * divided by N. Usage: kv_mem [N] (default 1000000). Meaningful in a
 * build without sanitizers. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "db.h"

/* Bytes in use: small chunks and the large blocks glibc maps directly
 * (the table). */
static size_t in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
	if (n <= 0) {
		fprintf(stderr, "usage: kv_mem [keys]\n");
		return 2;
	}
	struct kv_db *db = kv_db_new();
	if (!db)
		return 1;
	size_t before = in_use(), used0 = kv_db_used(db);
	char key[32], val[48];
	for (long i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "key:%012ld", i % 1000000000000L);
		snprintf(val, sizeof(val), "value:%026ld", i);
		struct kv_pos pos;
		kv_db_lookup(db, key, 16, 0, &pos);
		if (kv_db_store(db, &pos, val, 32, KV_NO_EXPIRE)) {
			fprintf(stderr, "kv_mem: out of memory at %ld keys\n", i);
			return 1;
		}
	}
	size_t after = in_use();
	printf("{\"keys\": %ld, \"malloc_bytes_per_key\": %.1f, \"counted_bytes_per_key\": %.1f}\n",
	       n, (double)(after - before) / (double)n,
	       (double)(kv_db_used(db) - used0) / (double)n);
	kv_db_free(db);
	return 0;
}
