/* SPDX-License-Identifier: MIT */
/* percore: clocks. Monotonic nanoseconds for timing and timers. */
#ifndef PERCORE_CLOCK_H
#define PERCORE_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* The clocks pc_clock_ns() reads. */
enum pc_clock {
	PC_CLOCK_MONOTONIC,   /* pc_now_ns() */
	PC_CLOCK_THREAD_CPU,  /* pc_thread_cpu_ns() */
	PC_CLOCK_PROCESS_CPU, /* pc_process_cpu_ns() */
};

/* Read clock c, in nanoseconds, by a call into the library. Any thread.
 * The inline readers below call it only where <time.h> hides the POSIX
 * clocks (strict ISO C with no feature-test macro); elsewhere they read
 * the clock in place. Returns 0 for an unknown clock. */
PC_API uint64_t pc_clock_ns(enum pc_clock c);

#if defined(CLOCK_MONOTONIC) && defined(CLOCK_THREAD_CPUTIME_ID)
static inline uint64_t pc_clock__read(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#define PC_CLOCK__READ(posix, own) pc_clock__read(posix)
#else
#define PC_CLOCK__READ(posix, own) pc_clock_ns(own)
#endif

/* Monotonic time in nanoseconds (vDSO, no system call). Any thread. */
static inline uint64_t pc_now_ns(void)
{
	return PC_CLOCK__READ(CLOCK_MONOTONIC, PC_CLOCK_MONOTONIC);
}

/* Time from then to now, in the units of the clock both were read from
 * (nanoseconds, ticks): now - then, or 0 when then is the later one. Use
 * it for every "time since": two readings taken at different moments are
 * not ordered as their names suggest (a stamp taken by a read during this
 * turn against the tick a timer is processing, which lags the clock; a
 * clock read on another thread; a stamp not yet set), and an unsigned
 * difference would then wrap to nearly 2^64 and look like a great age.
 * Any thread. */
static inline uint64_t pc_elapsed(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/* pc_elapsed() for 32-bit stamps that wrap (ticks kept in 32 bits): the
 * difference modulo 2^32 read as signed, 0 when negative (then is the
 * later one). Right while the two lie less than 2^31 units apart, so a
 * caller keeps its stamps fresher than that. Any thread. */
static inline uint32_t pc_elapsed32(uint32_t now, uint32_t then)
{
	uint32_t d = now - then;

	return d < UINT32_C(0x80000000) ? d : 0;
}

/* CPU time consumed by the calling thread, in nanoseconds. */
static inline uint64_t pc_thread_cpu_ns(void)
{
	return PC_CLOCK__READ(CLOCK_THREAD_CPUTIME_ID, PC_CLOCK_THREAD_CPU);
}

/* CPU time consumed by the whole process, in nanoseconds. */
static inline uint64_t pc_process_cpu_ns(void)
{
	return PC_CLOCK__READ(CLOCK_PROCESS_CPUTIME_ID, PC_CLOCK_PROCESS_CPU);
}

/* The library's version string and how it was built. Any thread. */
PC_API const char *pc_version(void);
PC_API const char *pc_build_info(void);

PC_END_DECLS

#endif
