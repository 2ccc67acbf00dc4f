/* SPDX-License-Identifier: MIT */
/* Flat hash map: millions of random operations against a sorted array,
 * checking every find and every iteration; tombstones stay bounded;
 * caller-hashed keys; erase during iteration; misuse refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>

#include "percore/map.h"
#include "testutil.h"
#include "validate_check.h"

/* ---- the model: a sorted array of (key, value) ------------------------ */

struct model {
	struct pc_map_slot *v;
	size_t len, cap;
};

static size_t model_lower(const struct model *md, uint64_t key)
{
	size_t lo = 0, hi = md->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (md->v[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Shift v[from, len) by one slot up or down. A plain loop: the sanitizer's
 * memmove is byte-wise and would make the model the slowest part. */
__attribute__((no_sanitize("address")))
static void model_shift(struct pc_map_slot *v, size_t from, size_t len, bool up)
{
	if (up)
		for (size_t i = len; i > from; i--)
			v[i] = v[i - 1];
	else
		for (size_t i = from; i + 1 < len; i++)
			v[i] = v[i + 1];
}

static struct pc_map_slot *model_find(struct model *md, uint64_t key)
{
	size_t i = model_lower(md, key);
	return i < md->len && md->v[i].key == key ? &md->v[i] : NULL;
}

static void model_set(struct model *md, uint64_t key, uint64_t value)
{
	size_t i = model_lower(md, key);
	if (i < md->len && md->v[i].key == key) {
		md->v[i].value = value;
		return;
	}
	if (md->len == md->cap) {
		md->cap = md->cap ? 2 * md->cap : 256;
		md->v = realloc(md->v, md->cap * sizeof(*md->v));
		assert_non_null(md->v);
	}
	model_shift(md->v, i, md->len, true);
	md->v[i] = (struct pc_map_slot){ key, value };
	md->len++;
}

static void model_erase(struct model *md, uint64_t key)
{
	size_t i = model_lower(md, key);
	model_shift(md->v, i, md->len, false);
	md->len--;
}

static int cmp_slot(const void *a, const void *b)
{
	uint64_t x = ((const struct pc_map_slot *)a)->key, y = ((const struct pc_map_slot *)b)->key;
	return x < y ? -1 : x > y;
}

/* Iterating the map gives exactly the model's entries. */
static void same_contents(const struct pc_map *m, const struct model *md)
{
	struct pc_map_slot *all = malloc((pc_map_size(m) + 1) * sizeof(*all)), *s;
	size_t n = 0;

	assert_non_null(all);
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(m, &it));) {
		assert_true(n < pc_map_size(m));
		all[n++] = *s;
	}
	assert_int_equal(n, md->len);
	qsort(all, n, sizeof(*all), cmp_slot);
	if (n)
		assert_memory_equal(all, md->v, n * sizeof(*all));
	free(all);
}

/* A key from one of several shapes: small dense range (many hits and
 * collisions), sequential ids, random 64-bit (mostly misses), and keys
 * differing only in high bits (a weak mixer would cluster them). */
static uint64_t random_key(struct rng *r, unsigned shape)
{
	switch (shape) {
	case 0:  return rng_below(r, 64);
	case 1:  return rng_below(r, 3000);
	case 2:  return rng_below(r, 20) ? rng_below(r, 3000) : rng_next(r);
	default: return rng_below(r, 2000) << 48;
	}
}

static void random_operations_match_the_model(void **state)
{
	struct rng r = test_rng("test_map");
	uint64_t ops = test_ops(3000000);
	(void)state;
	for (unsigned shape = 0; shape < 4; shape++) {
		struct pc_map m;
		struct model md = { 0 };
		assert_int_equal(pc_map_init(&m, 0), 0);
		for (uint64_t op = 0; op < ops / 4; op++) {
			uint64_t key = random_key(&r, shape), value = rng_next(&r);
			struct pc_map_slot *want = model_find(&md, key), *got;
			uint64_t k = rng_below(&r, 100);
			/* Phases that grow and shrink the map. */
			bool shrinking = (op / 50000) % 2;
			if (k < (shrinking ? 15 : 35)) {
				int err = pc_map_insert(&m, key, value);
				assert_int_equal(err, want ? -EEXIST : 0);
				if (!want)
					model_set(&md, key, value);
			} else if (k < 45) {
				assert_int_equal(pc_map_put(&m, key, value), 0);
				model_set(&md, key, value);
			} else if (k < (shrinking ? 80 : 60)) {
				assert_int_equal(pc_map_erase(&m, key), want ? 0 : -ENOENT);
				if (want)
					model_erase(&md, key);
			} else {
				got = pc_map_find(&m, key);
				assert_int_equal(got != NULL, want != NULL);
				if (got) {
					assert_int_equal(got->key, key);
					assert_int_equal(got->value, want->value);
				}
			}
			assert_int_equal(pc_map_size(&m), md.len);
			if (op % 16384 == 0) {
				assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
				same_contents(&m, &md);
			}
			if (op % 200000 == 199999) {
				/* Reserve ahead, or start over. */
				if (rng_below(&r, 2)) {
					assert_int_equal(pc_map_reserve(&m, md.len + 5000), 0);
				} else {
					pc_map_clear(&m);
					md.len = 0;
				}
				assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
			}
		}
		same_contents(&m, &md);
		pc_map_destroy(&m);
		free(md.v);
	}
}

/* Insert-erase churn at a steady size: tombstones are recycled, the table
 * does not keep growing. */
static void churn_keeps_tombstones_bounded(void **state)
{
	struct pc_map m;
	struct rng r = { 7 };
	uint64_t live[1000];
	size_t max_cap = 0;
	(void)state;
	assert_int_equal(pc_map_init(&m, 0), 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(live); i++) {
		live[i] = rng_next(&r);
		assert_int_equal(pc_map_insert(&m, live[i], i), 0);
	}
	for (int op = 0; op < 1000000; op++) {
		size_t i = (size_t)rng_below(&r, PC_ARRAY_LEN(live));
		assert_int_equal(pc_map_erase(&m, live[i]), 0);
		live[i] = rng_next(&r);
		assert_int_equal(pc_map_insert(&m, live[i], i), 0);
		if (pc_map_capacity(&m) > max_cap)
			max_cap = pc_map_capacity(&m);
		assert_true(m._tombstones <= pc_map_capacity(&m) - pc_map_capacity(&m) / 8);
	}
	/* 1000 entries never need more than 16/7 * 1000 -> 4096 slots. */
	assert_true(max_cap <= 4096);
	assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(live); i++)
		assert_int_equal(pc_map_find(&m, live[i])->value, i);
	pc_map_destroy(&m);
}

