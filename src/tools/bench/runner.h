/* SPDX-License-Identifier: MIT */
/* percore bench: the session, shared by the runner, the JSON writer and
 * the table. */
#ifndef PERCORE_SRC_BENCH_RUNNER_H
#define PERCORE_SRC_BENCH_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/measure.h"
#include "percore/bench.h"

/* Calibration never asks for more iterations than this (a run() whose
 * loop the compiler deleted measures nothing and would grow forever). */
#define PC_BENCH_MAX_ITERATIONS 1000000000000ull
/* ... nor grows the count by more than this factor in one step: a first
 * trial that happened to be fast must not ask for a minute-long one. */
#define PC_BENCH_MAX_GROWTH 10.0

/* Seeds stay below 2^53 so the results file records them exactly. */
#define PC_BENCH_MAX_SEED ((1ull << 53) - 1)

/* One result row: a registered benchmark, or one affinity setting of a
 * threaded one. */
struct pc_bench_entry {
	const struct pc_bench *bench;
	char *name;             /* with "/affinity:on|off" when threaded */
	unsigned threads;
	bool threaded, affinity;
	unsigned family;        /* index of bench among the selected ones */
	unsigned instance;      /* 0, or 1 for the second affinity setting */
	uint64_t iterations;    /* per thread, from calibration */
	double est_ns;          /* what one repetition costs, for the ETA */
	int skip;               /* negative errno once skipped, else 0 */
	char why[192];          /* the reason of a skip */
	unsigned nsamples, cap;
	struct pc_bench_sample *samples;   /* room for cap of them */
	/* repetitions after calibration that failed (setup or pc_bench_fail):
	 * no sample, but counted, so a row is never shortened unseen */
	unsigned nfailed;
	char fail_why[192];     /* the last failure's reason */
};

struct pc_bench_session {
	struct pc_bench_options opt;
	char *filter;           /* opt.filter points here */
	struct pc_bench_entry *e;
	size_t n;
	size_t full_only;
	bool ran;
	uint64_t started_ns, finished_ns;
	unsigned rounds;        /* timed rounds run */
	const char *stop;       /* why the rounds stopped */
};

/* Figures of an entry's repetitions: per-iteration times in ns (wall and
 * CPU, over all threads' iterations), time per item, rates per second,
 * and thread 0's counters (those present in the first repetition). */
struct pc_bench_summary {
	struct pc_bench_stats real, cpu, per_item, items_ps, bytes_ps;
	unsigned ncounters;
	const char *counter_names[PC_BENCH_MAX_COUNTERS];
	struct pc_bench_stats counters[PC_BENCH_MAX_COUNTERS];
	bool noisy;             /* real.cv above the session's max_cv */
};

/* Per-iteration figures of one sample (iterations counted over threads). */
double bench_sample_real(const struct pc_bench_entry *e, const struct pc_bench_sample *s);
double bench_sample_cpu(const struct pc_bench_entry *e, const struct pc_bench_sample *s);
double bench_sample_items_ps(const struct pc_bench_entry *e, const struct pc_bench_sample *s);
double bench_sample_bytes_ps(const struct pc_bench_entry *e, const struct pc_bench_sample *s);

/* Summarise a measured entry. Returns 0, -EINVAL without samples, -ENOMEM. */
int bench_summarize(const struct pc_bench_session *s, const struct pc_bench_entry *e,
		    struct pc_bench_summary *out);

/* The next trial's iteration count after one of iters iterations took
 * secs (< min_time): aim 20% past min_time, grow at most
 * PC_BENCH_MAX_GROWTH times, always by at least one, never past
 * PC_BENCH_MAX_ITERATIONS. */
uint64_t bench_next_iterations(uint64_t iters, double secs, double min_time);

/* The "context" object of the results file (machine, date, caches). */
struct cJSON *bench_context_json(void);

#endif
