/* SPDX-License-Identifier: MIT */
/* Placement properties over many random limits on every fixture: each
 * result validates, is deterministic, and keeps the promises of its policy
 * (cores before SMT siblings, fast kinds before slow, proportional nodes,
 * compact stays packed); each refusal says why. PC_PLACE_PROPS_ROUNDS
 * overrides the number of random limit sets per fixture. */
#include "percore/defs.h"
#include "topo/topotest.h"

static const char *const fixtures[] = { "hybrid.xml", "server2s.xml", "container.xml",
					"vm2.xml" };

/* xorshift64*: reproducible across runs (seed printed on failure). */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* Cores before siblings, fast kinds before slow: when a shard sits on
 * an SMT slot > 0 or a slower kind, no better usable CPU may be idle. */
static void check_tier_order(const struct pc_topo *t, const struct pc_placement *p)
{
	unsigned char core_used[1024] = { 0 };
	int worst_kind = 0;
	bool sibling = false;

	for (unsigned s = 0; s < p->n; s++) {
		const struct pc_topo_cpu *c = pc_topo_cpu_by_os(t, p->shards[s].cpu);

		core_used[c->core] = 1;
		worst_kind = c->kind > worst_kind ? c->kind : worst_kind;
		sibling |= c->smt > 0 && pc_topo_cpu_by_os(t, pc_topo_core(t, (unsigned)c->core)
							   ->threads[0])->usable;
	}
	for (unsigned i = 0; i < pc_topo_ncores(t); i++) {
		const struct pc_topo_core *k = pc_topo_core(t, i);

		if (!k->nusable || core_used[i])
			continue;
		/* an idle usable core: nothing may sit on a sibling, nor on a
		 * kind slower than this idle core's */
		assert_false(sibling);
		assert_true(k->kind >= worst_kind);
	}
}

/* auto within the first tier: each node gets floor or ceil of its share. */
static void check_proportional(const struct pc_topo *t, const struct pc_placement *p)
{
	unsigned nn = pc_topo_nnodes(t), have[8] = { 0 }, got[8] = { 0 }, total = 0;
	int fastest = p->shards[0].kind;

	for (unsigned i = 0; i < pc_topo_ncores(t); i++) {
		const struct pc_topo_core *k = pc_topo_core(t, i);

		if (k->nusable && k->kind == fastest) {
			have[k->node]++;
			total++;
		}
	}
	if (p->n > total)
		return;
	for (unsigned s = 0; s < p->n; s++)
		got[pc_topo_cpu_by_os(t, p->shards[s].cpu)->node]++;
	for (unsigned n = 0; n < nn && n < 8; n++) {
		unsigned lo = p->n * have[n] / total;

		assert_true(got[n] == lo || got[n] == lo + 1);
	}
}

static void check_one(const struct pc_topo *t, unsigned n, enum pc_place_policy policy,
		      const cpu_set_t *list, unsigned flags)
{
	struct pc_placement *p = NULL, *again = NULL;
	char err[256] = "";
	int r = pc_place(t, n, policy, list, flags, &p, err, sizeof(err));

	if (r) {
		/* -E2BIG only for more shards than usable CPUs, not allowed */
		if (r == -E2BIG)
			assert_true(n > pc_topo_limits(t)->nusable &&
				    !(flags & PC_PLACE_OVERSUBSCRIBE));
		else
			assert_int_equal(r, -EINVAL);
		assert_null(p);
		assert_true(strlen(err) > 5);
		return;
	}
	assert_int_equal(pc_placement_validate(t, p, NULL, 0), 0);
	assert_int_equal(pc_place(t, n, policy, list, flags, &again, err, sizeof(err)), 0);
	assert_memory_equal(p, again, sizeof(*p) + p->n * sizeof(p->shards[0]));
	if (n == 0 && policy != PC_PLACE_LIST)
		assert_int_equal(p->n, pc_place_default_shards(t));
	if (p->pinned && !p->oversubscribed &&
	    (policy == PC_PLACE_AUTO || policy == PC_PLACE_SPREAD || policy == PC_PLACE_PCORE))
		check_tier_order(t, p);
	if (p->pinned && !p->oversubscribed && policy == PC_PLACE_AUTO && p->n)
		check_proportional(t, p);
	for (unsigned s = 1; policy == PC_PLACE_COMPACT && !p->oversubscribed && s < p->n; s++)
		assert_true(p->shards[s].node >= p->shards[s - 1].node);
	pc_placement_free(p);
	pc_placement_free(again);
}

static void random_limits_on_fixtures(void **state)
{
	const char *env = getenv("PC_PLACE_PROPS_ROUNDS");
	unsigned rounds = env ? (unsigned)atoi(env) : 150;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	(void)state;

	for (size_t f = 0; f < PC_ARRAY_LEN(fixtures); f++) {
		struct pc_topo *all = topotest_load(fixtures[f], NULL, 0);
		unsigned ncpus = pc_topo_ncpus(all);

		for (unsigned round = 0; round < rounds; round++) {
			struct pc_topo_opts o = { .xml_path = topotest_path("topo", fixtures[f]) };
			struct pc_topo *t;
			cpu_set_t allowed, list;
			char err[256];

			CPU_ZERO(&allowed);
			CPU_ZERO(&list);
			for (unsigned i = 0; i < ncpus; i++) {
				int cpu = pc_topo_cpu(all, i)->os_index;

				if (next_rand(&seed) % 3)
					CPU_SET(cpu, &allowed);
				if (next_rand(&seed) % 4 == 0)
					CPU_SET(cpu, &list);
			}
			o.allowed = &allowed;
			o.quota_cpus = next_rand(&seed) % 2 ? (double)(next_rand(&seed) % 80) / 4 : 0;
			assert_int_equal(pc_topo_load(&o, &t, err, sizeof(err)), 0);
			assert_int_equal(pc_topo_validate(t, NULL, 0), 0);
			for (int pol = PC_PLACE_AUTO; pol < PC_PLACE_LIST; pol++) {
				unsigned n = (unsigned)(next_rand(&seed) % (ncpus + 3));

				check_one(t, n, pol, NULL, 0);
				check_one(t, n, pol, NULL, PC_PLACE_OVERSUBSCRIBE);
				check_one(t, 0, pol, NULL, 0);
			}
			check_one(t, 0, PC_PLACE_LIST, &list, 0);
			pc_topo_free(t);
		}
		pc_topo_free(all);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_limits_on_fixtures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
