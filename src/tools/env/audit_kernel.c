/* SPDX-License-Identifier: MIT */
/* percore: audit checks on kernel settings: memory, ASLR, watchdog, perf,
 * isolation and cgroup limits. */
#include "env/audit_impl.h"

#include <stdlib.h>
#include <string.h>

#include "percore/cgroup.h"
#include "percore/cpulist.h"
#include "sys/rootfs.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

/* A sysctl under /proc/sys holding one integer; false (and the value says
 * so) when it cannot be read. */
static bool read_sysctl(struct pc_audit_ctx *c, struct pc_audit_out *o, const char *name,
			long long *v)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	if (sys_rootfs_read_ll(c->root, path, v) == 0)
		return true;
	fprintf(o->value, "not exposed (no %s)", path);
	return false;
}

void sys_audit_mm_thp(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char text[256], enabled[32] = "", defrag[32] = "";

	if (sys_rootfs_read(c->root, THP_DIR "/enabled", text, sizeof(text)) < 0 ||
	    sys_str_selected(text, enabled, sizeof(enabled))) {
		fprintf(o->value, "not exposed (no %s/enabled)", THP_DIR);
		return;
	}
	if (sys_rootfs_read(c->root, THP_DIR "/defrag", text, sizeof(text)) < 0 ||
	    sys_str_selected(text, defrag, sizeof(defrag)))
		snprintf(defrag, sizeof(defrag), "?");
	fprintf(o->value, "enabled=%s defrag=%s", enabled, defrag);
	o->status = PC_AUDIT_OK;
	if (!strcmp(enabled, "always")) {
		o->status = PC_AUDIT_WARN;
		fprintf(o->value, ": khugepaged rewrites memory behind the program's back");
		fprintf(o->fix, "percore tune (enabled=madvise), or: echo madvise > %s/enabled", THP_DIR);
	}
	if (!strcmp(defrag, "always")) {
		o->status = PC_AUDIT_WARN;
		fprintf(o->value, "%s page faults stall to compact memory",
			strcmp(enabled, "always") ? ":" : ";");
		fprintf(o->fix, "%secho madvise > %s/defrag", strcmp(enabled, "always") ? "" : "; ",
			THP_DIR);
	}
}

