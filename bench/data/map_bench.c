/* SPDX-License-Identifier: MIT */
/* FlatMap/... (pc_map) beside Peer/absl/... and Peer/glib/..., on the same
 * random 64-bit keys:
 *   Find/N      lookups in a map of N entries, half hits and half misses in
 *               random order (a precomputed stream; 4,096 lookups cycled
 *               for N = 1000, 2^20 for N = 1,000,000 so the stream itself
 *               does not stay in cache while the table does not fit).
 *   Insert/N    N inserts into an empty map, growth included (creating and
 *               destroying the map is not timed).
 *   Iterate/N   visits of every entry of an N-entry map.
 * One item is one lookup, insert or visited entry. */
#include <errno.h>
#include <stdlib.h>

#include "percore/bench.h"
#include "percore/map.h"
#include "bench_util.h"
#include "map_peer.h"

/* ---- pc_map behind the peer interface ---------------------------------- */

static void *pc_create(void)
{
	struct pc_map *m = malloc(sizeof(*m));

	if (m)
		pc_map_init(m, 0);
	return m;
}

static void pc_destroy(void *m)
{
	pc_map_destroy(m);
	free(m);
}

static void pc_insert(void *m, const uint64_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pc_map_insert(m, keys[i], keys[i] + 1);
}

static uint64_t pc_find(void *m, const uint64_t *keys, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		const struct pc_map_slot *s = pc_map_find(m, keys[i]);
		if (s)
			sum += s->value;
	}
	return sum;
}

static uint64_t pc_iterate(void *m)
{
	const struct pc_map_slot *s;
	uint64_t sum = 0;

	for (struct pc_map_iter it = PC_MAP_ITER_INIT; (s = pc_map_next(m, &it));)
		sum += s->value;
	return sum;
}

const struct map_peer map_peer_percore = { pc_create, pc_destroy, pc_insert, pc_find, pc_iterate };

static const struct map_peer *const peers[] = { &map_peer_percore, &map_peer_absl, &map_peer_glib };

/* ---- the benchmarks ---------------------------------------------------- */

struct map_ctx {
	const struct map_peer *p;
	void *m;
	uint64_t *keys;       /* the N keys */
	uint64_t *stream;     /* Find: the lookups */
	size_t nstream;
	uint64_t sink;
};

static void map_teardown(struct pc_bench_state *st)
{
	struct map_ctx *c = st->ctx;

	if (c->m)
		c->p->destroy(c->m);
	free(c->keys);
	free(c->stream);
	free(c);
}

/* The map of N keys (fill = true) or just the keys. */
static int map_setup_common(struct pc_bench_state *st, bool fill)
{
	struct map_ctx *c = calloc(1, sizeof(*c));
	size_t n = (size_t)st->bench->arg;

	if (!c)
		return -ENOMEM;
	st->ctx = c;
	c->p = peers[st->bench->arg2];
	c->keys = bench_rand_array(1, n, 0, 0);
	if (!c->keys)
		return -ENOMEM;
	if (fill) {
		c->m = c->p->create();
		if (!c->m)
			return -ENOMEM;
		c->p->insert(c->m, c->keys, n);
	}
	return 0;
}

static int find_setup(struct pc_bench_state *st)
{
	int err = map_setup_common(st, true);
	struct map_ctx *c = st->ctx;
	size_t n = (size_t)st->bench->arg;
	uint64_t seed = 2;

	if (err)
		return err;
	c->nstream = n <= 1000 ? 4096 : (size_t)1 << 20;
	c->stream = malloc(c->nstream * sizeof(*c->stream));
	if (!c->stream)
		return -ENOMEM;
	for (size_t i = 0; i < c->nstream; i++) {
		uint64_t r = bench_rand(&seed);
		/* Odd draws hit, even ones miss (a fresh random key). */
		c->stream[i] = r & 1 ? c->keys[(r >> 1) % n] : bench_rand(&seed);
	}
	return 0;
}

static void find_run(struct pc_bench_state *st)
{
	struct map_ctx *c = st->ctx;
	size_t pos = 0;

	for (uint64_t left = st->iterations; left;) {
		size_t k = c->nstream - pos < left ? c->nstream - pos : (size_t)left;
		c->sink += c->p->find(c->m, c->stream + pos, k);
		pos = (pos + k) % c->nstream;
		left -= k;
	}
	PC_DO_NOT_OPTIMIZE(c->sink);
}

static int insert_setup(struct pc_bench_state *st)
{
	return map_setup_common(st, false);
}

static void insert_run(struct pc_bench_state *st)
{
	struct map_ctx *c = st->ctx;
	size_t n = (size_t)st->bench->arg;

	for (uint64_t left = st->iterations; left;) {
		size_t k = n < left ? n : (size_t)left;
		pc_bench_pause(st);
		void *m = c->p->create();
		pc_bench_resume(st);
		if (!m)
			return;
		c->p->insert(m, c->keys, k);
		pc_bench_pause(st);
		c->p->destroy(m);
		pc_bench_resume(st);
		left -= k;
	}
}

static int iterate_setup(struct pc_bench_state *st)
{
	return map_setup_common(st, true);
}

static void iterate_run(struct pc_bench_state *st)
{
	struct map_ctx *c = st->ctx;
	uint64_t n = (uint64_t)st->bench->arg, passes = (st->iterations + n - 1) / n;

	for (uint64_t i = 0; i < passes; i++)
		c->sink += c->p->iterate(c->m);
	PC_DO_NOT_OPTIMIZE(c->sink);
	st->items = passes * n;
}

#define MAP_BENCH(var, title, op, n, a2) DATA_BENCH(var, title, op, n, a2, map_teardown)

MAP_BENCH(find_1k, "FlatMap/Find/1000", find, 1000, 0)
MAP_BENCH(find_1k_absl, "Peer/absl/Find/1000", find, 1000, 1)
MAP_BENCH(find_1k_glib, "Peer/glib/Find/1000", find, 1000, 2)
MAP_BENCH(find_1m, "FlatMap/Find/1000000", find, 1000000, 0)
MAP_BENCH(find_1m_absl, "Peer/absl/Find/1000000", find, 1000000, 1)
MAP_BENCH(find_1m_glib, "Peer/glib/Find/1000000", find, 1000000, 2)
MAP_BENCH(insert_1m, "FlatMap/Insert/1000000", insert, 1000000, 0)
MAP_BENCH(insert_1m_absl, "Peer/absl/Insert/1000000", insert, 1000000, 1)
MAP_BENCH(insert_1m_glib, "Peer/glib/Insert/1000000", insert, 1000000, 2)
MAP_BENCH(iter_10k, "FlatMap/Iterate/10000", iterate, 10000, 0)
MAP_BENCH(iter_10k_absl, "Peer/absl/Iterate/10000", iterate, 10000, 1)
MAP_BENCH(iter_10k_glib, "Peer/glib/Iterate/10000", iterate, 10000, 2)
