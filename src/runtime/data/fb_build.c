/* SPDX-License-Identifier: MIT */
/* FlatBuffers builder: writes back to front into the caller's space (see
 * include/percore/fb_build.h for why). Positions are kept as distances from
 * the end of the space, which never change while the buffer grows towards
 * its start; a ref is such a distance, taken at the object's first byte. */
#include <errno.h>
#include <string.h>

#include "percore/fb.h"
#include "sys/errmsg.h"

/* Remember the first error; later calls see it and do nothing. */
static int fail(struct pc_fb_builder *b, int err)
{
	if (!b->_err)
		b->_err = err;
	return b->_err;
}

/* Building an object (string, vector, table) is allowed only between tables
 * and before the buffer is finished. */
static bool may_build(struct pc_fb_builder *b)
{
	if (b->_err)
		return false;
	if (b->_in_table || b->_finished) {
		fail(b, -EINVAL);
		return false;
	}
	return true;
}

/* Zero n < 16 bytes with fixed-size stores: padding is a few bytes per
 * field, and a call to memset for each cost a third of a small build. */
static inline void zero_small(uint8_t *p, size_t n)
{
	static const uint8_t zero[8];

	if (n & 8)
		memcpy(p, zero, 8), p += 8;
	if (n & 4)
		memcpy(p, zero, 4), p += 4;
	if (n & 2)
		memcpy(p, zero, 2), p += 2;
	if (n & 1)
		*p = 0;
}

/* Zero-pad so that once `extra` more bytes are written the distance from the
 * end is a multiple of align. Because the finished buffer's length is padded
 * to the largest alignment used, alignment measured from the end is also
 * alignment measured from the buffer's start. */
static inline bool pad_for(struct pc_fb_builder *b, size_t align, size_t extra)
{
	size_t pad = (0 - ((size_t)b->_used + extra)) & (align - 1);

	if (align > b->_minalign)
		b->_minalign = (uint32_t)align;
	if (pad > b->_cap - b->_used) {
		fail(b, -ENOSPC);
		return false;
	}
	b->_used += (uint32_t)pad;
	zero_small(b->_end - b->_used, pad);
	return true;
}

/* Claim n bytes in front of what is written; NULL when the space is full. */
static uint8_t *take(struct pc_fb_builder *b, size_t n)
{
	if (n > b->_cap - b->_used) {
		fail(b, -ENOSPC);
		return NULL;
	}
	b->_used += (uint32_t)n;
	return b->_end - b->_used;
}

static void store_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

int pc_fb_builder_init(struct pc_fb_builder *b, void *buf, size_t cap)
{
	if (!b || !buf || cap > PC_FB_MAX_SIZE)
		return -EINVAL;
	b->_end = (uint8_t *)buf + cap;
	b->_cap = (uint32_t)cap;
	b->_in_table = false;
	memset(b->_field, 0, sizeof(b->_field));
	pc_fb_builder_reset(b);
	return 0;
}

void pc_fb_builder_reset(struct pc_fb_builder *b)
{
	/* Closed tables leave no fields behind, so only a table left open
	 * (by an error) has fields to clear: reset stays cheap per message. */
	if (b->_in_table)
		memset(b->_field, 0, sizeof(b->_field[0]) * b->_nfields);
	b->_used = 0;
	b->_minalign = 1;
	b->_err = 0;
	b->_in_table = false;
	b->_finished = false;
	b->_nfields = 0;
	b->_table_start = 0;
	b->_nvtables = 0;
}

const void *pc_fb_builder_data(const struct pc_fb_builder *b, size_t *len)
{
	if (!b->_finished || b->_err)
		return NULL;
	*len = b->_used;
	return b->_end - b->_used;
}

void *pc_fb_builder_headroom(const struct pc_fb_builder *b, size_t n)
{
	if (!b->_finished || b->_err || n > b->_cap - b->_used)
		return NULL;
	return b->_end - b->_used - n;
}

pc_fb_ref pc_fb_string_create(struct pc_fb_builder *b, const char *s, size_t len)
{
	uint8_t *p;

	if (!may_build(b))
		return 0;
	if (!s && len) {
		fail(b, -EINVAL);
		return 0;
	}
	if (len >= b->_cap) {
		fail(b, -ENOSPC);
		return 0;
	}
	/* [u32 length][bytes][NUL], the length word 4-aligned */
	if (!pad_for(b, 4, len + 1) || !(p = take(b, 4 + len + 1)))
		return 0;
	store_u32(p, (uint32_t)len);
	if (len)
		memcpy(p + 4, s, len);
	p[4 + len] = 0;
	return b->_used;
}

pc_fb_ref pc_fb_vector_reserve(struct pc_fb_builder *b, size_t n, size_t elem_size,
			       size_t align, void **elems)
{
	size_t bytes;
	uint8_t *p;

	*elems = NULL;
	if (!may_build(b))
		return 0;
	if (!elem_size || !PC_IS_POW2(align) || align > 16) {
		fail(b, -EINVAL);
		return 0;
	}
	if (n >= b->_cap / elem_size + 1) {
		fail(b, -ENOSPC);
		return 0;
	}
	bytes = n * elem_size;
	/* The count word must be 4-aligned and the elements align-aligned;
	 * the count sits right before the first element. */
	if (!pad_for(b, 4, bytes) || !pad_for(b, align, bytes) || !(p = take(b, 4 + bytes)))
		return 0;
	store_u32(p, (uint32_t)n);
	*elems = p + 4;
	return b->_used;
}

