/* SPDX-License-Identifier: MIT */
/* The FlatBuffers builder: what it writes reads back through the reader and
 * passes the verifier, vtables are shared, alignment holds, defaults are
 * left out, a full buffer gives -ENOSPC without writing outside the space,
 * and misuse gives -EINVAL and sticks. (Byte-level agreement with flatc and
 * python3-flatbuffers is test_fb_interop's job.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "alltypes.h"
#include "digest.h"
#include "percore/fb_chat.h"
#include "percore/fb_echo.h"
#include "percore/fb_error.h"
#include "percore/fb_heartbeat.h"
#include "validate_check.h"

#define SPACE 4096
static uint64_t space[SPACE / 8];

static void init(struct pc_fb_builder *b)
{
	assert_int_equal(pc_fb_builder_init(b, space, sizeof(space)), 0);
	assert_int_equal(pc_fb_builder_validate(b, NULL, 0), 0);
}

static const void *data(const struct pc_fb_builder *b, size_t *len)
{
	const void *buf = pc_fb_builder_data(b, len);

	assert_non_null(buf);
	assert_int_equal(pc_fb_builder_validate(b, NULL, 0), 0);
	return buf;
}

static void builds_a_message_that_reads_back(void **state)
{
	struct pc_fb_builder b;
	const struct pc_fb_message *m;
	const void *buf;
	size_t len;
	uint32_t n;
	(void)state;

	init(&b);
	assert_null(pc_fb_builder_data(&b, &len));
	assert_int_equal(pc_fb_message_build(&b, "lobby", 5, "ann", 3, "hello", 5, 42), 0);
	buf = data(&b, &len);
	assert_ptr_equal((const uint8_t *)buf + len, (const uint8_t *)space + sizeof(space));
	assert_int_equal(pc_fb_message_read(buf, len, &m), 0);
	assert_memory_equal(pc_fb_message_room(m, &n), "lobby", 6);
	assert_int_equal(n, 5);
	assert_memory_equal(pc_fb_message_user(m, &n), "ann", 4);
	assert_memory_equal(pc_fb_message_text(m, &n), "hello", 6);
	assert_int_equal(pc_fb_message_seq(m), 42);
	/* a frame header fits right in front, and the body stays as built */
	uint8_t *head = pc_fb_builder_headroom(&b, 12);
	assert_ptr_equal(head + 12, buf);
	memset(head, 0xee, 12);
	assert_int_equal(pc_fb_message_read(buf, len, &m), 0);
	assert_ptr_equal(pc_fb_builder_headroom(&b, sizeof(space) - len), space);
	assert_null(pc_fb_builder_headroom(&b, sizeof(space) - len + 1));
	pc_fb_builder_reset(&b);
	assert_null(pc_fb_builder_headroom(&b, 0));
}

/* A finished buffer becomes a frame where it lies: the header in the
 * headroom, the body untouched, one contiguous block. */
