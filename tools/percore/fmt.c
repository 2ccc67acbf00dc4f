/* SPDX-License-Identifier: MIT */
/* percore report/compare: number formatting. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"

static struct pc_str none(void)
{
	struct pc_str r;

	snprintf(r.s, sizeof(r.s), "%s", PC_FMT_NONE);
	return r;
}

/* Prints v / step^k with 3 significant digits, picking the smallest k that
 * keeps the rounded figure below 1000 (so 999.96 becomes "1.00 k", never
 * "1000"). */
static struct pc_str scaled(double v, double step, const char *const *units, int nunits,
			    const char *sep, const char *tail)
{
	struct pc_str r;
	double a = fabs(v);
	int k = 0;

	if (!isfinite(v))
		return none();
	while (k + 1 < nunits && a >= 999.5) {
		a /= step;
		v /= step;
		k++;
	}
	int dec = a < 9.995 ? 2 : a < 99.95 ? 1 : 0;
	snprintf(r.s, sizeof(r.s), "%.*f%s%s%s", dec, v, sep, units[k], tail);
	return r;
}

struct pc_str pc_fmt_time(double ns)
{
	static const char *const u[] = { "ns", "\xc2\xb5s", "ms", "s" };

	return scaled(ns, 1000, u, 4, " ", "");
}

struct pc_str pc_fmt_rate(double v, const char *unit)
{
	static const char *const p[] = { "", "k", "M", "G", "T", "P" };

	return scaled(v, 1000, p, 6, " ", unit);
}

struct pc_str pc_fmt_si(double v)
{
	static const char *const p[] = { "", " k", " M", " G", " T", " P" };

	return scaled(v, 1000, p, 6, "", "");
}

struct pc_str pc_fmt_size(double bytes)
{
	static const char *const p[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	struct pc_str r;
	double a = bytes;
	int k = 0;

	if (!isfinite(bytes))
		return none();
	while (k < 4 && a >= 1024) {
		a /= 1024;
		k++;
	}
	if (a == floor(a))
		snprintf(r.s, sizeof(r.s), "%.0f %s", a, p[k]);
	else
		snprintf(r.s, sizeof(r.s), "%.2f %s", a, p[k]);
	return r;
}

struct pc_str pc_fmt_pct(double frac)
{
	struct pc_str r;

	if (!isfinite(frac))
		return none();
	snprintf(r.s, sizeof(r.s), "%.1f%%", frac * 100);
	return r;
}

struct pc_str pc_fmt_change(double pct)
{
	struct pc_str r;

	if (!isfinite(pct))
		return none();
	/* never print "-0.0%" or "+0.0%" for a change that rounds to zero */
	if (fabs(pct) < 0.05)
		pct = 0;
	snprintf(r.s, sizeof(r.s), pct == 0 ? "%.1f%%" : "%+.1f%%", pct);
	return r;
}

struct pc_str pc_fmt_ratio(double x)
{
	struct pc_str r;

	if (!isfinite(x))
		return none();
	/* two significant digits below 0.1: 0.0042x, never 0.00x */
	snprintf(r.s, sizeof(r.s), x < 0.0995 ? "%.2gx" : x < 9.995 ? "%.2fx" : x < 99.95 ? "%.1fx"
		 : "%.0fx", x);
	return r;
}

struct pc_str pc_fmt_p(double p)
{
	struct pc_str r;

	if (!isfinite(p))
		return none();
	snprintf(r.s, sizeof(r.s), p < 0.00005 ? "<0.0001" : "%.4f", p);
	return r;
}
