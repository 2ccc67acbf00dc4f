/* SPDX-License-Identifier: MIT */
/* Verifier descriptions of tests/fb/alltypes.fbs. */
#include "alltypes.h"

static const struct pc_fb_field_desc child_fields[] = {
	PC_FB_F_STRING(CHILD_NAME, 0),
	PC_FB_F_SCALAR(CHILD_VALUE, int32_t),
};
const struct pc_fb_table_desc child_desc = {
	.name = "percore.test.Child", .fields = child_fields,
	.nfields = PC_ARRAY_LEN(child_fields),
};

static const struct pc_fb_field_desc alltypes_fields[] = {
	PC_FB_F_SCALAR(AT_FLAG, uint8_t),
	PC_FB_F_SCALAR(AT_I8, int8_t),
	PC_FB_F_SCALAR(AT_U8, uint8_t),
	PC_FB_F_SCALAR(AT_I16, int16_t),
	PC_FB_F_SCALAR(AT_U16, uint16_t),
	PC_FB_F_SCALAR(AT_I32, int32_t),
	PC_FB_F_SCALAR(AT_U32, uint32_t),
	PC_FB_F_SCALAR(AT_I64, int64_t),
	PC_FB_F_SCALAR(AT_U64, uint64_t),
	PC_FB_F_SCALAR(AT_F32, float),
	PC_FB_F_SCALAR(AT_F64, double),
	PC_FB_F_SCALAR(AT_COLOR, int8_t),
	PC_FB_F_STRING(AT_NAME, 1),
	PC_FB_F_STRUCT(AT_POS, sizeof(struct at_vec3), 4),
	PC_FB_F_STRUCT(AT_PAIR, sizeof(struct at_pair), 8),
	PC_FB_F_VECTOR(AT_BYTES, 1, 1, 0),
	PC_FB_F_VECTOR(AT_INTS, 4, 4, 0),
	PC_FB_F_VECTOR(AT_LONGS, 8, 8, 0),
	PC_FB_F_VECTOR_STRING(AT_NAMES, 0),
	PC_FB_F_VECTOR(AT_PAIRS, sizeof(struct at_pair), 8, 0),
	PC_FB_F_TABLE(AT_CHILD, &child_desc, 0),
	PC_FB_F_VECTOR_TABLE(AT_CHILDREN, &child_desc, 0),
};
const struct pc_fb_table_desc alltypes_desc = {
	.name = "percore.test.AllTypes", .fields = alltypes_fields,
	.nfields = PC_ARRAY_LEN(alltypes_fields),
};
