/* SPDX-License-Identifier: MIT */
/* percore: audit checks on the processor: VM, model, SMT, frequency, idle. */
#include "env/audit_impl.h"

#include <stdlib.h>
#include <string.h>

#include "percore/cpulist.h"
#include "sys/rootfs.h"

#define CPU_DIR "/sys/devices/system/cpu"

static const char *cpus_text(const cpu_set_t *s, char *buf, size_t len)
{
	if (pc_cpulist_format(s, buf, len) < 0)
		snprintf(buf, len, "%d CPUs", CPU_COUNT(s));
	return buf;
}

/* The value of the first "key : value" line of cpuinfo with this key. */
static bool cpuinfo_field(const char *cpuinfo, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	for (const char *l = cpuinfo; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		const char *colon;
		size_t n;

		if (strncmp(l, key, kl) || !strchr(" \t:", l[kl]) || !(colon = strchr(l, ':')))
			continue;
		colon++;
		n = strcspn(colon, "\n");
		snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), colon);
		colon = sys_str_trim(buf);
		memmove(buf, colon, strlen(colon) + 1);
		return buf[0] != '\0';
	}
	return false;
}

static bool dmi_says_vm(const char *vendor, const char *product)
{
	static const char *const vendors[] = { "QEMU", "VMware", "innotek", "Xen",
					       "Parallels", "BHYVE", "Nutanix", NULL };
	static const char *const products[] = { "KVM", "Virtual Machine", "VirtualBox",
						"VMware", "HVM domU", "Google Compute Engine",
						"OpenStack", NULL };

	for (int i = 0; vendors[i]; i++)
		if (strstr(vendor, vendors[i]))
			return true;
	for (int i = 0; products[i]; i++)
		if (strstr(product, products[i]))
			return true;
	/* EC2 names its bare-metal instances *.metal; the rest are guests. */
	return strstr(vendor, "Amazon EC2") && !strstr(product, "metal");
}

void sys_audit_vm_hypervisor(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char flags[8192] = "", type[64] = "", vendor[128] = "", product[128] = "";
	bool flag, dmi, vm;

	if (c->cpuinfo)
		cpuinfo_field(c->cpuinfo, "flags", flags, sizeof(flags));
	flag = sys_str_has_word(flags, "hypervisor", " ");
	sys_rootfs_read(c->root, "/sys/hypervisor/type", type, sizeof(type));
	dmi = sys_rootfs_read(c->root, "/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor)) >= 0;
	dmi |= sys_rootfs_read(c->root, "/sys/class/dmi/id/product_name", product, sizeof(product)) >= 0;
	vm = flag || type[0] || (dmi && dmi_says_vm(vendor, product));
	if (!vm && !c->cpuinfo && !dmi) {
		fprintf(o->value, "not exposed (no /proc/cpuinfo or DMI)");
		return;
	}
	o->status = vm ? PC_AUDIT_WARN : PC_AUDIT_OK;
	fprintf(o->value, "%s", vm ? "virtual machine:" : "bare metal:");
	if (c->cpuinfo)
		fprintf(o->value, " %s in /proc/cpuinfo,", flag ? "hypervisor flag" : "no hypervisor flag");
	if (type[0])
		fprintf(o->value, " hypervisor type %s,", type);
	if (dmi)
		fprintf(o->value, " DMI %s %s", vendor[0] ? vendor : "?", product[0] ? product : "?");
	else
		fprintf(o->value, " DMI not exposed");
	if (vm)
		fprintf(o->fix, "measure final figures on bare metal, or give the VM dedicated "
				"host cores with pinned vCPUs (the host moves and preempts vCPUs)");
}

void sys_audit_cpu_model(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char model[256], pc[1024], ec[1024];
	bool hybrid;

	if (!c->cpuinfo || (!cpuinfo_field(c->cpuinfo, "model name", model, sizeof(model)) &&
			    !cpuinfo_field(c->cpuinfo, "Model", model, sizeof(model)) &&
			    !cpuinfo_field(c->cpuinfo, "cpu", model, sizeof(model)))) {
		fprintf(o->value, "not exposed (no model in /proc/cpuinfo)");
		return;
	}
	o->status = PC_AUDIT_OK;
	fprintf(o->value, "%s", model);
	if (c->ncpus)
		fprintf(o->value, ", %d CPUs", c->ncpus);
	/* Hybrid Intel parts list their core kinds as two PMU devices. */
	hybrid = sys_rootfs_read(c->root, "/sys/devices/cpu_core/cpus", pc, sizeof(pc)) > 0 &&
		 sys_rootfs_read(c->root, "/sys/devices/cpu_atom/cpus", ec, sizeof(ec)) > 0;
	if (hybrid)
		fprintf(o->value, ", hybrid: P-cores %s, E-cores %s", pc, ec);
}

/* SMT from thread siblings when smt/control does not say. */
static void smt_from_siblings(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	int seen = 0, shared = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		char text[256];
		cpu_set_t s;

		if (!CPU_ISSET(cpu, &c->cpus) ||
		    sys_rootfs_readf(text, sizeof(text), c->root,
				     CPU_DIR "/cpu%d/topology/thread_siblings_list", cpu) <= 0 ||
		    pc_cpulist_parse(text, &s))
			continue;
		seen++;
		shared += CPU_COUNT(&s) > 1;
	}
	if (!seen) {
		fprintf(o->value, "not exposed (no smt/control or thread siblings)");
		return;
	}
	o->status = shared ? PC_AUDIT_WARN : PC_AUDIT_OK;
	if (shared)
		fprintf(o->value, "on: %d of %d CPUs share their core with a sibling", shared, seen);
	else
		fprintf(o->value, "off: one thread per core");
}

