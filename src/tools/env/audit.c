/* SPDX-License-Identifier: MIT */
/* percore: the environment audit: running the checks, the list, JSON, text. */
#include "env/audit_impl.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/cpulist.h"
#include "sys/rootfs.h"

const char *const pc_audit_ids[] = {
	"vm.hypervisor", "cpu.model", "cpu.smt", "cpu.governor", "cpu.turbo",
	"cpu.idle_states", "cpu.pm_qos", "mm.thp", "mm.swap", "kernel.aslr",
	"kernel.nmi_watchdog", "kernel.perf_event_paranoid", "sched.isolated",
	"irq.irqbalance", "cgroup.cpuset", "cgroup.cpu_quota",
	"cgroup.memory_limit", "load.busy_processes", "storage.rotational",
	"storage.scheduler", "storage.nr_requests", "storage.write_cache",
	"storage.queues", "storage.nvme_apst", "storage.pcie_aspm", NULL,
};

/* Same order as pc_audit_ids. cpu.idle_states runs before cpu.pm_qos,
 * which needs to know whether deep states exist. */
static const pc_audit_check_fn check_fn[] = {
	sys_audit_vm_hypervisor, sys_audit_cpu_model, sys_audit_cpu_smt,
	sys_audit_cpu_governor, sys_audit_cpu_turbo, sys_audit_cpu_idle_states,
	sys_audit_cpu_pm_qos, sys_audit_mm_thp, sys_audit_mm_swap,
	sys_audit_kernel_aslr, sys_audit_kernel_nmi_watchdog,
	sys_audit_kernel_perf_paranoid, sys_audit_sched_isolated,
	sys_audit_irq_irqbalance, sys_audit_cgroup_cpuset,
	sys_audit_cgroup_cpu_quota, sys_audit_cgroup_memory_limit,
	sys_audit_load_busy, sys_audit_storage_rotational, sys_audit_storage_scheduler,
	sys_audit_storage_nr_requests, sys_audit_storage_write_cache, sys_audit_storage_queues,
	sys_audit_storage_nvme_apst, sys_audit_storage_pcie_aspm,
};

#define PC_AUDIT_NCHECKS (sizeof(check_fn) / sizeof(check_fn[0]))
_Static_assert(PC_AUDIT_NCHECKS + 1 == sizeof(pc_audit_ids) / sizeof(pc_audit_ids[0]),
	       "one check per id");

struct pc_audit {
	size_t n;
	struct pc_audit_item item[PC_AUDIT_NCHECKS];
};

static int count_processors(const char *cpuinfo)
{
	int n = 0;

	for (const char *p = cpuinfo; p && (p = strstr(p, "processor")); p++)
		if ((p == cpuinfo || p[-1] == '\n') && strchr(" \t:", p[9]))
			n++;
	return n;
}

static void ctx_init(struct pc_audit_ctx *c, const char *root, unsigned sample_ms)
{
	char text[4096];
	cpu_set_t online;

	memset(c, 0, sizeof(*c));
	c->root = root;
	c->sample_ms = sample_ms ? sample_ms : 100;
	c->deep_idle_us = -1;
	c->cpuinfo = sys_rootfs_slurp(root, "/proc/cpuinfo");
	if (sys_rootfs_read(root, "/sys/devices/system/cpu/online", text, sizeof(text)) > 0 &&
	    !pc_cpulist_parse(text, &online))
		c->ncpus = CPU_COUNT(&online);
	if (c->ncpus == 0)
		c->ncpus = count_processors(c->cpuinfo);
	sys_rootfs_cpus(root, &c->cpus);
}

/* Run one check into item; the value and fix are copied out of the
 * streams the check printed into. */
