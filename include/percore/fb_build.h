/* SPDX-License-Identifier: MIT */
/* percore: FlatBuffers, the builder. Include percore/fb.h.
 *
 * The builder writes back to front, from the end of the caller's space
 * towards its start, as the FlatBuffers libraries do. Why: a table refers to
 * its strings, vectors and child tables by forward offsets, so children must
 * sit after their parent; writing children first, at the back, makes every
 * offset known when it is stored, with no fixups, no second pass and no
 * bookkeeping of pending offsets. The finished buffer ends at the end of the
 * space; what lies before it is free, so a frame header can be written just
 * in front of it (pc_fb_builder_headroom) and header and body go out
 * without a copy.
 *
 * Order of calls: create the leaves (strings, vectors), then the tables that
 * refer to them (pc_fb_table_start, pc_fb_add_*, pc_fb_table_end), parents
 * after children, then pc_fb_finish with the root. Only one table may be
 * open at a time, and nothing but fields may be added while it is.
 *
 * Errors stick: the first failure (-ENOSPC when the space is full, -EINVAL on
 * misuse) is remembered, later calls do nothing, and pc_fb_finish returns
 * it. So a message can be built with unchecked calls and one check at the
 * end. A builder belongs to one thread; it never allocates.
 */
#ifndef PERCORE_FB_BUILD_H
#define PERCORE_FB_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"
#include "percore/frame.h"

PC_BEGIN_DECLS

/* Field ids a table built here may use: 0 .. PC_FB_MAX_FIELDS - 1. */
#define PC_FB_MAX_FIELDS 64
/* Distinct vtables remembered per buffer for deduplication; tables of a
 * shape seen after this many others get their own vtable (still valid). */
#define PC_FB_MAX_VTABLES 32

/* Where an object was written: its distance from the end of the space.
 * 0 means the call that should have returned it failed. */
typedef uint32_t pc_fb_ref;

/* Public so a builder can live on the stack or in a session with no
 * allocation; fields starting with _ are the builder's own. */
struct pc_fb_builder {
	uint8_t *_end;          /* one past the caller's space */
	uint32_t _cap;          /* bytes of space */
	uint32_t _used;         /* bytes written, at the end of the space */
	uint32_t _minalign;     /* largest alignment written so far */
	int _err;               /* first error, 0 when none */
	bool _in_table;
	bool _finished;
	uint16_t _nfields;      /* open table: highest field id used + 1 */
	uint32_t _table_start;  /* open table: _used when it started */
	uint32_t _nvtables;
	pc_fb_ref _field[PC_FB_MAX_FIELDS];   /* open table: where each field is */
	pc_fb_ref _vtable[PC_FB_MAX_VTABLES]; /* vtables written, for dedup */
};

/* Start building into buf[0 .. cap). Returns 0, or -EINVAL when buf is NULL
 * or cap exceeds PC_FB_MAX_SIZE. For aligned loads by readers that need them,
 * buf + cap should be 8-byte aligned; percore's own reader does not care. */
PC_API int pc_fb_builder_init(struct pc_fb_builder *b, void *buf, size_t cap);

/* Forget everything built and start again in the same space. */
PC_API void pc_fb_builder_reset(struct pc_fb_builder *b);

/* The first error met, or 0. */
static inline int pc_fb_builder_error(const struct pc_fb_builder *b)
{
	return b->_err;
}

/* The finished buffer and its length, or NULL when pc_fb_finish has not
 * succeeded. The buffer ends at the end of the space given to init. */
PC_API const void *pc_fb_builder_data(const struct pc_fb_builder *b, size_t *len);

/* After pc_fb_finish: the n bytes just in front of the finished buffer,
 * for a frame header, so header and body leave as one contiguous block with
 * no copy. Returns them, or NULL when the buffer is not finished or the
 * space lacks n more bytes (the buffer stays valid either way). */
PC_API void *pc_fb_builder_headroom(const struct pc_fb_builder *b, size_t n);

/* After pc_fb_finish: write a frame header (percore/frame.h: version 1,
 * flags, msg_id, the buffer's length) into the headroom, making header and
 * body one contiguous frame to write as it is: into a buffer shared by
 * many sessions (pc_session_write), through the mesh, to a socket. Returns
 * the frame's first byte and *len, its size (header included); NULL when
 * the buffer is not finished, the space lacks PC_FRAME_HEADER_LEN bytes in
 * front of it, or pc_frame_header_encode() refuses flags or length. The
 * builder's thread only. */
static inline void *pc_fb_builder_frame(const struct pc_fb_builder *b, uint32_t msg_id,
					uint8_t flags, size_t *len)
{
	uint8_t *h = (uint8_t *)pc_fb_builder_headroom(b, PC_FRAME_HEADER_LEN);
	size_t body;

	if (!h || !pc_fb_builder_data(b, &body) ||
	    pc_frame_header_encode(h, msg_id, flags, body))
		return NULL;
	*len = PC_FRAME_HEADER_LEN + body;
	return h;
}

