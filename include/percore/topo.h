/* SPDX-License-Identifier: MIT */
/* percore: the machine as placement sees it.
 *
 * pc_topo_load() reads the machine through hwloc (or a saved hwloc XML
 * file): packages, NUMA nodes and their memory, L1d/L2/L3 caches and which
 * CPUs share each, physical cores, SMT siblings and core kinds ranked by
 * speed. It also records which CPUs this process may use (affinity mask
 * intersected with the cgroup cpuset) and the CPU quota as a number of CPUs.
 *
 * A loaded topology is immutable: any thread may read it concurrently. CPU
 * numbers are the kernel's (os index), as sched_setaffinity and
 * /proc/cpuinfo use them. CPU os indices must be below CPU_SETSIZE (1024).
 */
#ifndef PERCORE_TOPO_H
#define PERCORE_TOPO_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct pc_topo;

/* Most hardware threads one core may have (POWER has 8). */
#define PC_TOPO_MAX_SMT 8

/* One hardware thread (what the kernel calls a CPU). */
struct pc_topo_cpu {
	int os_index;           /* kernel CPU number */
	int core;               /* index into the core table */
	int package;            /* package (socket) logical index */
	int node;               /* index into the node table */
	int kind;               /* kind rank: 0 is the fastest kind */
	int smt;                /* 0 for a core's first thread, 1 the next... */
	bool usable;            /* in the affinity mask and the cgroup cpuset */
};

/* One physical core; its threads listed in SMT order. */
struct pc_topo_core {
	int index;              /* machine-wide core number, hwloc's order */
	int package;
	int node;               /* index into the node table */
	int kind;               /* kind rank */
	unsigned nthreads;
	int threads[PC_TOPO_MAX_SMT]; /* CPU os indices, smt 0 first */
	unsigned nusable;       /* how many of threads[] are usable */
};

/* A NUMA node of the topology. */
struct pc_topo_node {
	int os_index;           /* NUMA node number as libnuma names it */
	uint64_t memory;        /* bytes of local memory (0 when unknown) */
	cpu_set_t cpus;         /* CPUs close to this node */
	unsigned ncores, nusable_cores;
};

/* Where the kinds come from. */
enum pc_topo_kind_source {
	PC_TOPO_KINDS_UNIFORM = 0,   /* one kind: nothing says otherwise */
	PC_TOPO_KINDS_HWLOC,         /* hwloc cpukinds (efficiency ranking) */
	PC_TOPO_KINDS_CPUFREQ,       /* per-core cpufreq cpuinfo_max_freq */
};

/* A kind of core (performance, efficiency, ...), fastest first. */
struct pc_topo_kind {
	int rank;               /* 0 fastest */
	char name[32];          /* "IntelCore", "IntelAtom", "4300 MHz", "uniform" */
	int efficiency;         /* hwloc's efficiency, -1 when unknown */
	unsigned max_mhz;       /* 0 when unknown */
	cpu_set_t cpus;
};

/* A CPU cache of the topology. */
struct pc_topo_cache {
	int level;              /* 1 (data), 2 or 3 */
	uint64_t size;          /* bytes */
	unsigned line;          /* line size in bytes (0 when unknown) */
	cpu_set_t cpus;         /* the CPUs sharing it */
};

/* What limits this process: recorded at load time. */
struct pc_topo_limits {
	int cgroup_version;     /* 0 none or not read, 1, 2 */
	char cgroup_path[256];  /* "" when not read */
	bool has_affinity;      /* affinity mask read (real machine only) */
	cpu_set_t affinity;
	bool has_cpuset;        /* a cgroup cpuset, or the caller's allowed set */
	cpu_set_t cpuset;
	bool has_hwloc_allowed; /* an XML file's allowed_cpuset narrowed it */
	double quota_cpus;      /* CPUs' worth of time; 0 when unlimited */
	unsigned quota_shards;  /* floor(quota_cpus), at least 1; 0 unlimited */
	cpu_set_t usable;       /* what placement may use */
	unsigned nusable, nusable_cores;
};

