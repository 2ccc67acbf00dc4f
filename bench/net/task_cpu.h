/* SPDX-License-Identifier: MIT */
/* CPU time of a server's threads, for rows that set a server beside its
 * client: on a machine where the client saturates its CPU first, the
 * throughput measures the client; the server's CPU per request does not. */
#ifndef PERCORE_BENCH_NET_TASK_CPU_H
#define PERCORE_BENCH_NET_TASK_CPU_H

#include <stdint.h>
#include <sys/types.h>

/* Calls fn(pid, tid, arg) for every thread of pid and returns the sum of
 * what it returned (a thread that ends meanwhile just gives nothing). */
uint64_t task_each(pid_t pid, uint64_t (*fn)(pid_t pid, pid_t tid, const void *arg),
		   const void *arg);

/* CPU time of one thread so far, user and system, in ns (its schedstat);
 * 0 once it is gone. */
uint64_t task_cpu_ns(pid_t pid, pid_t tid);

/* CPU time of every live thread of pid, in ns. */
uint64_t task_process_cpu_ns(pid_t pid);

#define TASK_SPLIT_MAX 256

/* The CPU time over an interval of the threads of this process that
 * existed when it began: a server started beforehand, and harness threads
 * that sleep meanwhile; threads started during it (a load generator) are
 * left out. */
struct task_split {
	unsigned n;
	pid_t tid[TASK_SPLIT_MAX];
	uint64_t cpu0[TASK_SPLIT_MAX];
};

void task_split_begin(struct task_split *t);

/* The CPU time of the threads that existed at task_split_begin, in ns. */
double task_split_end(const struct task_split *t);

#endif
