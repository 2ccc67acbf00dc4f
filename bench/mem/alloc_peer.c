/* SPDX-License-Identifier: MIT */
/* percore-peer-NAME: runs the allocation loops of bench/mem/alloc_loop.h
 * on the malloc of the allocator it was linked against (PEER_LIB names it:
 * glibc, jemalloc, mimalloc, tcmalloc), in a process of its own so no
 * allocator's state or interposition leaks into another's figures.
 *
 *   percore-peer-NAME SIZE pair|batch ITERATIONS
 *
 * Prints the nanoseconds the timed loop took on stdout. It first checks
 * that malloc really resolves to PEER_LIB and warms the allocator up with
 * an untimed run. Exit 0, 1 on failure (reason on stderr), 2 on bad use. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/clock.h"
#include "alloc_loop.h"

#ifndef PEER_LIB
#error "PEER_LIB must name the allocator (glibc, jemalloc, mimalloc, tcmalloc)"
#endif

#define PEER_ALLOC(size) malloc(size)
#define PEER_FREE(size, p) free(p)
PC_ALLOC_LOOPS(peer, size_t, PEER_ALLOC, PEER_FREE)

/* The file name of the object malloc resolves to must contain this. */
static const char *expected_object(void)
{
	return strcmp(PEER_LIB, "glibc") == 0 ? "libc.so" : PEER_LIB;
}

static int check_malloc_source(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;

	if (!sym || !dladdr(sym, &info) || !info.dli_fname) {
		fprintf(stderr, "percore-peer-%s: cannot tell where malloc comes from\n", PEER_LIB);
		return -1;
	}
	if (!strstr(info.dli_fname, expected_object())) {
		fprintf(stderr, "percore-peer-%s: malloc comes from %s, not %s\n", PEER_LIB,
			info.dli_fname, PEER_LIB);
		return -1;
	}
	return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || end == s || *end || *out == 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t size, iters, t0, t1;
	int batch;

	if (argc != 4 || parse_u64(argv[1], &size) || parse_u64(argv[3], &iters) ||
	    (strcmp(argv[2], "pair") && strcmp(argv[2], "batch"))) {
		fprintf(stderr, "usage: percore-peer-%s SIZE pair|batch ITERATIONS\n", PEER_LIB);
		return 2;
	}
	if (check_malloc_source())
		return 1;
	batch = strcmp(argv[2], "batch") == 0;
	/* warm-up: the allocator's caches and pages, not measured */
	if (batch)
		peer_batch((size_t)size, iters < 100 ? iters : 100);
	else
		peer_pair((size_t)size, iters < 100000 ? iters : 100000);
	t0 = pc_now_ns();
	if (batch)
		peer_batch((size_t)size, iters);
	else
		peer_pair((size_t)size, iters);
	t1 = pc_now_ns();
	printf("%" PRIu64 "\n", t1 - t0);
	return fflush(stdout) == 0 ? 0 : 1;
}