static int run_check(struct pc_audit_ctx *c, size_t i, struct pc_audit_item *it)
{
	char *value = NULL, *fix = NULL;
	size_t vlen = 0, flen = 0;
	struct pc_audit_out o = { .status = PC_AUDIT_UNKNOWN };
	int bad;

	o.value = open_memstream(&value, &vlen);
	o.fix = open_memstream(&fix, &flen);
	if (o.value && o.fix)
		check_fn[i](c, &o);
	bad = !o.value || !o.fix;
	bad |= o.value && fclose(o.value);
	bad |= o.fix && fclose(o.fix);
	if (bad) {
		free(value);
		free(fix);
		return -ENOMEM;
	}
	it->id = pc_audit_ids[i];
	it->status = o.status;
	it->value = value;
	it->fix = fix;
	return 0;
}

int pc_audit_collect_opts(const char *root, const struct pc_audit_opts *opts,
			  struct pc_audit **out)
{
	struct pc_audit_ctx c;
	struct pc_audit *a;
	int rc = 0;

	if (!out)
		return -EINVAL;
	*out = NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	ctx_init(&c, root, opts ? opts->sample_ms : 0);
	c.path = opts ? opts->path : NULL;
	for (size_t i = 0; i < PC_AUDIT_NCHECKS && rc == 0; i++)
		if ((rc = run_check(&c, i, &a->item[i])) == 0)
			a->n++;
	free(c.cpuinfo);
	if (rc) {
		pc_audit_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

int pc_audit_collect(const char *root, struct pc_audit **out)
{
	return pc_audit_collect_opts(root, NULL, out);
}

size_t pc_audit_count(const struct pc_audit *a)
{
	return a ? a->n : 0;
}

const struct pc_audit_item *pc_audit_item(const struct pc_audit *a, size_t i)
{
	return a && i < a->n ? &a->item[i] : NULL;
}

const struct pc_audit_item *pc_audit_find(const struct pc_audit *a, const char *id)
{
	for (size_t i = 0; a && id && i < a->n; i++)
		if (!strcmp(a->item[i].id, id))
			return &a->item[i];
	return NULL;
}

size_t pc_audit_count_status(const struct pc_audit *a, enum pc_audit_status s)
{
	size_t n = 0;

	for (size_t i = 0; a && i < a->n; i++)
		n += a->item[i].status == s;
	return n;
}

const char *pc_audit_status_name(enum pc_audit_status s)
{
	switch (s) {
	case PC_AUDIT_OK:
		return "ok";
	case PC_AUDIT_WARN:
		return "warn";
	default:
		return "unknown";
	}
}

struct cJSON *pc_audit_to_json(const struct pc_audit *a)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && a && i < a->n; i++) {
		const struct pc_audit_item *it = &a->item[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o) ||
		    !cJSON_AddStringToObject(o, "id", it->id) ||
		    !cJSON_AddStringToObject(o, "status", pc_audit_status_name(it->status)) ||
		    !cJSON_AddStringToObject(o, "value", it->value) ||
		    !cJSON_AddStringToObject(o, "fix", it->fix)) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

void pc_audit_print(const struct pc_audit *a, FILE *out, unsigned flags)
{
	bool warn_only = flags & PC_AUDIT_PRINT_WARN_ONLY;

	if (!warn_only)
		fprintf(out, "%zu checks: %zu ok, %zu warn, %zu unknown\n\n%-8s %-27s %s\n",
			pc_audit_count(a), pc_audit_count_status(a, PC_AUDIT_OK),
			pc_audit_count_status(a, PC_AUDIT_WARN),
			pc_audit_count_status(a, PC_AUDIT_UNKNOWN), "STATUS", "ID", "VALUE");
	for (size_t i = 0; a && i < a->n; i++) {
		const struct pc_audit_item *it = &a->item[i];

		if (warn_only && it->status != PC_AUDIT_WARN)
			continue;
		fprintf(out, "%-8s %-27s %s\n", pc_audit_status_name(it->status), it->id, it->value);
		if (it->status != PC_AUDIT_OK && it->fix[0])
			fprintf(out, "%-8s %-27s fix: %s\n", "", "", it->fix);
	}
}

void pc_audit_free(struct pc_audit *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++) {
		free((char *)a->item[i].value);
		free((char *)a->item[i].fix);
	}
	free(a);
}
