/* SPDX-License-Identifier: MIT */
/* Typed shard results and their merge (shard_merge.h). */
#include "shard_merge.h"

#include "errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kv_part_init(struct kv_part *p)
{
	memset(p, 0, sizeof(*p));
}

void kv_part_free(struct kv_part *p)
{
	free(p->strs);
	free(p->bytes);
	kv_part_init(p);
}

/* Room for one more string of len bytes. */
static bool grow(struct kv_part *p, size_t len)
{
	if (p->count == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 16;
		struct kv_part_str *s = realloc(p->strs, cap * sizeof(*s));

		if (!s)
			return false;
		p->strs = s;
		p->cap = cap;
	}
	if (p->room - p->used < len) {
		size_t room = p->room ? p->room : 256;
		char *b;

		while (room - p->used < len)
			room *= 2;
		b = realloc(p->bytes, room);
		if (!b)
			return false;
		p->bytes = b;
		p->room = room;
	}
	return true;
}

void kv_part_add(struct kv_part *p, const char *s, size_t len)
{
	if (p->failed || !grow(p, len)) {
		p->failed = true;
		return;
	}
	if (len)
		memcpy(p->bytes + p->used, s, len);
	p->strs[p->count++] = (struct kv_part_str){ p->used, len };
	p->used += len;
}

void kv_part_add_nil(struct kv_part *p)
{
	if (p->failed || !grow(p, 0)) {
		p->failed = true;
		return;
	}
	p->strs[p->count++] = (struct kv_part_str){ 0, KV_PART_NIL };
}

static void reply_str(const struct kv_part *p, uint32_t i, struct kv_reply *out)
{
	const struct kv_part_str *s = &p->strs[i];

	if (s->len == KV_PART_NIL)
		kv_reply_null(out);
	else
		kv_reply_bulk(out, p->bytes + s->off, s->len);
}

static void reply_strs(const struct kv_part *p, struct kv_reply *out)
{
	for (uint32_t s = 0; s < p->count; s++)
		reply_str(p, s, out);
}

static void merge_values(const struct kv_part *const *parts, unsigned n,
			 const unsigned *key_part, uint32_t nkeys, struct kv_reply *out)
{
	uint32_t next[n];

	memset(next, 0, sizeof(next));
	kv_reply_array(out, nkeys);
	for (uint32_t k = 0; k < nkeys; k++) {
		unsigned i = key_part[k];

		reply_str(parts[i], next[i]++, out);
	}
}

/* The first string of the part with a string and the largest draw. */
static void merge_random(const struct kv_part *const *parts, unsigned n, struct kv_reply *out)
{
	const struct kv_part *best = NULL;

	for (unsigned i = 0; i < n; i++)
		if (parts[i]->count && (!best || parts[i]->n > best->n))
			best = parts[i];
	if (best)
		reply_str(best, 0, out);
	else
		kv_reply_null(out);
}

/* String i of every part, for i = 0, 1, ..., in part order, as one bulk
 * string (a missing one adds nothing). */
static void merge_text(const struct kv_part *const *parts, unsigned n, struct kv_reply *out)
{
	uint32_t most = 0;
	size_t total = 0;
	char head[32], *p;

	for (unsigned i = 0; i < n; i++) {
		most = parts[i]->count > most ? parts[i]->count : most;
		for (uint32_t k = 0; k < parts[i]->count; k++)
			if (parts[i]->strs[k].len != KV_PART_NIL)
				total += parts[i]->strs[k].len;
	}
	snprintf(head, sizeof(head), "$%zu\r\n", total);
	kv_reply_raw(out, head, strlen(head));
	p = kv_reply_reserve(out, total + 2);
	if (!p)
		return; /* out says it failed */
	for (uint32_t k = 0; k < most; k++)
		for (unsigned i = 0; i < n; i++) {
			const struct kv_part_str *s = &parts[i]->strs[k];

			if (k >= parts[i]->count || s->len == KV_PART_NIL || !s->len)
				continue;
			memcpy(p, parts[i]->bytes + s->off, s->len);
			p += s->len;
		}
	memcpy(p, "\r\n", 2);
	out->len += total + 2;
}

void kv_part_merge(enum kv_multi how, const struct kv_part *const *parts, unsigned n,
		   const unsigned *key_part, uint32_t nkeys, struct kv_reply *out)
{
	int64_t sum = 0;
	size_t total = 0;

	switch (how) {
	case KV_MULTI_SUM:
		for (unsigned i = 0; i < n; i++)
			sum += parts[i]->n;
		kv_reply_int(out, sum);
		break;
	case KV_MULTI_OK:
		kv_reply_status(out, "OK");
		break;
	case KV_MULTI_VALUES:
		merge_values(parts, n, key_part, nkeys, out);
		break;
	case KV_MULTI_CONCAT:
		for (unsigned i = 0; i < n; i++)
			total += parts[i]->count;
		kv_reply_array(out, total);
		for (unsigned i = 0; i < n; i++)
			reply_strs(parts[i], out);
		break;
	case KV_MULTI_RANDOM:
		merge_random(parts, n, out);
		break;
	case KV_MULTI_TEXT:
		merge_text(parts, n, out);
		break;
	case KV_MULTI_KILL:
		for (unsigned i = 0; i < n; i++)
			sum += parts[i]->n;
		if (!n || !parts[0]->count)
			kv_reply_int(out, sum);
		else if (sum) /* the old form */
			kv_reply_status(out, "OK");
		else
			KV_REPLY_ERR(out, KV_ERR_NO_CLIENT);
		break;
	default: /* WALK and the staged kinds: a record naming them here is a bug */
		abort();
	}
}

void kv_part_reply(enum kv_multi how, const struct kv_part *p, struct kv_reply *out)
{
	if (how == KV_MULTI_WALK) {
		kv_part_reply_walk(p, (uint64_t)p->n, out);
	} else if (how == KV_MULTI_VALUES || how == KV_MULTI_CONCAT) {
		kv_reply_array(out, p->count);
		reply_strs(p, out);
	} else {
		kv_part_merge(how, &p, 1, NULL, 0, out);
	}
}

void kv_part_reply_walk(const struct kv_part *p, uint64_t cursor, struct kv_reply *out)
{
	char text[24];

	kv_reply_array(out, 2);
	kv_reply_bulk(out, text, (size_t)snprintf(text, sizeof(text), "%llu",
						  (unsigned long long)cursor));
	kv_reply_array(out, p->count);
	reply_strs(p, out);
}
