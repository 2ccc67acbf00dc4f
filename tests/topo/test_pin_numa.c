/* SPDX-License-Identifier: MIT */
/* Pinning really moves the thread, and NUMA memory really lands on the
 * node asked for (move_pages query), on this machine. */
#define _GNU_SOURCE 1
#include <numaif.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "percore/numa.h"
#include "topo/topotest.h"

/* Spin briefly until the scheduler has moved us (it does so at the next
 * opportunity, normally before pthread_setaffinity_np returns). */
static int cpu_after_pin(int cpu)
{
	int now = -1;

	for (int i = 0; i < 1000 && (now = sched_getcpu()) != cpu; i++)
		sched_yield();
	return now;
}

static void *pin_each_usable_cpu(void *arg)
{
	const struct pc_topo *t = arg;

	for (int round = 0; round < 2; round++)
		for (unsigned i = 0; i < pc_topo_ncpus(t); i++) {
			const struct pc_topo_cpu *c = pc_topo_cpu(t, i);
			cpu_set_t now;

			if (!c->usable)
				continue;
			assert_int_equal(pc_pin_self(c->os_index), 0);
			assert_int_equal(cpu_after_pin(c->os_index), c->os_index);
			assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
			assert_int_equal(CPU_COUNT(&now), 1);
			assert_true(CPU_ISSET(c->os_index, &now));
		}
	return NULL;
}

static void pin_self_moves_the_thread(void **state)
{
	struct pc_topo *t;
	pthread_t th;
	cpu_set_t before, after;
	char err[256];
	(void)state;

	assert_int_equal(pc_topo_load(NULL, &t, err, sizeof(err)), 0);
	assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
	/* a separate thread: pinning affects only the caller */
	assert_int_equal(pthread_create(&th, NULL, pin_each_usable_cpu, t), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));
	pc_topo_free(t);
}

static void pin_self_rejects_bad_cpus(void **state)
{
	cpu_set_t before, after;
	(void)state;

	assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
	assert_int_equal(pc_pin_self(-1), -EINVAL);
	assert_int_equal(pc_pin_self(CPU_SETSIZE), -EINVAL);
	/* a CPU the machine does not have: the kernel refuses, nothing moves */
	assert_int_equal(pc_pin_self(CPU_SETSIZE - 1), -EINVAL);
	assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));
}

/* In a thread of its own: a set of CPUs pins to exactly that set. */
static void *pin_to_whole_affinity(void *arg)
{
	const cpu_set_t *all = arg;
	cpu_set_t first, now;
	int cpu = 0;

	while (!CPU_ISSET(cpu, all))
		cpu++;
	CPU_ZERO(&first);
	CPU_SET(cpu, &first);
	assert_int_equal(pc_pin_self_set(&first), 0);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
	assert_true(CPU_EQUAL(&now, &first));
	assert_int_equal(pc_pin_self_set(all), 0);
	assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
	assert_true(CPU_EQUAL(&now, all));
	return NULL;
}

static void pin_self_set_pins_to_the_set_and_refuses_empty_ones(void **state)
{
	cpu_set_t before, after, empty, absent;
	pthread_t th;
	(void)state;

	assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
	assert_int_equal(pthread_create(&th, NULL, pin_to_whole_affinity, &before), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	CPU_ZERO(&empty);
	CPU_ZERO(&absent);
	CPU_SET(CPU_SETSIZE - 1, &absent); /* a CPU the machine does not have */
	assert_int_equal(pc_pin_self_set(NULL), -EINVAL);
	assert_int_equal(pc_pin_self_set(&empty), -EINVAL);
	assert_int_equal(pc_pin_self_set(&absent), -EINVAL);
	assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after)); /* nothing moved */
}

/* The kernel's VmFlags for the mapping that starts at p ("" if none). */
static const char *vm_flags(const void *p)
{
	static char flags[512];
	char line[512], start[32];
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	flags[0] = '\0';
	assert_non_null(f);
	snprintf(start, sizeof(start), "%lx-", (unsigned long)(uintptr_t)p);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
			in = !strncmp(line, start, strlen(start));
		else if (in && !strncmp(line, "VmFlags:", 8))
			snprintf(flags, sizeof(flags), "%s", line + 8);
	}
	fclose(f);
	return flags;
}

