/* SPDX-License-Identifier: MIT */
/* The FlatBuffers verifier on hostile input: every malformed shape gets
 * -EPROTO, limits hold, and any buffer it accepts (truncated, bit-flipped)
 * reads inside its bounds (the buffers live in exact-size heap blocks, so
 * ASan stops a read one byte past the end). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "alltypes.h"
#include "digest.h"
#include "percore/fb_chat.h"
#include "percore/fb_heartbeat.h"

static uint64_t space[8192 / 8];

/* A copy of buf in a heap block of exactly len bytes. */
static uint8_t *exact(const void *buf, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	memcpy(p, buf, len);
	return p;
}

/* A test.AllTypes with every field set. */
static const void *build_alltypes(struct pc_fb_builder *b, size_t *len)
{
	const int32_t ints[] = { 1, -2, 3 };
	const int64_t longs[] = { 4, -5 };
	const struct at_pair pairs[2] = { { .a = 1, .b = 2 }, { .a = 3, .b = -4 } };
	const struct at_vec3 pos = { 1, 2, 3 };
	pc_fb_ref kids[2], names[2], r[8], child;

	assert_int_equal(pc_fb_builder_init(b, space, sizeof(space)), 0);
	names[0] = pc_fb_string_create(b, "first", 5);
	names[1] = pc_fb_string_create(b, "", 0);
	for (int i = 0; i < 2; i++) {
		pc_fb_ref n = pc_fb_string_create(b, "kid", 3);

		pc_fb_table_start(b);
		pc_fb_add_ref(b, CHILD_NAME, n);
		pc_fb_add_i32(b, CHILD_VALUE, i, -1);
		kids[i] = pc_fb_table_end(b);
	}
	pc_fb_table_start(b);
	pc_fb_add_i32(b, CHILD_VALUE, 77, -1);
	child = pc_fb_table_end(b);
	r[0] = pc_fb_string_create(b, "name", 4);
	r[1] = pc_fb_vector_create(b, "bytes", 5, 1, 1);
	r[2] = pc_fb_vector_create(b, ints, 3, 4, 4);
	r[3] = pc_fb_vector_create(b, longs, 2, 8, 8);
	r[4] = pc_fb_refs_create(b, names, 2);
	r[5] = pc_fb_vector_create(b, pairs, 2, sizeof(pairs[0]), 8);
	r[6] = pc_fb_refs_create(b, kids, 2);
	pc_fb_table_start(b);
	pc_fb_add_bool(b, AT_FLAG, false, true);
	pc_fb_add_i8(b, AT_I8, 1, -5);
	pc_fb_add_u8(b, AT_U8, 2, 0);
	pc_fb_add_i16(b, AT_I16, 3, 300);
	pc_fb_add_u16(b, AT_U16, 4, 0);
	pc_fb_add_i32(b, AT_I32, 5, 0);
	pc_fb_add_u32(b, AT_U32, 6, 0);
	pc_fb_add_i64(b, AT_I64, 7, -7);
	pc_fb_add_u64(b, AT_U64, 8, 0);
	pc_fb_add_f32(b, AT_F32, 9.5f, 1.5f);
	pc_fb_add_f64(b, AT_F64, 10.25, 0);
	pc_fb_add_i8(b, AT_COLOR, 5, 1);
	pc_fb_add_struct(b, AT_POS, &pos, sizeof(pos), 4);
	pc_fb_add_struct(b, AT_PAIR, &pairs[1], sizeof(pairs[1]), 8);
	pc_fb_add_ref(b, AT_NAME, r[0]);
	pc_fb_add_ref(b, AT_BYTES, r[1]);
	pc_fb_add_ref(b, AT_INTS, r[2]);
	pc_fb_add_ref(b, AT_LONGS, r[3]);
	pc_fb_add_ref(b, AT_NAMES, r[4]);
	pc_fb_add_ref(b, AT_PAIRS, r[5]);
	pc_fb_add_ref(b, AT_CHILD, child);
	pc_fb_add_ref(b, AT_CHILDREN, r[6]);
	assert_int_equal(pc_fb_finish(b, pc_fb_table_end(b), ALLTYPES_ID), 0);
	return pc_fb_builder_data(b, len);
}

static const struct digest_schema *schema(const char *name)
{
	for (size_t i = 0; i < digest_nschemas; i++)
		if (strcmp(digest_schemas[i].name, name) == 0)
			return &digest_schemas[i];
	fail_msg("no schema %s", name);
	return NULL;
}

