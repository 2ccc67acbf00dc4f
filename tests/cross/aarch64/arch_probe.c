/* SPDX-License-Identifier: MIT */
/* Says which architecture it was built for and runs on, and fails unless
 * both are aarch64: the cross test would otherwise pass just as well if the
 * toolchain quietly produced x86-64 programs. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "percore/defs.h"

int main(void)
{
	struct utsname u;

	if (uname(&u) != 0) {
		perror("uname");
		return 1;
	}
#if defined(__aarch64__)
	const char *built = "aarch64";
#else
	const char *built = "not aarch64";
#endif
	printf("built for %s, running on %s, PC_CACHE_PAD %d\n", built, u.machine,
	       PC_CACHE_PAD);
	if (strcmp(built, "aarch64") != 0 || strcmp(u.machine, "aarch64") != 0) {
		fprintf(stderr, "arch_probe: expected aarch64 on both counts\n");
		return 1;
	}
	/* No adjacent-line prefetcher to defeat: one 64-byte line suffices. */
	if (PC_CACHE_PAD != 64) {
		fprintf(stderr, "arch_probe: PC_CACHE_PAD %d, expected 64\n", PC_CACHE_PAD);
		return 1;
	}
	pc_cpu_relax(); /* the aarch64 "yield" branch */
	return 0;
}
