/* SPDX-License-Identifier: MIT */
/* Topology loading: what each fixture machine looks like through pc_topo
 * (cores, SMT siblings, kinds, caches, nodes, usable CPUs), the kind
 * fallbacks (cpufreq, uniform), cgroup limits read through a fake tree,
 * this machine, and every way a load can fail. */
#define _GNU_SOURCE 1
#include <sys/stat.h>
#include <unistd.h>

#include "env/envtest.h"
#include "topo/topotest.h"

static void cpus_are(const cpu_set_t *s, const char *want)
{
	char buf[512];

	assert_true(pc_cpulist_format(s, buf, sizeof(buf)) >= 0);
	assert_string_equal(buf, want);
}

/* The caches whose level is level, as "size@cpus;..." in table order. */
static const char *caches_at(const struct pc_topo *t, int level)
{
	static char out[4096];
	size_t used = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < pc_topo_ncaches(t); i++) {
		const struct pc_topo_cache *c = pc_topo_cache(t, i);
		char cpus[256];

		if (c->level != level)
			continue;
		pc_cpulist_format(&c->cpus, cpus, sizeof(cpus));
		used += (size_t)snprintf(out + used, sizeof(out) - used, "%s%lluK@%s",
					 used ? ";" : "", (unsigned long long)(c->size >> 10), cpus);
	}
	return out;
}

static void hybrid_has_p_and_e_cores(void **state)
{
	struct pc_topo *t = topotest_load("hybrid.xml", NULL, 0);
	const struct pc_topo_core *k;
	const struct pc_topo_cpu *c;
	(void)state;

	assert_int_equal(pc_topo_ncpus(t), 28);
	assert_int_equal(pc_topo_ncores(t), 20);
	assert_int_equal(pc_topo_nnodes(t), 1);
	assert_int_equal(pc_topo_npackages(t), 1);
	assert_int_equal(pc_topo_kind_source(t), PC_TOPO_KINDS_HWLOC);
	assert_int_equal(pc_topo_nkinds(t), 2);
	assert_string_equal(pc_topo_kind(t, 0)->name, "IntelCore");
	assert_int_equal(pc_topo_kind(t, 0)->efficiency, 1);
	assert_int_equal(pc_topo_kind(t, 0)->max_mhz, 5600);
	cpus_are(&pc_topo_kind(t, 0)->cpus, "0-15");
	assert_string_equal(pc_topo_kind(t, 1)->name, "IntelAtom");
	cpus_are(&pc_topo_kind(t, 1)->cpus, "16-27");
	/* P-core 3: CPUs 6 and 7, siblings in SMT order */
	k = pc_topo_core(t, 3);
	assert_int_equal(k->nthreads, 2);
	assert_int_equal(k->threads[0], 6);
	assert_int_equal(k->threads[1], 7);
	assert_int_equal(k->kind, 0);
	c = pc_topo_cpu_by_os(t, 7);
	assert_int_equal(c->core, 3);
	assert_int_equal(c->smt, 1);
	assert_true(c->usable);
	/* E-core: one thread, slower kind */
	c = pc_topo_cpu_by_os(t, 20);
	assert_int_equal(c->smt, 0);
	assert_int_equal(c->kind, 1);
	assert_int_equal(pc_topo_core(t, (unsigned)c->core)->nthreads, 1);
	assert_null(pc_topo_cpu_by_os(t, 28));
	assert_null(pc_topo_cpu_by_os(t, -1));
	assert_null(pc_topo_core(t, 20));
	/* L2: private per P-core, shared by clusters of four E-cores */
	assert_string_equal(caches_at(t, 2),
			    "2048K@0-1;2048K@2-3;2048K@4-5;2048K@6-7;2048K@8-9;2048K@10-11;"
			    "2048K@12-13;2048K@14-15;4096K@16-19;4096K@20-23;4096K@24-27");
	assert_string_equal(caches_at(t, 3), "33792K@0-27");
	assert_int_equal(pc_topo_cache(t, 0)->level, 1);
	assert_int_equal(pc_topo_cache(t, 0)->line, 64);
	assert_int_equal(pc_topo_limits(t)->nusable, 28);
	assert_int_equal(pc_topo_limits(t)->nusable_cores, 20);
	assert_false(pc_topo_limits(t)->has_affinity);
	assert_int_equal(pc_topo_limits(t)->cgroup_version, 0);
	pc_topo_free(t);
}