static bool thp_madvise_mode(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	return strstr(buf, "[madvise]") != NULL;
}

static void check_region(int node, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p = pc_numa_alloc(node, size);
	unsigned long mask[16] = { 0 };
	int mode = -1;

	assert_non_null(p);
	/* the policy is on the region itself, before anything touches it */
	if (pc_numa_available()) {
		assert_int_equal(get_mempolicy(&mode, mask, sizeof(mask) * 8, p, MPOL_F_ADDR), 0);
		assert_int_equal(mode, node < 0 ? MPOL_DEFAULT : MPOL_PREFERRED);
		assert_int_equal(mask[0], node < 0 ? 0 : 1ul << node);
	}
	/* large regions ask for huge pages when THP waits to be asked */
	if (size >= PC_NUMA_HUGE_MIN && thp_madvise_mode())
		assert_non_null(strstr(vm_flags(p), " hg"));
	else
		assert_null(strstr(vm_flags(p), " hg"));
	/* untouched: no page is present yet (first touch decides nothing
	 * here since the policy is set, but nothing is faulted in early) */
	if (pc_numa_available())
		assert_int_equal(pc_numa_node_of(p), -ENOENT);
	memset(p, 0xa5, size);
	for (size_t off = 0; off < size; off += (size_t)page * 64)
		assert_int_equal(pc_numa_node_of(p + off), node < 0 ? 0 : node);
	assert_int_equal(pc_numa_node_of(p + size - 1), node < 0 ? 0 : node);
	pc_numa_free(p, size);
}

static void numa_alloc_lands_on_node_0(void **state)
{
	(void)state;

	if (!pc_numa_available()) {
		print_message("no NUMA support: pc_numa_node_of cannot be checked\n");
		assert_int_equal(pc_numa_node_of(&state), -ENOSYS);
		return;
	}
	check_region(0, 1);
	check_region(0, 100 * 1000);
	check_region(0, PC_NUMA_HUGE_MIN * 3 + 4096);
	check_region(-1, 64 * 1024);
}

static void numa_alloc_huge_regions_are_aligned(void **state)
{
	char *p = pc_numa_alloc(0, PC_NUMA_HUGE_MIN * 2);
	(void)state;

	assert_non_null(p);
	assert_int_equal((uintptr_t)p % PC_NUMA_HUGE_MIN, 0);
	/* the ends trimmed off are really gone: only the region is mapped */
	assert_int_equal(msync(p, PC_NUMA_HUGE_MIN * 2, MS_ASYNC), 0);
	pc_numa_free(p, PC_NUMA_HUGE_MIN * 2);
	assert_int_equal(msync(p, 4096, MS_ASYNC), -1);
	assert_int_equal(errno, ENOMEM);
}

static void numa_alloc_rejects_bad_requests(void **state)
{
	int dummy;
	(void)state;

	assert_null(pc_numa_alloc(0, 0));
	assert_null(pc_numa_alloc(-2, 4096));
	assert_null(pc_numa_alloc(4000, 4096));
	assert_null(pc_numa_alloc(0, SIZE_MAX - 10));
	pc_numa_free(NULL, 4096);
	if (pc_numa_available()) {
		assert_int_equal(pc_numa_node_of((void *)16), -EFAULT);
		/* the stack is touched, so it lives on some node */
		assert_true(pc_numa_node_of(&dummy) >= 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pin_self_moves_the_thread),
		cmocka_unit_test(pin_self_rejects_bad_cpus),
		cmocka_unit_test(pin_self_set_pins_to_the_set_and_refuses_empty_ones),
		cmocka_unit_test(numa_alloc_lands_on_node_0),
		cmocka_unit_test(numa_alloc_huge_regions_are_aligned),
		cmocka_unit_test(numa_alloc_rejects_bad_requests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
