/* SPDX-License-Identifier: MIT */
/* percore: version and build description, compiled in by CMake. */
#include "percore/clock.h"

const char *pc_version(void)
{
	return PC_VERSION;
}

/* "sanitizer: none" rather than an empty field, so the line reads the same
 * way (and parses the same way) whatever the build. */
const char *pc_build_info(void)
{
	return sizeof(PC_SANITIZER) > 1 ? PC_COMPILER " " PC_BUILD_TYPE " sanitizer: " PC_SANITIZER :
					  PC_COMPILER " " PC_BUILD_TYPE " sanitizer: none";
}