static void a_frame_header_goes_in_the_headroom(void **state)
{
	struct pc_fb_builder b;
	const struct pc_fb_message *m;
	struct pc_frame f = { 0 };
	const void *body;
	uint8_t *frame, head[PC_FRAME_HEADER_LEN];
	size_t len, size = 0;
	(void)state;

	init(&b);
	assert_null(pc_fb_builder_frame(&b, PC_MSG_CHAT_MESSAGE, 0, &size));
	assert_int_equal(pc_fb_message_build(&b, "lobby", 5, "ann", 3, "hi", 2, 7), 0);
	body = data(&b, &len);
	frame = pc_fb_builder_frame(&b, PC_MSG_CHAT_MESSAGE, PC_FRAME_ERROR, &size);
	assert_non_null(frame);
	assert_ptr_equal(frame + PC_FRAME_HEADER_LEN, body);
	assert_int_equal(size, PC_FRAME_HEADER_LEN + len);
	assert_int_equal(pc_frame_parse(frame, size, 0, &f), 0);
	assert_int_equal(f.msg_id, PC_MSG_CHAT_MESSAGE);
	assert_int_equal(f.flags, PC_FRAME_ERROR);
	assert_int_equal(f.len, len);
	assert_ptr_equal(f.body, body);
	assert_int_equal(pc_fb_message_read(f.body, f.len, &m), 0);
	assert_int_equal(pc_fb_message_seq(m), 7);
	/* A flag the wire format does not know: refused, nothing written. */
	memcpy(head, frame, sizeof(head));
	assert_null(pc_fb_builder_frame(&b, 1, 0x04, &size));
	assert_memory_equal(frame, head, sizeof(head));
	/* Without 12 bytes in front of the buffer there is no frame. */
	uint8_t *end = (uint8_t *)space + sizeof(space);
	for (size_t cap = len; cap < len + PC_FRAME_HEADER_LEN; cap++) {
		assert_int_equal(pc_fb_builder_init(&b, end - cap, cap), 0);
		assert_int_equal(pc_fb_message_build(&b, "lobby", 5, "ann", 3, "hi", 2, 7), 0);
		assert_null(pc_fb_builder_frame(&b, PC_MSG_CHAT_MESSAGE, 0, &size));
	}
	assert_int_equal(pc_fb_builder_init(&b, end - len - PC_FRAME_HEADER_LEN,
					    len + PC_FRAME_HEADER_LEN), 0);
	assert_int_equal(pc_fb_message_build(&b, "lobby", 5, "ann", 3, "hi", 2, 7), 0);
	assert_ptr_equal(pc_fb_builder_frame(&b, PC_MSG_CHAT_MESSAGE, 0, &size),
			 end - len - PC_FRAME_HEADER_LEN);
}

/* pc_fb_message_space is enough for strings of every length and
 * alignment remainder (the Message is built into exactly that much). */
static void message_space_bounds_every_message(void **state)
{
	static const size_t texts[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 64, 1023, 1024, 1025, 3000 };
	static char bytes[3000];
	uint8_t *end = (uint8_t *)space + sizeof(space);
	struct pc_fb_builder b;
	size_t len;
	(void)state;

	memset(bytes, 'x', sizeof(bytes));
	for (size_t r = 0; r < 20; r++)
		for (size_t u = 0; u < 20; u++)
			for (size_t t = 0; t < PC_ARRAY_LEN(texts); t++) {
				size_t cap = pc_fb_message_space(r, u, texts[t]);

				assert_int_equal(pc_fb_builder_init(&b, end - cap, cap), 0);
				assert_int_equal(pc_fb_message_build(&b, bytes, r, bytes, u, bytes,
								     texts[t], UINT64_MAX), 0);
				assert_non_null(pc_fb_builder_data(&b, &len));
				assert_true(len >= r + u + texts[t]);
			}
}

static void every_schema_builds_and_reads(void **state)
{
	struct pc_fb_builder b;
	const struct pc_fb_echo *e;
	const struct pc_fb_heartbeat *h;
	const struct pc_fb_error *er;
	const struct pc_fb_join *j;
	const struct pc_fb_say *s;
	const struct pc_fb_leave *l;
	const uint8_t payload[] = { 0, 1, 2, 255 };
	const void *buf;
	size_t len;
	uint32_t n;
	(void)state;

	init(&b);
	assert_int_equal(pc_fb_echo_build(&b, UINT64_MAX, payload, sizeof(payload)), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_echo_read(buf, len, &e), 0);
	assert_true(pc_fb_echo_id(e) == UINT64_MAX);
	assert_memory_equal(pc_fb_echo_payload(e, &n), payload, sizeof(payload));
	assert_int_equal(n, sizeof(payload));

	pc_fb_builder_reset(&b);
	assert_int_equal(pc_fb_heartbeat_build(&b, 7, 123456789012345ull), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_heartbeat_read(buf, len, &h), 0);
	assert_int_equal(pc_fb_heartbeat_seq(h), 7);
	assert_true(pc_fb_heartbeat_time_ns(h) == 123456789012345ull);

	pc_fb_builder_reset(&b);
	assert_int_equal(pc_fb_error_build(&b, EPROTO, NULL, 0), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_error_read(buf, len, &er), 0);
	assert_int_equal(pc_fb_error_code(er), EPROTO);
	assert_null(pc_fb_error_message(er, &n));
	assert_int_equal(n, 0);

	pc_fb_builder_reset(&b);
	assert_int_equal(pc_fb_join_build(&b, "r", 1, "", 0), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_join_read(buf, len, &j), 0);
	assert_string_equal(pc_fb_join_room(j, &n), "r");
	assert_string_equal(pc_fb_join_user(j, &n), "");
	assert_int_equal(n, 0);
	pc_fb_builder_reset(&b);
	assert_int_equal(pc_fb_say_build(&b, "r2", 2, "text", 4), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_say_read(buf, len, &s), 0);
	assert_string_equal(pc_fb_say_room(s, &n), "r2");
	assert_string_equal(pc_fb_say_text(s, &n), "text");
	assert_int_equal(n, 4);

	pc_fb_builder_reset(&b);
	assert_int_equal(pc_fb_leave_build(&b, "room", 4), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_leave_read(buf, len, &l), 0);
	assert_string_equal(pc_fb_leave_room(l, &n), "room");
	/* a Leave lacks what a Join requires */
	assert_int_equal(pc_fb_join_read(buf, len, &j), -EPROTO);
	assert_null(j);
}

