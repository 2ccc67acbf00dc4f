/* SPDX-License-Identifier: MIT */
/* percore sys: one-line error messages into a caller's buffer.
 *
 * Functions that can fail for reasons a person must read (a bad CPU list,
 * a malformed file) take char *err, size_t errlen and write the reason
 * there, instead of any global error state. */
#ifndef PERCORE_SRC_SYS_ERRMSG_H
#define PERCORE_SRC_SYS_ERRMSG_H

#include <stddef.h>

/* Format the reason into err (when err is not NULL and errlen > 0) and
 * return code, so a caller can write: return sys_errmsg(err, len, -EINVAL,
 * "CPU %d does not exist", cpu); */
int sys_errmsg(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
