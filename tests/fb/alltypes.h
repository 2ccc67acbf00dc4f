/* SPDX-License-Identifier: MIT */
/* The test schema tests/fb/alltypes.fbs: field ids, struct layouts and the
 * verifier's descriptions, shared by the unit tests, the interop helper and
 * the fuzz target. */
#ifndef PC_TEST_FB_ALLTYPES_H
#define PC_TEST_FB_ALLTYPES_H

#include "percore/fb.h"

#define ALLTYPES_ID "PCAT"

enum {
	AT_FLAG, AT_I8, AT_U8, AT_I16, AT_U16, AT_I32, AT_U32, AT_I64, AT_U64,
	AT_F32, AT_F64, AT_COLOR, AT_NAME, AT_POS, AT_PAIR, AT_BYTES, AT_INTS,
	AT_LONGS, AT_NAMES, AT_PAIRS, AT_CHILD, AT_CHILDREN,
};
enum { CHILD_NAME, CHILD_VALUE };

/* struct Vec3 and struct Pair as FlatBuffers lays them out. */
struct at_vec3 {
	float x, y, z;
};
struct at_pair {
	uint8_t a;
	uint8_t _pad[7];
	int64_t b;
};
_Static_assert(sizeof(struct at_pair) == 16, "Pair is 16 bytes in the schema");

extern const struct pc_fb_table_desc alltypes_desc;
extern const struct pc_fb_table_desc child_desc;

#endif