static void erase_during_iteration_and_stable_slots(void **state)
{
	struct pc_map m;
	struct pc_map_slot *s, *keep;
	size_t seen = 0;
	(void)state;
	assert_int_equal(pc_map_init(&m, 0), 0);
	for (uint64_t k = 0; k < 5000; k++)
		assert_int_equal(pc_map_insert(&m, k, k * 3), 0);
	keep = pc_map_find(&m, 4999);
	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(&m, &it));) {
		assert_int_equal(s->value, s->key * 3);
		seen++;
		if (s->key % 2 == 0)
			pc_map_erase_slot(&m, s);
	}
	assert_int_equal(seen, 5000);
	assert_int_equal(pc_map_size(&m), 2500);
	/* Erasing others did not move it. */
	assert_ptr_equal(pc_map_find(&m, 4999), keep);
	assert_int_equal(keep->value, 4999 * 3);
	assert_null(pc_map_find(&m, 4998));
	assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	pc_map_destroy(&m);
	/* An empty map: nothing found, nothing iterated, no memory. */
	assert_int_equal(pc_map_init(&m, 0), 0);
	assert_null(pc_map_find(&m, 0));
	struct pc_map_iter it = PC_MAP_ITER_INIT;
	assert_null(pc_map_next(&m, &it));
	assert_null(pc_map_next(&m, &it));
	assert_int_equal(pc_map_capacity(&m), 0);
	assert_int_equal(pc_map_erase(&m, 1), -ENOENT);
	assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	pc_map_destroy(&m);
}

static void reserve_avoids_rebuilds(void **state)
{
	struct pc_map m;
	(void)state;
	assert_int_equal(pc_map_init(&m, 0), 0);
	assert_int_equal(pc_map_reserve(&m, 100000), 0);
	size_t cap = pc_map_capacity(&m);
	assert_true(cap >= 100000 + 100000 / 7);
	struct pc_map_slot *first = NULL;
	for (uint64_t k = 0; k < 100000; k++) {
		assert_int_equal(pc_map_insert(&m, k, k), 0);
		if (!k)
			first = pc_map_find(&m, 0);
	}
	assert_int_equal(pc_map_capacity(&m), cap);
	assert_ptr_equal(pc_map_find(&m, 0), first);   /* never rebuilt */
	assert_int_equal(pc_map_reserve(&m, 10), 0);   /* never shrinks */
	assert_int_equal(pc_map_capacity(&m), cap);
	assert_int_equal(pc_map_reserve(&m, (size_t)1 << 59), -EINVAL);
	/* Out of memory: refused, nothing lost. */
	assert_int_equal(pc_map_reserve(&m, (size_t)1 << 50), -ENOMEM);
	assert_int_equal(pc_map_size(&m), 100000);
	assert_int_equal(pc_map_find(&m, 777)->value, 777);
	assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	pc_map_destroy(&m);
}

