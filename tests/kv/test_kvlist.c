/* SPDX-License-Identifier: MIT */
/* The chunked list: each operation and its edges, nodes that split and
 * empty, a random run against a plain array model (and one that uses the
 * list as a queue either way round), and allocation failure
 * leaving the list unchanged. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kvlist.h"

/* Linked with --wrap=malloc and --wrap=realloc: fail_allocs makes them
 * return NULL. */
void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);
static bool fail_allocs;
void *__wrap_malloc(size_t n)
{
	return fail_allocs ? NULL : __real_malloc(n);
}
void *__wrap_realloc(void *p, size_t n)
{
	return fail_allocs ? NULL : __real_realloc(p, n);
}

#define S(lit) lit, sizeof(lit) - 1

static void check(const struct kv_list *l)
{
	char why[200];
	if (kv_list_validate(l, why, sizeof(why)))
		fail_msg("kv_list_validate: %s", why);
}

/* The list as one string: entries joined by ','. */
static const char *dump(const struct kv_list *l)
{
	static char buf[1 << 16];
	size_t o = 0, len;
	struct kv_list_iter it;
	const uint8_t *b;
	kv_list_iter_init(l, &it, 0, true);
	while ((b = kv_list_iter_next(&it, &len))) {
		if (o)
			buf[o++] = ',';
		memcpy(buf + o, b, len);
		o += len;
	}
	buf[o] = '\0';
	return buf;
}

static struct kv_list *make(int fill, const char *csv)
{
	struct kv_list *l = kv_list_new(fill);
	assert_non_null(l);
	for (const char *p = csv; *p;) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		assert_int_equal(kv_list_push(l, KV_LIST_TAIL, p, n), 0);
		p += n + (e ? 1 : 0);
	}
	check(l);
	return l;
}

static void test_push_pop_index(void **state)
{
	(void)state;
	struct kv_list *l = make(2, "");
	size_t n;
	assert_null(kv_list_peek(l, KV_LIST_HEAD, &n));
	assert_int_equal(kv_list_pop(l, KV_LIST_TAIL), -ENOENT);
	assert_int_equal(kv_list_push(l, KV_LIST_HEAD, S("b")), 0);
	assert_int_equal(kv_list_push(l, KV_LIST_HEAD, S("a")), 0);
	assert_int_equal(kv_list_push(l, KV_LIST_TAIL, S("c")), 0);
	assert_int_equal(kv_list_push(l, KV_LIST_TAIL, "", 0), 0);
	check(l);
	assert_string_equal(dump(l), "a,b,c,");
	assert_int_equal(kv_list_len(l), 4);
	const uint8_t *b = kv_list_index(l, -2, &n);
	assert_int_equal(n, 1);
	assert_memory_equal(b, "c", 1);
	assert_null(kv_list_index(l, 4, &n));
	assert_null(kv_list_index(l, -5, &n));
	b = kv_list_peek(l, KV_LIST_TAIL, &n);
	assert_int_equal(n, 0);
	assert_int_equal(kv_list_pop(l, KV_LIST_TAIL), 0);
	b = kv_list_peek(l, KV_LIST_HEAD, &n);
	assert_memory_equal(b, "a", 1);
	assert_int_equal(kv_list_pop(l, KV_LIST_HEAD), 0);
	check(l);
	assert_string_equal(dump(l), "b,c");
	assert_string_equal(kv_list_encoding(l), "quicklist");
	kv_list_free(l);
}

static void test_set_insert(void **state)
{
	(void)state;
	struct kv_list *l = make(3, "a,b,c,d,e,f,g");
	assert_int_equal(kv_list_set(l, 7, S("x")), -ERANGE);
	assert_int_equal(kv_list_set(l, -1, S("G")), 0);
	assert_int_equal(kv_list_set(l, 3, S("a longer value")), 0);
	check(l);
	assert_string_equal(dump(l), "a,b,c,a longer value,e,f,G");
	assert_int_equal(kv_list_insert_pivot(l, false, S("b"), S("B")), 8);
	assert_int_equal(kv_list_insert_pivot(l, true, S("G"), S("H")), 9);
	assert_int_equal(kv_list_insert_pivot(l, true, S("zz"), S("H")), -ENOENT);
	assert_int_equal(kv_list_insert_at(l, 10, S("x")), -ERANGE);
	assert_int_equal(kv_list_insert_at(l, 0, S("0")), 0);
	check(l);
	assert_string_equal(dump(l), "0,a,B,b,c,a longer value,e,f,G,H");
	kv_list_free(l);
}

