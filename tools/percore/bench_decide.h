/* SPDX-License-Identifier: MIT */
/* percore bench: which rows need more rounds. The runner (percore/bench.h)
 * repeats rounds while its more() callback asks; this one asks for the rows
 * of every pair the report would judge (report.h: the same pairing rules,
 * the same verdict) that is not yet decided. Variants never ask.
 *
 * A pair stops early only on stronger evidence than the report asks for:
 * p below the interim alpha, or an interval at the interim level inside the
 * margin. Testing after every round and stopping at the first p < 0.05
 * would turn chance differences into findings; with a far smaller interim
 * alpha the many looks cost little, and the report's verdict at the end is
 * taken at its own alpha.
 *
 * A pair whose interval is so wide for its estimate that even the cap on
 * repetitions could not make the report decide it (the width shrinks as
 * one over the square root of the repetitions) stops asking; its verdict
 * stays "undecided". Of the others, the budget goes to the pairs cheapest
 * to decide first: the repetitions a side each still needs, by that
 * projection, times what a repetition of its two rows costs. On a noisy
 * machine most of the budget would otherwise go to pairs a few percent
 * apart that no affordable number of rounds separates. */
#ifndef PERCORE_TOOL_BENCH_DECIDE_H
#define PERCORE_TOOL_BENCH_DECIDE_H

#include <stdbool.h>
#include <stddef.h>

#include "percore/bench.h"
#include "verdict.h"

struct pc_bench_decide {
	struct pc_decide interim;       /* when a pair stops early */
	unsigned max_reps;              /* the runner's cap, for futility */
	struct pc_decide final;         /* the report's rule, for the count */
	size_t pairs, decided;          /* by the final rule, at the last count */
};

/* Defaults: interim p < 0.001 or a 99% interval inside 5%; final as
 * percore report (alpha 0.05, 95% interval, 5%). */
void pc_bench_decide_init(struct pc_bench_decide *d);

/* Repetitions a side before a pair may be called hopeless: on a noisy VM
 * one outlier among five makes the interval many times wider than it is
 * after a dozen (seen: 0.59x..19x at 5, SessionEcho/64), so an early
 * verdict of futility would stop measuring pairs more rounds decide. */
#define PC_DECIDE_FUTILE_MIN_REPS 12

/* Whether more repetitions, up to reach a side, cannot make the report's
 * rule (d->final) decide the undecided pair j, judged by d->interim: the
 * interval's half-width on the log scale, taken at the final level and
 * shrunk by sqrt(n / reach), is still wider than both the estimate's
 * distance from 1x (scaled to the test's level) and the room left inside
 * the margin. False while the interval is unbounded or fewer than
 * PC_DECIDE_FUTILE_MIN_REPS repetitions a side: too few to tell. */
bool pc_bench_decide_futile(const struct pc_judgement *j, const struct pc_bench_decide *d,
			    double reach);

/* Which of n pairs, costing cost_s[i] seconds each to decide, the budget
 * left_s affords: cheapest first, taken while the sum stays within it (a
 * row shared by pairs is counted for each, so the sum errs high). Sets
 * take[i] for those; returns how many. A pair left out asks again after
 * the next round, judged afresh. */
size_t pc_bench_decide_plan(const double *cost_s, size_t n, double left_s, bool *take);

/* The runner's more() callback (arg: a struct pc_bench_decide). Marks the
 * rows of the undecided pairs the budget left affords, cheapest to decide
 * first; when the results cannot be read back (no memory) it asks for
 * nothing, so the run ends with what it has. */
size_t pc_bench_decide_more(const struct pc_bench_session *s, bool *want, void *arg);

/* Count the pairs and the decided ones by the final rule into d. Returns 0,
 * -ENOMEM. */
int pc_bench_decide_count(const struct pc_bench_session *s, struct pc_bench_decide *d);

#endif