void sys_audit_cpu_smt(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char control[32] = "";
	long long active = -1;

	if (sys_rootfs_read(c->root, CPU_DIR "/smt/control", control, sizeof(control)) <= 0 ||
	    !strcmp(control, "notimplemented")) {
		smt_from_siblings(c, o);
	} else if (!strcmp(control, "on")) {
		sys_rootfs_read_ll(c->root, CPU_DIR "/smt/active", &active);
		o->status = active == 0 ? PC_AUDIT_OK : PC_AUDIT_WARN;
		fprintf(o->value, active == 0 ? "on, but no core runs two threads"
					      : "on: sibling threads share a core's execution units and caches");
	} else {
		o->status = PC_AUDIT_OK;
		if (!strcmp(control, "notsupported"))
			fprintf(o->value, "not supported: one thread per core");
		else
			fprintf(o->value, "%s (smt/control)", control);
	}
	if (o->status == PC_AUDIT_WARN)
		fprintf(o->fix, "place one thread per physical core (percore's default placement), "
				"or turn SMT off: percore tune --smt-off");
}

#define MAX_GOVS 8

void sys_audit_cpu_governor(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char name[MAX_GOVS][32], driver[64] = "", list[1024];
	cpu_set_t on[MAX_GOVS], missing;
	int ngov = 0, other = 0;

	CPU_ZERO(&missing);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		char g[32];
		int k;

		if (!CPU_ISSET(cpu, &c->cpus))
			continue;
		if (sys_rootfs_readf(g, sizeof(g), c->root, CPU_DIR "/cpu%d/cpufreq/scaling_governor",
				     cpu) <= 0) {
			CPU_SET(cpu, &missing);
			continue;
		}
		if (!driver[0])
			sys_rootfs_readf(driver, sizeof(driver), c->root,
					 CPU_DIR "/cpu%d/cpufreq/scaling_driver", cpu);
		for (k = 0; k < ngov && strcmp(name[k], g); k++)
			;
		if (k == ngov) {
			if (ngov == MAX_GOVS)
				continue;
			snprintf(name[ngov], sizeof(name[0]), "%s", g);
			CPU_ZERO(&on[ngov]);
			ngov++;
		}
		CPU_SET(cpu, &on[k]);
		other += strcmp(g, "performance") != 0;
	}
	if (ngov == 0) {
		fprintf(o->value, "not exposed (no cpufreq: the hypervisor or firmware sets the clock)");
		return;
	}
	o->status = other ? PC_AUDIT_WARN : PC_AUDIT_OK;
	for (int k = 0; k < ngov; k++)
		fprintf(o->value, "%s%s on %s", k ? "; " : "", name[k], cpus_text(&on[k], list, sizeof(list)));
	if (driver[0])
		fprintf(o->value, " (%s)", driver);
	if (CPU_COUNT(&missing))
		fprintf(o->value, "; no cpufreq on %s", cpus_text(&missing, list, sizeof(list)));
	if (other) {
		fprintf(o->value, ": the clock rises only after load arrives, so short runs measure a slow core");
		fprintf(o->fix, "percore tune (performance governor on every CPU), or: "
				"cpupower frequency-set -g performance");
	}
}

