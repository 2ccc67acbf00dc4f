/* SPDX-License-Identifier: MIT */
/* The interop helper's message tables: each encodes through the schema's
 * builder function and decodes through its verified read and accessors, so
 * the interop tests cover the code a server runs. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop.h"
#include "percore/fb_chat.h"
#include "percore/fb_echo.h"
#include "percore/fb_error.h"
#include "percore/fb_heartbeat.h"

const char *ij_str(const cJSON *o, const char *k, size_t *len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (!cJSON_IsString(v)) {
		*len = 0;
		return NULL;
	}
	*len = strlen(v->valuestring);
	return v->valuestring;
}

uint64_t ij_u64(const cJSON *o, const char *k, uint64_t def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (cJSON_IsString(v))
		return strtoull(v->valuestring, NULL, 10);
	return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : def;
}

int64_t ij_i64(const cJSON *o, const char *k, int64_t def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (cJSON_IsString(v))
		return strtoll(v->valuestring, NULL, 10);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

double ij_num(const cJSON *o, const char *k, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v);
	return cJSON_IsNumber(v) ? v->valuedouble : def;
}

void ij_put_str(cJSON *o, const char *k, const char *s)
{
	if (s)
		cJSON_AddStringToObject(o, k, s);
}

void ij_put_u64(cJSON *o, const char *k, uint64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, v);
	cJSON_AddStringToObject(o, k, num);
}

cJSON *ij_i64_item(int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	return cJSON_CreateString(num);
}

void ij_put_i64(cJSON *o, const char *k, int64_t v)
{
	cJSON_AddItemToObject(o, k, ij_i64_item(v));
}

pc_fb_ref ij_string_ref(struct pc_fb_builder *b, const cJSON *o, const char *k)
{
	size_t len;
	const char *s = ij_str(o, k, &len);

	return s ? pc_fb_string_create(b, s, len) : 0;
}

/* ---- echo, heartbeat, error ------------------------------------------- */

static int echo_encode(struct pc_fb_builder *b, const cJSON *in)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(in, "payload");
	size_t n = cJSON_IsArray(p) ? (size_t)cJSON_GetArraySize(p) : 0;
	uint8_t *bytes = malloc(n + 1);
	size_t i = 0;
	const cJSON *e;
	int err;

	if (!bytes)
		return -ENOMEM;
	cJSON_ArrayForEach(e, p)
		bytes[i++] = (uint8_t)e->valuedouble;
	err = pc_fb_echo_build(b, ij_u64(in, "id", 0), cJSON_IsArray(p) ? bytes : NULL, n);
	free(bytes);
	return err;
}

static int echo_decode(const void *buf, size_t len, cJSON **out)
{
	const struct pc_fb_echo *e;
	const uint8_t *p;
	uint32_t n;
	cJSON *arr;
	int err = pc_fb_echo_read(buf, len, &e);

	if (err)
		return err;
	*out = cJSON_CreateObject();
	ij_put_u64(*out, "id", pc_fb_echo_id(e));
	p = pc_fb_echo_payload(e, &n);
	if (p) {
		arr = cJSON_AddArrayToObject(*out, "payload");
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(p[i]));
	}
	return 0;
}

static int heartbeat_encode(struct pc_fb_builder *b, const cJSON *in)
{
	return pc_fb_heartbeat_build(b, (uint32_t)ij_u64(in, "seq", 0),
				     ij_u64(in, "time_ns", 0));
}

static int heartbeat_decode(const void *buf, size_t len, cJSON **out)
{
	const struct pc_fb_heartbeat *h;
	int err = pc_fb_heartbeat_read(buf, len, &h);

	if (err)
		return err;
	*out = cJSON_CreateObject();
	cJSON_AddNumberToObject(*out, "seq", pc_fb_heartbeat_seq(h));
	ij_put_u64(*out, "time_ns", pc_fb_heartbeat_time_ns(h));
	return 0;
}

static int error_encode(struct pc_fb_builder *b, const cJSON *in)
{
	size_t len;
	const char *m = ij_str(in, "message", &len);

	return pc_fb_error_build(b, (int32_t)ij_i64(in, "code", 0), m, len);
}

static int error_decode(const void *buf, size_t len, cJSON **out)
{
	const struct pc_fb_error *e;
	uint32_t n;
	int err = pc_fb_error_read(buf, len, &e);

	if (err)
		return err;
	*out = cJSON_CreateObject();
	cJSON_AddNumberToObject(*out, "code", pc_fb_error_code(e));
	ij_put_str(*out, "message", pc_fb_error_message(e, &n));
	return 0;
}

/* ---- chat --------------------------------------------------------------- */

static int join_encode(struct pc_fb_builder *b, const cJSON *in)
{
	size_t rl, ul;
	const char *r = ij_str(in, "room", &rl), *u = ij_str(in, "user", &ul);

	return pc_fb_join_build(b, r, rl, u, ul);
}

/* Join, Say and Leave hold only strings, field ids 0 .. n-1 in the order
 * names gives. (The typed accessors are checked in test_fb_build.) */