/* How to load. Zero-initialise and set what you need. */
struct pc_topo_opts {
	/* NULL: this machine. Otherwise a hwloc XML file (lstopo --of xml);
	 * the machine's affinity mask and cgroup are then not consulted. */
	const char *xml_path;
	/* Where the kernel's files (cgroups, cpufreq) are read. NULL: the real
	 * machine's for a real machine, none at all for XML. A folder holding
	 * fake proc/ and sys/ trees: read there (for XML too, to plan for a
	 * container on that machine). */
	const char *root;
	/* Narrow the usable CPUs further (a container's cpuset when planning
	 * for it from outside). NULL: no extra limit. */
	const cpu_set_t *allowed;
	/* A CPU quota in CPUs (2.5 = 250 ms per 100 ms); 0 keeps the cgroup's
	 * (real machine) or none (XML). */
	double quota_cpus;
};

/* Load a topology. On success stores a new topology in *out and returns 0.
 * On failure returns -ENOENT (no such XML file), -EPROTO (malformed XML or
 * a topology hwloc cannot use), -ENOTSUP (a CPU number >= CPU_SETSIZE, more
 * than PC_TOPO_MAX_SMT threads per core), -EINVAL (bad options) or -ENOMEM,
 * writes a one-line reason into err (when errlen > 0) and leaves *out NULL.
 * Any thread; takes tens of milliseconds on a real machine. An XML file is
 * first read by a forked child process, because hwloc can crash on corrupt
 * files: a bad file is an error here, never a crash. */
PC_API int pc_topo_load(const struct pc_topo_opts *opts, struct pc_topo **out,
			char *err, size_t errlen);

/* pc_topo_load with only xml_path set. */
PC_API int pc_topo_load_xml(const char *path, struct pc_topo **out, char *err, size_t errlen);

/* Free a topology (NULL is fine). */
PC_API void pc_topo_free(struct pc_topo *t);

/* Check every invariant (indices in range, each CPU in its core's thread
 * list, usable counts, sorted CPU table). Returns 0, or -EINVAL and, when
 * err is not NULL, what broke in err (errlen bytes): the CPU, core or node,
 * the value found, the range expected. */
PC_API int pc_topo_validate(const struct pc_topo *t, char *err, size_t errlen);

/* Table accessors. Indices run from 0 to the count minus one; an index out
 * of range returns NULL. CPUs are sorted by os index; kinds by rank; nodes
 * by os index; caches by level, then first CPU. */
PC_API unsigned pc_topo_ncpus(const struct pc_topo *t);
PC_API const struct pc_topo_cpu *pc_topo_cpu(const struct pc_topo *t, unsigned i);
PC_API unsigned pc_topo_ncores(const struct pc_topo *t);
PC_API const struct pc_topo_core *pc_topo_core(const struct pc_topo *t, unsigned i);
PC_API unsigned pc_topo_nnodes(const struct pc_topo *t);
PC_API const struct pc_topo_node *pc_topo_node(const struct pc_topo *t, unsigned i);
PC_API unsigned pc_topo_nkinds(const struct pc_topo *t);
PC_API const struct pc_topo_kind *pc_topo_kind(const struct pc_topo *t, unsigned i);
PC_API unsigned pc_topo_ncaches(const struct pc_topo *t);
PC_API const struct pc_topo_cache *pc_topo_cache(const struct pc_topo *t, unsigned i);
PC_API unsigned pc_topo_npackages(const struct pc_topo *t);
PC_API enum pc_topo_kind_source pc_topo_kind_source(const struct pc_topo *t);
PC_API const struct pc_topo_limits *pc_topo_limits(const struct pc_topo *t);
/* "this machine" or the XML path it was loaded from. */
PC_API const char *pc_topo_source(const struct pc_topo *t);

/* The CPU with kernel number os_index, or NULL when the machine has none. */
PC_API const struct pc_topo_cpu *pc_topo_cpu_by_os(const struct pc_topo *t, int os_index);

/* "hwloc cpukinds", "cpufreq" or "uniform". */
PC_API const char *pc_topo_kind_source_name(enum pc_topo_kind_source s);

/* The topology as JSON: pc_topo_to_json() in percore/json.h. */

PC_END_DECLS

#endif
