/* SPDX-License-Identifier: MIT */
/* percore: the limits a cgroup (v1 or v2) puts on this process.
 *
 * Read from /proc/self/cgroup and the cgroup file systems, or from a fake
 * tree under root (tests, planning for another machine). A machine with no
 * cgroup data is not an error: version is 0 and no limit is set. */
#ifndef PERCORE_CGROUP_H
#define PERCORE_CGROUP_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* What the cgroups of this process allow it: its CPU set, CPU quota and
 * memory limit, as pc_cgroup_read() found them. */
struct pc_cgroup {
	int version;             /* 0 (none found), 1 or 2 */
	char path[256];          /* this process's cgroup: the cpu controller's,
				  * else the first found ("/" when unknown) */

	bool has_cpuset;         /* the cpuset leaves out some online CPU */
	cpu_set_t cpuset;        /* effective CPUs; filled whenever a cpuset
				  * file was found (CPU_COUNT 0: none found),
				  * even when it lists every online CPU */

	bool has_cpu_quota;      /* CFS bandwidth limit in force */
	int64_t quota_us;        /* v2 cpu.max first field, v1 cfs_quota_us */
	int64_t period_us;       /* v2 cpu.max second field, v1 cfs_period_us */
	double quota_cpus;       /* quota_us / period_us: CPUs' worth of time */

	bool has_memory_limit;
	uint64_t memory_limit;   /* bytes: v2 memory.max, v1 limit_in_bytes */

	/* Each controller's cgroup ("" when the controller was not found):
	 * on v1 hosts they may differ from path and from each other. */
	char cpuset_path[256];
	char cpu_path[256];
	char memory_path[256];
};

/* Fill cg for the calling process. root is "/" or NULL for the real
 * machine, or a folder holding proc/ and sys/ for a fake one. The tightest
 * limit along the cgroup's ancestry wins (up to the mount root). Mounts come
 * from proc/self/mountinfo, or, when it is absent (fake trees), from the
 * usual places under sys/fs/cgroup. When the cgroup path that
 * proc/self/cgroup names does not exist in the mount (a container's view),
 * the mount root is taken as the process's cgroup. A controller on a v1
 * hierarchy is read there even when a v2 tree is also mounted (hybrid).
 * Any thread. Returns 0; -EINVAL for a NULL cg, -ENOMEM when out of memory
 * (missing or malformed files are not errors: that limit is unset). */
PC_API int pc_cgroup_read(const char *root, struct pc_cgroup *cg);

PC_END_DECLS

#endif