static void server_has_two_nodes(void **state)
{
	struct pc_topo *t = topotest_load("server2s.xml", NULL, 0);
	const struct pc_topo_node *n;
	const struct pc_topo_cpu *c;
	(void)state;

	assert_int_equal(pc_topo_ncpus(t), 64);
	assert_int_equal(pc_topo_ncores(t), 32);
	assert_int_equal(pc_topo_npackages(t), 2);
	assert_int_equal(pc_topo_nnodes(t), 2);
	assert_int_equal(pc_topo_kind_source(t), PC_TOPO_KINDS_UNIFORM);
	assert_int_equal(pc_topo_nkinds(t), 1);
	assert_string_equal(pc_topo_kind(t, 0)->name, "uniform");
	n = pc_topo_node(t, 1);
	assert_int_equal(n->os_index, 1);
	assert_int_equal(n->memory, 64ULL << 30);
	cpus_are(&n->cpus, "16-31,48-63");
	assert_int_equal(n->ncores, 16);
	assert_int_equal(n->nusable_cores, 16);
	c = pc_topo_cpu_by_os(t, 49);
	assert_int_equal(c->package, 1);
	assert_int_equal(c->node, 1);
	assert_int_equal(c->core, 17);
	assert_int_equal(c->smt, 1);
	assert_string_equal(caches_at(t, 3), "36864K@0-15,32-47;36864K@16-31,48-63");
	pc_topo_free(t);
}

static void container_file_restricts_usable(void **state)
{
	struct pc_topo *t = topotest_load("container.xml", NULL, 0);
	const struct pc_topo_limits *l = pc_topo_limits(t);
	(void)state;

	/* the whole machine is still described... */
	assert_int_equal(pc_topo_ncpus(t), 64);
	/* ...but only the container's CPUs are usable */
	assert_true(l->has_hwloc_allowed);
	cpus_are(&l->usable, "16-19");
	assert_int_equal(l->nusable_cores, 4);
	assert_int_equal(pc_topo_node(t, 0)->nusable_cores, 0);
	assert_int_equal(pc_topo_node(t, 1)->nusable_cores, 4);
	assert_false(pc_topo_cpu_by_os(t, 48)->usable);
	assert_int_equal(pc_topo_core(t, 16)->nusable, 1);
	assert_int_equal(l->quota_shards, 0);
	pc_topo_free(t);
	/* the caller's limits narrow it further */
	t = topotest_load("container.xml", "17,18,40", 0.5);
	l = pc_topo_limits(t);
	cpus_are(&l->usable, "17-18");
	assert_true(l->quota_cpus > 0.49 && l->quota_cpus < 0.51);
	assert_int_equal(l->quota_shards, 1); /* never below one shard */
	pc_topo_free(t);
}

static void vm_is_like_this_machine(void **state)
{
	struct pc_topo *t = topotest_load("vm2.xml", NULL, 0);
	(void)state;

	assert_int_equal(pc_topo_ncpus(t), 2);
	assert_int_equal(pc_topo_ncores(t), 2);
	assert_int_equal(pc_topo_core(t, 1)->nthreads, 1);
	assert_string_equal(caches_at(t, 2), "2048K@0;2048K@1");
	assert_string_equal(caches_at(t, 1), "48K@0;48K@1");
	pc_topo_free(t);
}

