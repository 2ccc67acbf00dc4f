/* SPDX-License-Identifier: MIT */
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
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

#define PC_BENCH_MAX_COUNTERS 16

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
	/* With PC_BENCH_AFFINITY: with --affinity both, the unpinned entry
	 * only in the full suite (--affinity off still selects it).
	 * For servers that place their own threads, where the unpinned row
	 * asks the pinned row's question again with the scheduler's noise
	 * added, and would take budget the pinned pair needs to be decided. */
	PC_BENCH_UNPINNED_FULL = 1u << 3,
};

/* A named figure attached to a result row (see pc_bench_counter()). */
struct pc_bench_metric {
	const char *name;
	double value;
};

/* What a benchmark's run() gets: set by the harness, read and updated by
 * the benchmark. */
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

	/* Set by run() (per thread; the harness sums them). When every thread
	 * leaves items at 0, each thread counts its iterations as items (so a
	 * producer/consumer pair where only the producer sets items counts
	 * each item once). */
	uint64_t items;
	uint64_t bytes;
	uint64_t manual_ns;     /* PC_BENCH_MANUAL_TIME: measured time */

	/* Extra figures for the JSON row (e.g. "p99_us"), set with
	 * pc_bench_counter(). Thread 0's counters are reported. */
	unsigned ncounters;
	struct pc_bench_metric counters[PC_BENCH_MAX_COUNTERS];

	/* Harness bookkeeping: do not touch. */
	uint64_t _paused_ns, _pause_start;
	uint64_t _paused_cpu_ns, _pause_cpu_start;
	void *_group;           /* the threads of this repetition, or NULL */
	bool _failed;           /* pc_bench_fail() was called */
	char _fail_why[128];
};

/* A benchmark: its name, threads and flags, and the functions the harness
 * calls. */
struct pc_bench {
	const char *name;       /* "SlabAlloc/64", "Peer/jemalloc/64" */
	unsigned threads;       /* 0 or 1: single-threaded */
	unsigned flags;         /* PC_BENCH_* */
	intptr_t arg, arg2;     /* parameters the run function reads */
	const char *label;      /* NULL, or what a reader of the row must know
	                         * to read it right (what it leaves out); the
	                         * "label" of each of its JSON rows, as Google
	                         * Benchmark's SetLabel() gives */
	/* Returns 0, or a negative errno to skip this benchmark with a reason
	 * printed to stderr (e.g. -ENOTSUP when a peer is missing). */
	int (*setup)(struct pc_bench_state *st);
	void (*run)(struct pc_bench_state *st);
	void (*teardown)(struct pc_bench_state *st);
};

/* Register a benchmark; called before main() by PC_BENCH_REGISTER. One
 * without a name or run function, or with the name of one already
 * registered, is dropped with a message on stderr. */
PC_API void pc_bench_register(const struct pc_bench *b);

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
 * work between pause and resume is not timed. In a benchmark that runs on
 * several threads the wall clock belongs to all of them, so pauses there
 * are not subtracted. A pause still open when run() returns ends there. */
PC_API void pc_bench_pause(struct pc_bench_state *st);
PC_API void pc_bench_resume(struct pc_bench_state *st);

/* Attach a named figure to this repetition's JSON row (setting the same
 * name again replaces its value). name must be a string literal or
 * otherwise outlive the run. Beyond PC_BENCH_MAX_COUNTERS names the extra
 * ones are dropped. */
PC_API void pc_bench_counter(struct pc_bench_state *st, const char *name, double value);

/* Say that this repetition failed (a load generator or helper process
 * that did not finish, a server that went away): its figures are not
 * used, the row counts it among its failed repetitions, and the results
 * file carries it as an iteration row with "error_occurred" and why (the
 * first call's reason is kept). The row's other repetitions stand. Any
 * thread of the benchmark, from run(). */
PC_API void pc_bench_fail(struct pc_bench_state *st, const char *why);

/* Summary statistics of repeated measurements. */
struct pc_bench_stats {
	double mean, median;
	double stddev;          /* sample standard deviation (n - 1) */
	double cv;              /* stddev / mean as a fraction; 0 when mean is 0 */
	double min, max;
};

/* Summarise v[0..n-1] (v is not modified): the statistics the harness
 * and `percore report` give each row. stddev and cv are 0 for n == 1.
 * Returns 0, or -EINVAL for n == 0, -ENOMEM. */
PC_API int pc_bench_stats_compute(const double *v, size_t n, struct pc_bench_stats *out);

/* The device through which a process asks the kernel to keep every core
 * out of idle states slower to leave than the value it writes. */
#define PC_BENCH_PM_QOS_DEVICE "/dev/cpu_dma_latency"

/* Hold a PM QoS request of 0 us on PC_BENCH_PM_QOS_DEVICE until the
 * returned descriptor is closed. Returns the descriptor, or a negative
 * errno (-ENOENT without the device, -EACCES without permission: it
 * usually needs root). Any thread. */
PC_API int pc_bench_pm_qos_hold(void);

/* Wait until every thread of this benchmark has reached the same point
 * (for benchmarks whose threads hand work to each other). Every thread
 * must call it the same number of times. Returns at once when the
 * benchmark runs on the calling thread alone. */
PC_API void pc_bench_barrier(struct pc_bench_state *st);

