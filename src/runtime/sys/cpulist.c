/* SPDX-License-Identifier: MIT */
/* percore: CPU list parsing and formatting. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "percore/cpulist.h"

static const char *skip_space(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

static int parse_cpu(const char **p, long *cpu)
{
	char *end;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	*cpu = strtol(*p, &end, 10);
	if (errno || *cpu < 0 || *cpu >= CPU_SETSIZE)
		return -EINVAL;
	*p = end;
	return 0;
}

int pc_cpulist_parse(const char *text, cpu_set_t *set)
{
	const char *p = skip_space(text);

	CPU_ZERO(set);
	while (*p) {
		long lo, hi;

		if (parse_cpu(&p, &lo))
			return -EINVAL;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_cpu(&p, &hi) || hi < lo)
				return -EINVAL;
		}
		for (long c = lo; c <= hi; c++)
			CPU_SET((int)c, set);
		p = skip_space(p);
		if (*p == ',')
			p = skip_space(p + 1);
		else if (*p)
			return -EINVAL;
	}
	return 0;
}

int pc_cpulist_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;

	if (len == 0)
		return -ENOSPC;
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int end = c, n;

		if (!CPU_ISSET(c, set))
			continue;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		n = end == c ? snprintf(buf + used, len - used, "%s%d", used ? "," : "", c)
			     : snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, end);
		if (n < 0 || (size_t)n >= len - used) {
			buf[0] = '\0';
			return -ENOSPC;
		}
		used += (size_t)n;
		c = end;
	}
	return (int)used;
}
