/* SPDX-License-Identifier: MIT */
/* percore report: building the report from one or more results files.
 *
 * report.c         the whole document: title, key findings, sections, and
 *                  the comparison against a baseline
 * report_system.c  System: machine, limits, build, run options, audit
 * report_pairs.c   which rows stand beside which (the pairing table), and
 *                  the Micro benchmarks and Integration sections
 * report_arch.c    Architecture scaling: ops/s per core count, efficiency,
 *                  the chart, pinning's effect
 * report_noise.c   the noise experiment and the tune steps
 * report_md.c, report_html.c render the document (doc.h). */
#ifndef PERCORE_TOOL_REPORT_H
#define PERCORE_TOOL_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "doc.h"
#include "results.h"
#include "verdict.h"

/* Where a benchmark's row goes in the report. */
enum pc_section {
	PC_SEC_MICRO,
	PC_SEC_INTEGRATION,
	PC_SEC_ARCH,
	PC_SEC_NOISE,
	PC_SEC_PEER,    /* a peer: shown beside the rows that claim it */
};

/* A row another row stands beside. */
struct pc_peer {
	size_t idx;             /* index into the results */
	enum pc_pair_kind kind;
	double scale;           /* speedup = scale * its time / our time */
	const char *finding;    /* a key finding's title for this pair, or NULL */
};

/* For each benchmark of a results set: its section and the rows it is
 * compared with. */
struct pc_pair {
	enum pc_section sec;
	size_t npeers;
	struct pc_peer *peers;  /* in the rule's order, then file order */
	bool claimed;           /* some other row lists this one beside it */
};

struct pc_pairing {
	size_t n;
	struct pc_pair *p;      /* one per benchmark, same index */
};

/* Apply the pairing table to every benchmark. Returns 0 or -ENOMEM. */
int pc_pairing_build(const struct pc_results *res, struct pc_pairing *out);
void pc_pairing_free(struct pc_pairing *pp);

/* The verdict on one pair: row `ours` against its peer `peer` (an index
 * into pc_pair.peers of that row): on time per item, and where both rows
 * record it on the server's CPU per request (verdict.h). */
struct pc_judged {
	size_t ours, peer;
	struct pc_judgement j;
	bool has_cpu;
	struct pc_judgement cpu;        /* when has_cpu */
	bool client_bound;              /* the client bound the throughput */
};

/* The verdict that speaks for the servers of a pair: on CPU per request
 * where the client bound the throughput and both rows record it, else on
 * time per item. */
const struct pc_judgement *pc_judged_server(const struct pc_judged *jd);

/* Judge every pair of a pairing, in row order and peer order, and adjust
 * the p-values of every test of the pairs that count together (time per
 * item and CPU per request alike). Returns 0 and a new array in *out
 * (free()), -ENOMEM. */
int pc_pairing_judge(const struct pc_results *res, const struct pc_pairing *pp,
		     const struct pc_decide *d, struct pc_judged **out, size_t *n);

struct pc_report_ctx {
	const struct pc_results *res;
	const struct pc_pairing *pairs;
	struct pc_judged *judged;       /* every pair, from pc_pairing_judge */
	size_t njudged;
	struct pc_decide decide;
	cJSON *json;            /* the summary being built, or NULL */
	double max_cv;          /* CV above this is noisy */
	struct pc_doc *doc;     /* the sections */
	struct pc_doc *head;    /* title and key findings, placed first */
	struct pc_block *findings;
	const cJSON *tune;      /* `percore tune --dry-run --json`, or NULL */
};

