/* SPDX-License-Identifier: MIT */
/* Digests of every table of the example schemas and the test schema. */
#include "digest.h"

#include "alltypes.h"
#include "percore/fb_chat.h"
#include "percore/fb_echo.h"
#include "percore/fb_error.h"
#include "percore/fb_heartbeat.h"

/* FNV-1a over bytes. */
static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t mix_u64(uint64_t h, uint64_t v)
{
	return mix(h, &v, sizeof(v));
}

/* A string as read: its length, its bytes and the NUL after them. */
static uint64_t mix_str(uint64_t h, const char *s, uint32_t len)
{
	if (!s)
		return mix_u64(h, 0x5a5a);
	h = mix_u64(h, len);
	return mix(h, s, (size_t)len + 1);
}

static uint64_t mix_table_str(uint64_t h, const struct pc_fb_table *t, unsigned id)
{
	uint32_t len;
	const char *s = pc_fb_get_string(t, id, &len);

	return mix_str(h, s, len);
}

#define SEED 0xcbf29ce484222325ull

static uint64_t echo(const void *buf)
{
	const struct pc_fb_echo *e = (const struct pc_fb_echo *)pc_fb_root(buf);
	uint32_t n;
	const uint8_t *p = pc_fb_echo_payload(e, &n);

	return mix(mix_u64(SEED, pc_fb_echo_id(e)), p ? p : (const uint8_t *)"", n);
}

static uint64_t heartbeat(const void *buf)
{
	const struct pc_fb_heartbeat *h = (const struct pc_fb_heartbeat *)pc_fb_root(buf);

	return mix_u64(mix_u64(SEED, pc_fb_heartbeat_seq(h)), pc_fb_heartbeat_time_ns(h));
}

static uint64_t error(const void *buf)
{
	const struct pc_fb_error *e = (const struct pc_fb_error *)pc_fb_root(buf);
	uint32_t n;
	const char *m = pc_fb_error_message(e, &n);

	return mix_str(mix_u64(SEED, (uint64_t)pc_fb_error_code(e)), m, n);
}

/* Join, Say and Leave: a table of strings, ids 0 .. n-1. */
static uint64_t strings(const void *buf, unsigned n)
{
	const struct pc_fb_table *t = pc_fb_root(buf);
	uint64_t h = SEED;

	for (unsigned id = 0; id < n; id++)
		h = mix_table_str(h, t, id);
	return h;
}

static uint64_t join(const void *buf)
{
	return strings(buf, 2);
}

static uint64_t leave(const void *buf)
{
	return strings(buf, 1);
}

static uint64_t message_table(uint64_t h, const struct pc_fb_message *m)
{
	uint32_t n;
	const char *s;

	s = pc_fb_message_room(m, &n);
	h = mix_str(h, s, n);
	s = pc_fb_message_user(m, &n);
	h = mix_str(h, s, n);
	s = pc_fb_message_text(m, &n);
	h = mix_str(h, s, n);
	return mix_u64(h, pc_fb_message_seq(m));
}

static uint64_t message(const void *buf)
{
	return message_table(SEED, (const struct pc_fb_message *)pc_fb_root(buf));
}

static uint64_t history(const void *buf)
{
	const struct pc_fb_history *h = (const struct pc_fb_history *)pc_fb_root(buf);
	uint32_t n;
	const char *room = pc_fb_history_room(h, &n);
	uint64_t d = mix_str(SEED, room, n);
	const void *msgs = pc_fb_history_messages(h, &n);

	for (uint32_t i = 0; msgs && i < n; i++)
		d = message_table(d, pc_fb_history_message(msgs, i));
	return d;
}

static uint64_t child(uint64_t h, const struct pc_fb_table *c)
{
	return mix_u64(mix_table_str(h, c, CHILD_NAME), (uint64_t)pc_fb_get_i32(c, CHILD_VALUE, -1));
}