pc_fb_ref pc_fb_vector_create(struct pc_fb_builder *b, const void *elems, size_t n,
			      size_t elem_size, size_t align)
{
	void *dst;
	pc_fb_ref ref;

	if (!elems && n) {
		fail(b, -EINVAL);
		return 0;
	}
	ref = pc_fb_vector_reserve(b, n, elem_size, align, &dst);
	if (ref && n)
		memcpy(dst, elems, n * elem_size);
	return ref;
}

pc_fb_ref pc_fb_refs_create(struct pc_fb_builder *b, const pc_fb_ref *refs, size_t n)
{
	uint8_t *elems;
	pc_fb_ref ref;

	for (size_t i = 0; i < n; i++) {
		if (!refs[i] || refs[i] > b->_used) {
			fail(b, -EINVAL);
			return 0;
		}
	}
	ref = pc_fb_vector_reserve(b, n, 4, 4, (void **)&elems);
	if (!ref)
		return 0;
	/* Element i lies at distance (ref - 4 - 4 i) from the end; its offset
	 * counts forward from there to the object. */
	for (size_t i = 0; i < n; i++)
		store_u32(elems + 4 * i, ref - 4 - 4 * (uint32_t)i - refs[i]);
	return ref;
}

int pc_fb_table_start(struct pc_fb_builder *b)
{
	if (!may_build(b))
		return b->_err;
	b->_in_table = true;
	b->_table_start = b->_used;
	b->_nfields = 0;
	return 0;
}

/* Whether field id may be added to the open table now. */
static bool may_add(struct pc_fb_builder *b, unsigned id)
{
	if (b->_err)
		return false;
	if (!b->_in_table || id >= PC_FB_MAX_FIELDS || b->_field[id]) {
		fail(b, -EINVAL);
		return false;
	}
	return true;
}

/* Called once a field's padding is written, before its bytes. The table's
 * inline part starts after the first field's padding: that padding only
 * aligns the field, and leaving it out of the table makes the table size,
 * and so the vtable, the same for tables of one shape wherever they land,
 * which lets them share a vtable. */
static void field_placed(struct pc_fb_builder *b)
{
	if (b->_nfields == 0)
		b->_table_start = b->_used;
}

static void field_written(struct pc_fb_builder *b, unsigned id)
{
	b->_field[id] = b->_used;
	if (id + 1 > b->_nfields)
		b->_nfields = (uint16_t)(id + 1);
}

int pc_fb_add_raw(struct pc_fb_builder *b, unsigned id, const void *v, size_t size,
		  size_t align)
{
	uint8_t *p;

	if (!may_add(b, id))
		return b->_err;
	if (!v || !size || size > UINT16_MAX || !PC_IS_POW2(align) || align > 16)
		return fail(b, -EINVAL);
	if (!pad_for(b, align, size))
		return b->_err;
	field_placed(b);
	if (!(p = take(b, size)))
		return b->_err;
	memcpy(p, v, size);
	field_written(b, id);
	return 0;
}

int pc_fb_add_ref(struct pc_fb_builder *b, unsigned id, pc_fb_ref ref)
{
	uint8_t *p;

	if (!may_add(b, id))
		return b->_err;
	/* The target must exist and lie outside the open table, i.e. further
	 * from the start than the offset that points at it. */
	if (!ref || ref > b->_table_start)
		return fail(b, -EINVAL);
	if (!pad_for(b, 4, 4))
		return b->_err;
	field_placed(b);
	if (!(p = take(b, 4)))
		return b->_err;
	store_u32(p, b->_used - ref);
	field_written(b, id);
	return 0;
}

/* A vtable written earlier with the same bytes as vt, or 0. */
static pc_fb_ref find_vtable(const struct pc_fb_builder *b, const uint16_t *vt)
{
	for (uint32_t i = 0; i < b->_nvtables; i++) {
		const uint8_t *old = b->_end - b->_vtable[i];
		uint16_t size;

		memcpy(&size, old, sizeof(size));
		if (size == vt[0] && memcmp(old, vt, size) == 0)
			return b->_vtable[i];
	}
	return 0;
}

