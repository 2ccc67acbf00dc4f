/* percore: clocks. Monotonic nanoseconds for timing and timers. */
#ifndef PERCORE_CLOCK_H
#define PERCORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic time in nanoseconds (vDSO, no system call). Any thread. */
static inline uint64_t pc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time consumed by the whole process, in nanoseconds. */
static inline uint64_t pc_process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The library's version string and how it was built. */
const char *pc_version(void);
const char *pc_build_info(void);

#endif
