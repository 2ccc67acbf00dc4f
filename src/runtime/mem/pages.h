/* SPDX-License-Identifier: MIT */
/* percore mem: the page source behind the slab and the arena. Everything
 * the mem layer takes from the system goes through these two functions, so
 * where memory comes from (plain mmap, or the NUMA node of the shard) is
 * decided in one place. */
#ifndef PERCORE_SRC_MEM_PAGES_H
#define PERCORE_SRC_MEM_PAGES_H

#include <stddef.h>

/* bytes rounded up to whole pages; 0 when that overflows. */
size_t mem_pages_round(size_t bytes);

/* bytes (a multiple of the page size) of zeroed memory, page-aligned, on
 * NUMA node node (-1: the node of the thread that first touches it). NULL
 * when the node does not exist or memory runs out. */
void *mem_pages_alloc(size_t bytes, int node);

/* Give back memory from mem_pages_alloc, with the same size. */
void mem_pages_free(void *p, size_t bytes);

#endif
