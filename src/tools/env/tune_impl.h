/* SPDX-License-Identifier: MIT */
/* percore internal: tune and reset share the report and the state file. */
#ifndef PERCORE_SYS_TUNE_IMPL_H
#define PERCORE_SYS_TUNE_IMPL_H

#include "percore/tune.h"
#include "sys/rootfs.h"

struct pc_tune_report {
	size_t n, cap;
	struct pc_tune_step *step;
	bool reset;              /* a reset rather than a tune */
	bool dry_run;
	bool state_written;      /* tune saved, or reset removed, the file */
	char state_path[PC_ROOTFS_PATH_MAX];
};

/* A new empty report, or NULL. */
struct pc_tune_report *sys_tune_report_new(bool reset, bool dry_run);

/* Append a step for setting (a static string) on path; cpu -1 when not
 * per-CPU. Returns the step (result PC_TUNE_ALREADY, values empty) or NULL
 * when out of memory. */
struct pc_tune_step *sys_tune_report_add(struct pc_tune_report *r, const char *setting, int cpu,
					 const char *path);

/* One saved value. */
struct pc_tune_change {
	const char *setting;     /* static: one of the tune settings */
	int cpu;
	char path[256];
	char old_value[64];
	char new_value[64];
};

/* The content of a state file. */
struct pc_tune_state {
	char root[PC_ROOTFS_PATH_MAX];
	size_t n, cap;
	struct pc_tune_change *c;
};

/* Which tune setting a state file's entry claims, checked against the
 * files tune itself writes: the static setting name and the CPU of a
 * per-CPU path, or NULL when path is not one tune would touch. A state
 * file could be planted by someone else; reset as root must not write
 * wherever it says. */
const char *sys_tune_setting_for(const char *setting, const char *path, int *cpu);

/* True for a value tune would save or write: a short word of letters,
 * digits, '_', '-' or '+'. */
bool sys_tune_value_ok(const char *v);

/* Parse the text of a state file, with the same checks on every entry.
 * Returns 0, -EINVAL when it is not a state file, -ENOMEM. */
int sys_tune_state_parse(const char *text, struct pc_tune_state *s);

/* Load a state file. Returns 0, -ENOENT when absent, -EINVAL when it is
 * not a state file (or is writable by others, or owned by another user),
 * -ENOMEM. */
int sys_tune_state_load(const char *file, struct pc_tune_state *s);

/* Write s to file atomically (temp file, fsync, rename), creating the
 * folder when missing. Returns 0 or -errno. */
int sys_tune_state_save(const char *file, const struct pc_tune_state *s);

/* The saved change for path, or NULL. */
struct pc_tune_change *sys_tune_state_find(struct pc_tune_state *s, const char *path);

/* Append a change. Returns 0 or -ENOMEM. */
int sys_tune_state_add(struct pc_tune_state *s, const struct pc_tune_change *c);

void sys_tune_state_free(struct pc_tune_state *s);

#endif
