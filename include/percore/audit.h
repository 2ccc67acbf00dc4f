/* SPDX-License-Identifier: MIT */
/* percore: the environment audit behind `percore env`.
 *
 * Checks what makes measurements on this machine noisy or slow (frequency
 * scaling, turbo, deep idle states, SMT, THP, ASLR, watchdogs, cgroup
 * limits, other busy processes, running in a VM) and says for each: a
 * stable id, ok / warn / unknown, the value seen, and the command or
 * setting that fixes it. Reads /proc and /sys only, through a root prefix
 * so tests (and planning for another machine) can point it at a fake tree;
 * needs no privileges: what it cannot read is reported unknown. */
#ifndef PERCORE_AUDIT_H
#define PERCORE_AUDIT_H

#include <stddef.h>
#include <stdio.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct cJSON;

/* How one audited setting bears on measurements. */
enum pc_audit_status {
	PC_AUDIT_OK = 0,      /* nothing here adds noise */
	PC_AUDIT_WARN,        /* this adds noise or slows measurements */
	PC_AUDIT_UNKNOWN,     /* not exposed or not readable here */
};

/* One finding. Strings are never NULL; fix is "" when there is nothing to
 * do. The audit owns them. */
struct pc_audit_item {
	const char *id;       /* "cpu.governor", ... (see pc_audit_ids) */
	enum pc_audit_status status;
	const char *value;    /* what was seen, one line */
	const char *fix;      /* the command or setting that fixes a warning */
};

/* The list of findings (opaque). */
struct pc_audit;

/* Every id the audit reports, in report order, NULL-terminated. Each
 * collected audit holds exactly one item per id. */
PC_API extern const char *const pc_audit_ids[];

/* How the audit samples the process list for load.busy_processes. */
struct pc_audit_opts {
	unsigned sample_ms;   /* gap between the two /proc samples; 0 = 100 */
	/* The storage.* checks audit the block device holding this path
	 * (its sysfs queue under root); NULL reports them unknown. */
	const char *path;
};

/* Run every check. root NULL or "/" audits this machine; otherwise root is
 * a folder holding a fake proc/ and sys/. Missing or unreadable files give
 * unknown, never an error. Sleeps sample_ms (100 ms) to sample the busy
 * processes. Any thread. Returns 0 and *out (free with pc_audit_free), or
 * -EINVAL (NULL out) or -ENOMEM, with *out NULL. */
PC_API int pc_audit_collect(const char *root, struct pc_audit **out);
PC_API int pc_audit_collect_opts(const char *root, const struct pc_audit_opts *opts,
				 struct pc_audit **out);

/* Number of items, and item i (NULL when i is out of range). */
PC_API size_t pc_audit_count(const struct pc_audit *a);
PC_API const struct pc_audit_item *pc_audit_item(const struct pc_audit *a, size_t i);

/* The item with this id, or NULL. */
PC_API const struct pc_audit_item *pc_audit_find(const struct pc_audit *a, const char *id);

/* How many items have this status. */
PC_API size_t pc_audit_count_status(const struct pc_audit *a, enum pc_audit_status s);

/* "ok", "warn" or "unknown". */
PC_API const char *pc_audit_status_name(enum pc_audit_status s);

/* A new cJSON array of {"id","status","value","fix"} objects, in report
 * order (the bench results file stores it as percore.audit). The caller
 * owns it (cJSON_Delete). Returns NULL when out of memory. */
PC_API struct cJSON *pc_audit_to_json(const struct pc_audit *a);

/* Print flags. */
enum {
	PC_AUDIT_PRINT_WARN_ONLY = 1 << 0,   /* only the warnings (bench does) */
};

/* Print a table: status, id, value, and the fix under each item that is
 * not ok and has one. Any thread. */
PC_API void pc_audit_print(const struct pc_audit *a, FILE *out, unsigned flags);

/* Free an audit; NULL is ignored. */
PC_API void pc_audit_free(struct pc_audit *a);

PC_END_DECLS

#endif