static int strings_decode(const void *buf, size_t len, cJSON **out,
			  const struct pc_fb_table_desc *d, const char *const *names,
			  unsigned n)
{
	int err = pc_fb_verify(buf, len, d, NULL, NULL);
	uint32_t slen;

	if (err)
		return err;
	*out = cJSON_CreateObject();
	for (unsigned id = 0; id < n; id++)
		ij_put_str(*out, names[id], pc_fb_get_string(pc_fb_root(buf), id, &slen));
	return 0;
}

static int join_decode(const void *buf, size_t len, cJSON **out)
{
	static const char *const names[] = { "room", "user" };

	return strings_decode(buf, len, out, &pc_fb_join_desc, names, 2);
}

static int say_encode(struct pc_fb_builder *b, const cJSON *in)
{
	size_t rl, tl;
	const char *r = ij_str(in, "room", &rl), *t = ij_str(in, "text", &tl);

	return pc_fb_say_build(b, r, rl, t, tl);
}

static int say_decode(const void *buf, size_t len, cJSON **out)
{
	static const char *const names[] = { "room", "text" };

	return strings_decode(buf, len, out, &pc_fb_say_desc, names, 2);
}

static int leave_encode(struct pc_fb_builder *b, const cJSON *in)
{
	size_t rl;
	const char *r = ij_str(in, "room", &rl);

	return pc_fb_leave_build(b, r, rl);
}

static int leave_decode(const void *buf, size_t len, cJSON **out)
{
	static const char *const names[] = { "room" };

	return strings_decode(buf, len, out, &pc_fb_leave_desc, names, 1);
}

static pc_fb_ref message_create(struct pc_fb_builder *b, const cJSON *in)
{
	size_t rl, ul, tl;
	const char *r = ij_str(in, "room", &rl), *u = ij_str(in, "user", &ul);
	const char *t = ij_str(in, "text", &tl);

	return pc_fb_message_create(b, r, rl, u, ul, t, tl, ij_u64(in, "seq", 0));
}

static int message_encode(struct pc_fb_builder *b, const cJSON *in)
{
	return pc_fb_finish(b, message_create(b, in), NULL);
}

static cJSON *message_json(const struct pc_fb_message *m)
{
	cJSON *o = cJSON_CreateObject();
	uint32_t n;

	ij_put_str(o, "room", pc_fb_message_room(m, &n));
	ij_put_str(o, "user", pc_fb_message_user(m, &n));
	ij_put_str(o, "text", pc_fb_message_text(m, &n));
	ij_put_u64(o, "seq", pc_fb_message_seq(m));
	return o;
}

static int message_decode(const void *buf, size_t len, cJSON **out)
{
	const struct pc_fb_message *m;
	int err = pc_fb_message_read(buf, len, &m);

	if (!err)
		*out = message_json(m);
	return err;
}

static int history_encode(struct pc_fb_builder *b, const cJSON *in)
{
	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(in, "messages");
	size_t n = cJSON_IsArray(msgs) ? (size_t)cJSON_GetArraySize(msgs) : 0, i = 0;
	pc_fb_ref *refs = calloc(n + 1, sizeof(*refs));
	size_t rl;
	const char *r = ij_str(in, "room", &rl);
	const cJSON *m;
	int err;

	if (!refs)
		return -ENOMEM;
	cJSON_ArrayForEach(m, msgs)
		refs[i++] = message_create(b, m);
	err = pc_fb_history_build(b, r, rl, cJSON_IsArray(msgs) ? refs : NULL, n);
	free(refs);
	return err;
}

static int history_decode(const void *buf, size_t len, cJSON **out)
{
	const struct pc_fb_history *h;
	const void *elems;
	uint32_t n;
	cJSON *arr;
	int err = pc_fb_history_read(buf, len, &h);

	if (err)
		return err;
	*out = cJSON_CreateObject();
	ij_put_str(*out, "room", pc_fb_history_room(h, &n));
	elems = pc_fb_history_messages(h, &n);
	if (elems) {
		arr = cJSON_AddArrayToObject(*out, "messages");
		for (uint32_t i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, message_json(pc_fb_history_message(elems, i)));
	}
	return 0;
}

static const struct interop_table tables[] = {
	{ "echo.Echo", echo_encode, echo_decode },
	{ "heartbeat.Heartbeat", heartbeat_encode, heartbeat_decode },
	{ "error.Error", error_encode, error_decode },
	{ "chat.Join", join_encode, join_decode },
	{ "chat.Say", say_encode, say_decode },
	{ "chat.Leave", leave_encode, leave_decode },
	{ "chat.Message", message_encode, message_decode },
	{ "chat.History", history_encode, history_decode },
	{ "test.AllTypes", alltypes_encode, alltypes_decode },
};

const struct interop_table *interop_find(const char *name)
{
	for (size_t i = 0; i < PC_ARRAY_LEN(tables); i++)
		if (strcmp(tables[i].name, name) == 0)
			return &tables[i];
	return NULL;
}
