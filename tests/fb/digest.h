/* SPDX-License-Identifier: MIT */
/* Read every field of a verified buffer through the accessors and fold what
 * was read into one number: tests compare digests to see that a buffer
 * reads the same, and under ASan a read outside a buffer that the verifier
 * accepted stops the test (or the fuzzer). */
#ifndef PC_TEST_FB_DIGEST_H
#define PC_TEST_FB_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "percore/fb.h"

struct digest_schema {
	const char *name;
	const struct pc_fb_table_desc *desc;
	const char *file_id;
	uint64_t (*digest)(const void *buf);
};

/* Every message table of the schemas/ folder, then test.AllTypes. */
extern const struct digest_schema digest_schemas[];
extern const size_t digest_nschemas;

uint64_t digest_alltypes(const void *buf);

/* Verify buf as schema s; on success store its digest. Returns the
 * verifier's result. */
int digest_verify(const struct digest_schema *s, const void *buf, size_t len,
		  uint64_t *digest);

#endif
