/* SPDX-License-Identifier: MIT */
/* percore: FlatBuffers, the verifier. Include percore/fb.h.
 *
 * A body from the network is untrusted: before any accessor touches it,
 * pc_fb_verify() walks it once, guided by a description of the expected
 * root table, and proves that every offset, length and alignment the
 * accessors will follow stays inside the buffer, that strings end in NUL,
 * that vtables are sane, and that nesting depth and the number of tables
 * stay under limits (so a small hostile buffer cannot make verification
 * slow by sharing children many times over).
 *
 * The verifier is generic: a schema is described by one static
 * struct pc_fb_table_desc per table, listing the fields whose types it
 * checks (percore/fb_chat.h and friends hold those of the example schemas).
 * Fields the description does not list are ignored, as FlatBuffers readers
 * ignore fields newer than their schema; they are still checked to lie
 * inside their table. Alignment is checked relative to the buffer's start,
 * as the writers guarantee it, not as absolute addresses.
 */
#ifndef PERCORE_FB_VERIFY_H
#define PERCORE_FB_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* What a field holds. */
enum pc_fb_kind {
	PC_FB_SCALAR = 1,       /* inline scalar of .size bytes (1, 2, 4, 8) */
	PC_FB_STRUCT,           /* inline struct of .size bytes, .align */
	PC_FB_STRING,           /* offset to a string */
	PC_FB_TABLE,            /* offset to a table described by .table */
	PC_FB_VECTOR,           /* offset to a vector of scalars or structs of
	                         * .size bytes each, aligned to .align */
	PC_FB_VECTOR_STRING,    /* offset to a vector of offsets to strings */
	PC_FB_VECTOR_TABLE,     /* offset to a vector of offsets to .table */
};

struct pc_fb_table_desc;

/* One field of a table as the verifier checks it. */
struct pc_fb_field_desc {
	uint16_t id;            /* field id: declaration order in the schema */
	uint8_t kind;           /* enum pc_fb_kind */
	uint8_t required;       /* the schema says (required): absent = bad */
	uint16_t size;          /* SCALAR, STRUCT, VECTOR: bytes of one value */
	uint16_t align;         /* STRUCT, VECTOR: alignment of one value */
	const struct pc_fb_table_desc *table; /* TABLE, VECTOR_TABLE */
};

/* A table's fields as the verifier checks them (made from the schema). */
struct pc_fb_table_desc {
	const char *name;       /* the schema's table name, for messages */
	const struct pc_fb_field_desc *fields;
	uint16_t nfields;
};

/* Field description shorthands, for static tables of descriptors. */
#define PC_FB_F_SCALAR(i, type)                                               \
	{ .id = (i), .kind = PC_FB_SCALAR, .size = sizeof(type), .align = sizeof(type) }
#define PC_FB_F_STRUCT(i, sz, al)                                             \
	{ .id = (i), .kind = PC_FB_STRUCT, .size = (sz), .align = (al) }
#define PC_FB_F_STRING(i, req)                                                \
	{ .id = (i), .kind = PC_FB_STRING, .required = (req) }
#define PC_FB_F_TABLE(i, desc, req)                                           \
	{ .id = (i), .kind = PC_FB_TABLE, .required = (req), .table = (desc) }
#define PC_FB_F_VECTOR(i, sz, al, req)                                        \
	{ .id = (i), .kind = PC_FB_VECTOR, .required = (req), .size = (sz), .align = (al) }
#define PC_FB_F_VECTOR_STRING(i, req)                                         \
	{ .id = (i), .kind = PC_FB_VECTOR_STRING, .required = (req) }
#define PC_FB_F_VECTOR_TABLE(i, desc, req)                                    \
	{ .id = (i), .kind = PC_FB_VECTOR_TABLE, .required = (req), .table = (desc) }

/* Limits on the work one buffer may cause. Zero fields take the defaults. */
struct pc_fb_limits {
	uint32_t max_depth;     /* tables nested in tables; default 64 */
	uint32_t max_tables;    /* tables visited in all; default 100000 */
};

#define PC_FB_DEFAULT_MAX_DEPTH  64u
#define PC_FB_DEFAULT_MAX_TABLES 100000u

/* Verify that buf[0 .. len) is a FlatBuffer whose root table is described by
 * root, starting with file_id (PC_FB_ID_LEN bytes) after the root offset
 * when file_id is not NULL. limits may be NULL for the defaults. Any thread;
 * reads buf only. Returns 0, -EPROTO for anything malformed or over a limit,
 * or -EINVAL for a NULL root description or a broken one (a field kind the
 * verifier does not know). */
PC_API int pc_fb_verify(const void *buf, size_t len, const struct pc_fb_table_desc *root,
			const char *file_id, const struct pc_fb_limits *limits);

/* Check a table description itself: ids unique, kinds known, sizes and
 * alignments powers of two where they must be, child descriptions present.
 * Does not follow child tables. Returns 0, or -EINVAL and, when err is not
 * NULL, what broke in err (errlen bytes): the field, the value found, what
 * was expected. For tests. */
PC_API int pc_fb_table_desc_validate(const struct pc_fb_table_desc *d, char *err, size_t errlen);

PC_END_DECLS

#endif