pc_fb_ref pc_fb_table_end(struct pc_fb_builder *b)
{
	uint16_t vt[2 + PC_FB_MAX_FIELDS];
	pc_fb_ref table, vref;
	uint8_t *p;
	int32_t soff;

	if (b->_err)
		return 0;
	if (!b->_in_table) {
		fail(b, -EINVAL);
		return 0;
	}
	/* The soffset to the vtable opens the table; its value comes last. */
	p = pad_for(b, 4, 4) ? take(b, 4) : NULL;
	table = b->_used;
	if (p && table - b->_table_start > UINT16_MAX)
		fail(b, -EINVAL); /* inline part too big for a u16 size */
	vt[0] = (uint16_t)(4 + 2 * b->_nfields);
	vt[1] = (uint16_t)(table - b->_table_start);
	for (unsigned i = 0; i < b->_nfields; i++) {
		vt[2 + i] = b->_field[i] ? (uint16_t)(table - b->_field[i]) : 0;
		b->_field[i] = 0;
	}
	b->_in_table = false;
	b->_nfields = 0;
	if (b->_err)
		return 0;
	vref = find_vtable(b, vt);
	if (!vref) {
		uint8_t *q = take(b, vt[0]);

		if (!q)
			return 0;
		memcpy(q, vt, vt[0]);
		vref = b->_used;
		if (b->_nvtables < PC_FB_MAX_VTABLES)
			b->_vtable[b->_nvtables++] = vref;
	}
	/* vtable = table - soffset; in distances from the end that is
	 * vref - table: positive for a vtable just written in front of the
	 * table, negative for a shared one written earlier behind it. */
	soff = (int32_t)((int64_t)vref - (int64_t)table);
	memcpy(p, &soff, sizeof(soff));
	return table;
}

int pc_fb_finish(struct pc_fb_builder *b, pc_fb_ref root, const char *file_id)
{
	size_t head = 4 + (file_id ? PC_FB_ID_LEN : 0);
	uint8_t *p;

	if (b->_err)
		return b->_err;
	if (b->_in_table || b->_finished || !root || root > b->_used)
		return fail(b, -EINVAL);
	if (!pad_for(b, b->_minalign > 4 ? b->_minalign : 4, head) || !(p = take(b, head)))
		return b->_err;
	store_u32(p, b->_used - root);
	if (file_id)
		memcpy(p + 4, file_id, PC_FB_ID_LEN);
	b->_finished = true;
	return 0;
}

static int header_check(const struct pc_fb_builder *b, char *err, size_t errlen)
{
	if (b->_cap > PC_FB_MAX_SIZE || b->_used > b->_cap || b->_err > 0)
		return sys_errmsg(err, errlen, -EINVAL,
				 "used %u of %u bytes (at most %u), error %d (expected <= 0)",
				 (unsigned)b->_used, (unsigned)b->_cap, (unsigned)PC_FB_MAX_SIZE,
				 b->_err);
	if (!PC_IS_POW2(b->_minalign) || b->_minalign > 16)
		return sys_errmsg(err, errlen, -EINVAL,
				 "alignment %u, expected a power of two up to 16",
				 (unsigned)b->_minalign);
	if (b->_nvtables > PC_FB_MAX_VTABLES || b->_nfields > PC_FB_MAX_FIELDS)
		return sys_errmsg(err, errlen, -EINVAL,
				 "%u vtables and %u fields, expected at most %u and %u",
				 (unsigned)b->_nvtables, (unsigned)b->_nfields,
				 (unsigned)PC_FB_MAX_VTABLES, (unsigned)PC_FB_MAX_FIELDS);
	if (b->_finished && (b->_in_table || b->_used % b->_minalign))
		return sys_errmsg(err, errlen, -EINVAL,
				 "finished %s a table with %u bytes, expected outside and a "
				 "multiple of %u", b->_in_table ? "inside" : "outside",
				 (unsigned)b->_used, (unsigned)b->_minalign);
	if (b->_in_table && b->_table_start > b->_used)
		return sys_errmsg(err, errlen, -EINVAL, "table starts at %u, past the %u bytes used",
				 (unsigned)b->_table_start, (unsigned)b->_used);
	return 0;
}

int pc_fb_builder_validate(const struct pc_fb_builder *b, char *err, size_t errlen)
{
	int rc = header_check(b, err, errlen);

	if (rc)
		return rc;
	for (uint32_t i = 0; i < b->_nvtables; i++) {
		const uint8_t *vt = b->_end - b->_vtable[i];
		uint16_t size;

		if (b->_vtable[i] < 4 || b->_vtable[i] > b->_used)
			return sys_errmsg(err, errlen, -EINVAL, "vtable %u at %u, expected 4..%u",
					 (unsigned)i, (unsigned)b->_vtable[i], (unsigned)b->_used);
		memcpy(&size, vt, sizeof(size));
		if (size < 4 || size % 2 || size > b->_vtable[i])
			return sys_errmsg(err, errlen, -EINVAL,
					 "vtable %u: size %u, expected even, 4..%u", (unsigned)i,
					 (unsigned)size, (unsigned)b->_vtable[i]);
	}
	for (unsigned i = 0; i < PC_FB_MAX_FIELDS; i++) {
		pc_fb_ref f = b->_field[i];

		if (!f)
			continue;
		if (!b->_in_table || i >= b->_nfields || f <= b->_table_start || f > b->_used)
			return sys_errmsg(err, errlen, -EINVAL,
					 "field %u at %u, expected inside an open table of %u fields, "
					 "%u..%u", i, (unsigned)f, (unsigned)b->_nfields,
					 (unsigned)b->_table_start + 1, (unsigned)b->_used);
	}
	return 0;
}