/* Check the builder's invariants (bookkeeping within the space, alignment a
 * power of two, vtables and fields inside what was written). Returns 0, or
 * -EINVAL and, when err is not NULL, what broke in err (errlen bytes): the
 * vtable or field, the value found, the range expected. For tests. */
PC_API int pc_fb_builder_validate(const struct pc_fb_builder *b, char *err, size_t errlen);

/* Write a string (len bytes, a NUL is added). Returns its ref, or 0. */
PC_API pc_fb_ref pc_fb_string_create(struct pc_fb_builder *b, const char *s, size_t len);

/* Write a vector of n scalars or structs of elem_size bytes each, aligned to
 * align (a power of two <= 16), copied from elems (already little-endian
 * FlatBuffers layout). Returns its ref, or 0. */
PC_API pc_fb_ref pc_fb_vector_create(struct pc_fb_builder *b, const void *elems, size_t n,
				     size_t elem_size, size_t align);

/* As pc_fb_vector_create, but leave the elements for the caller to fill in
 * place through *elems (for payloads read straight from somewhere else).
 * Returns its ref, or 0 with *elems = NULL. */
PC_API pc_fb_ref pc_fb_vector_reserve(struct pc_fb_builder *b, size_t n, size_t elem_size,
				      size_t align, void **elems);

/* Write a vector of n offsets to strings or tables already written. Returns
 * its ref, or 0 (-EINVAL when a ref is 0 or not written yet). */
PC_API pc_fb_ref pc_fb_refs_create(struct pc_fb_builder *b, const pc_fb_ref *refs, size_t n);

/* Open a table. Returns 0, or -EINVAL when one is already open. */
PC_API int pc_fb_table_start(struct pc_fb_builder *b);

/* Close the open table, writing its vtable or reusing an identical one.
 * Returns the table's ref, or 0. */
PC_API pc_fb_ref pc_fb_table_end(struct pc_fb_builder *b);

/* Add field id (< PC_FB_MAX_FIELDS, once per table) holding size bytes from
 * v, aligned to align. Returns 0 or the sticky error (-EINVAL without an
 * open table, for a bad id or a field added twice). */
PC_API int pc_fb_add_raw(struct pc_fb_builder *b, unsigned id, const void *v, size_t size,
			 size_t align);

/* Add a field referring to a string, vector or table written earlier. */
PC_API int pc_fb_add_ref(struct pc_fb_builder *b, unsigned id, pc_fb_ref ref);

/* Add an inline struct (size bytes, its FlatBuffers layout) aligned to align. */
static inline int pc_fb_add_struct(struct pc_fb_builder *b, unsigned id,
				   const void *s, size_t size, size_t align)
{
	return pc_fb_add_raw(b, id, s, size, align);
}

/* Scalar fields. A value equal to the schema's default is not written, as
 * in the FlatBuffers libraries: readers return the default for it. */
#define PC_FB_ADD(name, type)                                                 \
	static inline int pc_fb_add_##name(struct pc_fb_builder *b, unsigned id, \
					   type v, type def)                  \
	{                                                                     \
		if (v == def)                                                 \
			return b->_err;                                       \
		return pc_fb_add_raw(b, id, &v, sizeof(v), sizeof(v));        \
	}
PC_FB_ADD(u8, uint8_t)
PC_FB_ADD(i8, int8_t)
PC_FB_ADD(u16, uint16_t)
PC_FB_ADD(i16, int16_t)
PC_FB_ADD(u32, uint32_t)
PC_FB_ADD(i32, int32_t)
PC_FB_ADD(u64, uint64_t)
PC_FB_ADD(i64, int64_t)
PC_FB_ADD(f32, float)
PC_FB_ADD(f64, double)
#undef PC_FB_ADD

/* Add field id as a bool (left out when v equals def, as for the other
 * scalars). Returns as pc_fb_add_u8(). */
static inline int pc_fb_add_bool(struct pc_fb_builder *b, unsigned id, bool v, bool def)
{
	return pc_fb_add_u8(b, id, v, def);
}

/* Finish the buffer: write the root offset at its front, followed by
 * file_id (PC_FB_ID_LEN bytes, or NULL for none), padded so the buffer's
 * length is a multiple of the largest alignment inside it. Returns 0, or the
 * first error met while building (-ENOSPC, -EINVAL; also -EINVAL when a
 * table is still open, the buffer is already finished or root is 0). */
PC_API int pc_fb_finish(struct pc_fb_builder *b, pc_fb_ref root, const char *file_id);

PC_END_DECLS

#endif
