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
