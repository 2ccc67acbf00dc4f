/* SPDX-License-Identifier: MIT */
/* percore sys: memory from one NUMA node.
 *
 * The policy is MPOL_PREFERRED, not MPOL_BIND: pages come from the asked
 * node whenever it has free memory, and from another node rather than the
 * OOM killer when it has none. A shard then runs slower instead of dying,
 * and the audit can see it (pc_numa_node_of). */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "percore/numa.h"
#include "sys/rootfs.h"

bool pc_numa_available(void)
{
	/* numa_available() only checks get_mempolicy; cheap enough to repeat. */
	return numa_available() >= 0;
}

/* THP in madvise mode: regions must ask for huge pages themselves. */
static bool thp_wants_madvise(void)
{
	char buf[128];

	if (sys_rootfs_read(NULL, "/sys/kernel/mm/transparent_hugepage/enabled", buf,
			    sizeof(buf)) <= 0)
		return false;
	return strstr(buf, "[madvise]") != NULL;
}

static size_t page_round(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (size + page - 1) & ~(page - 1);
}

/* Map len bytes aligned to PC_NUMA_HUGE_MIN, so every 2 MiB extent of the
 * region can be a huge page: over-map, then unmap the ragged ends. */
static void *map_aligned(size_t len)
{
	size_t align = PC_NUMA_HUGE_MIN;
	char *raw = mmap(NULL, len + align, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;

	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (raw + len + align > p + len)
		munmap(p + len, (size_t)(raw + len + align - (p + len)));
	return p;
}

static int bind_to_node(void *p, size_t len, int node)
{
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = { 0 };

	if ((size_t)node >= sizeof(mask) * 8)
		return -EINVAL;
	mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
	if (mbind(p, len, MPOL_PREFERRED, mask, sizeof(mask) * 8, 0))
		return -errno;
	return 0;
}

void *pc_numa_alloc(int node, size_t size)
{
	bool numa = pc_numa_available();
	size_t len = page_round(size);
	bool huge = len >= PC_NUMA_HUGE_MIN;
	void *p;

	if (size == 0 || node < -1 || len < size)
		return NULL;
	if (node >= 0 && (numa ? node > numa_max_node() || !numa_bitmask_isbitset(
				 numa_all_nodes_ptr, (unsigned)node) : node != 0))
		return NULL;
	p = huge ? map_aligned(len)
		 : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!p || p == MAP_FAILED)
		return NULL;
	if (huge && thp_wants_madvise())
		madvise(p, len, MADV_HUGEPAGE); /* advice only: failure changes nothing */
	if (numa && node >= 0 && bind_to_node(p, len, node)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

void pc_numa_free(void *p, size_t size)
{
	if (p)
		munmap(p, page_round(size));
}

int pc_numa_node_of(const void *addr)
{
	void *page = (void *)((uintptr_t)addr & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1));
	int status = -1;

	if (!pc_numa_available())
		return -ENOSYS;
	/* With nodes == NULL, move_pages only reports where each page is. */
	if (move_pages(0, 1, &page, NULL, &status, 0))
		return -errno;
	return status; /* a node, or -errno such as -ENOENT (not present) */
}