void sys_audit_mm_swap(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char *swaps = sys_rootfs_slurp(c->root, "/proc/swaps");
	unsigned long long kib = 0, used = 0, total = 0, total_used = 0;
	long long swappiness = -1;
	int devices = 0;
	char *save = NULL;

	if (!swaps) {
		fprintf(o->value, "not exposed (no /proc/swaps)");
		return;
	}
	/* Lines after the header: name type size used priority (KiB). */
	for (char *l = strtok_r(swaps, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (strncmp(l, "Filename", 8) && sscanf(l, "%*s %*s %llu %llu", &kib, &used) == 2) {
			devices++;
			total += kib;
			total_used += used;
		}
	free(swaps);
	sys_rootfs_read_ll(c->root, "/proc/sys/vm/swappiness", &swappiness);
	o->status = PC_AUDIT_OK;
	if (devices == 0)
		fprintf(o->value, "no swap");
	else
		fprintf(o->value, "%d device%s, %.1f GiB, %.1f GiB used", devices, devices > 1 ? "s" : "",
			(double)total / 1048576.0, (double)total_used / 1048576.0);
	if (swappiness >= 0)
		fprintf(o->value, "; swappiness %lld", swappiness);
	if (devices && swappiness > 10) {
		o->status = PC_AUDIT_WARN;
		fprintf(o->value, ": an idle benchmark's pages can be swapped out between runs");
		fprintf(o->fix, "swapoff -a, or: sysctl vm.swappiness=1");
	}
}

/* A sysctl that is quiet at 0: off is ok, anything else a warning. */
static void zero_is_quiet(struct pc_audit_ctx *c, struct pc_audit_out *o, const char *name,
			  const char *why, const char *fix)
{
	const char *key = strrchr(name, '/') + 1;
	long long v;

	if (!read_sysctl(c, o, name, &v))
		return;
	o->status = v ? PC_AUDIT_WARN : PC_AUDIT_OK;
	fprintf(o->value, "%s (%s=%lld)", v ? "on" : "off", key, v);
	if (v) {
		fprintf(o->value, ": %s", why);
		fprintf(o->fix, "%s", fix);
	}
}

void sys_audit_kernel_aslr(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	zero_is_quiet(c, o, "kernel/randomize_va_space",
		      "addresses, and so cache and TLB conflicts, change from run to run",
		      "percore tune (sysctl kernel.randomize_va_space=0), or run the program under setarch -R");
}

void sys_audit_kernel_nmi_watchdog(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	zero_is_quiet(c, o, "kernel/nmi_watchdog",
		      "a periodic NMI on every CPU, and it holds a perf counter",
		      "percore tune (sysctl kernel.nmi_watchdog=0)");
}

void sys_audit_kernel_perf_paranoid(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	long long v;

	if (!read_sysctl(c, o, "kernel/perf_event_paranoid", &v))
		return;
	o->status = v > 2 ? PC_AUDIT_WARN : PC_AUDIT_OK;
	fprintf(o->value, "%lld: %s", v,
		v > 2    ? "perf counters are closed to users without CAP_PERFMON"
		: v == 2 ? "users without CAP_PERFMON count user-space events only"
			 : "users may count user and kernel events");
	if (v > 2)
		fprintf(o->fix, "sysctl kernel.perf_event_paranoid=1 (or run perf as root)");
}

/* The value of "key=" on the kernel command line into buf; false if absent. */
static bool cmdline_param(const char *cmdline, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = cmdline; *p; ) {
		size_t tl;

		p += strspn(p, " ");
		tl = strcspn(p, " ");
		if (tl > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(buf, len, "%.*s", (int)(tl - kl - 1), p + kl + 1);
			return true;
		}
		p += tl;
	}
	return false;
}

void sys_audit_sched_isolated(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	static const char *const keys[] = { "isolcpus", "nohz_full", "rcu_nocbs" };
	char cmdline[4096], isolated[1024], v[256];
	bool have_cmd, have_iso, any = false;

	have_cmd = sys_rootfs_read(c->root, "/proc/cmdline", cmdline, sizeof(cmdline)) >= 0;
	have_iso = sys_rootfs_read(c->root, "/sys/devices/system/cpu/isolated", isolated,
				   sizeof(isolated)) >= 0;
	if (!have_cmd && !have_iso) {
		fprintf(o->value, "not exposed (no /proc/cmdline or cpu/isolated)");
		return;
	}
	for (size_t i = 0; have_cmd && i < 3; i++)
		if (cmdline_param(cmdline, keys[i], v, sizeof(v))) {
			fprintf(o->value, "%s%s=%s", any ? " " : "", keys[i], v);
			any = true;
		}
	if (have_iso && isolated[0]) {
		fprintf(o->value, "%sisolated CPUs %s", any ? "; " : "", isolated);
		any = true;
	}
	o->status = any ? PC_AUDIT_OK : PC_AUDIT_WARN;
	if (!any) {
		fprintf(o->value, "none: benchmark threads share every CPU with the rest of the system");
		fprintf(o->fix, "boot with isolcpus=LIST nohz_full=LIST rcu_nocbs=LIST "
				"and place the benchmark on LIST");
	}
}

/* This process's cgroup limits; false (unknown, and the value says why)
 * when no cgroup data is exposed. */
static bool read_cgroup(struct pc_audit_ctx *c, struct pc_audit_out *o, struct pc_cgroup *cg)
{
	if (pc_cgroup_read(c->root, cg) || cg->version == 0) {
		fprintf(o->value, "not exposed (no /proc/self/cgroup or cgroup mount)");
		return false;
	}
	o->status = PC_AUDIT_OK;
	return true;
}

void sys_audit_cgroup_cpuset(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	struct pc_cgroup cg;
	char list[1024];

	if (!read_cgroup(c, o, &cg))
		return;
	/* A cpuset is a stable limit placement honours, not a noise source:
	 * reported, not warned about. */
	if (CPU_COUNT(&cg.cpuset) == 0)
		fprintf(o->value, "no cpuset: every CPU");
	else if (pc_cpulist_format(&cg.cpuset, list, sizeof(list)) < 0)
		fprintf(o->value, "%d CPUs", CPU_COUNT(&cg.cpuset));
	else if (cg.has_cpuset && c->ncpus)
		fprintf(o->value, "%s: %d of %d online CPUs", list, CPU_COUNT(&cg.cpuset), c->ncpus);
	else
		fprintf(o->value, "%s%s", list, cg.has_cpuset ? "" : ": every online CPU");
	fprintf(o->value, " (cgroup v%d %s)", cg.version, cg.cpuset_path[0] ? cg.cpuset_path : cg.path);
}

void sys_audit_cgroup_cpu_quota(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	struct pc_cgroup cg;

	if (!read_cgroup(c, o, &cg))
		return;
	if (!cg.has_cpu_quota) {
		fprintf(o->value, "none (cgroup v%d %s)", cg.version, cg.path);
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->value, "%.2f CPUs (%lld us per %lld us, cgroup v%d %s): once the group has used "
			  "its quota it is stopped for the rest of the period",
		cg.quota_cpus, (long long)cg.quota_us, (long long)cg.period_us, cg.version, cg.path);
	fprintf(o->fix, "run without a CPU quota (cpu.max max, or docker without --cpus), "
			"or run at most %d busy thread%s", cg.quota_cpus >= 2 ? (int)cg.quota_cpus : 1,
		cg.quota_cpus >= 2 ? "s" : "");
}

void sys_audit_cgroup_memory_limit(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	struct pc_cgroup cg;
	const char *path;

	if (!read_cgroup(c, o, &cg))
		return;
	path = cg.memory_path[0] ? cg.memory_path : cg.path;

	if (!cg.has_memory_limit) {
		fprintf(o->value, "none (cgroup v%d %s)", cg.version, path);
		return;
	}
	fprintf(o->value, "%.2f GiB (cgroup v%d %s)", (double)cg.memory_limit / (1u << 30),
		cg.version, path);
	/* Near a small limit the kernel reclaims the group's page cache and
	 * anonymous memory while the benchmark runs. */
	if (cg.memory_limit < (1ULL << 30)) {
		o->status = PC_AUDIT_WARN;
		fprintf(o->value, ": reclaim starts while the benchmark runs");
		fprintf(o->fix, "raise the memory limit to at least 1 GiB (memory.max, docker --memory)");
	}
}