/* Distance of p from the start of buf. */
static size_t at(const void *buf, const void *p)
{
	return (size_t)((const uint8_t *)p - (const uint8_t *)buf);
}

static void tables_of_one_shape_share_a_vtable(void **state)
{
	struct pc_fb_builder b;
	const struct pc_fb_history *h;
	const void *buf, *msgs;
	pc_fb_ref m[4];
	size_t len;
	uint32_t n;
	(void)state;

	init(&b);
	m[0] = pc_fb_message_create(&b, "a", 1, "u", 1, "one", 3, 1);
	m[1] = pc_fb_message_create(&b, "a", 1, "v", 1, "two", 3, 2);
	m[2] = pc_fb_message_create(&b, "a", 1, "w", 1, "three", 5, 0); /* no seq */
	m[3] = pc_fb_message_create(&b, "a", 1, "x", 1, "four", 4, 4);
	assert_int_equal(pc_fb_builder_validate(&b, NULL, 0), 0);
	assert_int_equal(pc_fb_history_build(&b, "a", 1, m, 4), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_history_read(buf, len, &h), 0);
	msgs = pc_fb_history_messages(h, &n);
	assert_int_equal(n, 4);
	const uint8_t *vt0 = pc_fb_vtable((const struct pc_fb_table *)pc_fb_history_message(msgs, 0));
	const uint8_t *vt2 = pc_fb_vtable((const struct pc_fb_table *)pc_fb_history_message(msgs, 2));
	assert_ptr_equal(pc_fb_vtable((const struct pc_fb_table *)pc_fb_history_message(msgs, 1)), vt0);
	assert_ptr_equal(pc_fb_vtable((const struct pc_fb_table *)pc_fb_history_message(msgs, 3)), vt0);
	assert_ptr_not_equal(vt2, vt0); /* seq left out: another shape */
	assert_int_equal(pc_fb_message_seq(pc_fb_history_message(msgs, 2)), 0);
	assert_int_equal(pc_fb_message_seq(pc_fb_history_message(msgs, 3)), 4);
	assert_true(vt0 >= (const uint8_t *)buf && at(buf, vt0) + 12 <= len);
}