/* ---- caller-hashed keys ------------------------------------------------ */

static const char *names[] = { "lobby", "rust", "c", "go", "zig", "ada", "ml", "lisp",
			       "forth", "perl", "tcl", "awk", "sed", "ksh", "" };

static bool name_eq(uint64_t value, const void *key)
{
	return strcmp(names[value], key) == 0;
}

/* Deliberately poor: equal lengths collide completely. */
static uint64_t weak_hash(const char *s)
{
	return strlen(s) * 0x1000001ull;
}

static void caller_hashed_keys(void **state)
{
	struct pc_map m;
	(void)state;
	assert_int_equal(pc_map_init(&m, PC_MAP_HASHED), 0);
	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < PC_ARRAY_LEN(names); i++) {
			if (pc_map_find_hashed(&m, weak_hash(names[i]), name_eq, names[i]))
				continue;
			assert_int_equal(pc_map_insert_hashed(&m, weak_hash(names[i]), i), 0);
		}
		assert_int_equal(pc_map_size(&m), PC_ARRAY_LEN(names));
		for (size_t i = 0; i < PC_ARRAY_LEN(names); i++) {
			struct pc_map_slot *s = pc_map_find_hashed(&m, weak_hash(names[i]), name_eq, names[i]);
			assert_non_null(s);
			assert_int_equal(s->value, i);
		}
		assert_null(pc_map_find_hashed(&m, weak_hash("cobol"), name_eq, "cobol"));
		assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
		/* Erase a few, round-dependent. */
		for (size_t i = round % 3; i < PC_ARRAY_LEN(names); i += 3)
			pc_map_erase_slot(&m, pc_map_find_hashed(&m, weak_hash(names[i]), name_eq, names[i]));
		assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	}
	/* The u64 functions refuse a hashed map, and the other way round. */
	assert_null(pc_map_find(&m, 1));
	assert_int_equal(pc_map_insert(&m, 1, 1), -EINVAL);
	assert_int_equal(pc_map_put(&m, 1, 1), -EINVAL);
	assert_int_equal(pc_map_erase(&m, 1), -EINVAL);
	pc_map_destroy(&m);
	assert_int_equal(pc_map_init(&m, 0), 0);
	assert_int_equal(pc_map_insert_hashed(&m, 1, 1), -EINVAL);
	assert_null(pc_map_find_hashed(&m, 1, name_eq, "c"));
	pc_map_destroy(&m);
	assert_int_equal(pc_map_init(&m, 0x8), -EINVAL);
}

/* The batch prefetch's peek names the value a lookup finds (for hashes
 * whose first probed group holds them), 0 for a hash not stored, and
 * works on an empty map without touching slots; so do the prefetches of
 * the control bytes and of the slot (hints: the map stays valid). */
static void peek_names_the_value(void **state)
{
	struct pc_map m;
	size_t found = 0;
	(void)state;
	assert_int_equal(pc_map_init(&m, PC_MAP_HASHED), 0);
	pc_map_prefetch(&m, 12345);
	pc_map_prefetch_ctrl(&m, 12345);
	pc_map_prefetch_slot(&m, 12345);
	assert_int_equal(pc_map_peek_hashed(&m, 12345), 0);
	for (uint64_t i = 1; i <= 5000; i++)
		assert_int_equal(pc_map_insert_hashed(&m, pc_map_hash_u64(i), 1000 + i), 0);
	for (uint64_t i = 1; i <= 5000; i++) {
		uint64_t h = pc_map_hash_u64(i), v;

		if (i % 2) {
			pc_map_prefetch(&m, h);
		} else { /* the three-step form */
			pc_map_prefetch_ctrl(&m, h);
			pc_map_prefetch_slot(&m, h);
		}
		v = pc_map_peek_hashed(&m, h);
		/* a key that probed past its first group is not looked for */
		assert_true(v == 0 || v == 1000 + i);
		found += v != 0;
	}
	/* under a load of 7/8 at most, most keys sit in their first group */
	assert_true(found > 4000);
	for (uint64_t i = 5001; i <= 6000; i++)
		assert_int_equal(pc_map_peek_hashed(&m, pc_map_hash_u64(i)), 0);
	assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	pc_map_destroy(&m);
}

struct scan_seen {
	uint32_t *count;     /* times each stable key (value 1..n) was handed out */
	size_t n;
	bool erase_odd;      /* erase odd keys as they come */
};

static void scan_note(struct pc_map *m, struct pc_map_slot *s, void *arg)
{
	struct scan_seen *seen = arg;
	/* both maps here keep the key in the value */
	if (s->value >= 1 && s->value <= seen->n)
		seen->count[s->value - 1]++;
	if (seen->erase_odd && (s->value & 1))
		pc_map_erase_slot(m, s);
}

