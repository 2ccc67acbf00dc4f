/* SPDX-License-Identifier: MIT */
/* Placement on the four fixture machines: the exact CPU of every shard for
 * each policy, the warnings that go with it, and each error. CPU numbers
 * follow the fixtures' layout (tests/fixtures/topo/gen_fixtures.py):
 * hybrid P-core c is CPUs 2c,2c+1, E-cores 16-27; server package p core c
 * is CPU 16p+c, its SMT sibling 32+16p+c. */
#include "topo/topotest.h"

enum { OVER = PC_PLACE_OVERSUBSCRIBE };

static void hybrid_auto_takes_p_cores_then_e_cores(void **state)
{
	struct pc_topo *t = topotest_load("hybrid.xml", NULL, 0);
	struct pc_placement *p;
	(void)state;

	assert_int_equal(pc_place_default_shards(t), 8);
	/* default: one shard on each of the 8 P-cores, never an SMT pair */
	p = topotest_place(t, 0, PC_PLACE_AUTO, NULL, 0, "0,2,4,6,8,10,12,14");
	assert_true(p->default_count);
	assert_int_equal(p->nwarnings, 0);
	for (unsigned s = 0; s < p->n; s++)
		assert_string_equal(pc_topo_kind(t, (unsigned)p->shards[s].kind)->name, "IntelCore");
	pc_placement_free(p);
	/* 10: the 8 P-cores, then 2 E-cores, with a warning saying so */
	p = topotest_place(t, 10, PC_PLACE_AUTO, NULL, 0, "0,2,4,6,8,10,12,14,16,17");
	assert_int_equal(p->nwarnings, 1);
	assert_true(topotest_warns(p, "2 of 10 shards run on slower cores"));
	assert_true(topotest_warns(p, "only 8 IntelCore cores"));
	pc_placement_free(p);
	/* 21: every physical core first, then the first P-core's sibling */
	p = topotest_place(t, 21, PC_PLACE_AUTO, NULL, 0,
			   "0,2,4,6,8,10,12,14,16,17,18,19,20,21,22,23,24,25,26,27,1");
	assert_true(topotest_warns(p, "1 shard shares a physical core"));
	assert_true(topotest_warns(p, "12 of 21 shards run on slower cores"));
	pc_placement_free(p);
	/* 28: everything; siblings of P-cores last */
	p = topotest_place(t, 28, PC_PLACE_AUTO, NULL, 0,
			   "0,2,4,6,8,10,12,14,16,17,18,19,20,21,22,23,24,25,26,27,"
			   "1,3,5,7,9,11,13,15");
	assert_false(p->oversubscribed);
	pc_placement_free(p);
	pc_topo_free(t);
}

static void hybrid_pcore_and_limits(void **state)
{
	struct pc_topo *t = topotest_load("hybrid.xml", NULL, 0);
	struct pc_placement *p;
	(void)state;

	p = topotest_place(t, 0, PC_PLACE_PCORE, NULL, 0, "0,2,4,6,8,10,12,14");
	pc_placement_free(p);
	p = topotest_place(t, 3, PC_PLACE_PCORE, NULL, 0, "0,2,4");
	pc_placement_free(p);
	/* pcore never uses E-cores or siblings, even when allowed to share */
	topotest_place_fails(t, 10, PC_PLACE_PCORE, NULL, 0,
			     "10 shards but only 8 IntelCore cores are usable");
	topotest_place_fails(t, 10, PC_PLACE_PCORE, NULL, OVER, "only 8 IntelCore cores");
	/* 29 on 28 CPUs: an error unless oversubscribing, then it wraps */
	topotest_place_fails_rc(t, 29, PC_PLACE_AUTO, NULL, 0,
			     -E2BIG, "29 shards but only 28 usable CPUs");
	p = topotest_place(t, 30, PC_PLACE_AUTO, NULL, OVER,
			   "0,2,4,6,8,10,12,14,16,17,18,19,20,21,22,23,24,25,26,27,"
			   "1,3,5,7,9,11,13,15,0,2");
	assert_true(p->oversubscribed);
	assert_true(topotest_warns(p, "30 shards on 28 usable CPUs"));
	pc_placement_free(p);
	/* an explicit list of E-cores is the caller's choice: no kind warning */
	p = topotest_place(t, 0, PC_PLACE_LIST, "16-19", 0, "16,17,18,19");
	assert_int_equal(p->nwarnings, 0);
	pc_placement_free(p);
	/* off: the default count, nothing pinned */
	p = topotest_place(t, 0, PC_PLACE_OFF, NULL, 0, "-1,-1,-1,-1,-1,-1,-1,-1");
	assert_false(p->pinned);
	assert_int_equal(p->shards[0].node, -1);
	pc_placement_free(p);
	pc_topo_free(t);
}