static void fields_are_aligned_and_defaults_left_out(void **state)
{
	struct pc_fb_builder b;
	const struct at_pair pair = { .a = 9, .b = -2 };
	const int64_t longs[] = { 1, -1, INT64_MIN };
	const struct pc_fb_table *t;
	pc_fb_ref name, lv;
	const void *buf, *v;
	size_t len;
	uint32_t n;
	(void)state;

	init(&b);
	name = pc_fb_string_create(&b, "n", 1);
	pc_fb_string_create(&b, "odd", 3); /* leaves the front unaligned */
	lv = pc_fb_vector_create(&b, longs, 3, 8, 8);
	assert_int_equal(pc_fb_table_start(&b), 0);
	assert_int_equal(pc_fb_add_u8(&b, AT_U8, 1, 0), 0);
	assert_int_equal(pc_fb_add_u64(&b, AT_U64, 3, 0), 0);
	assert_int_equal(pc_fb_add_i16(&b, AT_I16, 300, 300), 0); /* the default */
	assert_int_equal(pc_fb_add_u16(&b, AT_U16, 5, 0), 0);
	assert_int_equal(pc_fb_add_struct(&b, AT_PAIR, &pair, sizeof(pair), 8), 0);
	assert_int_equal(pc_fb_add_f64(&b, AT_F64, 0.5, 0), 0);
	assert_int_equal(pc_fb_add_ref(&b, AT_NAME, name), 0);
	assert_int_equal(pc_fb_add_ref(&b, AT_LONGS, lv), 0);
	assert_int_equal(pc_fb_builder_validate(&b, NULL, 0), 0);
	assert_int_equal(pc_fb_finish(&b, pc_fb_table_end(&b), ALLTYPES_ID), 0);
	buf = data(&b, &len);
	assert_int_equal(len % 8, 0);
	assert_memory_equal(pc_fb_file_id(buf), ALLTYPES_ID, PC_FB_ID_LEN);
	assert_int_equal(pc_fb_verify(buf, len, &alltypes_desc, ALLTYPES_ID, NULL), 0);
	t = pc_fb_root(buf);
	assert_int_equal(at(buf, t) % 4, 0);
	assert_int_equal(pc_fb_field(t, AT_I16), 0);
	assert_int_equal(pc_fb_get_i16(t, AT_I16, 300), 300);
	assert_int_equal(at(buf, pc_fb_field_ptr(t, AT_U64)) % 8, 0);
	assert_int_equal(at(buf, pc_fb_field_ptr(t, AT_F64)) % 8, 0);
	assert_int_equal(at(buf, pc_fb_field_ptr(t, AT_U16)) % 2, 0);
	assert_int_equal(at(buf, pc_fb_get_struct(t, AT_PAIR)) % 8, 0);
	assert_memory_equal(pc_fb_get_struct(t, AT_PAIR), &pair, sizeof(pair));
	assert_true(pc_fb_get_f64(t, AT_F64, 0) == 0.5);
	v = pc_fb_get_vector(t, AT_LONGS, &n);
	assert_int_equal(n, 3);
	assert_int_equal(at(buf, v) % 8, 0);
	assert_memory_equal(v, longs, sizeof(longs));
	/* a field id past the vtable reads as absent */
	assert_int_equal(pc_fb_field(t, AT_CHILDREN), 0);
	assert_null(pc_fb_get_table(t, AT_CHILD));
	assert_null(pc_fb_get_vector(t, AT_NAMES, &n));
	assert_int_equal(n, 0);
}

static void reserved_vectors_fill_in_place(void **state)
{
	struct pc_fb_builder b;
	const struct pc_fb_echo *e;
	uint8_t *p;
	const uint8_t *got;
	const void *buf;
	size_t len;
	uint32_t n;
	pc_fb_ref v;
	(void)state;

	init(&b);
	v = pc_fb_vector_reserve(&b, 100, 1, 1, (void **)&p);
	assert_int_not_equal(v, 0);
	for (int i = 0; i < 100; i++)
		p[i] = (uint8_t)(i * 7);
	pc_fb_table_start(&b);
	pc_fb_add_ref(&b, PC_FB_ECHO_PAYLOAD, v);
	assert_int_equal(pc_fb_finish(&b, pc_fb_table_end(&b), NULL), 0);
	buf = data(&b, &len);
	assert_int_equal(pc_fb_echo_read(buf, len, &e), 0);
	got = pc_fb_echo_payload(e, &n);
	assert_int_equal(n, 100);
	assert_ptr_equal(got, p);
	assert_int_equal(got[99], (uint8_t)(99 * 7));
	assert_int_equal(pc_fb_echo_id(e), 0);
}

/* Build a History of three messages into cap bytes at the end of a larger
 * array; return the builder's result. Bytes outside the space must keep
 * their fill. */
