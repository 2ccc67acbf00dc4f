/* SPDX-License-Identifier: MIT */
/* percore: memory from one NUMA node.
 *
 * A shard's memory should live on the node of the CPU it is pinned to. The
 * region comes straight from mmap with a preferred-node policy (libnuma
 * mbind), so pages land on the node even when another thread touches them
 * first; still, touch a shard's memory first from the shard's own pinned
 * thread, so the page tables and any fallback page are local too.
 * Where the kernel or machine has no NUMA support the memory is plain mmap.
 */
#ifndef PERCORE_NUMA_H
#define PERCORE_NUMA_H

#include <stdbool.h>
#include <stddef.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* Regions at least this large are advised for transparent huge pages when
 * THP runs in madvise mode, and aligned so that they can use them. */
#define PC_NUMA_HUGE_MIN ((size_t)2 << 20)

/* Map size bytes (rounded up to whole pages) whose pages come from NUMA
 * node `node` (os index; -1: no preference, first touch decides). Nothing
 * is touched. Returns NULL when size is 0, the node does not exist (or is
 * not 0 or -1 on a machine without NUMA), or mapping fails. Any thread. */
PC_API void *pc_numa_alloc(int node, size_t size);

/* Unmap a region from pc_numa_alloc; size as given to it. NULL is fine. */
PC_API void pc_numa_free(void *p, size_t size);

/* The node holding the page at addr (which must be touched already), or
 * -errno (-ENOSYS without NUMA support, -EFAULT for an unmapped address,
 * -ENOENT for a page not yet present). Any thread. */
PC_API int pc_numa_node_of(const void *addr);

/* True when the kernel and machine support NUMA policies (numa_available). */
PC_API bool pc_numa_available(void);

PC_END_DECLS

#endif
