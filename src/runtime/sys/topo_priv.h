/* SPDX-License-Identifier: MIT */
/* percore sys: the topology's tables, shared by the files that build it. */
#ifndef PERCORE_SRC_SYS_TOPO_PRIV_H
#define PERCORE_SRC_SYS_TOPO_PRIV_H

#include <hwloc.h>

#include "percore/topo.h"

struct pc_topo {
	char *source;                 /* "this machine" or the XML path */
	enum pc_topo_kind_source kind_source;
	unsigned npackages, ncpus, ncores, nnodes, nkinds, ncaches;
	struct pc_topo_cpu *cpus;     /* sorted by os index */
	struct pc_topo_core *cores;
	struct pc_topo_node *nodes;   /* sorted by os index */
	struct pc_topo_kind *kinds;   /* sorted by rank */
	struct pc_topo_cache *caches;
	struct pc_topo_limits limits;
	int by_os[CPU_SETSIZE];       /* os index -> cpus[] index, -1 none */
};

/* Copy an hwloc bitmap into a cpu_set_t (an infinite bitmap fills it).
 * Returns 0, or -ENOTSUP when it names a CPU >= CPU_SETSIZE. */
int sys_topo_bitmap_to_set(hwloc_const_bitmap_t b, cpu_set_t *s);

/* Fill t->kinds, t->nkinds, t->kind_source and each CPU's and core's kind
 * rank, from hwloc cpukinds, else cpufreq read through root (pc_rootfs;
 * skipped when read_cpufreq is false), else one uniform kind. t->cpus and t->cores must be built. Returns 0 or
 * -errno with the reason in err. */
int sys_topo_build_kinds(struct pc_topo *t, hwloc_topology_t h, bool read_cpufreq,
			 const char *root, char *err, size_t errlen);

#endif
