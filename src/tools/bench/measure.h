/* SPDX-License-Identifier: MIT */
/* percore bench: running one repetition of one benchmark and timing it. */
#ifndef PERCORE_SRC_BENCH_MEASURE_H
#define PERCORE_SRC_BENCH_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/bench.h"

/* What to run: one benchmark, how many threads, where. */
struct pc_bench_job {
	const struct pc_bench *bench;
	unsigned threads;       /* >= 1 */
	bool threaded;          /* run on threads of its own (even just one) */
	bool affinity;          /* pin those threads, one CPU each */
	uint64_t iterations;    /* per thread */
};

/* What one repetition measured. */
struct pc_bench_sample {
	uint64_t iterations;    /* per thread */
	double time_ns;         /* the timed span: wall clock less pauses, or
	                         * the manual time */
	double run_wall_ns;     /* wall clock of run() alone, pauses included */
	double total_wall_ns;   /* setup to teardown: what a repetition costs */
	double cpu_ns;          /* CPU time of the running threads, summed */
	uint64_t items, bytes;  /* summed over threads */
	unsigned ncounters;     /* thread 0's counters */
	struct pc_bench_metric counters[PC_BENCH_MAX_COUNTERS];
	bool failed;            /* a thread called pc_bench_fail() */
	char why[128];          /* its reason, when failed */
};

/* Run one repetition: setup, run (on the calling thread, or on job->threads
 * new threads released together by a start barrier), teardown. Returns 0,
 * setup's negative errno (the benchmark is to be skipped), or a negative
 * errno when a thread could not be started; why then says what failed.
 * A run that called pc_bench_fail() returns 0 with out->failed set. */
int bench_measure(const struct pc_bench_job *job, struct pc_bench_sample *out,
		  char *why, size_t whylen);

/* Choose the CPU of each of n threads: with affinity, pc_place's auto
 * policy on this machine (one thread per physical core, fastest kind first,
 * spread over NUMA nodes; SMT siblings only when cores run out), sharing
 * CPUs in the same order when there are more threads than usable CPUs;
 * without, -1 for each. The one place that decides placement. The topology
 * is loaded at the first call and kept. Returns 0, or a negative errno when
 * the topology cannot be read or nothing is usable (reason on stderr). */
int bench_place_threads(unsigned n, bool affinity, int cpus[]);

#endif
