/* SPDX-License-Identifier: MIT */
/* FlatBuffers verifier: one walk over an untrusted buffer, guided by table
 * descriptions, proving that everything the accessors in percore/fb.h
 * follow stays in bounds. Positions are 64-bit so no sum of a position and
 * a 32-bit offset or length can wrap. */
#include <errno.h>
#include <stdbool.h>

#include "percore/fb.h"
#include "sys/errmsg.h"

struct walk {
	const uint8_t *buf;
	uint64_t len;
	uint32_t depth, max_depth;
	uint32_t tables, max_tables;
};

/* Whether [pos, pos + n) lies inside the buffer. */
static bool inside(const struct walk *w, uint64_t pos, uint64_t n)
{
	return pos <= w->len && n <= w->len - pos;
}

static bool aligned(uint64_t pos, uint64_t align)
{
	return (pos & (align - 1)) == 0;
}

static int check_table(struct walk *w, uint64_t pos, const struct pc_fb_table_desc *d);

/* Where the u32 offset stored at pos (already proven inside) points. */
static uint64_t follow(const struct walk *w, uint64_t pos)
{
	return pos + pc_fb_load_u32(w->buf + pos);
}

static int check_string(const struct walk *w, uint64_t pos)
{
	uint32_t n;

	if (!aligned(pos, 4) || !inside(w, pos, 4))
		return -EPROTO;
	n = pc_fb_load_u32(w->buf + pos);
	if (!inside(w, pos + 4, (uint64_t)n + 1) || w->buf[pos + 4 + n] != 0)
		return -EPROTO;
	return 0;
}

/* A vector at pos of elements of size bytes aligned to align; *n gets the
 * element count. */
static int check_vector(const struct walk *w, uint64_t pos, uint32_t size,
			uint32_t align, uint32_t *n)
{
	if (!aligned(pos, 4) || !inside(w, pos, 4))
		return -EPROTO;
	*n = pc_fb_load_u32(w->buf + pos);
	/* An empty vector has nothing to load, and flatc does not align it. */
	if ((*n && !aligned(pos + 4, align)) || !inside(w, pos + 4, (uint64_t)*n * size))
		return -EPROTO;
	return 0;
}

/* A vector of offsets to strings (d NULL) or to tables described by d. */
static int check_offsets(struct walk *w, uint64_t pos, const struct pc_fb_table_desc *d)
{
	uint32_t n;
	int err = check_vector(w, pos, 4, 4, &n);

	for (uint32_t i = 0; !err && i < n; i++) {
		uint64_t at = pos + 4 + 4 * (uint64_t)i;

		err = d ? check_table(w, follow(w, at), d) : check_string(w, follow(w, at));
	}
	return err;
}

/* The value of one described field, stored at pos inside its table, with
 * room bytes of the table's inline part from pos on. */
static int check_field(struct walk *w, const struct pc_fb_field_desc *f, uint64_t pos,
		       uint32_t room)
{
	uint32_t n;

	switch (f->kind) {
	case PC_FB_SCALAR:
	case PC_FB_STRUCT:
		if (!f->size || !f->align)
			return -EINVAL;
		return f->size <= room && aligned(pos, f->align) ? 0 : -EPROTO;
	case PC_FB_STRING:
	case PC_FB_TABLE:
	case PC_FB_VECTOR:
	case PC_FB_VECTOR_STRING:
	case PC_FB_VECTOR_TABLE:
		if (room < 4 || !aligned(pos, 4))
			return -EPROTO;
		break;
	default:
		return -EINVAL;
	}
	pos = follow(w, pos);
	switch (f->kind) {
	case PC_FB_STRING:
		return check_string(w, pos);
	case PC_FB_VECTOR:
		if (!f->size || !f->align)
			return -EINVAL;
		return check_vector(w, pos, f->size, f->align, &n);
	case PC_FB_VECTOR_STRING:
		return check_offsets(w, pos, NULL);
	default:
		if (!f->table)
			return -EINVAL;
		return f->kind == PC_FB_TABLE ? check_table(w, pos, f->table)
					      : check_offsets(w, pos, f->table);
	}
}

/* The table header and vtable at pos; *vt, *vtsize, *tsize describe them. */
static int check_shape(const struct walk *w, uint64_t pos, uint64_t *vt,
		       uint16_t *vtsize, uint16_t *tsize)
{
	int64_t at;

	if (!aligned(pos, 4) || !inside(w, pos, 4))
		return -EPROTO;
	at = (int64_t)pos - pc_fb_load_i32(w->buf + pos);
	if (at < 0 || !aligned((uint64_t)at, 2) || !inside(w, (uint64_t)at, 4))
		return -EPROTO;
	*vt = (uint64_t)at;
	*vtsize = pc_fb_load_u16(w->buf + *vt);
	*tsize = pc_fb_load_u16(w->buf + *vt + 2);
	if (*vtsize < 4 || *vtsize % 2 || !inside(w, *vt, *vtsize))
		return -EPROTO;
	if (*tsize < 4 || !inside(w, pos, *tsize))
		return -EPROTO;
	/* Every field the vtable names, described or not, starts inside the
	 * table after its soffset. */
	for (uint32_t i = 4; i < *vtsize; i += 2) {
		uint16_t off = pc_fb_load_u16(w->buf + *vt + i);

		if (off && (off < 4 || off >= *tsize))
			return -EPROTO;
	}
	return 0;
}

