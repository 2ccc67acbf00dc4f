/* SPDX-License-Identifier: MIT */
/* CHECK(cond) for libFuzzer targets: a broken property aborts with the
 * file, line and condition, which libFuzzer reports with the input. */
#ifndef PERCORE_TESTS_FUZZ_CHECK_H
#define PERCORE_TESTS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                            \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                              \
		}                                                             \
	} while (0)

#endif