static void server_auto_spreads_in_proportion(void **state)
{
	struct pc_topo *t = topotest_load("server2s.xml", NULL, 0);
	struct pc_placement *p;
	unsigned per_node[2] = { 0, 0 };
	(void)state;

	assert_int_equal(pc_place_default_shards(t), 32);
	p = topotest_place(t, 8, PC_PLACE_AUTO, NULL, 0, "0,1,2,3,16,17,18,19");
	for (unsigned s = 0; s < p->n; s++)
		per_node[p->shards[s].node]++;
	assert_int_equal(per_node[0], 4);
	assert_int_equal(per_node[1], 4);
	assert_int_equal(p->nwarnings, 0);
	pc_placement_free(p);
	/* an odd count: the tie goes to the lower node */
	p = topotest_place(t, 5, PC_PLACE_AUTO, NULL, 0, "0,1,2,16,17");
	pc_placement_free(p);
	/* 40: all 32 cores, then 8 siblings shared 4 and 4 */
	p = topotest_place(t, 40, PC_PLACE_AUTO, NULL, 0,
			   "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,"
			   "25,26,27,28,29,30,31,32,33,34,35,48,49,50,51");
	assert_true(topotest_warns(p, "8 shards share a physical core"));
	pc_placement_free(p);
	topotest_place_fails_rc(t, 65, PC_PLACE_AUTO, NULL, 0,
				-E2BIG, "65 shards but only 64 usable CPUs");
	pc_topo_free(t);
}

static void server_compact_spread_and_lists(void **state)
{
	struct pc_topo *t = topotest_load("server2s.xml", NULL, 0);
	struct pc_placement *p;
	(void)state;

	p = topotest_place(t, 8, PC_PLACE_COMPACT, NULL, 0, "0,1,2,3,4,5,6,7");
	pc_placement_free(p);
	/* compact fills node 0, siblings included, before touching node 1 */
	p = topotest_place(t, 18, PC_PLACE_COMPACT, NULL, 0,
			   "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,32,33");
	assert_true(topotest_warns(p, "2 shards share a physical core"));
	for (unsigned s = 0; s < p->n; s++)
		assert_int_equal(p->shards[s].node, 0);
	pc_placement_free(p);
	p = topotest_place(t, 5, PC_PLACE_SPREAD, NULL, 0, "0,16,1,17,2");
	pc_placement_free(p);
	/* an explicit list keeps ascending CPU order and reports each node */
	p = topotest_place(t, 0, PC_PLACE_LIST, "33,16,0", 0, "0,16,33");
	assert_int_equal(p->shards[0].node, 0);
	assert_int_equal(p->shards[1].node, 1);
	assert_int_equal(p->shards[2].node, 0);
	assert_int_equal(p->shards[2].core, 1);
	assert_true(topotest_warns(p, "1 shard shares a physical core") == 0);
	pc_placement_free(p);
	p = topotest_place(t, 2, PC_PLACE_LIST, "4-7", 0, "4,5");
	pc_placement_free(p);
	topotest_place_fails(t, 0, PC_PLACE_LIST, "0,64", 0, "CPU 64 does not exist");
	topotest_place_fails(t, 5, PC_PLACE_LIST, "0-3", 0, "5 shards but the CPU list has only 4");
	topotest_place_fails(t, 5, PC_PLACE_LIST, "0-3", OVER, "has only 4");
	topotest_place_fails(t, 0, PC_PLACE_LIST, "", 0, "the CPU list is empty");
	topotest_place_fails(t, 33, PC_PLACE_PCORE, NULL, 0, "only 32 uniform cores");
	pc_topo_free(t);
}

/* Fixture (3): the file records the container's cpuset (16-19 of node 1);
 * the quota of 2.5 CPUs is the caller's. */
static void container_defaults_to_quota_on_node_1(void **state)
{
	struct pc_topo *t = topotest_load("container.xml", NULL, 2.5);
	const struct pc_topo_limits *l = pc_topo_limits(t);
	struct pc_placement *p;
	(void)state;

	assert_int_equal(l->nusable, 4);
	assert_int_equal(l->quota_shards, 2);
	assert_int_equal(pc_place_default_shards(t), 2);
	p = topotest_place(t, 0, PC_PLACE_AUTO, NULL, 0, "16,17");
	assert_int_equal(p->shards[0].node, 1);
	assert_int_equal(p->shards[1].node, 1);
	assert_int_equal(p->nwarnings, 0);
	pc_placement_free(p);
	p = topotest_place(t, 4, PC_PLACE_AUTO, NULL, 0, "16,17,18,19");
	assert_true(topotest_warns(p, "exceed the CPU quota of 2.50 CPUs"));
	pc_placement_free(p);
	p = topotest_place(t, 6, PC_PLACE_SPREAD, NULL, OVER, "16,17,18,19,16,17");
	assert_true(p->oversubscribed);
	pc_placement_free(p);
	topotest_place_fails_rc(t, 5, PC_PLACE_AUTO, NULL, 0, -E2BIG,
				"5 shards but only 4 usable CPUs");
	topotest_place_fails(t, 0, PC_PLACE_LIST, "0,16", 0,
			     "CPU 0 is not usable: outside the allowed CPUs the topology file");
	topotest_place_fails(t, 0, PC_PLACE_LIST, "48", 0, "CPU 48 is not usable");
	pc_topo_free(t);
}

