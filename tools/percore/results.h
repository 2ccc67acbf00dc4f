/* SPDX-License-Identifier: MIT */
/* percore report/compare: benchmark results files, loaded with cJSON.
 *
 * Reads the layout docs/ARCHITECTURE.md specifies ("Benchmark results
 * file"), which is Google Benchmark's plus a `percore` object, so files
 * written by Google Benchmark itself load too. Rows are grouped by run_name:
 * one struct pc_rbench per benchmark, holding its per-repetition samples and
 * the aggregates the file carried. Everything optional may be absent. */
#ifndef PERCORE_TOOL_RESULTS_H
#define PERCORE_TOOL_RESULTS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* One repetition of one benchmark. Times in nanoseconds per iteration;
 * rates NAN when the row had none. */
struct pc_rsample {
	double real_ns, cpu_ns, items_ps, bytes_ps;
};

/* A counter (any numeric field Google Benchmark does not define), one value
 * per sample. */
struct pc_rcounter {
	char *name;
	double *v;      /* nsamples values, NAN where a row lacked it */
};

/* Summary figures, computed once when a file is loaded. */
struct pc_rstat {
	size_t n;           /* repetitions with samples */
	double tpi_ns;      /* median time per item, ns (time per iteration when
	                     * the benchmark reports no items) */
	double real_ns;     /* median real time per iteration, ns */
	double mean_ns, stddev_ns;  /* of real time per iteration */
	double cv;          /* stddev / mean of real time (fraction); NAN if unknown */
	double items_ps;    /* median items/s, NAN when none */
	double bytes_ps;    /* median bytes/s, NAN when none */
};

struct pc_rbench {
	char *name;         /* run_name, plus "/pm_qos:on" when tagged (below) */
	unsigned threads;
	unsigned source;    /* index of the input file it came from */
	size_t nsamples;
	struct pc_rsample *s;
	/* repetitions that failed: rows with error_occurred, and rows whose
	 * time is not a positive number (a load generator or helper that
	 * failed and left 0); they bring no sample, and are counted so a
	 * shortened row never passes unseen */
	size_t nfailed;
	size_t ncounters;
	struct pc_rcounter *c;
	/* aggregates as the file wrote them, NAN when absent */
	double agg_median_ns, agg_mean_ns, agg_stddev_ns, agg_cv;
	double agg_items_ps, agg_bytes_ps;
	struct pc_rstat st;
};

struct pc_results {
	size_t n;
	struct pc_rbench *b;    /* in order of first appearance */
	size_t nfiles;
	cJSON **roots;          /* each input's parsed document */
	const cJSON *context;   /* of the first input; may be NULL */
	const cJSON *percore;   /* of the first input; may be NULL */
};

/* Load flags. */
enum {
	/* Append "/pm_qos:on" to the names of rows from a file recorded with
	 * `percore bench --pm-qos` that held the request (percore.pm_qos.held,
	 * or in files without it percore.options.pm_qos), so that the
	 * same benchmark measured with and without the request can stand side
	 * by side, as /affinity:on and /affinity:off already do. */
	PC_RESULTS_TAG_PMQOS = 1u << 0,
};

/* Parse any JSON file. Returns the document (free with cJSON_Delete), or
 * NULL with a one-line reason in err ("FILE:LINE: malformed JSON"). */
cJSON *pc_json_load(const char *path, char *err, size_t errlen);

/* Load one results file into a new set. Returns NULL on failure with a
 * one-line reason (naming the file and what is wrong with it) in err. */
struct pc_results *pc_results_load(const char *path, unsigned flags,
				   char *err, size_t errlen);

/* The same from a document already parsed (the harness's own results while
 * it runs), which the new set takes over: freed with it, or at once on
 * failure. name stands for the file in messages. */
struct pc_results *pc_results_from_json(cJSON *root, const char *name, unsigned flags,
					char *err, size_t errlen);

/* Add the rows of another file to res. A benchmark already present keeps
 * its first samples; the duplicate is skipped and reported through warn
 * (may be NULL). Returns 0, or -EINVAL/-ENOMEM/-errno with a reason in err;
 * on failure res is unchanged. */
int pc_results_append(struct pc_results *res, const char *path, unsigned flags,
		      char *err, size_t errlen);

void pc_results_free(struct pc_results *res);

/* The benchmark called name, or NULL. */
const struct pc_rbench *pc_results_find(const struct pc_results *res, const char *name);

/* Index of the benchmark called name, or -1. */
long pc_results_index(const struct pc_results *res, const char *name);

/* The value at a dotted path ("percore.options.max_cv") inside input file
 * `file`, or NULL. */
const cJSON *pc_results_get(const struct pc_results *res, unsigned file, const char *path);

/* The CV threshold recorded in the first file (percore.options.max_cv),
 * or fallback. */
double pc_results_max_cv(const struct pc_results *res, double fallback);

/* Median of a counter over the samples, NAN when it has no values. */
double pc_rcounter_median(const struct pc_rbench *b, const struct pc_rcounter *c);

#endif
