/* SPDX-License-Identifier: MIT */
/* libFuzzer target: any bytes, verified as every table of the example
 * schemas and the test schema, with the default limits and tight ones. A
 * buffer the verifier accepts is then read field by field (digest.c), so a
 * read outside it is caught by ASan: the verifier must never accept what
 * the accessors cannot read safely. libFuzzer hands over an exact-size heap
 * copy, so one byte past the end is already out of bounds. */
#include <stddef.h>
#include <stdint.h>

#include "digest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct pc_fb_limits tight = { .max_depth = 2, .max_tables = 4 };
	uint64_t sink = 0, d;

	for (size_t i = 0; i < digest_nschemas; i++) {
		const struct digest_schema *s = &digest_schemas[i];

		if (digest_verify(s, data, size, &d) == 0)
			sink ^= d;
		if (pc_fb_verify(data, size, s->desc, s->file_id, &tight) == 0)
			sink ^= s->digest(data);
	}
	PC_DO_NOT_OPTIMIZE(sink);
	return 0;
}
