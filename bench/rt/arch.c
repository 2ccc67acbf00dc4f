/* SPDX-License-Identifier: MIT */
/* Arch/{PerCore,Shared,LockFree,Striped}/cores:N: one piece of stateful
 * work under four ways of owning the state, at N = 1 .. usable cores.
 *
 * The work, the same everywhere: a request names a session; find it among
 * 1,000 sessions per core in a hash map (pc_map) and add into its 64 bytes
 * of state (8 words). Each worker w (a shard or a thread) serves the
 * requests that arrive on its core: by default those of its own 1,000
 * sessions, as in a server whose sessions live on the core that accepted
 * their connection. The designs:
 *   PerCore   the engine's shards, each owning its sessions in its own map
 *             and updating them with plain stores;
 *   Shared    one set of sessions in a map split over 64 sub-maps, each
 *             behind its own mutex (a session's sub-map: id mod 64);
 *   LockFree  one map (read-only after set-up), the state updated with
 *             atomic read-modify-writes;
 *   Striped   one map, each session's state striped: one 64-byte cell per
 *             worker, each worker adding into its own cell (LongAdder).
 * The full suite adds /anycore rows: requests for any session arrive at
 * any core; the shared designs update in place, PerCore forwards the
 * request over the mesh to the owning shard.
 *
 * Rows report ops/s over all workers; the report divides by N times the
 * 1-core rate for the linear efficiency. The benchmark places its own
 * workers by state->affinity (pinned engine shards or pinned harness
 * threads; neither when off). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/defs.h"
#include "percore/map.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "rt_bench.h"

#define PER_CORE   1000        /* sessions per core */
#define STRIPES    64          /* Shared: sub-maps and mutexes */
#define CHUNK      256         /* PerCore: requests per turn and shard */
/* PerCore: requests a shard applies between two updates of the shared
 * count of what is left. That count is bookkeeping the threaded designs
 * do not have (the harness joins them), and each update moves its line
 * between the cores: once per CHUNK it cost about 4% at 2 cores, where a
 * line transfer (~100 ns) is 4% of a 256-request turn (~2.6 us). */
#define TALLY      4096
#define MAX_CORES  64

enum design { PERCORE, SHARED, LOCKFREE, STRIPED };
static const char *const design_names[] = { "PerCore", "Shared", "LockFree", "Striped" };

struct state {
	uint64_t w[8];
} __attribute__((aligned(PC_CACHE_LINE)));

/* The update every design performs, in its own way. */
static inline void apply(struct state *s, uint64_t x)
{
	for (int k = 0; k < 8; k++)
		s->w[k] += x + (uint64_t)k;
}