static void descriptions_are_sound(void **state)
{
	const struct pc_fb_field_desc dup[] = { PC_FB_F_STRING(1, 0), PC_FB_F_STRING(1, 0) };
	const struct pc_fb_field_desc notable[] = { { .id = 0, .kind = PC_FB_TABLE } };
	const struct pc_fb_field_desc odd[] = { { .id = 0, .kind = PC_FB_SCALAR, .size = 3, .align = 1 } };
	const struct pc_fb_field_desc unknown[] = { { .id = 0, .kind = 99 } };
	const struct pc_fb_table_desc bad[] = {
		{ "dup", dup, 2 }, { "notable", notable, 1 }, { "odd", odd, 1 },
		{ "unknown", unknown, 1 }, { "nofields", NULL, 1 },
	};
	(void)state;

	for (size_t i = 0; i < digest_nschemas; i++)
		assert_int_equal(pc_fb_table_desc_validate(digest_schemas[i].desc, NULL, 0), 0);
	assert_int_equal(pc_fb_table_desc_validate(&child_desc, NULL, 0), 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(bad); i++)
		assert_int_equal(pc_fb_table_desc_validate(&bad[i], NULL, 0), -EINVAL);
	/* the verifier refuses what it cannot check, rather than passing it */
	struct pc_fb_builder b;
	size_t len;
	const void *buf;

	assert_int_equal(pc_fb_builder_init(&b, space, sizeof(space)), 0);
	assert_int_equal(pc_fb_leave_build(&b, "r", 1), 0);
	buf = pc_fb_builder_data(&b, &len);
	assert_int_equal(pc_fb_verify(buf, len, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(pc_fb_verify(buf, len, &bad[3], NULL, NULL), -EINVAL);
	assert_int_equal(pc_fb_verify(buf, len, &bad[1], NULL, NULL), -EINVAL);
}

/* Every cut of a valid buffer: rejected, or (only trailing padding gone)
 * read exactly as the whole. */
static void cut_buffers_are_rejected(void **state)
{
	struct pc_fb_builder b;
	size_t len, accepted = 0;
	const void *buf = build_alltypes(&b, &len);
	const struct digest_schema *s = schema("test.AllTypes");
	uint64_t whole, d;
	(void)state;

	assert_int_equal(digest_verify(s, buf, len, &whole), 0);
	for (size_t n = 0; n < len; n++) {
		uint8_t *p = exact(buf, n);
		int err = digest_verify(s, p, n, &d);

		if (err == 0) {
			accepted++;
			assert_true(d == whole);
		} else {
			assert_int_equal(err, -EPROTO);
		}
		free(p);
	}
	assert_true(accepted < 8);
}

/* Every byte of a valid buffer flipped three ways, verified as every
 * schema: whatever is accepted reads in bounds. */
static void flipped_bytes_never_read_out_of_bounds(void **state)
{
	static const uint8_t flips[] = { 0x01, 0x80, 0xff };
	struct pc_fb_builder b;
	size_t len, rejected = 0;
	const void *buf = build_alltypes(&b, &len);
	uint64_t d;
	(void)state;

	for (size_t i = 0; i < len; i++) {
		for (size_t f = 0; f < sizeof(flips); f++) {
			uint8_t *p = exact(buf, len);

			p[i] ^= flips[f];
			for (size_t s = 0; s < digest_nschemas; s++) {
				int err = digest_verify(&digest_schemas[s], p, len, &d);

				assert_true(err == 0 || err == -EPROTO);
				rejected += err != 0;
			}
			free(p);
		}
	}
	assert_true(rejected > 0);
}

/* A Leave made by hand, so single fields can be broken:
 *   0 root offset 12 | 4 vtable: size 6, table size 8, room at 4 | pad
 *  12 table: soffset 8, room offset 4 | 20 string: length 2, "hi", NUL */
static size_t leave_by_hand(uint8_t *p)
{
	static const uint8_t bytes[] = {
		12, 0, 0, 0, 6, 0, 8, 0, 4, 0, 0, 0,
		8, 0, 0, 0, 4, 0, 0, 0,
		2, 0, 0, 0, 'h', 'i', 0, 0,
	};

	memcpy(p, bytes, sizeof(bytes));
	return sizeof(bytes);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, sizeof(v));
}

static int verify_leave(const uint8_t *p, size_t len)
{
	uint8_t *copy = exact(p, len);
	int err = pc_fb_verify(copy, len, &pc_fb_leave_desc, NULL, NULL);

	free(copy);
	return err;
}

static void malformed_shapes_are_rejected(void **state)
{
	uint8_t p[64];
	size_t len = leave_by_hand(p);
	(void)state;

	assert_int_equal(verify_leave(p, len), 0);
	assert_int_equal(verify_leave(p, 0), -EPROTO);
	assert_int_equal(verify_leave(p, 3), -EPROTO);
	assert_int_equal(pc_fb_verify(p, (size_t)PC_FB_MAX_SIZE + 1, &pc_fb_leave_desc,
				      NULL, NULL), -EPROTO);
#define BROKEN(what, change)                                                  \
	do {                                                                  \
		len = leave_by_hand(p);                                       \
		change;                                                       \
		if (verify_leave(p, len) != -EPROTO)                          \
			fail_msg("accepted: %s", what);                       \
	} while (0)
	BROKEN("root past the end", put32(p, 28));
	BROKEN("root huge", put32(p, 0xfffffffc));
	BROKEN("root misaligned", put32(p, 13));
	BROKEN("vtable before the buffer", put32(p + 12, 16));
	BROKEN("vtable past the end", put32(p + 12, (uint32_t)-40));
	BROKEN("vtable misaligned", put32(p + 12, 7));
	BROKEN("vtable size < 4", put16(p + 4, 2));
	BROKEN("vtable size odd", put16(p + 4, 5));
	BROKEN("vtable past the end", put16(p + 4, 200));
	BROKEN("table size < 4", put16(p + 6, 3));
	BROKEN("table past the end", put16(p + 6, 100));
	BROKEN("field outside its table", put16(p + 8, 8));
	BROKEN("field inside the soffset", put16(p + 8, 2));
	BROKEN("required field absent", put16(p + 8, 0));
	BROKEN("required field beyond the vtable", put16(p + 4, 4));
	BROKEN("offset field misaligned", (put16(p + 6, 12), put16(p + 8, 5)));
	BROKEN("string past the end", put32(p + 16, 100));
	BROKEN("string wraps", put32(p + 16, 0xfffffff0));
	BROKEN("string misaligned", put32(p + 16, 5));
	BROKEN("string length past the end", put32(p + 20, 8));
	BROKEN("string length huge", put32(p + 20, 0xffffffff));
	BROKEN("string without NUL", p[26] = 'x');
	BROKEN("string cut before NUL", len = 26);
#undef BROKEN
	/* an unknown field is ignored, as long as it lies in its table */
	len = leave_by_hand(p);
	put16(p + 4, 8);
	put16(p + 10, 4);
	assert_int_equal(verify_leave(p, len), 0);
	put16(p + 10, 9);
	assert_int_equal(verify_leave(p, len), -EPROTO);
}

static void misaligned_scalars_and_vectors_are_rejected(void **state)
{
	/* Heartbeat by hand: vtable at 4 (size 8: seq, time_ns), table at 16
	 * (size 16), time_ns at table+8 = 24. */
	uint8_t p[32] = { 0 };
	(void)state;

	put32(p, 16);
	put16(p + 4, 8);
	put16(p + 6, 16);
	put16(p + 8, 4);
	put16(p + 10, 8);
	put32(p + 16, 12);
	uint8_t *c = exact(p, sizeof(p));
	assert_int_equal(pc_fb_verify(c, sizeof(p), &pc_fb_heartbeat_desc, NULL, NULL), 0);
	put16(c + 10, 4 + 2); /* time_ns at 22: not 8-aligned */
	put16(c + 8, 0);
	assert_int_equal(pc_fb_verify(c, sizeof(p), &pc_fb_heartbeat_desc, NULL, NULL), -EPROTO);
	put16(c + 10, 12); /* 8 bytes at 28 run past the 16-byte table */
	assert_int_equal(pc_fb_verify(c, sizeof(p), &pc_fb_heartbeat_desc, NULL, NULL), -EPROTO);
	free(c);

	/* a vector of longs whose elements sit 4 bytes off 8 */
	struct pc_fb_builder b;
	size_t len;
	const void *buf = build_alltypes(&b, &len);
	const struct pc_fb_table *t = pc_fb_root(buf);
	uint32_t n;
	const uint8_t *longs = pc_fb_get_vector(t, AT_LONGS, &n);
	size_t field = (size_t)(pc_fb_field_ptr(t, AT_LONGS) - (const uint8_t *)buf);

	c = exact(buf, len);
	put32(c + field, pc_fb_load_u32(c + field) + 4); /* count = first long */
	assert_int_equal(pc_fb_verify(c, len, &alltypes_desc, ALLTYPES_ID, NULL), -EPROTO);
	/* a count whose byte size wraps 32 bits */
	memcpy(c, buf, len);
	put32(c + (longs - 4 - (const uint8_t *)buf), 0x20000001);
	assert_int_equal(pc_fb_verify(c, len, &alltypes_desc, ALLTYPES_ID, NULL), -EPROTO);
	free(c);
}

static void file_identifier_is_checked(void **state)
{
	struct pc_fb_builder b;
	size_t len;
	const void *buf = build_alltypes(&b, &len);
	uint8_t *c = exact(buf, len);
	(void)state;

	assert_int_equal(pc_fb_verify(c, len, &alltypes_desc, ALLTYPES_ID, NULL), 0);
	assert_int_equal(pc_fb_verify(c, len, &alltypes_desc, "PCAX", NULL), -EPROTO);
	assert_int_equal(pc_fb_verify(c, 7, &alltypes_desc, ALLTYPES_ID, NULL), -EPROTO);
	/* without an identifier asked for, the bytes are not looked at */
	assert_int_equal(pc_fb_verify(c, len, &alltypes_desc, NULL, NULL), 0);
	free(c);
}

/* Node { next: Node } */
static const struct pc_fb_table_desc node_desc;
static const struct pc_fb_field_desc node_fields[] = { PC_FB_F_TABLE(0, &node_desc, 0) };
static const struct pc_fb_table_desc node_desc = { "Node", node_fields, 1 };

static const void *build_chain(struct pc_fb_builder *b, unsigned depth, size_t *len)
{
	pc_fb_ref next = 0;

	assert_int_equal(pc_fb_builder_init(b, space, sizeof(space)), 0);
	for (unsigned i = 0; i < depth; i++) {
		pc_fb_table_start(b);
		if (next)
			pc_fb_add_ref(b, 0, next);
		next = pc_fb_table_end(b);
	}
	assert_int_equal(pc_fb_finish(b, next, NULL), 0);
	return pc_fb_builder_data(b, len);
}

static void depth_and_table_limits_hold(void **state)
{
	struct pc_fb_builder b;
	size_t len;
	const void *buf = build_chain(&b, 10, &len);
	const struct pc_fb_limits l10 = { .max_depth = 10 }, l9 = { .max_depth = 9 };
	(void)state;

	assert_int_equal(pc_fb_verify(buf, len, &node_desc, NULL, &l10), 0);
	assert_int_equal(pc_fb_verify(buf, len, &node_desc, NULL, &l9), -EPROTO);
	buf = build_chain(&b, PC_FB_DEFAULT_MAX_DEPTH + 1, &len);
	assert_int_equal(pc_fb_verify(buf, len, &node_desc, NULL, NULL), -EPROTO);
	buf = build_chain(&b, PC_FB_DEFAULT_MAX_DEPTH, &len);
	assert_int_equal(pc_fb_verify(buf, len, &node_desc, NULL, NULL), 0);

	/* A History whose 1000 entries all point at one Message: small, but
	 * 1001 tables to visit. Sharing is legal; the count still applies. */
	static pc_fb_ref same[1000];
	const struct pc_fb_limits t1001 = { .max_tables = 1001 }, t1000 = { .max_tables = 1000 };

	assert_int_equal(pc_fb_builder_init(&b, space, sizeof(space)), 0);
	same[0] = pc_fb_message_create(&b, "r", 1, "u", 1, "t", 1, 1);
	for (size_t i = 1; i < PC_ARRAY_LEN(same); i++)
		same[i] = same[0];
	assert_int_equal(pc_fb_history_build(&b, "r", 1, same, PC_ARRAY_LEN(same)), 0);
	buf = pc_fb_builder_data(&b, &len);
	assert_true(len < 4200);
	assert_int_equal(pc_fb_verify(buf, len, &pc_fb_history_desc, NULL, &t1001), 0);
	assert_int_equal(pc_fb_verify(buf, len, &pc_fb_history_desc, NULL, &t1000), -EPROTO);
}

static void read_rejects_and_clears_out(void **state)
{
	struct pc_fb_builder b;
	const struct pc_fb_message *m = (const void *)space;
	size_t len;
	const void *buf;
	(void)state;

	assert_int_equal(pc_fb_builder_init(&b, space, sizeof(space)), 0);
	assert_int_equal(pc_fb_join_build(&b, "r", 1, "u", 1), 0);
	buf = pc_fb_builder_data(&b, &len);
	/* a Join has no text, which a Message requires */
	assert_int_equal(pc_fb_message_read(buf, len, &m), -EPROTO);
	assert_null(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(descriptions_are_sound),
		cmocka_unit_test(cut_buffers_are_rejected),
		cmocka_unit_test(flipped_bytes_never_read_out_of_bounds),
		cmocka_unit_test(malformed_shapes_are_rejected),
		cmocka_unit_test(misaligned_scalars_and_vectors_are_rejected),
		cmocka_unit_test(file_identifier_is_checked),
		cmocka_unit_test(depth_and_table_limits_hold),
		cmocka_unit_test(read_rejects_and_clears_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
