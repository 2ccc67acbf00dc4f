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
 * more repetitions would not change that. */
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
};

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
	enum pc_outcome out;
	bool decided;
	size_t n_ours, n_other;
};

/* Time per item of one repetition, ns: from items/s where the row has it,
 * else the real time per iteration (as pc_rstat.tpi_ns). */
double pc_rsample_tpi(const struct pc_rsample *s);

/* Judge ours against other, whose time counts scale times. Returns 0 (an
 * untested pair included), -ENOMEM. */
int pc_judge_pair(const struct pc_rbench *ours, const struct pc_rbench *other, double scale,
		  const struct pc_decide *d, struct pc_judgement *out);

/* "faster", "slower", "no significant difference", "untested". */
const char *pc_outcome_name(enum pc_outcome o);
/* "peer", "limit", "variant". */
const char *pc_pair_kind_name(enum pc_pair_kind k);

#endif
