/* SPDX-License-Identifier: MIT */
/* The key locks of one shard: shared beside shared, exclusive alone
 * (but for its own transaction), nothing half taken, many keys released
 * at once or one holder at a time, and, over many
 * random takes and releases against a model, every lock still found
 * after the deletions that shift the table's entries back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "keylock.h"

static void shared_and_exclusive(void **state)
{
	struct kv_keylock *kl = kv_keylock_new();
	uint64_t a[] = { 11, 22 }, b[] = { 22, 33 }, z[] = { 0 };

	(void)state;
	assert_non_null(kl);
	assert_true(kv_keylock_empty(kl));
	assert_int_equal(kv_keylock_take(kl, a, 2, true, 1), 0);
	assert_true(kv_keylock_can(kl, b, 2, true, 2));   /* readers together */
	assert_false(kv_keylock_can(kl, b, 2, false, 2)); /* 22 is read */
	assert_int_equal(kv_keylock_state(kl, 22), KV_KEY_SHARED);
	assert_false(kv_keylock_any_writer(kl));
	kv_keylock_release(kl, a, 2);
	assert_true(kv_keylock_empty(kl));

	assert_int_equal(kv_keylock_take(kl, b, 2, false, 7), 0);
	assert_int_equal(kv_keylock_state(kl, 33), KV_KEY_EXCLUSIVE);
	assert_true(kv_keylock_any_writer(kl));
	assert_false(kv_keylock_can(kl, a, 2, true, 8));  /* 22 is written */
	assert_false(kv_keylock_can(kl, a, 2, false, 8));
	assert_true(kv_keylock_can(kl, b, 2, false, 7));  /* its own */
	assert_int_equal(kv_keylock_state(kl, 11), KV_KEY_FREE);
	/* a hash of 0 is a key like any other */
	assert_int_equal(kv_keylock_take(kl, z, 1, false, 9), 0);
	assert_int_equal(kv_keylock_state(kl, 0), KV_KEY_EXCLUSIVE);
	kv_keylock_release(kl, z, 1);
	kv_keylock_release(kl, b, 2);
	assert_true(kv_keylock_empty(kl));
	assert_false(kv_keylock_any_writer(kl));
	kv_keylock_free(kl);
}

/* The same key twice in one request is one lock, released whole. */
static void duplicates(void **state)
{
	struct kv_keylock *kl = kv_keylock_new();
	uint64_t k[] = { 5, 5, 6 };

	(void)state;
	assert_true(kv_keylock_can(kl, k, 3, false, 3));
	assert_int_equal(kv_keylock_take(kl, k, 3, false, 3), 0);
	assert_false(kv_keylock_can(kl, k, 1, false, 4));
	kv_keylock_release(kl, k, 3);
	assert_true(kv_keylock_empty(kl));
	kv_keylock_free(kl);
}

/* Holders of many keys each, released in either order: a release
 * leaves the other holder's keys as they were, and the last empties the
 * table. */
static void many_keys_released(void **state)
{
	struct kv_keylock *kl = kv_keylock_new();
	uint64_t a[100], b[10];

	(void)state;
	for (uint64_t i = 0; i < 100; i++)
		a[i] = (i + 1) * 0x9e3779b97f4a7c15ull;
	a[99] = a[0]; /* the same key twice */
	for (uint64_t i = 0; i < 10; i++)
		b[i] = (i + 1000) * 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 2; round++) {
		/* round 0 releases a's keys first, round 1 b's */
		uint64_t *first = round ? b : a, *last = round ? a : b;
		size_t nfirst = round ? 10 : 100, nlast = round ? 100 : 10;

		assert_int_equal(kv_keylock_take(kl, a, 100, false, 1 + (uint64_t)round), 0);
		assert_int_equal(kv_keylock_take(kl, b, 10, true, 0), 0);
		kv_keylock_release(kl, first, nfirst);
		assert_false(kv_keylock_empty(kl));
		for (size_t i = 0; i < nfirst; i++)
			assert_int_equal(kv_keylock_state(kl, first[i]), KV_KEY_FREE);
		for (size_t i = 0; i < nlast; i++)
			assert_int_equal(kv_keylock_state(kl, last[i]),
					 round ? KV_KEY_EXCLUSIVE : KV_KEY_SHARED);
		assert_int_equal(kv_keylock_any_writer(kl), round == 1);
		kv_keylock_release(kl, last, nlast);
		assert_true(kv_keylock_empty(kl));
		assert_false(kv_keylock_any_writer(kl));
		for (size_t i = 0; i < 100; i++)
			assert_int_equal(kv_keylock_state(kl, a[i]), KV_KEY_FREE);
		assert_true(kv_keylock_can(kl, a, 100, false, 9));
	}
	kv_keylock_free(kl);
}