/* The same container described from outside: server2s.xml plus limits. */
static void container_limits_given_by_the_caller(void **state)
{
	struct pc_topo *t = topotest_load("server2s.xml", "16-19", 2.5);
	struct pc_placement *p;
	(void)state;

	p = topotest_place(t, 0, PC_PLACE_AUTO, NULL, 0, "16,17");
	pc_placement_free(p);
	p = topotest_place(t, 0, PC_PLACE_COMPACT, NULL, 0, "16,17");
	pc_placement_free(p);
	topotest_place_fails(t, 0, PC_PLACE_LIST, "15", 0,
			     "CPU 15 is not usable: outside the cgroup cpuset");
	pc_topo_free(t);
}

/* Uneven nodes and half-usable cores: tiers and proportions. */
static void uneven_nodes_and_partial_cores(void **state)
{
	struct pc_topo *t = topotest_load("server2s.xml", "0,1,16-21", 0);
	struct pc_placement *p;
	(void)state;

	/* node 0 has 2 usable cores, node 1 six: auto gives 1 and 3 of 4 */
	p = topotest_place(t, 4, PC_PLACE_AUTO, NULL, 0, "0,16,17,18");
	pc_placement_free(p);
	/* spread alternates regardless of size */
	p = topotest_place(t, 4, PC_PLACE_SPREAD, NULL, 0, "0,16,1,17");
	pc_placement_free(p);
	pc_topo_free(t);
	/* core 0 with both threads, core 1 with one: the sibling comes last */
	t = topotest_load("server2s.xml", "0,1,32", 0);
	assert_int_equal(pc_topo_limits(t)->nusable_cores, 2);
	assert_int_equal(pc_place_default_shards(t), 2);
	p = topotest_place(t, 3, PC_PLACE_AUTO, NULL, 0, "0,1,32");
	pc_placement_free(p);
	pc_topo_free(t);
}

static void vm_two_cpus(void **state)
{
	struct pc_topo *t = topotest_load("vm2.xml", NULL, 0);
	struct pc_placement *p;
	(void)state;

	assert_int_equal(pc_place_default_shards(t), 2);
	p = topotest_place(t, 0, PC_PLACE_AUTO, NULL, 0, "0,1");
	assert_int_equal(p->nwarnings, 0);
	pc_placement_free(p);
	p = topotest_place(t, 0, PC_PLACE_PCORE, NULL, 0, "0,1");
	pc_placement_free(p);
	topotest_place_fails_rc(t, 3, PC_PLACE_AUTO, NULL, 0, -E2BIG,
				"3 shards but only 2 usable CPUs");
	topotest_place_fails_rc(t, 3, PC_PLACE_OFF, NULL, 0, -E2BIG,
				"3 shards but only 2 usable CPUs");
	p = topotest_place(t, 3, PC_PLACE_AUTO, NULL, OVER, "0,1,0");
	assert_true(topotest_warns(p, "3 shards on 2 usable CPUs"));
	pc_placement_free(p);
	p = topotest_place(t, 3, PC_PLACE_OFF, NULL, OVER, "-1,-1,-1");
	assert_true(p->oversubscribed);
	pc_placement_free(p);
	pc_topo_free(t);
}

/* The CPU list of set, "0,1,16" style, for comparing with a fixture's. */
static void cpus_text(const cpu_set_t *set, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE && n < len; c++)
		if (CPU_ISSET(c, set))
			n += (size_t)snprintf(out + n, len - n, "%s%d", n ? "," : "", c);
}

/* Under auto, shards on every usable CPU float over their node's CPUs;
 * fewer, or another policy, stay on one CPU each. */
