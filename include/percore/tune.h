/* SPDX-License-Identifier: MIT */
/* percore: a measurement profile for the machine (`percore tune`) and the
 * way back (`percore reset`).
 *
 * tune sets: the performance governor on every CPU, THP enabled=madvise,
 * ASLR off, the NMI watchdog off, and only when asked, turbo off, SMT off
 * and the storage settings (pc_tune_opts.path). Before it writes anything it saves every value it will change to a
 * state file; reset writes exactly those values back, in reverse order,
 * and removes the file. Every step is reported: applied, already set, not
 * applicable (the setting is not exposed here, as cpufreq in most VMs),
 * failed (with the reason), and the run continues with the next step.
 *
 * State file: JSON, {"format": "percore-tune-state", "version": 1,
 * "root": "/", "changes": [{"setting", "path", "old", "new"}]}; paths are
 * as seen on the machine (under root when root is a fake tree). A second
 * tune merges into an existing file and keeps the first saved values, so
 * reset always returns to the state before the first tune.
 *
 * All paths go through root, so tests run tune and reset on a copy of a
 * fake /proc and /sys tree. On a fake tree (plain files, not sysfs or
 * procfs) a write leaves the text the kernel would show afterwards, e.g.
 * "always [madvise] never", so the tree can be audited and restored byte
 * for byte. */
#ifndef PERCORE_TUNE_H
#define PERCORE_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct cJSON;

/* Where the state file goes by default (under root for a fake tree). */
#define PC_TUNE_STATE_DEFAULT "/var/tmp/percore-tune.state"

/* What pc_tune_apply() and pc_tune_reset() act on and how. */
struct pc_tune_opts {
	const char *root;        /* NULL or "/": this machine; else a fake tree */
	const char *state_path;  /* NULL: PC_TUNE_STATE_DEFAULT under root */
	bool turbo_off;          /* tune: also turn turbo off */
	bool smt_off;            /* tune: also turn SMT off */
	bool dry_run;            /* report what would change; write nothing */
	/* tune: also the storage settings for the disk holding this real
	 * folder (I/O scheduler none, nr_requests at least 64), PCIe ASPM
	 * performance and NVMe APST off; NULL: none of them */
	const char *path;
};

/* What became of one tuning step. */
enum pc_tune_result {
	PC_TUNE_APPLIED,         /* changed (reset: restored) */
	PC_TUNE_ALREADY,         /* already had the wanted value */
	PC_TUNE_NOT_APPLICABLE,  /* not exposed here; reason says what is missing */
	PC_TUNE_FAILED,          /* the write failed; reason says why */
	PC_TUNE_WOULD_APPLY,     /* dry run: would change */
	PC_TUNE_NOT_REQUESTED,   /* an optional step that was not asked for */
};

/* One setting on one file. */
struct pc_tune_step {
	const char *setting;     /* audit id: cpu.governor, cpu.turbo, cpu.smt,
				  * mm.thp, kernel.aslr, kernel.nmi_watchdog,
				  * storage.scheduler, storage.nr_requests,
				  * storage.pcie_aspm, storage.nvme_apst */
	int cpu;                 /* the CPU of a per-CPU setting, else -1 */
	char path[256];          /* the file, as seen on the machine */
	char old_value[64];      /* before ("" when unknown) */
	char new_value[64];      /* wanted */
	enum pc_tune_result result;
	char reason[192];        /* why not applicable or failed; else "" */
};

/* The steps of one tune or reset (opaque). */
struct pc_tune_report;

/* Plan the profile, save the values it changes to the state file, then
 * apply each step. Caller: a single thread; the real machine needs root
 * (see pc_tune_needs_privilege). Returns 0 with *out (free it), even when
 * steps failed (count PC_TUNE_FAILED); or, with *out NULL, -EINVAL (bad
 * options, or an existing state file saved for another root or not
 * readable as one), -ENOMEM, or the -errno of saving the state file, in
 * which case nothing was changed. */
PC_API int pc_tune_apply(const struct pc_tune_opts *o, struct pc_tune_report **out);

/* Restore what the state file saved, newest change first, and remove the
 * file when every value is back (it stays when a step failed, so reset can
 * be run again). turbo_off and smt_off are ignored. Returns 0 with *out,
 * or with *out NULL: -ENOENT (no state file: nothing to reset), -EINVAL
 * (not a state file, or saved for another root), -ENOMEM. */
PC_API int pc_tune_reset(const struct pc_tune_opts *o, struct pc_tune_report **out);

/* True when tune or reset on root would need privileges this process lacks:
 * root names the real machine and the effective user is not root. */
PC_API bool pc_tune_needs_privilege(const char *root);

/* The state file for these options into buf. Returns 0 or -ENAMETOOLONG. */
PC_API int pc_tune_state_path(const struct pc_tune_opts *o, char *buf, size_t len);

/* How many steps the report holds. */
PC_API size_t pc_tune_report_count(const struct pc_tune_report *r);
/* Step i of the report (0 .. count-1); NULL when i is out of range. */
PC_API const struct pc_tune_step *pc_tune_report_step(const struct pc_tune_report *r, size_t i);
/* How many of the report's steps ended in res. */
PC_API size_t pc_tune_report_count_result(const struct pc_tune_report *r, enum pc_tune_result res);

/* "applied", "already set", "not applicable", "failed", "would apply",
 * "not requested". */
PC_API const char *pc_tune_result_name(enum pc_tune_result res);

/* Print one line per setting (per-CPU steps with the same outcome share a
 * line and list their CPUs). */
PC_API void pc_tune_report_print(const struct pc_tune_report *r, FILE *out);

/* A new cJSON object: {"state": the state file, "dry_run", "state_saved"
 * (tune) or "state_removed" (reset), "steps": [{"setting", "cpu" (per-CPU
 * steps only), "path", "old", "new", "result", "reason"}]}; result is a
 * pc_tune_result_name, except that a reset says "restored" and "would
 * restore". The caller owns it. NULL when out of memory. */
PC_API struct cJSON *pc_tune_report_to_json(const struct pc_tune_report *r);

/* Free a report; NULL is ignored. */
PC_API void pc_tune_report_free(struct pc_tune_report *r);

PC_END_DECLS

#endif