/* Byte-filled nodes: entries past the node limit get a node of their own,
 * a split in the middle of a full node keeps the order. */
static void test_large_entries(void **state)
{
	(void)state;
	static char big[20000];
	memset(big, 'x', sizeof(big));
	struct kv_list *l = kv_list_new(-1);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(kv_list_push(l, KV_LIST_TAIL, "0123456789", 10), 0);
	assert_int_equal(kv_list_insert_at(l, 500, big, sizeof(big)), 0);
	assert_int_equal(kv_list_push(l, KV_LIST_HEAD, big, 5000), 0);
	check(l);
	size_t n;
	kv_list_index(l, 501, &n);
	assert_int_equal(n, sizeof(big));
	kv_list_index(l, 0, &n);
	assert_int_equal(n, 5000);
	assert_int_equal(kv_list_set(l, 2, big, 300), 0);
	check(l);
	kv_list_index(l, 2, &n);
	assert_int_equal(n, 300);
	assert_true(kv_list_mem(l) > 20000 + 5000 + 10000);
	assert_true(kv_list_mem(l) < 2 * (20000 + 5000 + 12 * 1000) + 4096);
	kv_list_free(l);
}

static void test_trim_rem_range(void **state)
{
	(void)state;
	struct kv_list *l = make(2, "a,x,b,x,c,x,d");
	size_t f, n;
	assert_true(kv_list_range(l, -3, 100, &f, &n));
	assert_int_equal(f, 4);
	assert_int_equal(n, 3);
	assert_false(kv_list_range(l, 5, 2, &f, &n));
	assert_false(kv_list_range(l, 7, 9, &f, &n));
	assert_int_equal(kv_list_rem(l, -2, S("x")), 2);
	assert_string_equal(dump(l), "a,x,b,c,d");
	assert_int_equal(kv_list_rem(l, 0, S("x")), 1);
	assert_int_equal(kv_list_rem(l, 1, S("q")), 0);
	check(l);
	kv_list_trim(l, 1, -2);
	check(l);
	assert_string_equal(dump(l), "b,c");
	kv_list_trim(l, 5, 10);
	assert_int_equal(kv_list_len(l), 0);
	check(l);
	kv_list_free(l);
}

static size_t got[16], ngot;
static void collect(size_t idx, void *arg)
{
	(void)arg;
	got[ngot++] = idx;
}

static void test_pos(void **state)
{
	(void)state;
	struct kv_list *l = make(2, "a,b,c,1,2,3,c,c");
	ngot = 0;
	assert_int_equal(kv_list_pos(l, S("c"), 1, 0, 0, collect, NULL), 3);
	assert_int_equal(got[0], 2);
	assert_int_equal(got[2], 7);
	ngot = 0;
	assert_int_equal(kv_list_pos(l, S("c"), -1, 2, 0, collect, NULL), 2);
	assert_int_equal(got[0], 7);
	assert_int_equal(got[1], 6);
	ngot = 0;
	assert_int_equal(kv_list_pos(l, S("c"), 2, 0, 0, collect, NULL), 2);
	assert_int_equal(got[0], 6);
	ngot = 0;
	assert_int_equal(kv_list_pos(l, S("c"), 1, 0, 3, collect, NULL), 1);
	assert_int_equal(kv_list_pos(l, S("c"), 1, 0, 2, collect, NULL), 0);
	kv_list_free(l);
}

/* ---- random run against an array model ---- */

struct model {
	char **v;
	size_t *n;
	size_t len;
};

static void m_insert(struct model *m, size_t at, const char *v, size_t n)
{
	m->v = realloc(m->v, (m->len + 1) * sizeof(*m->v));
	m->n = realloc(m->n, (m->len + 1) * sizeof(*m->n));
	memmove(m->v + at + 1, m->v + at, (m->len - at) * sizeof(*m->v));
	memmove(m->n + at + 1, m->n + at, (m->len - at) * sizeof(*m->n));
	m->v[at] = malloc(n + 1);
	memcpy(m->v[at], v, n);
	m->n[at] = n;
	m->len++;
}

static void m_delete(struct model *m, size_t at, size_t cnt)
{
	for (size_t k = at; k < at + cnt; k++)
		free(m->v[k]);
	memmove(m->v + at, m->v + at + cnt, (m->len - at - cnt) * sizeof(*m->v));
	memmove(m->n + at, m->n + at + cnt, (m->len - at - cnt) * sizeof(*m->n));
	m->len -= cnt;
}

