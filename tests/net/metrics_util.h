/* SPDX-License-Identifier: MIT */
/* Test helpers for the metrics: the exposition as a string, and the value
 * of one series read back from it. */
#ifndef PERCORE_TESTS_NET_METRICS_UTIL_H
#define PERCORE_TESTS_NET_METRICS_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/metrics.h"

/* The whole exposition, malloc'ed; NULL on failure. */
static inline char *mu_text(struct pc_metrics *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	if (pc_metrics_write(m, f)) {
		fclose(f);
		free(text);
		return NULL;
	}
	fclose(f);
	return text;
}

/* The value of the series written exactly as `series` (name and labels,
 * e.g. percore_x_total{shard="1"}) at the start of a line; -1 when the
 * text has no such line. Values here are never negative. */
static inline double mu_value(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

/* How many lines start with prefix. */
static inline unsigned mu_lines(const char *text, const char *prefix)
{
	unsigned k = 0;
	size_t n = strlen(prefix);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		k += !strncmp(p, prefix, n);
	return k;
}

#endif
