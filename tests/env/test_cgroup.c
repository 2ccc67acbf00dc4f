/* SPDX-License-Identifier: MIT */
/* cgroup limits: v1 and v2 fixtures, ancestry (tightest wins), container
 * views where the cgroup path is missing from the mount, mountinfo with
 * translated roots, malformed files, and the real machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "percore/cgroup.h"
#include "percore/cpulist.h"
#include "env/envtest.h"

static void cpus_are(const cpu_set_t *s, const char *want)
{
	char buf[256];

	assert_true(pc_cpulist_format(s, buf, sizeof(buf)) >= 0);
	assert_string_equal(buf, want);
}

static void v1_container_quota_at_mount_root(void **state)
{
	struct pc_cgroup cg;
	(void)state;

	assert_int_equal(pc_cgroup_read(envtest_fixture("container-v1"), &cg), 0);
	assert_int_equal(cg.version, 1);
	assert_string_equal(cg.path, "/docker/3f2a9c1e7b6d");
	/* /docker/3f2a... is absent under the mount: its root is read instead */
	assert_true(cg.has_cpu_quota);
	assert_int_equal(cg.quota_us, 200000);
	assert_int_equal(cg.period_us, 100000);
	assert_true(cg.quota_cpus > 1.999 && cg.quota_cpus < 2.001);
	/* cpuset 0-3 equals the online CPUs: known, but restricts nothing */
	assert_false(cg.has_cpuset);
	cpus_are(&cg.cpuset, "0-3");
	/* 9223372036854771712 is v1's "no limit" */
	assert_false(cg.has_memory_limit);
}

static void v2_container_tightest_ancestor(void **state)
{
	struct pc_cgroup cg;
	(void)state;

	assert_int_equal(pc_cgroup_read(envtest_fixture("container-v2"), &cg), 0);
	assert_int_equal(cg.version, 2);
	assert_string_equal(cg.path, "/app.slice/bench.scope");
	/* the scope says "max", its parent 1.5 CPUs: the parent throttles */
	assert_true(cg.has_cpu_quota);
	assert_int_equal(cg.quota_us, 150000);
	assert_int_equal(cg.period_us, 100000);
	assert_true(cg.quota_cpus > 1.499 && cg.quota_cpus < 1.501);
	assert_true(cg.has_cpuset);
	cpus_are(&cg.cpuset, "2-3");
	assert_true(cg.has_memory_limit);
	assert_int_equal(cg.memory_limit, 2147483648ULL);
}

static void nothing_at_all(void **state)
{
	struct pc_cgroup cg;
	(void)state;

	assert_int_equal(pc_cgroup_read(envtest_fixture("vm"), &cg), 0);
	assert_int_equal(cg.version, 0);
	assert_string_equal(cg.path, "/");
	assert_string_equal(cg.cpu_path, "");
	assert_false(cg.has_cpuset || cg.has_cpu_quota || cg.has_memory_limit);
	assert_int_equal(CPU_COUNT(&cg.cpuset), 0);
	/* a folder that does not exist is a machine with nothing in it */
	assert_int_equal(pc_cgroup_read("/nonexistent/percore/root", &cg), 0);
	assert_int_equal(cg.version, 0);
	assert_int_equal(pc_cgroup_read(NULL, NULL), -EINVAL);
}

static void desktop_v2_without_limits(void **state)
{
	struct pc_cgroup cg;
	(void)state;

	assert_int_equal(pc_cgroup_read(envtest_fixture("desktop"), &cg), 0);
	assert_int_equal(cg.version, 2);
	assert_false(cg.has_cpuset || cg.has_cpu_quota || cg.has_memory_limit);
}

/* A v1 host like this one (cpu and cpuacct mounted apart), seen through
 * mountinfo whose cpu mount shows /docker/abc at its mount point; the
 * escaped space in the memory mount point must be decoded. */
