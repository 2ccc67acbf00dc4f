/* SPDX-License-Identifier: MIT */
/* percore report and bench: the verdict on one of our rows against a row it
 * stands beside in the same run (a peer, a physical limit, or a variant of
 * ours), from the interleaved repetitions of both.
 *
 * The test is a two-sided Mann-Whitney U test on the per-repetition times
 * per item (ours against the other row's, times its scale), exact with ties
 * for small samples (pc_mwu_test_ties); the direction of a significant
 * result is read from the same U statistic. The speedup is the
 * Hodges-Lehmann estimate of other / ours with its interval (pc_ratio_ci).
 * A pair is decided when the test is significant, or when the interval lies
 * inside 1 / (1 + margin) .. 1 + margin: no difference worth the name, and
 * more repetitions would not change that.
 *
 * The pairs that count (peers and limits) are many tests at once: a few
 * would come out significant by chance. Their p-values are adjusted
 * together with the Benjamini-Hochberg procedure (pc_judge_adjust), which
 * keeps the expected share of false discoveries among the significant
 * pairs under alpha, and their verdicts follow the adjusted p.
 *
 * Where both rows record the server's CPU time per request (the counter
 * PC_COUNTER_SERVER_CPU), the pair gets a second verdict on those figures,
 * by the same test and interval (pc_judge_cpu), which joins the same
 * family. On a machine where the load generator saturates its CPU first,
 * the throughput measures the client: a pair where either row's median
 * PC_COUNTER_CLIENT_UTIL reaches PC_CLIENT_BOUND is client-bound, and its
 * server is better judged by CPU per request. */
#ifndef PERCORE_TOOL_VERDICT_H
#define PERCORE_TOOL_VERDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "results.h"

/* What the other row of a pair is. */
enum pc_pair_kind {
	PC_PAIR_PEER,           /* somebody else's code doing the same work */
	PC_PAIR_LIMIT,          /* a physical limit: beating it is a measurement problem */
	PC_PAIR_VARIANT,        /* our own alternative (a strawman, a batched form):
	                         * shown, never counted */
	PC_PAIR_REFERENCE,      /* a row that does only part of the work, or is
	                         * measured another way: shown with its ratio,
	                         * never counted */
};

/* Whether pairs of this kind count in the verdicts (peers and limits):
 * they form the family whose p-values are adjusted together. */
bool pc_pair_kind_counts(enum pc_pair_kind k);

enum pc_outcome {
	PC_OUT_FASTER,          /* ours significantly faster */
	PC_OUT_SLOWER,          /* ours significantly slower */
	PC_OUT_SAME,            /* no significant difference */
	PC_OUT_UNTESTED,        /* fewer than PC_MWU_MIN_REPS repetitions on a side */
};

/* How strict a decision is. */
struct pc_decide {
	double alpha;           /* the test's significance level */
	double ci_alpha;        /* the interval covers with 1 - ci_alpha */
	double margin;          /* equivalence: within a factor of 1 + margin */
};

struct pc_judgement {
	double speedup, lo, hi; /* other / ours: estimate and interval (lo 0, hi
	                         * INFINITY when the samples are too few) */
	double p;               /* NAN when untested */
	double p_adj;           /* Benjamini-Hochberg over the counted pairs;
	                         * NAN outside that family (the verdict then
	                         * follows p) */
	int dir;                /* from the U statistic: -1 ours faster, 1
	                         * slower, 0 a tie */
	enum pc_outcome out;
	bool decided;
	size_t n_ours, n_other;
};

/* The counters a server row records beside its time: the server's CPU time
 * per request (ns), and the load generator's busy share of its CPU over the
 * timed part (0-1). */
#define PC_COUNTER_SERVER_CPU "server_cpu_ns_per_req"
#define PC_COUNTER_CLIENT_UTIL "client_util"
/* A client at least this busy bounds the throughput it measures. */
#define PC_CLIENT_BOUND 0.9

/* Time per item of one repetition, ns: from items/s where the row has it,
 * else the real time per iteration (as pc_rstat.tpi_ns). */
double pc_rsample_tpi(const struct pc_rsample *s);

/* Judge ours against other, whose time counts scale times. Returns 0 (an
 * untested pair included), -ENOMEM. */
int pc_judge_pair(const struct pc_rbench *ours, const struct pc_rbench *other, double scale,
		  const struct pc_decide *d, struct pc_judgement *out);

/* Judge ours against other on the server's CPU time per request, times
 * scale for other: the same test, interval and outcomes as pc_judge_pair
 * (faster: ours spends less CPU per request). Returns 0, -ENOENT when
 * either row lacks PC_COUNTER_SERVER_CPU, -ENOMEM. */
int pc_judge_cpu(const struct pc_rbench *ours, const struct pc_rbench *other, double scale,
		 const struct pc_decide *d, struct pc_judgement *out);

/* Whether the client bound a pair's throughput: the median
 * PC_COUNTER_CLIENT_UTIL of either row is at least PC_CLIENT_BOUND. */
bool pc_judge_client_bound(const struct pc_rbench *ours, const struct pc_rbench *other);

/* Adjust the p-values of the n tested judgements js together
 * (Benjamini-Hochberg, step-up: p_(i) * n / i, made monotone, capped at
 * 1), store them in p_adj and settle each outcome and decided flag by the
 * adjusted p. Untested judgements (p NAN) are left out of the family and
 * untouched. Returns 0 or -ENOMEM. */
int pc_judge_adjust(struct pc_judgement *const *js, size_t n, const struct pc_decide *d);

/* "faster", "slower", "no significant difference", "untested". */
const char *pc_outcome_name(enum pc_outcome o);
/* "peer", "limit", "variant", "reference". */
const char *pc_pair_kind_name(enum pc_pair_kind k);

#endif
