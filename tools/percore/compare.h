/* SPDX-License-Identifier: MIT */
/* percore report/compare: is the difference between two runs real?
 *
 * For every benchmark present in both runs: the change of the median real
 * time per iteration (the figure compare.py compares), and a two-sided Mann-Whitney U test on the per-repetition real
 * times and, separately, CPU times (stats.h), as compare.py runs them (ties:
 * the normal approximation with tie correction, like scipy). Lower time is
 * better. Verdicts:
 *   improved / regressed  p < alpha, in the direction the U statistic shows
 *                         (not the medians: the tested statistic decides)
 *   unchanged             p >= alpha
 *   inconclusive          fewer than PC_MWU_MIN_REPS repetitions on either
 *                         side (compare.py runs no test then either), or not
 *                         significant with so few that even completely
 *                         separated untied samples could not reach p < alpha
 *                         (3 vs 3 at 0.05): "unchanged" would claim what the
 *                         data cannot show. A tied sample that does reach
 *                         p < alpha is significant, as in compare.py.
 * noisy flags a row whose CV of real time exceeds max_cv in either run; it
 * does not change the verdict, it tells the reader how much to trust it. */
#ifndef PERCORE_TOOL_COMPARE_H
#define PERCORE_TOOL_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "doc.h"
#include "results.h"

enum pc_verdict {
	PC_VERDICT_IMPROVED,
	PC_VERDICT_REGRESSED,
	PC_VERDICT_UNCHANGED,
	PC_VERDICT_INCONCLUSIVE,
	PC_VERDICT_COUNT
};

struct pc_cmp_row {
	const char *name;               /* points into the NEW results */
	double base_median, new_median; /* median real time per iteration, ns:
					 * the figure the verdict tests */
	double change_pct;              /* (new - base) / base, in percent */
	double p_value;                 /* real time; NAN when no test was run */
	enum pc_verdict verdict;
	double cpu_p_value;             /* the same test on CPU time */
	enum pc_verdict cpu_verdict;
	bool noisy;
	size_t n_base, n_new;           /* repetitions */
	double cv_base, cv_new;
	const char *why;                /* reason for inconclusive, else NULL */
};

struct pc_cmp {
	size_t n;
	struct pc_cmp_row *rows;        /* in the NEW file's order */
	size_t count[PC_VERDICT_COUNT];
	size_t noisy, only_base, only_new;
	size_t significant_noisy;       /* improved or regressed, and noisy */
	size_t regressed_quiet;         /* regressed (real or CPU time), not noisy */
	size_t regressed_any;           /* regressed (real or CPU time) */
	double alpha, max_cv;
	/* how the two runs were set up differently ("min_time 0.2 -> 0.1; ..."),
	 * or NULL: a difference there can explain a change */
	char *setup_diff;
};

/* Compare every benchmark present in both sets. Returns 0 or -ENOMEM;
 * out must be released with pc_cmp_free(). */
int pc_compare(const struct pc_results *base, const struct pc_results *cur,
	       double alpha, double max_cv, struct pc_cmp *out);
void pc_cmp_free(struct pc_cmp *c);

/* "improved", "regressed", "unchanged", "inconclusive". */
const char *pc_verdict_name(enum pc_verdict v);

/* Add the comparison to a document: a summary paragraph and a table. */
void pc_cmp_doc(const struct pc_cmp *c, struct pc_doc *d);

/* Write the comparison as JSON:
 *   {"rows": [{"name", "base_median", "new_median", "change_pct",
 *              "p_value", "verdict", "noisy", "cpu_p_value", "cpu_verdict"}],
 *    "summary": {...}}
 * Returns 0, -ENOMEM or -EIO. */
int pc_cmp_write_json(const struct pc_cmp *c, FILE *out);

#endif