#define KEYS 2000

/* Random transactions over a small key range, so that the table grows,
 * collides and shifts: the model counts each key's holders. */
static void random_against_model(void **state)
{
	struct kv_keylock *kl = kv_keylock_new();
	static int readers[KEYS], writer[KEYS];
	struct held { uint64_t k[4]; size_t n; bool shared; } held[256];
	size_t nheld = 0;
	unsigned seed = 12345;

	(void)state;
	for (int step = 0; step < 200000; step++) {
		if (nheld && (nheld == 256 || rand_r(&seed) % 2)) {
			size_t i = (size_t)rand_r(&seed) % nheld;
			struct held *h = &held[i];

			kv_keylock_release(kl, h->k, h->n);
			for (size_t j = 0; j < h->n; j++) {
				/* the same key twice counts once in the model */
				bool dup = false;

				for (size_t d = 0; d < j; d++)
					dup |= h->k[d] == h->k[j];
				if (dup)
					continue;
				if (h->shared)
					readers[h->k[j] % KEYS]--;
				else
					writer[h->k[j] % KEYS] = 0;
			}
			held[i] = held[--nheld];
			continue;
		}
		struct held h = { .n = 1 + (size_t)rand_r(&seed) % 4, .shared = rand_r(&seed) % 2 };
		bool ok = true;
		uint64_t tx = (uint64_t)step + 1;

		for (size_t j = 0; j < h.n; j++) {
			/* spread over the 64-bit space: the table hashes its input */
			uint64_t key = (uint64_t)rand_r(&seed) % KEYS;

			h.k[j] = key * 0x9e3779b97f4a7c15ull % 0xffffffffffffffc5ull;
			h.k[j] -= h.k[j] % KEYS;
			h.k[j] += key;
			ok &= h.shared ? !writer[key] : !writer[key] && !readers[key];
		}
		assert_int_equal(kv_keylock_can(kl, h.k, h.n, h.shared, tx), ok);
		if (!ok)
			continue;
		assert_int_equal(kv_keylock_take(kl, h.k, h.n, h.shared, tx), 0);
		for (size_t j = 0; j < h.n; j++) {
			bool dup = false;

			for (size_t d = 0; d < j; d++)
				dup |= h.k[d] == h.k[j];
			if (dup)
				continue;
			if (h.shared)
				readers[h.k[j] % KEYS]++;
			else
				writer[h.k[j] % KEYS] = 1;
		}
		held[nheld++] = h;
		for (int k = 0; k < KEYS; k += 97) {
			uint64_t hk = (uint64_t)k * 0x9e3779b97f4a7c15ull % 0xffffffffffffffc5ull;

			hk = hk - hk % KEYS + (uint64_t)k;
			assert_int_equal(kv_keylock_state(kl, hk),
					 writer[k] ? KV_KEY_EXCLUSIVE :
					 readers[k] ? KV_KEY_SHARED : KV_KEY_FREE);
		}
	}
	while (nheld) {
		nheld--;
		kv_keylock_release(kl, held[nheld].k, held[nheld].n);
	}
	assert_true(kv_keylock_empty(kl));
	kv_keylock_free(kl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shared_and_exclusive),
		cmocka_unit_test(duplicates),
		cmocka_unit_test(many_keys_released),
		cmocka_unit_test(random_against_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
