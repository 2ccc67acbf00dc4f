/* SPDX-License-Identifier: MIT */
/* The interop helper's test.AllTypes: every kind of field through the
 * generic builder and reader (the message schemas use only a few). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alltypes.h"
#include "interop.h"

typedef void (*put_fn)(uint8_t *dst, const cJSON *item);

static int64_t item_i64(const cJSON *e)
{
	return cJSON_IsString(e) ? strtoll(e->valuestring, NULL, 10) : (int64_t)e->valuedouble;
}

static void put_u8(uint8_t *dst, const cJSON *e)
{
	*dst = (uint8_t)e->valuedouble;
}

static void put_i32(uint8_t *dst, const cJSON *e)
{
	int32_t v = (int32_t)e->valuedouble;

	memcpy(dst, &v, sizeof(v));
}

static void put_i64(uint8_t *dst, const cJSON *e)
{
	int64_t v = item_i64(e);

	memcpy(dst, &v, sizeof(v));
}

static void put_pair(uint8_t *dst, const cJSON *e)
{
	struct at_pair p = { .a = (uint8_t)ij_u64(e, "a", 0), .b = ij_i64(e, "b", 0) };

	memcpy(dst, &p, sizeof(p));
}

/* A vector of scalars or structs from the JSON array o[k], filled in place;
 * 0 when absent. */
static pc_fb_ref vector(struct pc_fb_builder *b, const cJSON *o, const char *k,
			size_t size, size_t align, put_fn put)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k), *e;
	uint8_t *dst;
	size_t i = 0;
	pc_fb_ref ref;

	if (!cJSON_IsArray(a))
		return 0;
	ref = pc_fb_vector_reserve(b, (size_t)cJSON_GetArraySize(a), size, align, (void **)&dst);
	if (ref)
		cJSON_ArrayForEach(e, a)
			put(dst + size * i++, e);
	return ref;
}

static pc_fb_ref child_create(struct pc_fb_builder *b, const cJSON *c)
{
	pc_fb_ref name = ij_string_ref(b, c, "name");

	pc_fb_table_start(b);
	if (name)
		pc_fb_add_ref(b, CHILD_NAME, name);
	pc_fb_add_i32(b, CHILD_VALUE, (int32_t)ij_i64(c, "value", -1), -1);
	return pc_fb_table_end(b);
}

/* A vector of offsets to strings (children false) or Child tables. */
static pc_fb_ref offsets(struct pc_fb_builder *b, const cJSON *o, const char *k, bool children)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k), *e;
	size_t n = cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0, i = 0;
	pc_fb_ref *refs, ref;

	if (!cJSON_IsArray(a) || !(refs = calloc(n + 1, sizeof(*refs))))
		return 0;
	cJSON_ArrayForEach(e, a)
		refs[i++] = children ? child_create(b, e)
				     : pc_fb_string_create(b, e->valuestring, strlen(e->valuestring));
	ref = pc_fb_refs_create(b, refs, n);
	free(refs);
	return ref;
}

static void add_structs(struct pc_fb_builder *b, const cJSON *in)
{
	const cJSON *pos = cJSON_GetObjectItemCaseSensitive(in, "pos");
	const cJSON *pair = cJSON_GetObjectItemCaseSensitive(in, "pair");

	if (cJSON_IsObject(pos)) {
		struct at_vec3 v = { (float)ij_num(pos, "x", 0), (float)ij_num(pos, "y", 0),
				     (float)ij_num(pos, "z", 0) };
		pc_fb_add_struct(b, AT_POS, &v, sizeof(v), 4);
	}
	if (cJSON_IsObject(pair)) {
		uint8_t p[sizeof(struct at_pair)];

		put_pair(p, pair);
		pc_fb_add_struct(b, AT_PAIR, p, sizeof(p), 8);
	}
}

static void add_scalars(struct pc_fb_builder *b, const cJSON *in)
{
	pc_fb_add_bool(b, AT_FLAG, ij_num(in, "flag", 1) != 0, true);
	pc_fb_add_i8(b, AT_I8, (int8_t)ij_i64(in, "i8", -5), -5);
	pc_fb_add_u8(b, AT_U8, (uint8_t)ij_u64(in, "u8", 0), 0);
	pc_fb_add_i16(b, AT_I16, (int16_t)ij_i64(in, "i16", 300), 300);
	pc_fb_add_u16(b, AT_U16, (uint16_t)ij_u64(in, "u16", 0), 0);
	pc_fb_add_i32(b, AT_I32, (int32_t)ij_i64(in, "i32", 0), 0);
	pc_fb_add_u32(b, AT_U32, (uint32_t)ij_u64(in, "u32", 0), 0);
	pc_fb_add_i64(b, AT_I64, ij_i64(in, "i64", -7), -7);
	pc_fb_add_u64(b, AT_U64, ij_u64(in, "u64", 0), 0);
	pc_fb_add_f32(b, AT_F32, (float)ij_num(in, "f32", 1.5), 1.5f);
	pc_fb_add_f64(b, AT_F64, ij_num(in, "f64", 0), 0);
	pc_fb_add_i8(b, AT_COLOR, (int8_t)ij_i64(in, "color", 1), 1);
}

