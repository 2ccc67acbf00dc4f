/* SPDX-License-Identifier: MIT */
/* Redis's rule for an index range over n elements (LRANGE, LTRIM, ZRANGE,
 * ZREMRANGEBYRANK): negative indexes count from the end, start clamps to
 * 0, stop to the last. Pure, any thread. */
#ifndef KV_RANGE_H
#define KV_RANGE_H

#include <stdbool.h>
#include <stddef.h>

/* The first index and the count that start..stop (inclusive) covers in
 * len elements; false when the range is empty. */
static inline bool kv_range_clamp(size_t len, long long start, long long stop, size_t *first,
				  size_t *n)
{
	long long l = (long long)len;
	if (start < 0)
		start += l;
	if (stop < 0)
		stop += l;
	if (start < 0)
		start = 0;
	if (start > stop || start >= l)
		return false;
	if (stop >= l)
		stop = l - 1;
	*first = (size_t)start;
	*n = (size_t)(stop - start + 1);
	return true;
}

#endif
