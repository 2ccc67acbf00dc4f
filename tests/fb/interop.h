/* SPDX-License-Identifier: MIT */
/* The interop helper's tables and JSON helpers (see fb_interop.c). */
#ifndef PC_TEST_FB_INTEROP_H
#define PC_TEST_FB_INTEROP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "percore/fb.h"

struct interop_table {
	const char *name;
	/* Build a finished buffer from in. Returns 0 or the builder's error. */
	int (*encode)(struct pc_fb_builder *b, const cJSON *in);
	/* Verify buf and describe it in *out. Returns 0 or -EPROTO. */
	int (*decode)(const void *buf, size_t len, cJSON **out);
};

const struct interop_table *interop_find(const char *name);

int alltypes_encode(struct pc_fb_builder *b, const cJSON *in);
int alltypes_decode(const void *buf, size_t len, cJSON **out);

/* Field k of o as a string (NULL when absent) and its length. */
const char *ij_str(const cJSON *o, const char *k, size_t *len);
/* Field k of o as an integer, from a number or a decimal string. */
uint64_t ij_u64(const cJSON *o, const char *k, uint64_t def);
int64_t ij_i64(const cJSON *o, const char *k, int64_t def);
double ij_num(const cJSON *o, const char *k, double def);
/* Add a string field; nothing when s is NULL. */
void ij_put_str(cJSON *o, const char *k, const char *s);
/* Add a 64-bit integer as a decimal string. */
void ij_put_u64(cJSON *o, const char *k, uint64_t v);
void ij_put_i64(cJSON *o, const char *k, int64_t v);
cJSON *ij_i64_item(int64_t v);
/* A string ref for field k of o, or 0 when absent. */
pc_fb_ref ij_string_ref(struct pc_fb_builder *b, const cJSON *o, const char *k);

#endif
