/* SPDX-License-Identifier: MIT */
/* percore: FlatBuffers, the reader.
 *
 * Message bodies use the FlatBuffers binary format, so clients in any
 * language with a FlatBuffers library can talk to a percore server. This
 * header reads a buffer in place (zero copy); fb_build.h writes one and
 * fb_verify.h checks an untrusted one. Including this header includes both.
 *
 * The format, in short (all integers little-endian):
 *   buffer  u32 offset of the root table [4-byte file identifier] ...
 *   table   i32 soffset: the vtable lies at table - soffset; then the
 *           table's inline fields (scalars, structs, u32 offsets)
 *   vtable  u16 vtable size in bytes, u16 table inline size, then one u16
 *           per field id: the field's offset from the table start, 0 when
 *           the field is absent (the reader then returns its default)
 *   string  u32 length, bytes, NUL
 *   vector  u32 count, elements (offsets for strings and tables)
 * Every u32 offset points forward, relative to where it is stored.
 *
 * The accessors below trust the buffer: call them only on a buffer that
 * pc_fb_verify() (or a schema's pc_fb_<table>_read()) accepted, which proved
 * every offset they follow in bounds. They load through memcpy, so the buffer
 * may sit at any address (a frame body inside a receive ring is only as
 * aligned as its frame). Any thread may read a buffer nobody writes.
 */
#ifndef PERCORE_FB_H
#define PERCORE_FB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "percore/defs.h"

/* Loads and stores copy bytes as they are: FlatBuffers is little-endian and
 * so are the machines percore supports, so no swapping is ever needed. */
PC_STATIC_ASSERT(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "percore's FlatBuffers code assumes a little-endian machine");

/* The largest buffer the format can address: offsets are signed 32-bit. */
#define PC_FB_MAX_SIZE 0x7fffffffu
/* Length of the optional file identifier that follows the root offset. */
#define PC_FB_ID_LEN 4

/* A table inside a buffer. Never defined: a pointer to one points at the
 * table's first byte, and the accessors below take it apart. */
struct pc_fb_table;

#define PC_FB_LOAD(name, type)                                                \
	PC_INLINE type pc_fb_load_##name(const void *p)                        \
	{                                                                     \
		type v;                                                       \
		memcpy(&v, p, sizeof(v));                                     \
		return v;                                                     \
	}
PC_FB_LOAD(u8, uint8_t)
PC_FB_LOAD(i8, int8_t)
PC_FB_LOAD(u16, uint16_t)
PC_FB_LOAD(i16, int16_t)
PC_FB_LOAD(u32, uint32_t)
PC_FB_LOAD(i32, int32_t)
PC_FB_LOAD(u64, uint64_t)
PC_FB_LOAD(i64, int64_t)
PC_FB_LOAD(f32, float)
PC_FB_LOAD(f64, double)
#undef PC_FB_LOAD

/* Follow the u32 offset stored at p. */
PC_INLINE const uint8_t *pc_fb_deref(const void *p)
{
	return (const uint8_t *)p + pc_fb_load_u32(p);
}

/* The root table of a verified buffer. */
PC_INLINE const struct pc_fb_table *pc_fb_root(const void *buf)
{
	return (const struct pc_fb_table *)pc_fb_deref(buf);
}

/* The file identifier of a buffer written with one (4 bytes, not
 * NUL-terminated). */
PC_INLINE const char *pc_fb_file_id(const void *buf)
{
	return (const char *)buf + 4;
}

/* The vtable of table t. */
PC_INLINE const uint8_t *pc_fb_vtable(const struct pc_fb_table *t)
{
	const uint8_t *p = (const uint8_t *)t;

	return p - pc_fb_load_i32(p);
}

/* Offset of field id inside table t, or 0 when t does not hold it (a field
 * newer than the writer's schema, or a scalar the writer left at its
 * default). */
PC_INLINE uint16_t pc_fb_field(const struct pc_fb_table *t, unsigned id)
{
	const uint8_t *vt = pc_fb_vtable(t);
	size_t at = 4 + 2 * (size_t)id;

	return at < pc_fb_load_u16(vt) ? pc_fb_load_u16(vt + at) : 0;
}

/* Address of field id inside t, or NULL when absent. */
PC_INLINE const uint8_t *pc_fb_field_ptr(const struct pc_fb_table *t, unsigned id)
{
	uint16_t off = pc_fb_field(t, id);

	return off ? (const uint8_t *)t + off : NULL;
}

/* Scalar fields: the stored value, or def when the field is absent. */
#define PC_FB_GET(name, type)                                                 \
	PC_INLINE type pc_fb_get_##name(const struct pc_fb_table *t, unsigned id, \
					type def)                             \
	{                                                                     \
		const uint8_t *p = pc_fb_field_ptr(t, id);                    \
		return p ? pc_fb_load_##name(p) : def;                        \
	}
PC_FB_GET(u8, uint8_t)
PC_FB_GET(i8, int8_t)
PC_FB_GET(u16, uint16_t)
PC_FB_GET(i16, int16_t)
PC_FB_GET(u32, uint32_t)
PC_FB_GET(i32, int32_t)
PC_FB_GET(u64, uint64_t)
PC_FB_GET(i64, int64_t)
PC_FB_GET(f32, float)
PC_FB_GET(f64, double)
#undef PC_FB_GET

