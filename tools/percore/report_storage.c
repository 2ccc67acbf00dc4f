/* SPDX-License-Identifier: MIT */
/* percore report: fast storage and idle states.
 *
 * A core that sleeps deeply between I/O completions pays its exit latency
 * on each one, so 4 KiB accesses at queue depth 1 are where deep idle
 * states show. The File/... rows, measured once without and once with
 * the PM QoS request held (a second results file recorded with --pm-qos,
 * its rows tagged /pm_qos:on), stand side by side with their p50 and p99,
 * beside what the audit found: the CPU idle states and their exit
 * latencies, NVMe APST and PCIe ASPM. PM QoS keeps CPUs out of deep idle
 * states only; APST and ASPM are the device's and the link's own sleep,
 * which `percore tune --path` turns off. Without File rows there is no
 * section. */
#include <math.h>
#include <string.h>

#include "fmt.h"
#include "report.h"

#define MAX_FILE_ROWS 16

struct file_row {
	char base[128];
	long at[2];      /* [pm_qos] -> benchmark index or -1 */
};

/* Each File row of the plain run, with its PM QoS twin when there is
 * one: the same name tagged /pm_qos:on (results.h). */
static size_t collect(const struct pc_report_ctx *c, struct file_row *rows)
{
	size_t n = 0;

	for (size_t i = 0; i < c->res->n && n < MAX_FILE_ROWS; i++) {
		const char *name = c->res->b[i].name;
		char twin[160];

		if (strncmp(name, "File/", 5) || strstr(name, "/pm_qos:on"))
			continue;
		snprintf(rows[n].base, sizeof(rows[n].base), "%s", name);
		snprintf(twin, sizeof(twin), "%s/pm_qos:on", name);
		rows[n].at[0] = (long)i;
		rows[n].at[1] = pc_results_index(c->res, twin);
		n++;
	}
	return n;
}

/* The median of a counter of row i (-1: none), NAN when absent. */
static double counter(const struct pc_report_ctx *c, long i, const char *name)
{
	const struct pc_rbench *b = i < 0 ? NULL : &c->res->b[i];

	for (size_t k = 0; b && k < b->ncounters; k++)
		if (!strcmp(b->c[k].name, name))
			return pc_rcounter_median(b, &b->c[k]);
	return NAN;
}

static void us_cell(struct pc_table *t, double us)
{
	if (isfinite(us))
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_time(us * 1e3).s);
	else
		pc_table_add(t, PC_MARK_MUTED, PC_FMT_NONE);
}

/* with / without, as "0.93x", or a dash. */
static void ratio_cell(struct pc_table *t, double without, double with)
{
	if (isfinite(without) && isfinite(with) && without > 0)
		pc_table_add(t, PC_MARK_NONE, "%s", pc_fmt_ratio(with / without).s);
	else
		pc_table_add(t, PC_MARK_MUTED, PC_FMT_NONE);
}

static void table(struct pc_report_ctx *c, const struct file_row *rows, size_t n)
{
	static const char *const head[] = { "Benchmark", "p50", "p50 with PM QoS", "p50 ratio",
					    "p99", "p99 with PM QoS", "p99 ratio" };
	struct pc_table *t = pc_doc_table(c->doc, 7, head, "lrrrrrr");

	for (size_t k = 0; t && k < n; k++) {
		double p50[2], p99[2];

		for (int q = 0; q < 2; q++) {
			p50[q] = counter(c, rows[k].at[q], "p50_us");
			p99[q] = counter(c, rows[k].at[q], "p99_us");
		}
		pc_table_add(t, PC_MARK_CODE, "%s", rows[k].base);
		us_cell(t, p50[0]);
		us_cell(t, p50[1]);
		ratio_cell(t, p50[0], p50[1]);
		us_cell(t, p99[0]);
		us_cell(t, p99[1]);
		ratio_cell(t, p99[0], p99[1]);
	}
}

/* What the machine has, from the audit. */
static const struct { const char *id, *what; } power_checks[] = {
	{ "cpu.idle_states", "CPU idle states" },
	{ "storage.queues", "Disk queues and interrupts" },
	{ "storage.nvme_apst", "NVMe APST" },
	{ "storage.pcie_aspm", "PCIe ASPM" },
};

static void machine(struct pc_report_ctx *c)
{
	struct pc_block *l = pc_doc_list(c->doc, PC_MARK_NONE);

	for (size_t i = 0; i < sizeof(power_checks) / sizeof(power_checks[0]); i++) {
		const cJSON *e = pc_report_audit(c, power_checks[i].id);

		if (e)
			pc_doc_item(c->doc, l, "%s (`%s`): %s \xe2\x80\x94 %s", power_checks[i].what,
				    power_checks[i].id, pc_report_audit_str(e, "status"),
				    pc_report_audit_str(e, "value"));
		else
			pc_doc_item(c->doc, l, "%s (`%s`): not audited", power_checks[i].what,
				    power_checks[i].id);
	}
}

/* What to expect from PM QoS here: the audit calls idle states "ok" when
 * the deepest wakes within its threshold (or there are none). */
static void expectation(struct pc_report_ctx *c, bool qos_rows)
{
	const cJSON *idle = pc_report_audit(c, "cpu.idle_states");
	const char *st = idle ? pc_report_audit_str(idle, "status") : "";

	if (!idle)
		pc_doc_para(c->doc, "No audit of the idle states in these results: whether PM QoS "
			    "can make a difference here is unknown.");
	else if (!strcmp(st, "ok"))
		pc_doc_para(c->doc, "**No difference expected here:** this machine has no deep CPU "
			    "idle states (%s), so the PM QoS request has nothing to forbid; the "
			    "columns differ by noise alone. A virtual machine whose idle CPU halts "
			    "into the hypervisor is such a machine: the host wakes it, from idle "
			    "states the guest can neither see nor forbid.",
			    pc_report_audit_str(idle, "value"));
	else
		pc_doc_para(c->doc, "Deep idle states are present (%s): with PM QoS held, a core "
			    "stays out of them, and the queue-depth-1 rows' p50 and p99 should "
			    "drop by about their exit latency.", pc_report_audit_str(idle, "value"));
	if (!qos_rows)
		pc_doc_para(c->doc, "These results have no `/pm_qos:on` rows: add a second file "
			    "recorded with `percore bench --pm-qos` to fill the PM QoS columns.");
	pc_doc_para(c->doc, "PM QoS holds CPUs out of deep idle states only. NVMe APST and PCIe "
		    "ASPM are the device's and the link's own sleep: `percore tune --path DIR` "
		    "turns them off for the disk holding DIR, and `percore reset` back on.");
}

void pc_report_storage(struct pc_report_ctx *c)
{
	struct file_row rows[MAX_FILE_ROWS];
	size_t n = collect(c, rows);
	bool qos_rows = false;

	if (!n)
		return;
	for (size_t k = 0; k < n; k++)
		qos_rows |= rows[k].at[1] >= 0;
	pc_doc_heading(c->doc, 2, "Fast storage and idle states");
	pc_doc_para(c->doc, "Latency of each file row from issue to completion, without and with "
		    "the PM QoS request held (a 0 us request on /dev/cpu_dma_latency), and "
		    "the power settings this machine has:");
	machine(c);
	table(c, rows, n);
	expectation(c, qos_rows);
}