static void auto_floats_only_when_every_cpu_is_taken(void **state)
{
	struct pc_topo *t = topotest_load("vm2.xml", NULL, 0);
	struct pc_placement *p;
	cpu_set_t set;
	char text[512];
	(void)state;

	p = topotest_place(t, 2, PC_PLACE_AUTO, NULL, 0, "0,1");
	assert_true(p->floating);
	pc_placement_cpus(p, 1, &set);
	cpus_text(&set, text, sizeof(text));
	assert_string_equal(text, "0,1");
	pc_placement_cpus(p, 2, &set); /* out of range */
	assert_int_equal(CPU_COUNT(&set), 0);
	pc_placement_free(p);
	p = topotest_place(t, 3, PC_PLACE_AUTO, NULL, OVER, "0,1,0");
	assert_true(p->floating);
	pc_placement_free(p);
	p = topotest_place(t, 1, PC_PLACE_AUTO, NULL, 0, "0");
	assert_false(p->floating);
	pc_placement_cpus(p, 0, &set);
	cpus_text(&set, text, sizeof(text));
	assert_string_equal(text, "0");
	pc_placement_free(p);
	p = topotest_place(t, 2, PC_PLACE_SPREAD, NULL, 0, "0,1");
	assert_false(p->floating);
	pc_placement_cpus(p, 0, &set);
	assert_int_equal(CPU_COUNT(&set), 1);
	pc_placement_free(p);
	p = topotest_place(t, 2, PC_PLACE_OFF, NULL, 0, "-1,-1");
	assert_false(p->floating);
	pc_placement_cpus(p, 0, &set);
	assert_int_equal(CPU_COUNT(&set), 0);
	pc_placement_free(p);
	pc_topo_free(t);

	/* two nodes: each shard stays on its own node's CPUs */
	t = topotest_load("server2s.xml", NULL, 0);
	assert_int_equal(pc_place(t, 64, PC_PLACE_AUTO, NULL, 0, &p, text, sizeof(text)), 0);
	assert_true(p->floating);
	for (unsigned s = 0; s < p->n; s++) {
		pc_placement_cpus(p, s, &set);
		assert_int_equal(CPU_COUNT(&set), 32);
		for (int c = 0; c < 64; c++)
			if (CPU_ISSET(c, &set))
				assert_int_equal(c / 16 % 2, p->shards[s].node);
	}
	pc_placement_free(p);
	assert_int_equal(pc_place(t, 63, PC_PLACE_AUTO, NULL, 0, &p, text, sizeof(text)), 0);
	assert_false(p->floating);
	pc_placement_free(p);
	pc_topo_free(t);
}

static void bad_arguments(void **state)
{
	struct pc_topo *t = topotest_load("vm2.xml", NULL, 0);
	struct pc_placement *p = NULL;
	cpu_set_t set;
	char err[128];
	(void)state;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	assert_int_equal(pc_place(t, 1, PC_PLACE_AUTO, &set, 0, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "only with the list policy"));
	assert_int_equal(pc_place(t, 1, PC_PLACE_LIST, NULL, 0, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs a CPU list"));
	assert_int_equal(pc_place(t, 1, (enum pc_place_policy)42, NULL, 0, &p, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(pc_place(t, 1u << 20, PC_PLACE_AUTO, NULL, OVER, &p, err, sizeof(err)),
			 -EINVAL);
	/* a zero-length message buffer is fine */
	assert_int_equal(pc_place(t, 1, PC_PLACE_LIST, NULL, 0, &p, NULL, 0), -EINVAL);
	assert_null(p);
	pc_topo_free(t);
	/* nothing usable at all */
	t = topotest_load("vm2.xml", "5", 0);
	assert_int_equal(pc_topo_limits(t)->nusable, 0);
	assert_int_equal(pc_place_default_shards(t), 0);
	topotest_place_fails(t, 0, PC_PLACE_AUTO, NULL, 0, "no usable CPU");
	pc_topo_free(t);
}

static void policy_names_round_trip(void **state)
{
	enum pc_place_policy p;
	(void)state;

	for (int i = PC_PLACE_AUTO; i <= PC_PLACE_LIST; i++) {
		assert_int_equal(pc_place_policy_parse(pc_place_policy_name(i), &p), 0);
		assert_int_equal(p, i);
	}
	assert_int_equal(pc_place_policy_parse("fast", &p), -EINVAL);
	assert_int_equal(pc_place_policy_parse(NULL, &p), -EINVAL);
	assert_string_equal(pc_place_policy_name((enum pc_place_policy)99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hybrid_auto_takes_p_cores_then_e_cores),
		cmocka_unit_test(hybrid_pcore_and_limits),
		cmocka_unit_test(server_auto_spreads_in_proportion),
		cmocka_unit_test(server_compact_spread_and_lists),
		cmocka_unit_test(container_defaults_to_quota_on_node_1),
		cmocka_unit_test(container_limits_given_by_the_caller),
		cmocka_unit_test(uneven_nodes_and_partial_cores),
		cmocka_unit_test(vm_two_cpus),
		cmocka_unit_test(auto_floats_only_when_every_cpu_is_taken),
		cmocka_unit_test(bad_arguments),
		cmocka_unit_test(policy_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
