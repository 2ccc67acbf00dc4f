/* SPDX-License-Identifier: MIT */
/* percore sys: one-line error messages into a caller's buffer. */
#include <stdarg.h>
#include <stdio.h>

#include "sys/errmsg.h"

int sys_errmsg(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return code;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}