/* Without changes in between, a walk hands out each entry exactly once;
 * erasing the current entry from the callback is allowed. */
static void scan_static_once_and_erase(void **state)
{
	(void)state;
	enum { N = 5000 };
	struct pc_map m;
	static uint32_t count[N];
	struct scan_seen seen = { count, N, false };
	pc_map_init(&m, 0);
	assert_int_equal(pc_map_scan(&m, 0, scan_note, &seen), 0);
	for (uint64_t k = 1; k <= N; k++)
		assert_int_equal(pc_map_insert(&m, k, k), 0);
	for (int pass = 0; pass < 2; pass++) {
		memset(count, 0, sizeof(count));
		seen.erase_odd = pass == 0;
		uint64_t c = 0;
		do
			c = pc_map_scan(&m, c, scan_note, &seen);
		while (c);
		for (size_t i = 0; i < N; i++)
			assert_int_equal(count[i], pass == 0 || (i & 1) ? 1 : 0);
		assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	}
	assert_int_equal(pc_map_size(&m), N / 2);
	pc_map_destroy(&m);
}

/* Half the keys get hashes whose home is one of 8 groups in any table,
 * so long probe paths push them far from home and each rebuild moves
 * them; the other half hash evenly. */
static uint64_t skewed_hash(uint64_t k)
{
	uint64_t h = pc_map_hash_u64(k);
	return (k & 1) ? (h & 0x7f) | ((h >> 60) << 7) : h;
}

static bool value_is(uint64_t value, const void *key)
{
	return value == *(const uint64_t *)key;
}

static void skewed_insert(struct pc_map *m, uint64_t k)
{
	assert_null(pc_map_find_hashed(m, skewed_hash(k), value_is, &k));
	assert_int_equal(pc_map_insert_hashed(m, skewed_hash(k), k), 0);
}

/* Every key present for the whole walk comes out at least once while
 * inserts between the steps grow the table many times over and churn
 * (insert, erase) forces same-size rebuilds. */
static void scan_survives_growth(void **state)
{
	(void)state;
	enum { N = 2000 };
	struct pc_map m;
	static uint32_t count[N];
	struct rng r = test_rng("scan_survives_growth");
	memset(count, 0, sizeof(count));
	pc_map_init(&m, PC_MAP_HASHED);
	for (uint64_t k = 1; k <= N; k++)
		skewed_insert(&m, k);
	size_t cap0 = pc_map_capacity(&m), calls = 0;
	uint64_t c = 0, next_new = 1000000;
	struct scan_seen seen = { count, N, false };
	do {
		c = pc_map_scan(&m, c, scan_note, &seen);
		for (int i = 0; i < 40; i++)
			skewed_insert(&m, next_new++);
		uint64_t churn = 5000000 + rng_below(&r, 64);
		struct pc_map_slot *s = pc_map_find_hashed(&m, skewed_hash(churn), value_is, &churn);
		if (s)
			pc_map_erase_slot(&m, s);
		else
			skewed_insert(&m, churn);
		calls++;
	} while (c);
	assert_true(pc_map_capacity(&m) >= 16 * cap0);
	assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	for (size_t i = 0; i < N; i++)
		if (count[i] == 0)
			fail_msg("key %zu never handed out (%zu calls)", i + 1, calls);
	pc_map_destroy(&m);
}

static void validate_catches_corruption(void **state)
{
	struct pc_map m;
	(void)state;
	assert_int_equal(pc_map_init(&m, 0), 0);
	for (uint64_t k = 0; k < 100; k++)
		assert_int_equal(pc_map_insert(&m, k, k), 0);
	assert_int_equal(pc_map_validate(&m, NULL, 0), 0);
	struct pc_map_slot *s = pc_map_find(&m, 42);
	s->key = 4242;      /* tag no longer matches its hash */
	PC_EXPECT_BROKEN(pc_map_validate(&m, PC_WHY), ": tag 0x");
	s->key = 42;
	m._size++;
	PC_EXPECT_BROKEN(pc_map_validate(&m, PC_WHY), "size says");
	m._size--;
	m._ctrl[s - m._slots] = PC__MAP_DELETED;
	PC_EXPECT_BROKEN(pc_map_validate(&m, PC_WHY), "deleted slots; size says");
	pc_map_destroy(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_operations_match_the_model),
		cmocka_unit_test(churn_keeps_tombstones_bounded),
		cmocka_unit_test(erase_during_iteration_and_stable_slots),
		cmocka_unit_test(reserve_avoids_rebuilds),
		cmocka_unit_test(caller_hashed_keys),
		cmocka_unit_test(peek_names_the_value),
		cmocka_unit_test(scan_static_once_and_erase),
		cmocka_unit_test(scan_survives_growth),
		cmocka_unit_test(validate_catches_corruption),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
