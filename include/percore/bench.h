/* percore: the benchmark harness.
 *
 * A benchmark is a static struct pc_bench registered at load time with
 * PC_BENCH_REGISTER. The harness calibrates the iteration count so one
 * repetition lasts at least --min-time, runs one discarded warm-up, then N
 * repetitions, interleaved across benchmarks by default, and reports the
 * statistics of each in a Google Benchmark compatible JSON file.
 *
 * Life of one repetition:
 *   setup(state)            main thread, untimed (may set state->ctx)
 *   run(state) x threads    each on its own thread, placed on a CPU when
 *                           affinity is on; timed from the moment every
 *                           thread has passed the start barrier until the
 *                           last one returns
 *   teardown(state)         main thread, untimed
 */
#ifndef PERCORE_BENCH_H
#define PERCORE_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#define PC_BENCH_MAX_COUNTERS 8

/* Flags of struct pc_bench. */
enum {
	/* The benchmark cares where its threads run: it is reported once per
	 * affinity setting asked for (--affinity on|off|both) with the suffix
	 * "/affinity:on" or "/affinity:off". Implied when threads > 1. */
	PC_BENCH_AFFINITY = 1u << 0,
	/* Only in the full suite (percore bench --full, make bench BENCH=full). */
	PC_BENCH_FULL = 1u << 1,
	/* run() measures its own time and stores it in state->manual_ns (for
	 * work done in a child process, or latency loops that exclude set-up). */
	PC_BENCH_MANUAL_TIME = 1u << 2,
};

struct pc_bench_state {
	/* Set by the harness. */
	uint64_t iterations;    /* how many iterations run() must perform */
	unsigned thread_index;  /* 0 .. threads-1 */
	unsigned threads;       /* threads running this benchmark */
	int cpu;                /* CPU this thread is pinned to, -1 when not */
	bool affinity;          /* affinity on: benchmarks that start their own
	                         * threads must pin them (pc_place) when true */
	const struct pc_bench *bench;
	void *ctx;              /* whatever setup() stored; shared by threads */

	/* Set by run() (per thread; the harness sums them). Left at 0, items
	 * defaults to iterations. */
	uint64_t items;
	uint64_t bytes;
	uint64_t manual_ns;     /* PC_BENCH_MANUAL_TIME: measured time */

	/* Extra figures for the JSON row (e.g. "p99_us"), set with
	 * pc_bench_counter(). Thread 0's counters are reported. */
	unsigned ncounters;
	struct { const char *name; double value; } counters[PC_BENCH_MAX_COUNTERS];

	/* Harness bookkeeping: do not touch. */
	uint64_t _paused_ns, _pause_start;
};

struct pc_bench {
	const char *name;       /* "SlabAlloc/64", "Peer/jemalloc/64" */
	unsigned threads;       /* 0 or 1: single-threaded */
	unsigned flags;         /* PC_BENCH_* */
	intptr_t arg, arg2;     /* parameters the run function reads */
	/* Returns 0, or a negative errno to skip this benchmark with a reason
	 * printed to stderr (e.g. -ENOTSUP when a peer is missing). */
	int (*setup)(struct pc_bench_state *st);
	void (*run)(struct pc_bench_state *st);
	void (*teardown)(struct pc_bench_state *st);
};

/* Register a benchmark; called before main() by PC_BENCH_REGISTER. */
void pc_bench_register(const struct pc_bench *b);

#define PC_BENCH_CONCAT2(a, b) a##b
#define PC_BENCH_CONCAT(a, b) PC_BENCH_CONCAT2(a, b)
/* Register a static struct pc_bench at load time. */
#define PC_BENCH_REGISTER(b)                                                  \
	__attribute__((constructor)) static void PC_BENCH_CONCAT(               \
		pc_bench_reg_, __LINE__)(void)                                  \
	{                                                                     \
		pc_bench_register(&(b));                                      \
	}

/* Stop and restart the clock inside run() (single-threaded benchmarks):
 * work between pause and resume is not timed. */
void pc_bench_pause(struct pc_bench_state *st);
void pc_bench_resume(struct pc_bench_state *st);

/* Attach a named figure to this repetition's JSON row. name must be a
 * string literal or otherwise outlive the run. */
void pc_bench_counter(struct pc_bench_state *st, const char *name, double value);

/* Wait until every thread of this benchmark has reached the same point
 * (for benchmarks whose threads hand work to each other). */
void pc_bench_barrier(struct pc_bench_state *st);

#endif
