/* SPDX-License-Identifier: MIT */
/* percore report/compare: numbers as people read them in a report.
 *
 * Each formatter returns a small struct by value, so it can be used inline:
 *   printf("%s", pc_fmt_time(ns).s);
 * (the temporary lives until the end of the full expression). Missing
 * values (NAN) print as an em dash. Output depends only on the value, so
 * reports are byte-for-byte reproducible. */
#ifndef PERCORE_TOOL_FMT_H
#define PERCORE_TOOL_FMT_H

struct pc_str {
	char s[48];
};

#define PC_FMT_NONE "\xe2\x80\x94" /* em dash: no value */

/* 3 significant digits in the unit that keeps the number below 1000:
 * "4.12 ns", "13.5 µs", "2.00 ms", "1.20 s". */
struct pc_str pc_fmt_time(double ns);
/* Rate with an SI prefix: pc_fmt_rate(2.43e8, "/s") = "243 M/s",
 * pc_fmt_rate(1.2e10, "B/s") = "12.0 GB/s". */
struct pc_str pc_fmt_rate(double v, const char *unit);
/* A fraction as a percentage with one decimal: 0.032 -> "3.2%". */
struct pc_str pc_fmt_pct(double frac);
/* A signed change in percent: 12.34 -> "+12.3%", -4 -> "-4.0%". */
struct pc_str pc_fmt_change(double pct);
/* A ratio: 2.391 -> "2.39x", 123.4 -> "123x". */
struct pc_str pc_fmt_ratio(double r);
/* A p-value with four decimals, "<0.0001" below that. */
struct pc_str pc_fmt_p(double p);
/* A size in bytes with binary prefixes: "32 KiB", "1.25 MiB". */
struct pc_str pc_fmt_size(double bytes);
/* A plain number with 3 significant digits and an SI prefix: "1.50 M". */
struct pc_str pc_fmt_si(double v);

#endif
