/* percore: version and build description, compiled in by CMake. */
#include "percore/clock.h"

const char *pc_version(void)
{
	return PC_VERSION;
}

const char *pc_build_info(void)
{
	return PC_COMPILER " " PC_BUILD_TYPE
	       " sanitizer:" PC_SANITIZER;
}
