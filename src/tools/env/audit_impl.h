/* SPDX-License-Identifier: MIT */
/* percore internal: the audit's checks and what they share.
 *
 * Each check fills one finding: it sets the status and prints the value and
 * the fix into memory streams. audit.c runs them in pc_audit_ids order;
 * audit_cpu.c, audit_kernel.c and audit_proc.c hold the checks. */
#ifndef PERCORE_SYS_AUDIT_IMPL_H
#define PERCORE_SYS_AUDIT_IMPL_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "percore/audit.h"

/* What the checks learn once and share. */
struct pc_audit_ctx {
	const char *root;
	char *cpuinfo;          /* /proc/cpuinfo, or NULL when unreadable */
	int ncpus;              /* online CPUs; 0 when unknown */
	cpu_set_t cpus;         /* CPUs with a cpuN folder in sysfs */
	int deep_idle_us;       /* highest enabled idle exit latency; -1 unknown */
	unsigned sample_ms;
	const char *path;       /* --path: the storage.* checks' folder, or NULL */
};

/* One finding being written. */
struct pc_audit_out {
	enum pc_audit_status status;
	FILE *value;
	FILE *fix;
};

typedef void (*pc_audit_check_fn)(struct pc_audit_ctx *c, struct pc_audit_out *o);

/* An idle state with an exit latency above this (microseconds) is deep:
 * waking from it costs more than a cross-core message round trip many
 * times over. */
#define PC_AUDIT_DEEP_IDLE_US 10

/* audit_cpu.c */
void sys_audit_vm_hypervisor(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cpu_model(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cpu_smt(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cpu_governor(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cpu_turbo(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cpu_idle_states(struct pc_audit_ctx *c, struct pc_audit_out *o);

/* audit_kernel.c */
void sys_audit_mm_thp(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_mm_swap(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_kernel_aslr(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_kernel_nmi_watchdog(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_kernel_perf_paranoid(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_sched_isolated(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cgroup_cpuset(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cgroup_cpu_quota(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_cgroup_memory_limit(struct pc_audit_ctx *c, struct pc_audit_out *o);

/* audit_storage.c: the disk holding c->path, NVMe and PCIe power */
/* The queue folder of the disk holding path (a real folder), as an
 * absolute sysfs path under root: /sys/dev/block/MAJ:MIN/queue, or
 * MAJ:MIN/../queue for a partition. *devno gets the device number.
 * Returns 0, -ENODEV (not on a block device) or stat's -errno. */
int sys_storage_queue_dir(const char *root, const char *path, char *out, size_t len,
			  dev_t *devno);
void sys_audit_storage_rotational(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_storage_scheduler(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_storage_nr_requests(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_storage_write_cache(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_storage_queues(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_storage_nvme_apst(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_storage_pcie_aspm(struct pc_audit_ctx *c, struct pc_audit_out *o);

/* audit_proc.c: checks that walk the process list */
void sys_audit_cpu_pm_qos(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_irq_irqbalance(struct pc_audit_ctx *c, struct pc_audit_out *o);
void sys_audit_load_busy(struct pc_audit_ctx *c, struct pc_audit_out *o);

/* One process's CPU time at one moment. */
struct pc_proc_sample {
	int pid;
	uint64_t ticks;         /* utime + stime, clock ticks */
	char comm[32];
};

/* A process that used the CPU between two samples. */
struct pc_proc_busy {
	int pid;
	double pct;             /* percent of one CPU over the interval */
	char comm[32];
};

/* The processes present in both samples (a sorted by pid) that used at least min_pct of a
 * CPU over elapsed_s, busiest first, at most max of them; skip_pid (the
 * caller) is left out. Returns how many were written to busy. */
int sys_proc_busy_between(const struct pc_proc_sample *a, int na,
			  const struct pc_proc_sample *b, int nb,
			  double elapsed_s, long ticks_per_s, double min_pct,
			  int skip_pid, struct pc_proc_busy *busy, int max);

/* Parse the text of /proc/PID/stat into s (pid, comm, utime + stime).
 * Returns 0, or -EPROTO when the text is not a stat line. */
int sys_proc_parse_stat(const char *text, struct pc_proc_sample *s);

#endif
