/* SPDX-License-Identifier: MIT */
/* pc_slab with objects freed by other threads: the owner allocates from a
 * bounded pool, tags each object and hands it over an SPSC ring to one of
 * two freer threads, which check the tag, write to the object and free it
 * remotely. The bound is far below the number of objects, so the pool only
 * keeps going if every remote free comes back through the return list; at
 * the end every object is accounted for. PC_STRESS_ITEMS overrides how many
 * objects move. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "percore/slab.h"
#include "percore/spsc.h"
#include "conc/stress.h"

#define FREERS 2
#define BOUND  256

struct obj {
	void *link_room;        /* a free object's first word is the pool's link */
	uint64_t tag;
	uint64_t written_by_freer;
	char body[40];
};

PC_SPSC_TYPED(ptrq, struct obj *)

struct freer {
	struct pc_slab *slab;
	struct ptrq *q;
	unsigned index;
	uint64_t expect;        /* number of objects this freer will get */
	uint64_t bad;           /* objects whose tag did not match */
};

static void *freer(void *arg)
{
	struct freer *f = arg;
	struct obj *o;
	struct pc_backoff spins = {0};

	for (uint64_t seen = 0; seen < f->expect;) {
		if (ptrq_pop(f->q, &o) != 0) {
			pc_backoff_wait(&spins);
			continue;
		}
		/* freer i gets every FREERS-th object, in order */
		if (o->tag != seen * FREERS + f->index)
			f->bad++;
		o->written_by_freer = o->tag;
		pc_slab_free_remote(f->slab, o);
		seen++;
	}
	return NULL;
}

static void remote_frees_come_back(void **state)
{
	struct pc_slab_opts opts = {.size = sizeof(struct obj), .max_objects = BOUND, .node = -1};
	uint64_t items = stress_items(2000000, 200000);
	struct freer f[FREERS];
	pthread_t t[FREERS];
	struct pc_slab_stats st;
	uint64_t stale = 0;
	struct pc_backoff spins = {0};

	(void)state;
	items -= items % FREERS;
	print_message("slab remote free: %" PRIu64 " objects, pool bound %d\n", items, BOUND);
	struct pc_slab *s = pc_slab_create(&opts);
	assert_non_null(s);
	for (int i = 0; i < FREERS; i++) {
		f[i] = (struct freer){.slab = s, .q = ptrq_create(64), .index = (unsigned)i,
				      .expect = items / FREERS};
		assert_non_null(f[i].q);
		assert_int_equal(pthread_create(&t[i], NULL, freer, &f[i]), 0);
	}
	for (uint64_t n = 0; n < items;) {
		struct obj *o = pc_slab_alloc(s);

		if (!o) { /* at the bound: wait for remote frees */
			pc_backoff_wait(&spins);
			continue;
		}
		/* a reused object shows the freer's last write (fresh ones
		 * are zero): the return list orders it before reuse */
		if (o->written_by_freer != o->tag)
			stale++;
		o->tag = n;
		o->written_by_freer = 0;
		while (ptrq_push(f[n % FREERS].q, &o) != 0)
			pc_backoff_wait(&spins);
		n++;
	}
	for (int i = 0; i < FREERS; i++) {
		pthread_join(t[i], NULL);
		ptrq_destroy(f[i].q);
		assert_int_equal(f[i].bad, 0);
	}
	assert_int_equal(stale, 0);
	pc_slab_drain(s);
	pc_slab_stats(s, &st);
	assert_int_equal(st.live, 0);
	assert_int_equal(st.remote, 0);
	assert_int_equal(st.free, st.carved);
	assert_true(st.carved <= BOUND);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	pc_slab_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(remote_frees_come_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
