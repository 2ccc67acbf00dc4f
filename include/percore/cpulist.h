/* SPDX-License-Identifier: MIT */
/* percore: CPU lists in the kernel's text form ("0-3,8,10-11"). */
#ifndef PERCORE_CPULIST_H
#define PERCORE_CPULIST_H

#include <sched.h>
#include <stddef.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* Parse a CPU list into set (cleared first). Whitespace around items and a
 * trailing newline are accepted; an empty string is an empty set.
 * Returns 0, or -EINVAL for malformed text or a CPU >= CPU_SETSIZE. */
PC_API int pc_cpulist_parse(const char *text, cpu_set_t *set);

/* Write set as a CPU list into buf ("" for an empty set). Returns the
 * length written, or -ENOSPC when buf is too small (buf is then ""). */
PC_API int pc_cpulist_format(const cpu_set_t *set, char *buf, size_t len);

PC_END_DECLS

#endif
