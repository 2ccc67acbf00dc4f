/* SPDX-License-Identifier: MIT */
/* A connection's flights: every key of every flight under way holds a
 * request on it, a flight on every key holds all of them, a key no
 * flight names passes, and a flight's keys pass once it ended unless
 * another flight names them too; over many random adds and removals
 * against a model of the table, with keys whose filter bits collide. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "flights.h"

static struct kv_flight *flight_of(const uint64_t *keys, uint32_t n)
{
	struct kv_flight *f = kv_flight_new(n);

	assert_non_null(f);
	for (uint32_t k = 0; k < f->nkeys; k++)
		kv_flight_key(f, k, keys[k]);
	return f;
}

static void keys_held_until_their_flight_ends(void **state)
{
	struct kv_flights *fl = kv_flights_new();
	uint64_t a[] = { 11, 22, 33 }, b[] = { 22, 44 };
	struct kv_flight *fa = flight_of(a, 3), *fb = flight_of(b, 2);

	(void)state;
	assert_non_null(fl);
	assert_false(kv_flights_hold(fl, 11));
	kv_flights_add(fl, fa);
	kv_flights_add(fl, fb);
	for (int i = 0; i < 3; i++)
		assert_true(kv_flights_hold(fl, a[i]));
	assert_true(kv_flights_hold(fl, 44));
	assert_false(kv_flights_hold(fl, 55));
	kv_flights_remove(fl, fa);
	assert_false(kv_flights_hold(fl, 11));
	assert_false(kv_flights_hold(fl, 33));
	assert_true(kv_flights_hold(fl, 22)); /* fb's too */
	kv_flights_remove(fl, fb);
	assert_false(kv_flights_hold(fl, 22));
	assert_int_equal(fl->n, 0);
	free(fa);
	free(fb);
	free(fl);
}

static void a_flight_on_every_key(void **state)
{
	struct kv_flights *fl = kv_flights_new();
	struct kv_flight *all = kv_flight_new(0);
	struct kv_flight *many = kv_flight_new(KV_FLIGHT_KEYS + 1);

	(void)state;
	assert_non_null(all);
	assert_non_null(many);
	assert_true(all->all);
	assert_true(many->all);
	assert_int_equal(many->nkeys, 0);
	kv_flights_add(fl, all);
	kv_flights_add(fl, many);
	assert_true(kv_flights_hold(fl, 12345));
	kv_flights_remove(fl, all);
	assert_true(kv_flights_hold(fl, 12345));
	kv_flights_remove(fl, many);
	assert_false(kv_flights_hold(fl, 12345));
	free(all);
	free(many);
	free(fl);
}

/* Tables go back to the shard's spares empty and come out again, up to
 * KV_FLIGHTS_SPARE kept. */
static void spare_tables(void **state)
{
	struct kv_flights_spare sp = { 0 };
	struct kv_flights *t[KV_FLIGHTS_SPARE + 1], *fl;
	uint64_t k = 42;
	struct kv_flight *f = flight_of(&k, 1);

	(void)state;
	fl = kv_flights_take(&sp);
	assert_non_null(fl);
	for (int i = 0; i < KV_FLIGHT_UNFILTERED + 2; i++)
		kv_flights_add(fl, f); /* past the filter's threshold */
	for (int i = 0; i < KV_FLIGHT_UNFILTERED + 2; i++)
		kv_flights_remove(fl, f);
	kv_flights_put(&sp, fl);
	assert_int_equal(sp.n, 1);
	assert_ptr_equal(kv_flights_take(&sp), fl);
	assert_int_equal(sp.n, 0);
	assert_int_equal(fl->n, 0);
	assert_false(kv_flights_hold(fl, 42));
	t[0] = fl;
	for (int i = 1; i <= KV_FLIGHTS_SPARE; i++)
		t[i] = kv_flights_take(&sp);
	for (int i = 0; i <= KV_FLIGHTS_SPARE; i++)
		kv_flights_put(&sp, t[i]);
	assert_int_equal(sp.n, KV_FLIGHTS_SPARE); /* the last one freed */
	kv_flights_spare_free(&sp);
	assert_int_equal(sp.n, 0);
	assert_null(sp.list);
	free(f);
}

/* The model: which flight holds which keys. Keys come from a small set
 * spread so that many share a filter bit or a mask bit. */
#define KEYS 600
#define ROUNDS 20000

static uint64_t key_of(uint32_t k)
{
	/* every fourth key shares its filter bit (hash >> 20) with the key
	 * before it, differing only in the low bits */
	uint64_t spread = (uint64_t)(k / 4 * 4) * 0x9e3779b97f4a7c15ull;

	return spread ^ (k % 4);
}

static void random_against_model(void **state)
{
	struct kv_flights *fl = kv_flights_new();
	struct kv_flight *live[KV_FLIGHT_MAX];
	uint32_t nlive = 0, held[KEYS] = { 0 }, alls = 0;

	(void)state;
	srand(7);
	for (int round = 0; round < ROUNDS; round++) {
		bool add = nlive < KV_FLIGHT_MAX && (nlive == 0 || rand() % 2);

		if (add) {
			uint32_t n = rand() % 50 == 0 ? 0 : 1 + rand() % 4;
			uint64_t keys[4];
			uint32_t idx[4];

			for (uint32_t k = 0; k < n; k++) {
				idx[k] = (uint32_t)rand() % KEYS;
				keys[k] = key_of(idx[k]);
			}
			struct kv_flight *f = flight_of(keys, n);

			for (uint32_t k = 0; k < n; k++)
				held[idx[k]]++;
			alls += f->all;
			live[nlive++] = f;
			kv_flights_add(fl, f);
		} else {
			uint32_t i = (uint32_t)rand() % nlive;
			struct kv_flight *f = live[i];

			for (uint32_t k = 0; k < f->nkeys; k++)
				for (uint32_t m = 0; m < KEYS; m++)
					if (key_of(m) == f->keys[k]) {
						held[m]--;
						break;
					}
			alls -= f->all;
			kv_flights_remove(fl, f);
			live[i] = live[--nlive];
			free(f);
		}
		assert_int_equal(fl->n, nlive);
		for (uint32_t m = 0; m < KEYS; m++)
			if (kv_flights_hold(fl, key_of(m)) != (alls || held[m] > 0))
				fail_msg("round %d, key %u: hold %d, model %u flights, %u on every key",
					 round, m, kv_flights_hold(fl, key_of(m)), held[m], alls);
	}
	while (nlive)
		free(live[--nlive]);
	free(fl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(keys_held_until_their_flight_ends),
		cmocka_unit_test(a_flight_on_every_key),
		cmocka_unit_test(spare_tables),
		cmocka_unit_test(random_against_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