/* ---- Running benchmarks ----------------------------------------------------
 * The runner behind `percore bench`, usable from any program that links
 * benchmarks in: select with pc_bench_session_create(), run, then read the
 * results as a table or as Google Benchmark JSON. Everything below runs on
 * one controlling thread; a session is not shared between threads. */

struct cJSON;
struct pc_bench_session;

/* Where threaded benchmarks run (--affinity). */
enum pc_bench_affinity_mode {
	PC_BENCH_AFFINITY_MODE_ON,      /* each thread pinned to its own CPU */
	PC_BENCH_AFFINITY_MODE_OFF,     /* threads left to the scheduler */
	PC_BENCH_AFFINITY_MODE_BOTH,    /* one result row for each */
};

/* How pc_bench_run_all() selects, repeats and reports benchmarks. */
struct pc_bench_options {
	const char *filter;     /* POSIX extended regex searched in each
	                         * result name; NULL or "" selects all */
	unsigned repetitions;   /* timed repetitions, >= 1 (default 5); with
	                         * more rounds (below), the minimum */
	double min_time;        /* seconds one repetition lasts at least
	                         * (default 0.2) */
	uint64_t seed;          /* fixes the shuffled order of each round */
	bool interleave;        /* round r runs every benchmark once (default
	                         * true); false: repetitions back to back */
	enum pc_bench_affinity_mode affinity;
	double max_cv;          /* CV of time per iteration above which a
	                         * result is noisy (default 0.05) */
	bool full;              /* include PC_BENCH_FULL benchmarks */
	bool pm_qos;            /* recorded in the JSON options only: the
	                         * caller holds the request */
	FILE *progress;         /* progress lines; NULL for none */
	/* More rounds after the first `repetitions`: while more() asks for
	 * some entries, another interleaved round runs those (in a shuffled
	 * order), until an entry has max_repetitions or the next round would
	 * end past budget_s seconds from the start. */
	unsigned max_repetitions;       /* 0 or <= repetitions: no more rounds */
	double budget_s;                /* 0: no time limit */
	/* Called after each round from the `repetitions`-th on, on the
	 * controlling thread: sets want[i] for each entry i (session order)
	 * that needs another repetition and returns how many it set. NULL:
	 * every entry wants more, until max_repetitions. */
	size_t (*more)(const struct pc_bench_session *s, bool *want, void *arg);
	void *more_arg;
};

/* Fill o with the defaults listed above (progress: stderr). */
PC_API void pc_bench_options_init(struct pc_bench_options *o);

/* Select the registered benchmarks that o asks for (a threaded benchmark
 * gives one entry per affinity setting). o->filter is copied. Returns 0 and
 * *out, or -EINVAL for bad options or a bad regex (why says which; why may
 * be NULL), -ENOMEM. A selection may be empty. */
PC_API int pc_bench_session_create(const struct pc_bench_options *o,
				   struct pc_bench_session **out, char *why, size_t whylen);

/* Selected entries, their names and thread counts, in run order. */
PC_API size_t pc_bench_session_count(const struct pc_bench_session *s);
PC_API const char *pc_bench_session_name(const struct pc_bench_session *s, size_t i);
PC_API unsigned pc_bench_session_threads(const struct pc_bench_session *s, size_t i);

/* Entries the filter matched that only the full suite runs. */
PC_API size_t pc_bench_session_full_only(const struct pc_bench_session *s);

/* Calibrate and run every selected benchmark (once per session). A
 * benchmark whose setup fails during calibration is skipped with its
 * reason on stderr; a later repetition whose setup fails, or whose run()
 * called pc_bench_fail(), counts as a failed repetition of its row (the
 * repetitions before and after it stand).
 * Returns how many benchmarks produced results (0 when all were skipped),
 * or -EALREADY when the session already ran, -ENOMEM. */
PC_API int pc_bench_session_run(struct pc_bench_session *s);

/* The results as Google Benchmark JSON plus the "percore" section (see
 * docs/BENCHMARKS.md). The members of extra, when not NULL, are moved
 * into the "percore" object and extra is freed: the caller adds the audit,
 * topology or anything else this way. Returns a new cJSON tree the caller
 * frees with cJSON_Delete, or NULL (no memory, or the session did not run). */
PC_API struct cJSON *pc_bench_session_json(const struct pc_bench_session *s,
					   struct cJSON *extra);

/* Print the results table (medians, CV, noisy marks, skipped benchmarks).
 * Returns 0, or -EIO when writing failed. */
PC_API int pc_bench_session_print(const struct pc_bench_session *s, FILE *out);

/* Rounds run (calibration not counted), and why the rounds stopped:
 * "repetitions" (no more asked), "decided" (more() wanted none),
 * "max_repetitions", "budget". NULL before the session ran. */
PC_API unsigned pc_bench_session_rounds(const struct pc_bench_session *s);
PC_API const char *pc_bench_session_stop_reason(const struct pc_bench_session *s);

/* For a more() callback that plans the rounds the budget still allows:
 * what one repetition of entry i costs, in wall seconds by its calibration
 * (set-up included; 0 when skipped or not yet calibrated), and the seconds
 * left of budget_s since the run started (INFINITY without a budget;
 * negative once past it). */
PC_API double pc_bench_session_rep_cost_s(const struct pc_bench_session *s, size_t i);
PC_API double pc_bench_session_budget_left_s(const struct pc_bench_session *s);

/* Free a session (NULL is fine). */
PC_API void pc_bench_session_destroy(struct pc_bench_session *s);

PC_END_DECLS

#endif