static void same(const struct kv_list *l, const struct model *m, unsigned seed)
{
	struct kv_list_iter it;
	const uint8_t *b;
	size_t n, k = 0;
	if (kv_list_len(l) != m->len)
		fail_msg("seed %u: len %zu, model %zu", seed, kv_list_len(l), m->len);
	kv_list_iter_init(l, &it, 0, true);
	for (; (b = kv_list_iter_next(&it, &n)); k++)
		if (n != m->n[k] || memcmp(b, m->v[k], n))
			fail_msg("seed %u: entry %zu differs", seed, k);
	assert_int_equal(k, m->len);
	kv_list_iter_init(l, &it, m->len - 1, false);
	for (; (b = kv_list_iter_next(&it, &n)); k--)
		if (n != m->n[k - 1] || memcmp(b, m->v[k - 1], n))
			fail_msg("seed %u: entry %zu differs walking back", seed, k - 1);
	char why[200];
	if (kv_list_validate(l, why, sizeof(why)))
		fail_msg("seed %u: %s", seed, why);
}

static size_t rnd_value(char *buf)
{
	static const size_t sizes[] = { 0, 1, 3, 10, 100, 300, 5000 };
	size_t n = sizes[rand() % 7 < 5 ? rand() % 4 : rand() % 7];
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('a' + rand() % 3);
	return n;
}

static void random_step(struct kv_list *l, struct model *m)
{
	char v[5000];
	size_t vl = rnd_value(v), n;
	size_t at = m->len ? (size_t)rand() % m->len : 0;
	switch (rand() % 9) {
	case 0: case 1:
		assert_int_equal(kv_list_push(l, KV_LIST_HEAD, v, vl), 0);
		m_insert(m, 0, v, vl);
		break;
	case 2: case 3:
		assert_int_equal(kv_list_push(l, KV_LIST_TAIL, v, vl), 0);
		m_insert(m, m->len, v, vl);
		break;
	case 4:
		if (m->len) {
			bool head = rand() & 1;
			const uint8_t *b = kv_list_peek(l, head ? KV_LIST_HEAD : KV_LIST_TAIL, &n);
			size_t k = head ? 0 : m->len - 1;
			assert_true(n == m->n[k] && !memcmp(b, m->v[k], n));
			kv_list_pop(l, head ? KV_LIST_HEAD : KV_LIST_TAIL);
			m_delete(m, k, 1);
		}
		break;
	case 5:
		at = m->len ? (size_t)rand() % (m->len + 1) : 0;
		assert_int_equal(kv_list_insert_at(l, at, v, vl), 0);
		m_insert(m, at, v, vl);
		break;
	case 6:
		if (m->len) {
			assert_int_equal(kv_list_set(l, (long long)at, v, vl), 0);
			m_delete(m, at, 1);
			m_insert(m, at, v, vl);
		}
		break;
	case 7:
		if (m->len) {
			size_t cnt = (size_t)rand() % 4;
			if (cnt > m->len - at)
				cnt = m->len - at;
			kv_list_del_range(l, at, cnt);
			m_delete(m, at, cnt);
		}
		break;
	case 8:
		if (m->len) {
			const uint8_t *b = kv_list_index(l, (long long)at, &n);
			assert_true(n == m->n[at] && !memcmp(b, m->v[at], n));
			/* LREM of one "a" from either end */
			bool fwd = rand() & 1;
			size_t removed = kv_list_rem(l, fwd ? 1 : -1, "a", 1);
			size_t hit = SIZE_MAX;
			for (size_t k = 0; k < m->len; k++)
				if (m->n[k] == 1 && m->v[k][0] == 'a' && (hit == SIZE_MAX || !fwd))
					hit = k;
			assert_int_equal(removed, hit != SIZE_MAX);
			if (hit != SIZE_MAX)
				m_delete(m, hit, 1);
		}
		break;
	}
}

/* Keeps the list short enough to check often: trimmed to 1,500 past
 * 3,000 entries. */
static void keep_short(struct kv_list *l, struct model *m)
{
	if (m->len > 3000) {
		kv_list_trim(l, 500, 1999);
		m_delete(m, 2000, m->len - 2000);
		m_delete(m, 0, 500);
	}
}

static void model_free(struct kv_list *l, struct model *m)
{
	m_delete(m, 0, m->len);
	free(m->v);
	free(m->n);
	kv_list_free(l);
}

