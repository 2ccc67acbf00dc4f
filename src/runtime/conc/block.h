/* SPDX-License-Identifier: MIT */
/* percore conc: one allocation holding a ring and its buffer, for the
 * create functions of the rings. */
#ifndef PERCORE_SRC_CONC_BLOCK_H
#define PERCORE_SRC_CONC_BLOCK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "percore/defs.h"

/* head bytes of ring (a multiple of PC_CACHE_PAD) followed by bytes of
 * buffer, zeroed, on a padded line, the total rounded to whole lines.
 * NULL when bytes is 0, the total overflows, or memory runs out. */
static inline void *conc_block_alloc(size_t head, size_t bytes)
{
	size_t total;
	void *p;

	if (bytes == 0 || __builtin_add_overflow(head, bytes, &total) ||
	    total > SIZE_MAX - PC_CACHE_PAD)
		return NULL;
	total = (total + PC_CACHE_PAD - 1) & ~(size_t)(PC_CACHE_PAD - 1);
	p = aligned_alloc(PC_CACHE_PAD, total);
	if (p)
		memset(p, 0, total);
	return p;
}

#endif