void sys_audit_cpu_turbo(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	long long v;

	if (!sys_rootfs_read_ll(c->root, CPU_DIR "/intel_pstate/no_turbo", &v)) {
		o->status = v ? PC_AUDIT_OK : PC_AUDIT_WARN;
		fprintf(o->value, "%s (intel_pstate no_turbo=%lld)", v ? "off" : "on", v);
		if (!v)
			fprintf(o->fix, "percore tune --turbo-off (or: echo 1 > %s/intel_pstate/no_turbo)",
				CPU_DIR);
	} else if (!sys_rootfs_read_ll(c->root, CPU_DIR "/cpufreq/boost", &v)) {
		o->status = v ? PC_AUDIT_WARN : PC_AUDIT_OK;
		fprintf(o->value, "%s (cpufreq boost=%lld)", v ? "on" : "off", v);
		if (v)
			fprintf(o->fix, "percore tune --turbo-off (or: echo 0 > %s/cpufreq/boost)", CPU_DIR);
	} else {
		fprintf(o->value, "not exposed (no intel_pstate/no_turbo or cpufreq/boost)");
	}
	if (o->status == PC_AUDIT_WARN)
		fprintf(o->value, ": the clock depends on how many cores are busy and how hot the chip is");
}

/* How many of the CPUs with this idle state have it disabled; *with is
 * set to how many have it at all. */
static int state_disabled(struct pc_audit_ctx *c, int state, int *with)
{
	int off = 0;

	*with = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		long long d;

		char path[128];

		if (!CPU_ISSET(cpu, &c->cpus))
			continue;
		snprintf(path, sizeof(path), CPU_DIR "/cpu%d/cpuidle/state%d/disable", cpu, state);
		if (sys_rootfs_read_ll(c->root, path, &d))
			continue;
		(*with)++;
		off += d != 0;
	}
	return off;
}

/* List the states of the first CPU that has any; returns how many. */
static int list_idle_states(struct pc_audit_ctx *c, struct pc_audit_out *o, char *deepest, size_t dlen)
{
	int cpu, n = 0;

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		char path[128];

		snprintf(path, sizeof(path), CPU_DIR "/cpu%d/cpuidle/state0", cpu);
		if (CPU_ISSET(cpu, &c->cpus) && sys_rootfs_exists(c->root, path))
			break;
	}
	for (; cpu < CPU_SETSIZE; n++) {
		char name[64], path[128];
		long long lat = -1;
		int with, off;

		if (sys_rootfs_readf(name, sizeof(name), c->root, CPU_DIR "/cpu%d/cpuidle/state%d/name",
				     cpu, n) < 0)
			break;
		snprintf(path, sizeof(path), CPU_DIR "/cpu%d/cpuidle/state%d/latency", cpu, n);
		sys_rootfs_read_ll(c->root, path, &lat);
		off = state_disabled(c, n, &with);
		fprintf(o->value, "%s%s %lld us", n ? ", " : ": ", name, lat);
		if (off)
			fprintf(o->value, off == with ? " (disabled)" : " (disabled on %d CPUs)", off);
		/* a state disabled everywhere cannot be entered */
		if ((with == 0 || off < with) && lat > c->deep_idle_us) {
			c->deep_idle_us = (int)lat;
			snprintf(deepest, dlen, "%s", name);
		}
	}
	return n;
}

void sys_audit_cpu_idle_states(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char driver[64] = "", gov[64] = "", deepest[64] = "";
	int n;

	sys_rootfs_read(c->root, CPU_DIR "/cpuidle/current_driver", driver, sizeof(driver));
	if (sys_rootfs_read(c->root, CPU_DIR "/cpuidle/current_governor_ro", gov, sizeof(gov)) < 0)
		sys_rootfs_read(c->root, CPU_DIR "/cpuidle/current_governor", gov, sizeof(gov));
	if (driver[0])
		fprintf(o->value, "driver %s", driver);
	else
		fprintf(o->value, "not exposed (no cpuidle driver)");
	if (gov[0])
		fprintf(o->value, " (governor %s)", gov);
	n = list_idle_states(c, o, deepest, sizeof(deepest));
	if (n == 0) {
		/* No cpuidle driver at all: an idle CPU just halts. */
		if (!strcmp(driver, "none")) {
			o->status = PC_AUDIT_OK;
			c->deep_idle_us = 0;
			fprintf(o->value, ": no idle states, an idle CPU halts");
		} else if (driver[0]) {
			fprintf(o->value, ", idle states not exposed");
		}
		return;
	}
	o->status = c->deep_idle_us > PC_AUDIT_DEEP_IDLE_US ? PC_AUDIT_WARN : PC_AUDIT_OK;
	if (o->status == PC_AUDIT_WARN) {
		fprintf(o->value, "; waking from %s takes %d us", deepest, c->deep_idle_us);
		fprintf(o->fix, "percore bench --pm-qos (holds /dev/cpu_dma_latency at 0 while it runs), "
				"or disable deep states: cpupower idle-set -D %d", PC_AUDIT_DEEP_IDLE_US);
	}
}