static int check_table(struct walk *w, uint64_t pos, const struct pc_fb_table_desc *d)
{
	uint64_t vt;
	uint16_t vtsize, tsize;
	int err;

	if (w->depth >= w->max_depth || w->tables >= w->max_tables)
		return -EPROTO;
	w->tables++;
	err = check_shape(w, pos, &vt, &vtsize, &tsize);
	if (err)
		return err;
	w->depth++;
	for (uint16_t i = 0; !err && i < d->nfields; i++) {
		const struct pc_fb_field_desc *f = &d->fields[i];
		uint32_t at = 4 + 2 * (uint32_t)f->id;
		uint16_t off = at < vtsize ? pc_fb_load_u16(w->buf + vt + at) : 0;

		if (!off)
			err = f->required ? -EPROTO : 0;
		else
			err = check_field(w, f, pos + off, (uint32_t)(tsize - off));
	}
	w->depth--;
	return err;
}

int pc_fb_verify(const void *buf, size_t len, const struct pc_fb_table_desc *root,
		 const char *file_id, const struct pc_fb_limits *limits)
{
	struct walk w = {
		.buf = buf, .len = len,
		.max_depth = PC_FB_DEFAULT_MAX_DEPTH,
		.max_tables = PC_FB_DEFAULT_MAX_TABLES,
	};
	size_t head = 4 + (file_id ? PC_FB_ID_LEN : 0);

	if (!root)
		return -EINVAL;
	if (limits && limits->max_depth)
		w.max_depth = limits->max_depth;
	if (limits && limits->max_tables)
		w.max_tables = limits->max_tables;
	if (!buf || len < head || len > PC_FB_MAX_SIZE)
		return -EPROTO;
	if (file_id && memcmp(w.buf + 4, file_id, PC_FB_ID_LEN) != 0)
		return -EPROTO;
	return check_table(&w, pc_fb_load_u32(w.buf), root);
}

static bool kind_needs_table(uint8_t kind)
{
	return kind == PC_FB_TABLE || kind == PC_FB_VECTOR_TABLE;
}

static bool kind_needs_size(uint8_t kind)
{
	return kind == PC_FB_SCALAR || kind == PC_FB_STRUCT || kind == PC_FB_VECTOR;
}

static int field_check(const struct pc_fb_field_desc *f, unsigned i, char *err, size_t errlen)
{
	if (f->kind < PC_FB_SCALAR || f->kind > PC_FB_VECTOR_TABLE)
		return sys_errmsg(err, errlen, -EINVAL, "field %u (id %u): kind %u, expected %u..%u",
				 i, (unsigned)f->id, (unsigned)f->kind, (unsigned)PC_FB_SCALAR,
				 (unsigned)PC_FB_VECTOR_TABLE);
	if (kind_needs_table(f->kind) != (f->table != NULL))
		return sys_errmsg(err, errlen, -EINVAL,
				 "field %u (id %u): kind %u %s a child table description, has %s",
				 i, (unsigned)f->id, (unsigned)f->kind,
				 kind_needs_table(f->kind) ? "needs" : "takes no",
				 f->table ? "one" : "none");
	if (kind_needs_size(f->kind) && (!f->size || !PC_IS_POW2(f->align) || f->align > 16))
		return sys_errmsg(err, errlen, -EINVAL,
				 "field %u (id %u): size %u, alignment %u; expected a size and an "
				 "alignment that is a power of two up to 16", i, (unsigned)f->id,
				 (unsigned)f->size, (unsigned)f->align);
	if (f->kind == PC_FB_SCALAR && (!PC_IS_POW2(f->size) || f->size > 8))
		return sys_errmsg(err, errlen, -EINVAL,
				 "field %u (id %u): scalar of %u bytes, expected 1, 2, 4 or 8", i,
				 (unsigned)f->id, (unsigned)f->size);
	return 0;
}

int pc_fb_table_desc_validate(const struct pc_fb_table_desc *d, char *err, size_t errlen)
{
	int rc;

	if (!d || (d->nfields && !d->fields))
		return sys_errmsg(err, errlen, -EINVAL, "no description, or %u fields and no array",
				 d ? (unsigned)d->nfields : 0);
	for (uint16_t i = 0; i < d->nfields; i++) {
		const struct pc_fb_field_desc *f = &d->fields[i];

		if ((rc = field_check(f, i, err, errlen)))
			return rc;
		for (uint16_t j = 0; j < i; j++)
			if (d->fields[j].id == f->id)
				return sys_errmsg(err, errlen, -EINVAL,
						 "fields %u and %u share id %u, expected unique ids",
						 (unsigned)j, (unsigned)i, (unsigned)f->id);
	}
	return 0;
}
