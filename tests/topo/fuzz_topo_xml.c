/* SPDX-License-Identifier: MIT */
/* Fuzz target: any bytes as a saved topology. Loading either fails with a
 * reason or gives a topology that validates; every policy then places on
 * it, each result validates, and both render as JSON. Seeds: the fixture
 * machines (tests/fuzz/corpus/topo_xml links to tests/fixtures/topo). */
#define _GNU_SOURCE 1
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "percore/json.h"
#include "percore/place.h"
#include "percore/topo.h"

/* hwloc 2.9 itself leaks objects when it rejects some malformed XML (a
 * program calling only hwloc shows the same); leaks allocated inside
 * libhwloc are its own, every other leak still fails the run. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libhwloc.so\n";
}

/* The input as a file hwloc can open: a memfd seen through /proc. */
static int as_file(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("pc_topo_fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

static void place_all(const struct pc_topo *t, unsigned n)
{
	for (int pol = PC_PLACE_AUTO; pol < PC_PLACE_LIST; pol++)
		for (unsigned flags = 0; flags <= PC_PLACE_OVERSUBSCRIBE; flags++) {
			struct pc_placement *p = NULL;
			char err[256] = "";
			cJSON *j;

			if (pc_place(t, n, pol, NULL, flags, &p, err, sizeof(err))) {
				if (p || !err[0])
					abort();
				continue;
			}
			if (pc_placement_validate(t, p, NULL, 0))
				abort();
			j = pc_placement_to_json(t, p);
			cJSON_Delete(j);
			pc_placement_free(p);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[256] = "";
	struct pc_topo *t = NULL;
	int fd = as_file(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (pc_topo_load_xml(path, &t, err, sizeof(err))) {
		if (t || !err[0])
			abort();
	} else {
		if (pc_topo_validate(t, NULL, 0))
			abort();
		cJSON_Delete(pc_topo_to_json(t));
		place_all(t, 0);
		place_all(t, size % 70);
		pc_topo_free(t);
	}
	close(fd);
	return 0;
}