static int build_history_in(uint8_t *arr, size_t arrlen, size_t cap, size_t *len)
{
	struct pc_fb_builder b;
	pc_fb_ref m[3];
	int err;

	memset(arr, 0xa5, arrlen);
	assert_int_equal(pc_fb_builder_init(&b, arr + 64, cap), 0);
	for (int i = 0; i < 3; i++)
		m[i] = pc_fb_message_create(&b, "room", 4, "user", 4, "some text", 9, (uint64_t)i);
	err = pc_fb_history_build(&b, "room", 4, m, 3);
	assert_int_equal(pc_fb_builder_validate(&b, NULL, 0), 0);
	for (size_t i = 0; i < 64; i++)
		assert_int_equal(arr[i], 0xa5);
	for (size_t i = 64 + cap; i < arrlen; i++)
		assert_int_equal(arr[i], 0xa5);
	if (!err)
		assert_non_null(pc_fb_builder_data(&b, len));
	else
		assert_null(pc_fb_builder_data(&b, len));
	return err;
}

static void full_space_gives_enospc_at_every_size(void **state)
{
	static uint8_t arr[1024];
	size_t need, len;
	(void)state;

	assert_int_equal(build_history_in(arr, sizeof(arr), 512, &need), 0);
	assert_true(need < 512);
	for (size_t cap = 0; cap < need; cap++)
		assert_int_equal(build_history_in(arr, sizeof(arr), cap, &len), -ENOSPC);
	for (size_t cap = need; cap < need + 16; cap++) {
		assert_int_equal(build_history_in(arr, sizeof(arr), cap, &len), 0);
		assert_int_equal(len, need);
	}
	/* one string larger than the space */
	struct pc_fb_builder b;
	assert_int_equal(pc_fb_builder_init(&b, arr, 16), 0);
	assert_int_equal(pc_fb_string_create(&b, (const char *)arr, 100), 0);
	assert_int_equal(pc_fb_builder_error(&b), -ENOSPC);
	assert_int_equal(pc_fb_builder_init(&b, arr, 16), 0);
	assert_int_equal(pc_fb_vector_create(&b, arr, SIZE_MAX / 2, 4, 4), 0);
	assert_int_equal(pc_fb_builder_error(&b), -ENOSPC);
}

/* Run one misuse on a fresh builder and expect -EINVAL to stick. */
static void expect_einval(struct pc_fb_builder *b, int got)
{
	size_t len;

	assert_int_equal(got, -EINVAL);
	assert_int_equal(pc_fb_builder_error(b), -EINVAL);
	assert_int_equal(pc_fb_builder_validate(b, NULL, 0), 0);
	/* later calls do nothing and finish reports the first error */
	assert_int_equal(pc_fb_string_create(b, "x", 1), 0);
	assert_int_equal(pc_fb_finish(b, 4, NULL), -EINVAL);
	assert_null(pc_fb_builder_data(b, &len));
	pc_fb_builder_reset(b);
	assert_int_equal(pc_fb_builder_error(b), 0);
}

static void misuse_gives_einval_and_sticks(void **state)
{
	struct pc_fb_builder b;
	pc_fb_ref s, t, bad = 1000;
	(void)state;

	assert_int_equal(pc_fb_builder_init(&b, NULL, 16), -EINVAL);
	assert_int_equal(pc_fb_builder_init(&b, space, (size_t)PC_FB_MAX_SIZE + 1), -EINVAL);
	init(&b);
	pc_fb_table_start(&b);
	expect_einval(&b, pc_fb_table_start(&b));                    /* nested table */
	pc_fb_table_start(&b);
	expect_einval(&b, pc_fb_string_create(&b, "x", 1) ? 0 : b._err); /* string inside */
	expect_einval(&b, pc_fb_add_u32(&b, 0, 1, 0));                /* no open table */
	pc_fb_table_start(&b);
	expect_einval(&b, pc_fb_add_u32(&b, PC_FB_MAX_FIELDS, 1, 0)); /* id too large */
	pc_fb_table_start(&b);
	pc_fb_add_u32(&b, 3, 1, 0);
	expect_einval(&b, pc_fb_add_u32(&b, 3, 2, 0));                /* field twice */
	expect_einval(&b, pc_fb_table_end(&b) ? 0 : b._err);          /* end, none open */
	pc_fb_table_start(&b);
	expect_einval(&b, pc_fb_finish(&b, 4, NULL));                 /* table open */
	pc_fb_table_start(&b);
	expect_einval(&b, pc_fb_add_ref(&b, 0, 0));                   /* ref 0 */
	pc_fb_table_start(&b);
	expect_einval(&b, pc_fb_add_ref(&b, 0, bad));                 /* not written */
	expect_einval(&b, pc_fb_refs_create(&b, &bad, 1) ? 0 : b._err);
	expect_einval(&b, pc_fb_string_create(&b, NULL, 3) ? 0 : b._err);
	expect_einval(&b, pc_fb_vector_create(&b, space, 1, 4, 3) ? 0 : b._err); /* align */
	expect_einval(&b, pc_fb_vector_create(&b, space, 1, 0, 1) ? 0 : b._err); /* size 0 */
	expect_einval(&b, pc_fb_finish(&b, 0, NULL));                 /* no root */
	/* a table's own field cannot point into the table being built */
	s = pc_fb_string_create(&b, "x", 1);
	pc_fb_table_start(&b);
	pc_fb_add_u32(&b, 0, 7, 0);
	expect_einval(&b, pc_fb_add_ref(&b, 1, b._used));
	/* finishing twice */
	s = pc_fb_string_create(&b, "x", 1);
	pc_fb_table_start(&b);
	pc_fb_add_ref(&b, 0, s);
	t = pc_fb_table_end(&b);
	assert_int_equal(pc_fb_finish(&b, t, NULL), 0);
	expect_einval(&b, pc_fb_finish(&b, t, NULL));
}