static uint64_t alltypes_scalars(uint64_t h, const struct pc_fb_table *t)
{
	float f32 = pc_fb_get_f32(t, AT_F32, 1.5f);
	double f64 = pc_fb_get_f64(t, AT_F64, 0);

	h = mix_u64(h, pc_fb_get_bool(t, AT_FLAG, true));
	h = mix_u64(h, (uint64_t)pc_fb_get_i8(t, AT_I8, -5));
	h = mix_u64(h, pc_fb_get_u8(t, AT_U8, 0));
	h = mix_u64(h, (uint64_t)pc_fb_get_i16(t, AT_I16, 300));
	h = mix_u64(h, pc_fb_get_u16(t, AT_U16, 0));
	h = mix_u64(h, (uint64_t)pc_fb_get_i32(t, AT_I32, 0));
	h = mix_u64(h, pc_fb_get_u32(t, AT_U32, 0));
	h = mix_u64(h, (uint64_t)pc_fb_get_i64(t, AT_I64, -7));
	h = mix_u64(h, pc_fb_get_u64(t, AT_U64, 0));
	h = mix(h, &f32, sizeof(f32));
	h = mix(h, &f64, sizeof(f64));
	return mix_u64(h, (uint64_t)pc_fb_get_i8(t, AT_COLOR, 1));
}

static uint64_t alltypes_vectors(uint64_t h, const struct pc_fb_table *t)
{
	static const struct { unsigned id, size; } inline_vecs[] = {
		{ AT_BYTES, 1 }, { AT_INTS, 4 }, { AT_LONGS, 8 },
		{ AT_PAIRS, sizeof(struct at_pair) },
	};
	const uint8_t *v;
	uint32_t n, len;

	for (size_t i = 0; i < PC_ARRAY_LEN(inline_vecs); i++) {
		v = pc_fb_get_vector(t, inline_vecs[i].id, &n);
		h = mix(mix_u64(h, n), v ? v : (const uint8_t *)"", (size_t)n * inline_vecs[i].size);
	}
	v = pc_fb_get_vector(t, AT_NAMES, &n);
	for (uint32_t i = 0; v && i < n; i++) {
		const char *s = pc_fb_vec_string(v, i, &len);

		h = mix_str(h, s, len);
	}
	v = pc_fb_get_vector(t, AT_CHILDREN, &n);
	for (uint32_t i = 0; v && i < n; i++)
		h = child(h, pc_fb_vec_table(v, i));
	return h;
}

uint64_t digest_alltypes(const void *buf)
{
	const struct pc_fb_table *t = pc_fb_root(buf), *c;
	const void *pos = pc_fb_get_struct(t, AT_POS), *pair = pc_fb_get_struct(t, AT_PAIR);
	uint64_t h = alltypes_scalars(SEED, t);

	h = mix_table_str(h, t, AT_NAME);
	h = pos ? mix(h, pos, sizeof(struct at_vec3)) : mix_u64(h, 1);
	h = pair ? mix(h, pair, sizeof(struct at_pair)) : mix_u64(h, 2);
	h = alltypes_vectors(h, t);
	c = pc_fb_get_table(t, AT_CHILD);
	return c ? child(h, c) : mix_u64(h, 3);
}

const struct digest_schema digest_schemas[] = {
	{ "echo.Echo", &pc_fb_echo_desc, NULL, echo },
	{ "heartbeat.Heartbeat", &pc_fb_heartbeat_desc, NULL, heartbeat },
	{ "error.Error", &pc_fb_error_desc, NULL, error },
	{ "chat.Join", &pc_fb_join_desc, NULL, join },
	{ "chat.Say", &pc_fb_say_desc, NULL, join },
	{ "chat.Leave", &pc_fb_leave_desc, NULL, leave },
	{ "chat.Message", &pc_fb_message_desc, NULL, message },
	{ "chat.History", &pc_fb_history_desc, NULL, history },
	{ "test.AllTypes", &alltypes_desc, ALLTYPES_ID, digest_alltypes },
};
const size_t digest_nschemas = PC_ARRAY_LEN(digest_schemas);

int digest_verify(const struct digest_schema *s, const void *buf, size_t len,
		  uint64_t *digest)
{
	int err = pc_fb_verify(buf, len, s->desc, s->file_id, NULL);

	if (!err)
		*digest = s->digest(buf);
	return err;
}
