/* SPDX-License-Identifier: MIT */
/* percore mem: the page source. Pages come from the shard's NUMA node
 * through the sys layer (pc_numa_alloc: a preferred-node policy where the
 * machine has NUMA, plain mmap where it has not); node -1 leaves placement
 * to the first touch. */
#include <unistd.h>

#include "percore/numa.h"
#include "mem/pages.h"

size_t mem_pages_round(size_t bytes)
{
	long n = sysconf(_SC_PAGESIZE); /* from the aux vector: no system call */
	size_t page = n > 0 ? (size_t)n : 4096;

	if (bytes > (size_t)-1 - page)
		return 0;
	return (bytes + page - 1) & ~(page - 1);
}

void *mem_pages_alloc(size_t bytes, int node)
{
	return pc_numa_alloc(node, bytes);
}

void mem_pages_free(void *p, size_t bytes)
{
	pc_numa_free(p, bytes);
}