/* Field id of t as a bool; def when the field is absent. */
PC_INLINE bool pc_fb_get_bool(const struct pc_fb_table *t, unsigned id, bool def)
{
	return pc_fb_get_u8(t, id, def) != 0;
}

/* A struct field, stored inline: a pointer to its bytes (laid out as the
 * schema says, little-endian), or NULL when absent. */
PC_INLINE const void *pc_fb_get_struct(const struct pc_fb_table *t, unsigned id)
{
	return pc_fb_field_ptr(t, id);
}

/* A string at p (its length word): the bytes, NUL-terminated, and *len. */
PC_INLINE const char *pc_fb_string_at(const uint8_t *p, uint32_t *len)
{
	*len = pc_fb_load_u32(p);
	return (const char *)p + 4;
}

/* A string field: its bytes (NUL-terminated; may also hold NULs) and *len,
 * or NULL and *len = 0 when absent. */
PC_INLINE const char *pc_fb_get_string(const struct pc_fb_table *t, unsigned id,
				       uint32_t *len)
{
	const uint8_t *p = pc_fb_field_ptr(t, id);

	if (!p) {
		*len = 0;
		return NULL;
	}
	return pc_fb_string_at(pc_fb_deref(p), len);
}

/* A vector field: its first element and *n, the element count, or NULL and
 * *n = 0 when absent. Elements are scalars or structs stored inline, or u32
 * offsets for vectors of strings and tables (see pc_fb_vec_*). */
PC_INLINE const void *pc_fb_get_vector(const struct pc_fb_table *t, unsigned id,
				       uint32_t *n)
{
	const uint8_t *p = pc_fb_field_ptr(t, id);

	if (!p) {
		*n = 0;
		return NULL;
	}
	p = pc_fb_deref(p);
	*n = pc_fb_load_u32(p);
	return p + 4;
}

/* A table field, or NULL when absent. */
PC_INLINE const struct pc_fb_table *pc_fb_get_table(const struct pc_fb_table *t,
						    unsigned id)
{
	const uint8_t *p = pc_fb_field_ptr(t, id);

	return p ? (const struct pc_fb_table *)pc_fb_deref(p) : NULL;
}

/* Element i of a vector of tables whose first element is elems. */
PC_INLINE const struct pc_fb_table *pc_fb_vec_table(const void *elems, uint32_t i)
{
	return (const struct pc_fb_table *)pc_fb_deref((const uint8_t *)elems + 4 * (size_t)i);
}

/* Element i of a vector of strings: its bytes and *len. */
PC_INLINE const char *pc_fb_vec_string(const void *elems, uint32_t i, uint32_t *len)
{
	return pc_fb_string_at(pc_fb_deref((const uint8_t *)elems + 4 * (size_t)i), len);
}

#include "percore/fb_build.h"
#include "percore/fb_verify.h"

PC_BEGIN_DECLS

/* Helpers for schema headers (percore/fb_chat.h and friends), which give
 * each table a type of its own so a Join cannot be read as a Say.
 *
 * PC_FB_SCHEMA_TABLE(name, desc) declares struct pc_fb_<name>, the extern
 * description desc, and
 *   int pc_fb_<name>_read(const void *buf, size_t len,
 *                         const struct pc_fb_<name> **out);
 * which verifies buf against desc and sets *out to its root: 0, or -EPROTO
 * (then *out is NULL). Call it on every body received before reading it. */
#define PC_FB_SCHEMA_TABLE(name, desc)                                        \
	struct pc_fb_##name;                                                  \
	PC_API extern const struct pc_fb_table_desc desc;                     \
	static inline int pc_fb_##name##_read(const void *buf, size_t len,    \
					      const struct pc_fb_##name **out) \
	{                                                                     \
		int err = pc_fb_verify(buf, len, &desc, NULL, NULL);          \
		*out = err ? NULL : (const struct pc_fb_##name *)pc_fb_root(buf); \
		return err;                                                   \
	}

/* const char *pc_fb_<table>_<field>(const struct pc_fb_<table> *, uint32_t *len):
 * a string field (see pc_fb_get_string). */
#define PC_FB_SCHEMA_STRING(table, field, id)                                 \
	static inline const char *pc_fb_##table##_##field(                    \
		const struct pc_fb_##table *t, uint32_t *len)                 \
	{                                                                     \
		return pc_fb_get_string((const struct pc_fb_table *)t, id, len); \
	}

/* type pc_fb_<table>_<field>(const struct pc_fb_<table> *): a scalar field,
 * def when absent; kind is the pc_fb_get_<kind> accessor to use. */
#define PC_FB_SCHEMA_SCALAR(table, field, id, kind, type, def)                \
	static inline type pc_fb_##table##_##field(const struct pc_fb_##table *t) \
	{                                                                     \
		return pc_fb_get_##kind((const struct pc_fb_table *)t, id, def); \
	}

PC_END_DECLS

#endif