static void validate_catches_broken_bookkeeping(void **state)
{
	struct pc_fb_builder b;
	(void)state;

	init(&b);
	assert_int_equal(pc_fb_message_build(&b, "r", 1, "u", 1, "t", 1, 9), 0);
	assert_int_equal(pc_fb_builder_validate(&b, NULL, 0), 0);
	b._used = b._cap + 1;
	PC_EXPECT_BROKEN(pc_fb_builder_validate(&b, PC_WHY), "bytes (at most");
	init(&b);
	b._minalign = 3;
	PC_EXPECT_BROKEN(pc_fb_builder_validate(&b, PC_WHY), "alignment 3, expected a power of two");
	init(&b);
	b._field[2] = 8; /* a field with no open table */
	PC_EXPECT_BROKEN(pc_fb_builder_validate(&b, PC_WHY), "field 2 at 8");
	init(&b);
	b._nvtables = 1;
	b._vtable[0] = 100; /* beyond what was written */
	PC_EXPECT_BROKEN(pc_fb_builder_validate(&b, PC_WHY), "vtable 0 at 100");
}

static void digests_see_every_field(void **state)
{
	struct pc_fb_builder b;
	const void *buf;
	size_t len;
	uint64_t d1, d2;
	(void)state;

	/* the digest used by the verifier tests and the fuzzer must change
	 * when any field does, or it would prove nothing */
	init(&b);
	assert_int_equal(pc_fb_message_build(&b, "r", 1, "u", 1, "t", 1, 9), 0);
	buf = data(&b, &len);
	assert_int_equal(digest_verify(&digest_schemas[6], buf, len, &d1), 0);
	assert_string_equal(digest_schemas[6].name, "chat.Message");
	pc_fb_builder_reset(&b);
	assert_int_equal(pc_fb_message_build(&b, "r", 1, "u", 1, "t", 1, 10), 0);
	buf = data(&b, &len);
	assert_int_equal(digest_verify(&digest_schemas[6], buf, len, &d2), 0);
	assert_true(d1 != d2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(builds_a_message_that_reads_back),
		cmocka_unit_test(a_frame_header_goes_in_the_headroom),
		cmocka_unit_test(message_space_bounds_every_message),
		cmocka_unit_test(every_schema_builds_and_reads),
		cmocka_unit_test(tables_of_one_shape_share_a_vtable),
		cmocka_unit_test(fields_are_aligned_and_defaults_left_out),
		cmocka_unit_test(reserved_vectors_fill_in_place),
		cmocka_unit_test(full_space_gives_enospc_at_every_size),
		cmocka_unit_test(misuse_gives_einval_and_sticks),
		cmocka_unit_test(validate_catches_broken_bookkeeping),
		cmocka_unit_test(digests_see_every_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