static void v1_mountinfo_translates_roots(void **state)
{
	char *t = envtest_tmpdir();
	struct pc_cgroup cg;
	(void)state;

	assert_non_null(t);
	assert_int_equal(envtest_write(t, "proc/self/cgroup",
		"5:memory:/docker/abc\n3:cpu:/docker/abc/inner\n2:cpuacct:/\n"
		"broken line\n0::/\n"), 0);
	assert_int_equal(envtest_write(t, "proc/self/mountinfo",
		"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		"32 31 0:29 /docker/abc /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
		"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
		"35 31 0:32 /docker/abc /sys/fs/cgroup/my\\040mem rw - cgroup cgroup rw,memory\n"
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "300000\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/cpu/inner/cpu.cfs_quota_us", "50000\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/cpu/inner/cpu.cfs_period_us", "100000\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/my mem/memory.limit_in_bytes", "1073741824\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/unified/cgroup.controllers", "\n"), 0);
	assert_int_equal(pc_cgroup_read(t, &cg), 0);
	assert_int_equal(cg.version, 1);
	/* each controller has its own cgroup on a v1 host */
	assert_string_equal(cg.path, "/docker/abc/inner");
	assert_string_equal(cg.cpu_path, "/docker/abc/inner");
	assert_string_equal(cg.memory_path, "/docker/abc");
	assert_string_equal(cg.cpuset_path, "");
	assert_true(cg.has_cpu_quota);
	assert_int_equal(cg.quota_us, 50000);
	assert_true(cg.quota_cpus > 0.499 && cg.quota_cpus < 0.501);
	assert_true(cg.has_memory_limit);
	assert_int_equal(cg.memory_limit, 1073741824ULL);
	assert_false(cg.has_cpuset);
	envtest_rmtree(t);
}

/* Garbage in any limit file leaves that limit unset; nothing crashes. */
static void malformed_files_set_nothing(void **state)
{
	char *t = envtest_tmpdir();
	struct pc_cgroup cg;
	(void)state;

	assert_non_null(t);
	assert_int_equal(envtest_write(t, "proc/self/cgroup", "0::/a\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/a/cpu.max", "lots 100000\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/a/memory.max", "12abc\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/a/cpuset.cpus.effective", "x-y\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/cpu.max", "-5 100000\n"), 0);
	assert_int_equal(pc_cgroup_read(t, &cg), 0);
	assert_int_equal(cg.version, 2);
	assert_false(cg.has_cpuset || cg.has_cpu_quota || cg.has_memory_limit);
	/* a v2 tree whose controllers file lacks cpu: no quota read */
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/cgroup.controllers", "memory\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/a/cpu.max", "50000 100000\n"), 0);
	assert_int_equal(envtest_write(t, "sys/fs/cgroup/a/memory.max", "4096\n"), 0);
	assert_int_equal(pc_cgroup_read(t, &cg), 0);
	assert_false(cg.has_cpu_quota);
	assert_true(cg.has_memory_limit);
	assert_int_equal(cg.memory_limit, 4096);
	envtest_rmtree(t);
}

/* The real machine: never fails, and what it reports is consistent with
 * what the kernel enforces on this very process. */
static void real_machine(void **state)
{
	struct pc_cgroup cg;
	cpu_set_t aff, both;
	(void)state;

	assert_int_equal(pc_cgroup_read(NULL, &cg), 0);
	assert_int_equal(pc_cgroup_read("/", &cg), 0);
	assert_true(cg.version >= 0 && cg.version <= 2);
	assert_true(cg.path[0] == '/');
	if (cg.has_cpu_quota)
		assert_true(cg.quota_cpus > 0 && cg.quota_us > 0 && cg.period_us > 0);
	if (cg.has_cpuset)
		assert_true(CPU_COUNT(&cg.cpuset) > 0);
	/* the scheduler never lets us run outside our cgroup's cpuset */
	if (CPU_COUNT(&cg.cpuset) > 0 && sched_getaffinity(0, sizeof(aff), &aff) == 0) {
		CPU_AND(&both, &aff, &cg.cpuset);
		assert_true(CPU_EQUAL(&both, &aff));
	}
	printf("real machine: cgroup v%d %s quota %s %.2f cpus, cpuset %d cpus%s, memory %s\n",
	       cg.version, cg.path, cg.has_cpu_quota ? "yes" : "no", cg.quota_cpus,
	       CPU_COUNT(&cg.cpuset), cg.has_cpuset ? " (restricted)" : "",
	       cg.has_memory_limit ? "limited" : "unlimited");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(v1_container_quota_at_mount_root),
		cmocka_unit_test(v2_container_tightest_ancestor),
		cmocka_unit_test(nothing_at_all),
		cmocka_unit_test(desktop_v2_without_limits),
		cmocka_unit_test(v1_mountinfo_translates_roots),
		cmocka_unit_test(malformed_files_set_nothing),
		cmocka_unit_test(real_machine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