/* Add a line to the key findings at the top of the report. */
void pc_report_finding(struct pc_report_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A new chart (svg.h); NULL, with the document marked failed, when memory
 * runs out. */
struct pc_chart *pc_report_chart(struct pc_report_ctx *c, int kind, const char *title,
				 const char *xlabel, const char *ylabel);

/* Shared figures of one benchmark. */
bool pc_report_noisy(const struct pc_report_ctx *c, const struct pc_rbench *b);
/* Items per second (ops/s): the median rate, or derived from time/item. */
double pc_report_ops(const struct pc_rbench *b);
/* Append three cells: time per item, rate (bytes/s when the benchmark
 * reports bytes, else items/s), CV with the noisy mark. */
void pc_report_cells(const struct pc_report_ctx *c, struct pc_table *t,
		     const struct pc_rbench *b);
/* The CV cell alone. */
void pc_report_cv_cell(const struct pc_report_ctx *c, struct pc_table *t,
		       const struct pc_rbench *b);
/* Name without its configuration suffixes (/affinity:..., /pm_qos:on). */
void pc_report_base_name(const char *name, char *buf, size_t len);
/* The audit entry with this id, or NULL. */
const cJSON *pc_report_audit(const struct pc_report_ctx *c, const char *id);
/* A string field of a JSON object (an audit entry, say): "" when absent. */
const char *pc_report_audit_str(const cJSON *entry, const char *field);

/* The verdict on row i against its k-th peer, or NULL. */
const struct pc_judgement *pc_report_judged(const struct pc_report_ctx *c, size_t i, size_t k);
/* Both verdicts on row i against its k-th peer, or NULL. */
const struct pc_judged *pc_report_judged_pair(const struct pc_report_ctx *c, size_t i, size_t k);
/* The peer (or limit) of row i with the lowest median time: "the fastest
 * peer"; -1 when it has none. Variants never count. */
long pc_report_fastest(const struct pc_report_ctx *c, size_t i);
/* A verdict as the tables say it: "faster", "no significant difference
 * (undecided)", "below the physical limit: a measurement problem", ... */
void pc_report_verdict_text(const struct pc_report_ctx *c, enum pc_pair_kind kind,
			    const struct pc_judgement *j, char *buf, size_t len);
/* The verdict as above, with ", client-bound" where the client bound the
 * pair's throughput. */
void pc_report_pair_text(const struct pc_report_ctx *c, enum pc_pair_kind kind,
			 const struct pc_judged *jd, char *buf, size_t len);
/* A CPU verdict's outcome: "less CPU", "more CPU", "no significant
 * difference", "untested". */
const char *pc_report_cpu_outcome(enum pc_outcome o);
/* The key findings of one section's pairs (report_findings.c). */
void pc_report_tally(struct pc_report_ctx *c, enum pc_section sec, const char *what);
/* The finding that says how many pairs were decided. */
void pc_report_decided_finding(struct pc_report_ctx *c);
/* The JSON summary: alpha, margin, summary counts, every pair, and an empty
 * "findings" array that pc_report_finding fills. NULL without memory. */
cJSON *pc_report_json_start(const struct pc_report_ctx *c);

void pc_report_system(struct pc_report_ctx *c);
void pc_report_benches(struct pc_report_ctx *c);
void pc_report_arch(struct pc_report_ctx *c);
void pc_report_noise(struct pc_report_ctx *c);
void pc_report_storage(struct pc_report_ctx *c);

struct pc_report_opts {
	double max_cv;                  /* <= 0: from the results, else 5% */
	double alpha;                   /* for the comparison and the pairs */
	double margin;                  /* pairs within 1 + margin are decided
	                                 * equal; <= 0: 0.05 */
	const struct pc_results *baseline;      /* may be NULL */
	const char *const *inputs;      /* file names shown in the header */
	size_t ninputs;
	const char *baseline_name;
	/* what `percore tune --dry-run --json` printed on the measured
	 * machine (an object with a "steps" array), or NULL: the tune steps
	 * are then judged from the audit */
	const cJSON *tune;
};

/* Build the whole report. With json not NULL, *json receives the key
 * findings as JSON (the verdict of every pair, the counts and the findings'
 * text), or NULL when memory ran out. Returns NULL when memory runs out. */
struct pc_doc *pc_report_build(const struct pc_results *res, const struct pc_report_opts *o,
			       cJSON **json);

#endif
