/* SPDX-License-Identifier: MIT */
/* percore: the clocks as calls, for programs whose <time.h> hides them. */
#include "percore/clock.h"

uint64_t pc_clock_ns(enum pc_clock c)
{
	switch (c) {
	case PC_CLOCK_MONOTONIC:
		return pc_clock__read(CLOCK_MONOTONIC);
	case PC_CLOCK_THREAD_CPU:
		return pc_clock__read(CLOCK_THREAD_CPUTIME_ID);
	case PC_CLOCK_PROCESS_CPU:
		return pc_clock__read(CLOCK_PROCESS_CPUTIME_ID);
	}
	return 0;
}
