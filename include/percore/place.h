/* SPDX-License-Identifier: MIT */
/* percore: choosing a CPU for each shard, and pinning to it.
 *
 * pc_place() turns a topology, a shard count and a policy into one CPU (and
 * its NUMA node) per shard, with warnings for anything the caller should
 * know (slower cores used, SMT siblings shared, quota exceeded). It is a
 * pure function of its inputs: the same topology gives the same answer, so
 * tests assert exact placements on XML fixtures.
 *
 * The order every policy draws from ("tiers"): first one thread of each
 * usable physical core of the fastest kind, then of the next kind, and so
 * on; then the second threads (SMT siblings) in the same kind order. A
 * shard never shares a core while a core is free, except under compact.
 */
#ifndef PERCORE_PLACE_H
#define PERCORE_PLACE_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include "percore/defs.h"
#include "percore/topo.h"

PC_BEGIN_DECLS

/* How pc_place() spreads shards over the machine. */
enum pc_place_policy {
	/* Tier order; each tier spread over NUMA nodes in proportion to the
	 * usable cores each node has in it. When the shards take every usable
	 * CPU, each may run on any usable CPU of its node (floating, below). */
	PC_PLACE_AUTO = 0,
	/* Fill one NUMA node (its cores by kind, then its SMT siblings), then
	 * the next: shards share one L3 and one memory controller. */
	PC_PLACE_COMPACT,
	/* Tier order, shards dealt round-robin over the NUMA nodes. */
	PC_PLACE_SPREAD,
	/* Physical cores of the fastest usable kind only, spread as auto; more
	 * shards than such cores is an error. */
	PC_PLACE_PCORE,
	/* No pinning: every shard's cpu and node are -1. */
	PC_PLACE_OFF,
	/* The caller's CPU set, ascending; every CPU must exist and be usable,
	 * and more shards than CPUs is an error. */
	PC_PLACE_LIST,
};

/* Flags for pc_place. */
enum {
	/* More shards than usable CPUs: share CPUs (with a warning) instead of
	 * failing. Not for PC_PLACE_PCORE or PC_PLACE_LIST, which always fail. */
	PC_PLACE_OVERSUBSCRIBE = 1u << 0,
};

#define PC_PLACE_MAX_WARNINGS 6
#define PC_PLACE_WARNING_LEN 200

/* Where one shard runs. */
struct pc_shard_place {
	int cpu;                /* kernel CPU number; -1 when not pinned */
	int node;               /* NUMA node os index; -1 when not pinned */
	int core;               /* index into the topology's core table; -1 */
	int kind;               /* kind rank; -1 when not pinned */
};

/* A placement: where each shard runs, and what pc_place() had to warn
 * about. Free it with pc_placement_free(). */
struct pc_placement {
	enum pc_place_policy policy;
	bool pinned;            /* false for PC_PLACE_OFF */
	/* auto with the shards on every usable CPU (more than one): each shard
	 * starts on its CPU but may run on any CPU of its node's shards
	 * (pc_placement_cpus). No CPU is left for anything else then: clients,
	 * the kernel's network work, helper threads share the shards' CPUs,
	 * and a shard held to one CPU waits out whichever of them holds it
	 * while another CPU of its node may be idle. Its node's memory stays
	 * its own. The other policies pin to one CPU whatever the count. */
	bool floating;
	bool default_count;     /* the caller asked for 0 shards */
	bool oversubscribed;    /* some CPUs carry more than one shard */
	unsigned nwarnings;
	char warnings[PC_PLACE_MAX_WARNINGS][PC_PLACE_WARNING_LEN];
	unsigned n;             /* shards */
	__extension__ struct pc_shard_place shards[]; /* n entries; shard i on shards[i] */
};

/* How many shards pc_place chooses when asked for 0: the usable physical
 * cores of the fastest usable kind, capped by the CPU quota rounded down
 * (at least 1). 0 when nothing is usable. Any thread. */
PC_API unsigned pc_place_default_shards(const struct pc_topo *t);

/* Place nshards shards (0 = pc_place_default_shards) by policy. cpus is
 * the CPU set for PC_PLACE_LIST and must be NULL otherwise. flags: PC_PLACE_*.
 * On success stores a new placement in *out (free with pc_placement_free)
 * and returns 0. On failure returns -E2BIG (more shards than usable CPUs
 * without PC_PLACE_OVERSUBSCRIBE: the caller names its own way to allow
 * it), -EINVAL (a CPU in the list that does not exist or is not usable,
 * more shards than a CPU list or pcore can place, nothing usable, bad
 * arguments) or -ENOMEM, writes a one-line reason into err and leaves *out
 * NULL. Any thread. */
PC_API int pc_place(const struct pc_topo *t, unsigned nshards, enum pc_place_policy policy,
		    const cpu_set_t *cpus, unsigned flags, struct pc_placement **out,
		    char *err, size_t errlen);

/* Free a placement from pc_place() (NULL ignored). */
PC_API void pc_placement_free(struct pc_placement *p);

/* The CPUs shard may run on, into *out: its own CPU, or when the placement
 * floats every CPU of a shard on its node; empty when it is not pinned or
 * shard is out of range. Any thread. */
PC_API void pc_placement_cpus(const struct pc_placement *p, unsigned shard, cpu_set_t *out);

/* Check a placement against its topology: every pinned shard on a usable
 * CPU of that topology with the right node, core and kind; no CPU used
 * twice unless oversubscribed. Returns 0, or -EINVAL and, when err is not
 * NULL, what broke in err (errlen bytes): the shard, the value found, the
 * one expected. */
PC_API int pc_placement_validate(const struct pc_topo *t, const struct pc_placement *p,
				 char *err, size_t errlen);

/* "auto", "compact", "spread", "pcore", "off", "list". */
PC_API const char *pc_place_policy_name(enum pc_place_policy p);
/* Parse a policy name. Returns 0 or -EINVAL. */
PC_API int pc_place_policy_parse(const char *name, enum pc_place_policy *out);

/* The placement as JSON: pc_placement_to_json() in percore/json.h. */

/* Pin the calling thread to one CPU (kernel number). Returns 0, -EINVAL for
 * a negative or too large cpu, or the -errno of pthread_setaffinity_np
 * (-EINVAL too when the CPU is outside the cgroup cpuset). Any thread; it
 * affects only the caller. */
PC_API int pc_pin_self(int cpu);

/* Hold the calling thread to the CPUs of cpus (as pc_placement_cpus gives
 * them). Returns 0, -EINVAL for NULL or an empty set, or the -errno of
 * pthread_setaffinity_np. Any thread; it affects only the caller. */
PC_API int pc_pin_self_set(const cpu_set_t *cpus);

PC_END_DECLS

#endif