static void test_random_model(void **state)
{
	(void)state;
	unsigned seed = 33;
	const char *env = getenv("KV_TEST_SEED");
	if (env)
		seed = (unsigned)strtoul(env, NULL, 0);
	srand(seed);
	struct kv_list *l = kv_list_new(rand() % 2 ? -1 : 5);
	struct model m = { 0 };
	for (int i = 0; i < 100000; i++) {
		random_step(l, &m);
		keep_short(l, &m);
		if (i % 1000 == 999)
			same(l, &m, seed);
	}
	same(l, &m, seed);
	model_free(l, &m);
}

/* A queue either way round: pushes at one end, pops at the other, with
 * the other operations now and then. A push at the front writes into
 * the room a pop from the front left: the list's memory stays as it was. */
static void test_front_room(void **state)
{
	(void)state;
	unsigned seed = 35;
	char v[5000];
	srand(seed);
	for (int fill = -2; fill <= 5; fill += 7) {
		struct kv_list *l = kv_list_new(fill);
		struct model m = { 0 };
		for (int i = 0; i < 40000; i++) {
			bool front = i < 20000; /* LPUSH and RPOP, then RPUSH and LPOP */
			int op = rand() % 10;
			size_t vl = rnd_value(v);
			if (op < 7) {
				assert_int_equal(kv_list_push(l, front ? KV_LIST_HEAD : KV_LIST_TAIL, v, vl), 0);
				m_insert(&m, front ? 0 : m.len, v, vl);
			} else if (op < 9 && m.len) {
				kv_list_pop(l, front ? KV_LIST_TAIL : KV_LIST_HEAD);
				m_delete(&m, front ? m.len - 1 : 0, 1);
			} else {
				random_step(l, &m);
			}
			keep_short(l, &m);
			if (i % 500 == 499)
				same(l, &m, seed);
		}
		same(l, &m, seed);
		model_free(l, &m);
	}
	struct kv_list *l = make(-2, "");
	for (int i = 0; i < 1000; i++)
		assert_int_equal(kv_list_push(l, KV_LIST_HEAD, S("value")), 0);
	size_t mem = kv_list_mem(l);
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(kv_list_pop(l, KV_LIST_HEAD), 0);
		assert_int_equal(kv_list_push(l, KV_LIST_HEAD, S("other")), 0);
	}
	assert_int_equal(kv_list_mem(l), mem);
	check(l);
	size_t n;
	const uint8_t *b = kv_list_peek(l, KV_LIST_HEAD, &n);
	assert_int_equal(n, 5);
	assert_memory_equal(b, "other", 5);
	b = kv_list_peek(l, KV_LIST_TAIL, &n);
	assert_memory_equal(b, "value", 5);
	kv_list_free(l);
}

/* Without memory, a push, an insert that splits, and a set that moves the
 * entry fail with -ENOMEM and leave the list as it was. */
static void test_nomem(void **state)
{
	(void)state;
	struct kv_list *l = make(3, "a,b,c,d,e,f");
	char before[256];
	strcpy(before, dump(l));
	fail_allocs = true;
	int push = kv_list_push(l, KV_LIST_TAIL, S("g"));
	int split = kv_list_insert_at(l, 1, S("x"));
	int set = kv_list_set(l, 1, S("a value longer than it was"));
	fail_allocs = false;
	assert_int_equal(push, -ENOMEM);
	assert_int_equal(split, -ENOMEM);
	assert_int_equal(set, -ENOMEM);
	check(l);
	assert_string_equal(dump(l), before);
	kv_list_free(l);
	/* a push at the front into a node with room behind its entries but
	 * none before them moves them; once it has none at all it grows, and
	 * without memory it fails whole */
	l = make(-1, "a,b,c");
	fail_allocs = true;
	int moved = kv_list_push(l, KV_LIST_HEAD, S("x"));
	int grown = kv_list_push(l, KV_LIST_HEAD, S("y"));
	fail_allocs = false;
	assert_int_equal(moved, 0);
	assert_int_equal(grown, -ENOMEM);
	check(l);
	assert_string_equal(dump(l), "x,a,b,c");
	kv_list_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_pop_index),
		cmocka_unit_test(test_set_insert),
		cmocka_unit_test(test_large_entries),
		cmocka_unit_test(test_trim_rem_range),
		cmocka_unit_test(test_pos),
		cmocka_unit_test(test_random_model),
		cmocka_unit_test(test_front_room),
		cmocka_unit_test(test_nomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