/* Write a file into a scratch tree (the environment tests' helper). */
static void put_file(const char *dir, const char *rel, const char *text)
{
	assert_int_equal(envtest_write(dir, rel, text), 0);
}

/* Without cpukinds, per-core maximum frequency ranks the cores. */
static void cpufreq_ranks_kinds_without_cpukinds(void **state)
{
	char *dir = envtest_tmpdir();
	struct pc_topo_opts o = { .xml_path = topotest_path("topo", "vm2.xml") };
	struct pc_topo *t;
	struct pc_placement *p;
	char err[256];
	(void)state;

	assert_non_null(dir);
	put_file(dir, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3000000\n");
	put_file(dir, "sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq", "4200000\n");
	o.root = dir;
	assert_int_equal(pc_topo_load(&o, &t, err, sizeof(err)), 0);
	assert_int_equal(pc_topo_validate(t, NULL, 0), 0);
	assert_int_equal(pc_topo_kind_source(t), PC_TOPO_KINDS_CPUFREQ);
	assert_int_equal(pc_topo_nkinds(t), 2);
	assert_string_equal(pc_topo_kind(t, 0)->name, "4200 MHz");
	cpus_are(&pc_topo_kind(t, 0)->cpus, "1");
	assert_int_equal(pc_topo_cpu_by_os(t, 0)->kind, 1);
	/* the fast core alone is the default; two shards go fast core first */
	assert_int_equal(pc_place_default_shards(t), 1);
	p = topotest_place(t, 2, PC_PLACE_AUTO, NULL, 0, "1,0");
	assert_true(topotest_warns(p, "1 of 2 shards runs on slower cores"));
	pc_placement_free(p);
	pc_topo_free(t);
	/* equal frequencies, or a CPU without cpufreq: uniform */
	put_file(dir, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "4200000\n");
	assert_int_equal(pc_topo_load(&o, &t, err, sizeof(err)), 0);
	assert_int_equal(pc_topo_kind_source(t), PC_TOPO_KINDS_UNIFORM);
	assert_int_equal(pc_topo_kind(t, 0)->max_mhz, 4200);
	pc_topo_free(t);
	put_file(dir, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "fast\n");
	assert_int_equal(pc_topo_load(&o, &t, err, sizeof(err)), 0);
	assert_int_equal(pc_topo_kind_source(t), PC_TOPO_KINDS_UNIFORM);
	assert_int_equal(pc_topo_kind(t, 0)->max_mhz, 0);
	pc_topo_free(t);
	envtest_rmtree(dir);
}

/* A saved topology plus a cgroup tree: a v2 container with cpuset 2-3 and
 * 1.5 CPUs of quota (tests/fixtures/env/container-v2). */
static void cgroup_tree_limits_a_saved_topology(void **state)
{
	struct pc_topo_opts o = { .xml_path = topotest_path("topo", "server2s.xml"),
				  .root = envtest_fixture("container-v2") };
	struct pc_topo *t;
	struct pc_placement *p;
	char err[256];
	(void)state;

	assert_int_equal(pc_topo_load(&o, &t, err, sizeof(err)), 0);
	assert_int_equal(pc_topo_validate(t, NULL, 0), 0);
	assert_int_equal(pc_topo_limits(t)->cgroup_version, 2);
	assert_string_equal(pc_topo_limits(t)->cgroup_path, "/app.slice/bench.scope");
	cpus_are(&pc_topo_limits(t)->usable, "2-3");
	assert_int_equal(pc_topo_limits(t)->quota_shards, 1);
	p = topotest_place(t, 0, PC_PLACE_AUTO, NULL, 0, "2");
	pc_placement_free(p);
	p = topotest_place(t, 2, PC_PLACE_AUTO, NULL, 0, "2,3");
	assert_true(topotest_warns(p, "exceed the CPU quota of 1.50 CPUs"));
	pc_placement_free(p);
	pc_topo_free(t);
}

/* This machine: whatever it is, the tables agree with the kernel. */
static void this_machine(void **state)
{
	struct pc_topo *t;
	cpu_set_t aff;
	char err[256];
	(void)state;

	assert_int_equal(pc_topo_load(NULL, &t, err, sizeof(err)), 0);
	assert_int_equal(pc_topo_validate(t, NULL, 0), 0);
	assert_string_equal(pc_topo_source(t), "this machine");
	assert_int_equal(sched_getaffinity(0, sizeof(aff), &aff), 0);
	assert_true(pc_topo_limits(t)->has_affinity);
	assert_true(CPU_EQUAL(&pc_topo_limits(t)->affinity, &aff));
	/* usable is within the affinity mask and never empty here */
	for (unsigned i = 0; i < pc_topo_ncpus(t); i++)
		if (pc_topo_cpu(t, i)->usable)
			assert_true(CPU_ISSET(pc_topo_cpu(t, i)->os_index, &aff));
	assert_true(pc_topo_limits(t)->nusable >= 1);
	assert_int_equal(pc_topo_ncpus(t), (unsigned)sysconf(_SC_NPROCESSORS_CONF));
	assert_true(pc_place_default_shards(t) >= 1);
	pc_topo_free(t);
}

static void expect_load_error(const char *path, int code, const char *text)
{
	struct pc_topo *t = (struct pc_topo *)1;
	char err[256] = "";

	assert_int_equal(pc_topo_load_xml(path, &t, err, sizeof(err)), code);
	assert_null(t);
	if (!strstr(err, text))
		fail_msg("message '%s' lacks '%s'", err, text);
}

static void bad_files_fail_cleanly(void **state)
{
	char *dir = envtest_tmpdir();
	char path[256];
	struct pc_topo_opts o = { .xml_path = topotest_path("topo", "vm2.xml"),
				  .quota_cpus = -1 };
	struct pc_topo *t;
	char err[256];
	(void)state;

	expect_load_error("/nonexistent/machine.xml", -ENOENT, "No such file");
	expect_load_error(NULL, -EINVAL, "no XML file");
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/bad.xml", dir);
	put_file(dir, "bad.xml", "this is not XML\n");
	expect_load_error(path, -EPROTO, "not a valid hwloc XML topology");
	put_file(dir, "bad.xml", "");
	expect_load_error(path, -EPROTO, "not a valid hwloc XML topology");
	/* cut in the middle of an object */
	put_file(dir, "bad.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"
		 "<object type=\"Machine\" os_index=\"0\" cpuset=\"0x1\"");
	expect_load_error(path, -EPROTO, "not a valid hwloc XML topology");
	/* hwloc 2.9 itself crashes on this one: the error must still be ours */
	put_file(dir, "bad.xml", "<topologyversion=\"2.0");
	expect_load_error(path, -EPROTO, "not a valid hwloc XML topology");
	/* well-formed XML that is not a topology */
	put_file(dir, "bad.xml", "<?xml version=\"1.0\"?>\n<html><body/></html>\n");
	expect_load_error(path, -EPROTO, "not a valid hwloc XML topology");
	snprintf(path, sizeof(path), "%s", dir);
	expect_load_error(path, -EPROTO, "not a valid hwloc XML topology");
	envtest_rmtree(dir);
	assert_int_equal(pc_topo_load(&o, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "quota"));
	assert_null(t);
	pc_topo_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hybrid_has_p_and_e_cores),
		cmocka_unit_test(server_has_two_nodes),
		cmocka_unit_test(container_file_restricts_usable),
		cmocka_unit_test(vm_is_like_this_machine),
		cmocka_unit_test(cpufreq_ranks_kinds_without_cpukinds),
		cmocka_unit_test(cgroup_tree_limits_a_saved_topology),
		cmocka_unit_test(this_machine),
		cmocka_unit_test(bad_files_fail_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