int alltypes_encode(struct pc_fb_builder *b, const cJSON *in)
{
	pc_fb_ref name = ij_string_ref(b, in, "name");
	pc_fb_ref bytes = vector(b, in, "bytes", 1, 1, put_u8);
	pc_fb_ref ints = vector(b, in, "ints", 4, 4, put_i32);
	pc_fb_ref longs = vector(b, in, "longs", 8, 8, put_i64);
	pc_fb_ref pairs = vector(b, in, "pairs", sizeof(struct at_pair), 8, put_pair);
	pc_fb_ref names = offsets(b, in, "names", false);
	pc_fb_ref children = offsets(b, in, "children", true);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(in, "child");
	pc_fb_ref child = cJSON_IsObject(c) ? child_create(b, c) : 0;
	const pc_fb_ref refs[] = { [AT_NAME] = name, [AT_BYTES] = bytes, [AT_INTS] = ints,
				   [AT_LONGS] = longs, [AT_NAMES] = names, [AT_PAIRS] = pairs,
				   [AT_CHILD] = child, [AT_CHILDREN] = children };

	pc_fb_table_start(b);
	add_scalars(b, in);
	add_structs(b, in);
	for (unsigned id = 0; id < PC_ARRAY_LEN(refs); id++)
		if (refs[id])
			pc_fb_add_ref(b, id, refs[id]);
	return pc_fb_finish(b, pc_fb_table_end(b), ALLTYPES_ID);
}

static cJSON *child_json(const struct pc_fb_table *c)
{
	cJSON *o = cJSON_CreateObject();
	uint32_t n;

	ij_put_str(o, "name", pc_fb_get_string(c, CHILD_NAME, &n));
	cJSON_AddNumberToObject(o, "value", pc_fb_get_i32(c, CHILD_VALUE, -1));
	return o;
}

static void scalars_json(cJSON *o, const struct pc_fb_table *t)
{
	cJSON_AddBoolToObject(o, "flag", pc_fb_get_bool(t, AT_FLAG, true));
	cJSON_AddNumberToObject(o, "i8", pc_fb_get_i8(t, AT_I8, -5));
	cJSON_AddNumberToObject(o, "u8", pc_fb_get_u8(t, AT_U8, 0));
	cJSON_AddNumberToObject(o, "i16", pc_fb_get_i16(t, AT_I16, 300));
	cJSON_AddNumberToObject(o, "u16", pc_fb_get_u16(t, AT_U16, 0));
	cJSON_AddNumberToObject(o, "i32", pc_fb_get_i32(t, AT_I32, 0));
	cJSON_AddNumberToObject(o, "u32", pc_fb_get_u32(t, AT_U32, 0));
	ij_put_i64(o, "i64", pc_fb_get_i64(t, AT_I64, -7));
	ij_put_u64(o, "u64", pc_fb_get_u64(t, AT_U64, 0));
	cJSON_AddNumberToObject(o, "f32", pc_fb_get_f32(t, AT_F32, 1.5f));
	cJSON_AddNumberToObject(o, "f64", pc_fb_get_f64(t, AT_F64, 0));
	cJSON_AddNumberToObject(o, "color", pc_fb_get_i8(t, AT_COLOR, 1));
}

static cJSON *pair_json(const void *p)
{
	struct at_pair v;
	cJSON *o = cJSON_CreateObject();

	memcpy(&v, p, sizeof(v));
	cJSON_AddNumberToObject(o, "a", v.a);
	ij_put_i64(o, "b", v.b);
	return o;
}

static void structs_json(cJSON *o, const struct pc_fb_table *t)
{
	const void *pos = pc_fb_get_struct(t, AT_POS), *pair = pc_fb_get_struct(t, AT_PAIR);

	if (pos) {
		struct at_vec3 v;
		cJSON *p = cJSON_AddObjectToObject(o, "pos");

		memcpy(&v, pos, sizeof(v));
		cJSON_AddNumberToObject(p, "x", v.x);
		cJSON_AddNumberToObject(p, "y", v.y);
		cJSON_AddNumberToObject(p, "z", v.z);
	}
	if (pair)
		cJSON_AddItemToObject(o, "pair", pair_json(pair));
}

static void vectors_json(cJSON *o, const struct pc_fb_table *t)
{
	const uint8_t *v;
	uint32_t n, len;
	cJSON *a;

	if ((v = pc_fb_get_vector(t, AT_BYTES, &n)) && (a = cJSON_AddArrayToObject(o, "bytes")))
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
	if ((v = pc_fb_get_vector(t, AT_INTS, &n)) && (a = cJSON_AddArrayToObject(o, "ints")))
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(pc_fb_load_i32(v + 4 * i)));
	if ((v = pc_fb_get_vector(t, AT_LONGS, &n)) && (a = cJSON_AddArrayToObject(o, "longs")))
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, ij_i64_item(pc_fb_load_i64(v + 8 * i)));
	if ((v = pc_fb_get_vector(t, AT_NAMES, &n)) && (a = cJSON_AddArrayToObject(o, "names")))
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(pc_fb_vec_string(v, i, &len)));
	if ((v = pc_fb_get_vector(t, AT_PAIRS, &n)) && (a = cJSON_AddArrayToObject(o, "pairs")))
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, pair_json(v + sizeof(struct at_pair) * i));
	if ((v = pc_fb_get_vector(t, AT_CHILDREN, &n)) && (a = cJSON_AddArrayToObject(o, "children")))
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(a, child_json(pc_fb_vec_table(v, i)));
}

int alltypes_decode(const void *buf, size_t len, cJSON **out)
{
	const struct pc_fb_table *t, *c;
	uint32_t n;
	int err = pc_fb_verify(buf, len, &alltypes_desc, ALLTYPES_ID, NULL);

	if (err)
		return err;
	t = pc_fb_root(buf);
	*out = cJSON_CreateObject();
	scalars_json(*out, t);
	ij_put_str(*out, "name", pc_fb_get_string(t, AT_NAME, &n));
	structs_json(*out, t);
	vectors_json(*out, t);
	if ((c = pc_fb_get_table(t, AT_CHILD)))
		cJSON_AddItemToObject(*out, "child", child_json(c));
	return 0;
}