static inline uint64_t next_rand(uint64_t *r)
{
	uint64_t x = *r;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*r = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* A request arriving on worker w's core. */
static inline uint64_t pick(uint64_t *r, unsigned w, unsigned n, bool anycore, uint64_t *x)
{
	uint64_t v = next_rand(r);

	*x = v >> 48;
	if (anycore)
		return (v >> 8) % ((uint64_t)PER_CORE * n);
	return (uint64_t)w * PER_CORE + (v >> 8) % PER_CORE;
}

struct mutex_pad {
	PC_CACHE_ALIGNED pthread_mutex_t m;
};

struct arch {
	unsigned n;
	bool anycore;
	/* Shared, LockFree, Striped: built in setup, read-only while running
	 * (except the states themselves). */
	struct pc_map map;                 /* LockFree, Striped */
	struct pc_map sub[STRIPES];        /* Shared */
	struct mutex_pad locks[STRIPES];
	struct state *states;              /* n * PER_CORE (Striped: * n) */
	/* PerCore */
	struct pc_map *own[MAX_CORES];     /* shard w's map, built on w */
	struct state *own_states[MAX_CORES];
	/* Written by every shard once per turn: its own line. */
	PC_CACHE_ALIGNED _Atomic uint64_t remaining; /* requests not yet applied */
	_Atomic unsigned built;
};

static struct arch arch;

/* ---- the shared designs: harness threads ----------------------------- */

static int map_of_states(struct pc_map *m, struct state *states, uint64_t first, uint64_t count,
			 size_t stride)
{
	int rc = pc_map_init(m, 0);

	if (!rc)
		rc = pc_map_reserve(m, count);
	for (uint64_t i = 0; !rc && i < count; i++)
		rc = pc_map_insert(m, first + i, (uint64_t)(uintptr_t)&states[i * stride]);
	return rc;
}

static int shared_build(struct arch *a, enum design d)
{
	uint64_t total = (uint64_t)PER_CORE * a->n;
	size_t cells = d == STRIPED ? a->n : 1;
	int rc = 0;

	a->states = aligned_alloc(PC_CACHE_LINE, total * cells * sizeof(struct state));
	if (!a->states)
		return -ENOMEM;
	memset(a->states, 0, total * cells * sizeof(struct state));
	if (d != SHARED)
		return map_of_states(&a->map, a->states, 0, total, cells);
	for (unsigned k = 0; k < STRIPES && !rc; k++) {
		pthread_mutex_init(&a->locks[k].m, NULL);
		rc = pc_map_init(&a->sub[k], 0);
	}
	for (uint64_t id = 0; id < total && !rc; id++)
		rc = pc_map_insert(&a->sub[id % STRIPES], id, (uint64_t)(uintptr_t)&a->states[id]);
	return rc;
}

static void shared_run(struct pc_bench_state *st)
{
	struct arch *a = &arch;
	enum design d = (enum design)st->bench->arg;
	unsigned w = st->thread_index, n = a->n;
	uint64_t r = 0x9e3779b97f4a7c15ull * (w + 1), x, acc = 0;

	for (uint64_t i = 0; i < st->iterations; i++) {
		uint64_t id = pick(&r, w, n, a->anycore, &x);
		struct pc_map_slot *sl;
		struct state *s;

		switch (d) {
		case SHARED: {
			unsigned k = (unsigned)(id % STRIPES);

			pthread_mutex_lock(&a->locks[k].m);
			sl = pc_map_find(&a->sub[k], id);
			apply((struct state *)(uintptr_t)sl->value, x);
			pthread_mutex_unlock(&a->locks[k].m);
			break;
		}
		case LOCKFREE:
			sl = pc_map_find(&a->map, id);
			s = (struct state *)(uintptr_t)sl->value;
			for (int k = 0; k < 8; k++)
				atomic_fetch_add_explicit((_Atomic uint64_t *)&s->w[k], x + (uint64_t)k,
							  memory_order_relaxed);
			break;
		default: /* STRIPED: this worker's cell; readers sum the cells */
			sl = pc_map_find(&a->map, id);
			s = (struct state *)(uintptr_t)sl->value + w;
			for (int k = 0; k < 8; k++)
				__atomic_store_n(&s->w[k], s->w[k] + x + (uint64_t)k, __ATOMIC_RELAXED);
			break;
		}
		acc += id;
	}
	PC_DO_NOT_OPTIMIZE(acc);
	pc_bench_counter(st, "cores", n);
}

/* ---- PerCore: the engine ------------------------------------------------ */

/* On shard w: its sessions and its map, first touched here. */
static void percore_build(void *arg)
{
	struct rtb *b = arg;
	struct arch *a = b->user;
	unsigned w = (unsigned)pc_shard_id();
	int rc = -ENOMEM;

	a->own_states[w] = aligned_alloc(PC_CACHE_LINE, PER_CORE * sizeof(struct state));
	a->own[w] = malloc(sizeof(struct pc_map));
	if (a->own_states[w] && a->own[w]) {
		memset(a->own_states[w], 0, PER_CORE * sizeof(struct state));
		rc = map_of_states(a->own[w], a->own_states[w], (uint64_t)w * PER_CORE, PER_CORE, 1);
	}
	if (rc)
		fprintf(stderr, "Arch/PerCore: shard %u cannot build its sessions\n", w);
	if (atomic_fetch_add(&a->built, 1) + 1 == a->n)
		rtb_finish(b);
}

static void percore_build_job(void *arg)
{
	while (pc_shard_broadcast(percore_build, arg) == -EAGAIN)
		pc_shard_flush();
}

static inline void percore_apply(struct arch *a, unsigned w, uint64_t id, uint64_t x)
{
	struct pc_map_slot *sl = pc_map_find(a->own[w], id);

	apply((struct state *)(uintptr_t)sl->value, x);
}

/* Shard w's request generator and tally: touched by shard w only. */
struct worker {
	uint64_t rng, requests_left;
	uint64_t applied;        /* since the last turn: own and forwarded */
	bool have_pending;       /* a request the mesh refused, to retry */
	uint64_t pend_id, pend_x;
} __attribute__((aligned(PC_CACHE_PAD)));

static struct worker workers[MAX_CORES];

/* A forwarded request: session id and addend packed in the pointer. */
static void percore_remote(void *arg)
{
	uintptr_t v = (uintptr_t)arg;
	unsigned w = (unsigned)pc_shard_id();

	percore_apply(&arch, w, v >> 16, v & 0xffff);
	workers[w].applied++;
}

static void percore_pump(void *arg);

/* Serve up to CHUNK requests; forward the foreign ones (anycore). */
static unsigned percore_chunk(struct arch *a, struct worker *wk, unsigned w)
{
	unsigned done = 0;

	while (wk->requests_left && done < CHUNK) {
		uint64_t x, id;

		if (wk->have_pending) {
			id = wk->pend_id;
			x = wk->pend_x;
		} else {
			id = pick(&wk->rng, w, a->n, a->anycore, &x);
		}
		unsigned owner = (unsigned)(id / PER_CORE);

		if (owner != w &&
		    pc_shard_submit(owner, percore_remote, (void *)(uintptr_t)(id << 16 | x)) == -EAGAIN) {
			wk->have_pending = true; /* full: the same request next turn */
			wk->pend_id = id;
			wk->pend_x = x;
			break;
		}
		if (owner == w) {
			percore_apply(a, w, id, x);
			wk->applied++;
		}
		wk->have_pending = false;
		wk->requests_left--;
		done++;
	}
	return done;
}

static void percore_pump(void *arg)
{
	struct rtb *b = arg;
	struct arch *a = b->user;
	unsigned w = (unsigned)pc_shard_id();
	struct worker *wk = &workers[w];
	unsigned served = percore_chunk(a, wk, w);
	uint64_t applied, left;

	/* One shared write per TALLY requests, and every turn once this
	 * shard's own requests are done or it served none (it then only waits
	 * for forwarded requests and for the others to finish). */
	applied = wk->applied;
	if (applied < TALLY && wk->requests_left && served) {
		pc_reactor_defer(pc_shard_reactor(), percore_pump, b);
		return;
	}
	wk->applied = 0;
	left = applied ? atomic_fetch_sub(&a->remaining, applied) - applied
		       : atomic_load_explicit(&a->remaining, memory_order_relaxed);
	if (applied && left == 0) {
		rtb_finish(b);
		return;
	}
	if (left)
		pc_reactor_defer(pc_shard_reactor(), percore_pump, b);
}

static void percore_start(void *arg)
{
	struct rtb *b = arg;
	unsigned w = (unsigned)pc_shard_id();

	workers[w].requests_left = b->iterations;
	workers[w].rng = 0x9e3779b97f4a7c15ull * (w + 1);
	workers[w].applied = 0;
	workers[w].have_pending = false;
	percore_pump(b);
}

static void percore_work_job(void *arg)
{
	struct rtb *b = arg;
	struct arch *a = b->user;

	b->items = b->iterations * a->n;
	atomic_store(&a->remaining, b->items);
	rtb_begin(b);
	while (pc_shard_broadcast(percore_start, b) == -EAGAIN)
		pc_shard_flush();
}

static void percore_run(struct pc_bench_state *st)
{
	rtb_run(st, 0, percore_build_job);   /* untimed: the figure is the next */
	rtb_run(st, 0, percore_work_job);
	pc_bench_counter(st, "cores", arch.n);
}

/* ---- set-up and registration --------------------------------------------- */

static int arch_setup(struct pc_bench_state *st)
{
	enum design d = (enum design)st->bench->arg;
	unsigned n = (unsigned)st->bench->arg2 & 0xffff;
	int rc;

	memset(&arch, 0, sizeof(arch));
	arch.n = n;
	arch.anycore = st->bench->arg2 >> 16;
	if (d == PERCORE)
		return rtb_setup(st, n, PC_IDLE_SPIN, 0, &arch);
	rc = shared_build(&arch, d);
	return rc < 0 ? rc : 0;
}

static void arch_teardown(struct pc_bench_state *st)
{
	enum design d = (enum design)st->bench->arg;

	if (d == PERCORE) {
		rtb_teardown(st);
		for (unsigned w = 0; w < arch.n; w++) {
			if (arch.own[w])
				pc_map_destroy(arch.own[w]);
			free(arch.own[w]);
			free(arch.own_states[w]);
		}
		return;
	}
	if (d == SHARED) {
		for (unsigned k = 0; k < STRIPES; k++) {
			pc_map_destroy(&arch.sub[k]);
			pthread_mutex_destroy(&arch.locks[k].m);
		}
	} else {
		pc_map_destroy(&arch.map);
	}
	free(arch.states);
}

static bool wanted(unsigned n, unsigned usable)
{
	/* Every count up to 8, then powers of two, and the machine's own. */
	return n <= 8 || !(n & (n - 1)) || n == usable;
}

__attribute__((constructor)) static void register_arch(void)
{
	unsigned usable = rtb_usable_cpus();

	if (usable > MAX_CORES)
		usable = MAX_CORES;
	for (int anycore = 0; anycore < 2; anycore++)
		for (unsigned d = PERCORE; d <= STRIPED; d++)
			for (unsigned n = 1; n <= usable; n++) {
				struct pc_bench *b;

				if (!wanted(n, usable) || !(b = calloc(1, sizeof(*b))))
					continue;
				b->name = rtb_name("Arch/%s%s/cores:%u", design_names[d],
						   anycore ? "/anycore" : "", n);
				b->arg = d;
				b->arg2 = (intptr_t)n | (intptr_t)anycore << 16;
				b->threads = d == PERCORE ? 1 : n;
				b->flags = PC_BENCH_AFFINITY | (anycore ? PC_BENCH_FULL : 0) |
					   (d == PERCORE ? PC_BENCH_MANUAL_TIME : 0);
				b->setup = arch_setup;
				b->run = d == PERCORE ? percore_run : shared_run;
				b->teardown = arch_teardown;
				pc_bench_register(b);
			}
}
