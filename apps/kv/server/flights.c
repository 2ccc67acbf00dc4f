/* SPDX-License-Identifier: MIT */
/* A connection's flights and the check against their keys (flights.h). */
#include <stdlib.h>
#include <string.h>

#include "flights.h"

/* The key's bit in the table's filter: other bits of its hash than
 * kv_flight_mask_bit()'s, so that the two rule out different keys. */
static uint32_t filter_bit(uint64_t hash)
{
	return (uint32_t)(hash >> 20) % KV_FLIGHT_FILTER_BITS;
}

struct kv_flight *kv_flight_new(uint32_t nkeys)
{
	bool all = !nkeys || nkeys > KV_FLIGHT_KEYS;
	/* malloc, not calloc: glibc's calloc skips the per-thread cache */
	struct kv_flight *f = malloc(sizeof(*f) + (all ? 0 : nkeys) * sizeof(f->keys[0]));

	if (f)
		*f = (struct kv_flight){ .all = all, .nkeys = all ? 0 : nkeys };
	return f;
}

struct kv_flights *kv_flights_new(void)
{
	struct kv_flights *fl = malloc(sizeof(*fl));

	if (fl) /* the filter is built when it is first wanted */
		fl->n = fl->all = fl->stale = 0;
	return fl;
}

struct kv_flights *kv_flights_take(struct kv_flights_spare *sp)
{
	struct kv_flights *fl = sp->list;

	if (!fl)
		return kv_flights_new();
	sp->list = fl->next;
	sp->n--;
	return fl;
}

void kv_flights_put(struct kv_flights_spare *sp, struct kv_flights *fl)
{
	if (sp->n == KV_FLIGHTS_SPARE) {
		free(fl);
		return;
	}
	fl->n = fl->all = fl->stale = 0;
	fl->next = sp->list;
	sp->list = fl;
	sp->n++;
}

void kv_flights_spare_free(struct kv_flights_spare *sp)
{
	while (sp->list) {
		struct kv_flights *fl = sp->list;

		sp->list = fl->next;
		free(fl);
	}
	sp->n = 0;
}

static void filter_add(struct kv_flights *fl, const struct kv_flight *f)
{
	for (uint32_t j = 0; j < f->nkeys; j++) {
		uint32_t b = filter_bit(f->keys[j]);

		fl->filter[b / 64] |= 1ull << (b % 64);
	}
}

/* The filter of every flight's keys, built again. */
static void filter_build(struct kv_flights *fl)
{
	fl->stale = 0;
	memset(fl->filter, 0, sizeof(fl->filter));
	for (uint32_t i = 0; i < fl->n; i++)
		filter_add(fl, fl->f[i]);
}

void kv_flights_add(struct kv_flights *fl, struct kv_flight *f)
{
	fl->f[fl->n++] = f;
	fl->all += f->all;
	if (fl->n == KV_FLIGHT_UNFILTERED + 1)
		filter_build(fl);
	else if (fl->n > KV_FLIGHT_UNFILTERED)
		filter_add(fl, f);
}

void kv_flights_remove(struct kv_flights *fl, const struct kv_flight *f)
{
	uint32_t i;

	for (i = 0; fl->f[i] != f; i++)
		;
	fl->f[i] = fl->f[--fl->n];
	fl->all -= f->all;
	/* Its bits stay until the filter is built again (a bit may be
	 * another flight's too): each only costs a request that hits it a
	 * look at the flights. */
	if (fl->n > KV_FLIGHT_UNFILTERED && ++fl->stale == KV_FLIGHT_STALE)
		filter_build(fl);
}

bool kv_flights_hold(const struct kv_flights *fl, uint64_t hash)
{
	uint32_t b = filter_bit(hash);

	if (fl->all)
		return true;
	if (fl->n > KV_FLIGHT_UNFILTERED && !(fl->filter[b / 64] & (1ull << (b % 64))))
		return false;
	for (uint32_t i = 0; i < fl->n; i++) {
		const struct kv_flight *f = fl->f[i];

		if (!(f->mask & kv_flight_mask_bit(hash)))
			continue;
		for (uint32_t j = 0; j < f->nkeys; j++)
			if (f->keys[j] == hash)
				return true;
	}
	return false;
}
