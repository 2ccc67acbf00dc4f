/* percore: the limits a cgroup (v1 or v2) puts on this process.
 *
 * Read from /proc/self/cgroup and the cgroup file systems, or from a fake
 * tree under root (tests, planning for another machine). A machine with no
 * cgroup data is not an error: version is 0 and no limit is set. */
#ifndef PERCORE_CGROUP_H
#define PERCORE_CGROUP_H

#define _GNU_SOURCE 1
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

struct pc_cgroup {
	int version;             /* 0 (none found), 1 or 2 */
	char path[256];          /* this process's cgroup ("/" when unknown) */

	bool has_cpuset;         /* a cpuset restricts the CPUs */
	cpu_set_t cpuset;        /* effective CPUs when has_cpuset */

	bool has_cpu_quota;      /* CFS bandwidth limit in force */
	int64_t quota_us;        /* v2 cpu.max first field, v1 cfs_quota_us */
	int64_t period_us;       /* v2 cpu.max second field, v1 cfs_period_us */
	double quota_cpus;       /* quota_us / period_us: CPUs' worth of time */

	bool has_memory_limit;
	uint64_t memory_limit;   /* bytes: v2 memory.max, v1 limit_in_bytes */
};

/* Fill cg for the calling process. root is "/" or NULL for the real
 * machine, or a folder holding proc/ and sys/ for a fake one. The tightest
 * limit along the cgroup's ancestry wins. Returns 0; -errno only for an
 * out-of-memory or similar failure (missing files are not errors). */
int pc_cgroup_read(const char *root, struct pc_cgroup *cg);

#endif
