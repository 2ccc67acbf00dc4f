/* SPDX-License-Identifier: MIT */
/* percore bench: the results table: one line per benchmark with the median
 * of its repetitions, scaled to readable units, and the noise flag. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/runner.h"

/* v scaled by the largest step of 1000 (or 1024) it reaches. */
static void scaled(char *buf, size_t len, double v, double step, const char *const *units,
		   size_t nunits, const char *suffix)
{
	size_t u = 0;

	if (v <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	while (u + 1 < nunits && v >= step * 0.9995) {
		v /= step;
		u++;
	}
	snprintf(buf, len, "%.*f %s%s", v < 10 ? 2 : v < 100 ? 1 : 0, v, units[u], suffix);
}

static void fmt_time(char *buf, size_t len, double ns)
{
	static const char *const u[] = { "ns", "us", "ms", "s" };

	scaled(buf, len, ns, 1000, u, 4, "");
}

static void fmt_rate(char *buf, size_t len, double per_s)
{
	static const char *const u[] = { "", "k", "M", "G", "T" };

	scaled(buf, len, per_s, 1000, u, 5, "/s");
}

static void fmt_bytes(char *buf, size_t len, double per_s)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };

	scaled(buf, len, per_s, 1024, u, 5, "/s");
}

static int name_width(const struct pc_bench_session *s)
{
	int w = (int)strlen("benchmark");

	for (size_t i = 0; i < s->n; i++)
		if ((int)strlen(s->e[i].name) > w)
			w = (int)strlen(s->e[i].name);
	return w;
}

static void print_row(const struct pc_bench_session *s, const struct pc_bench_entry *e,
		      int w, FILE *out, size_t *noisy)
{
	struct pc_bench_summary sum;
	char t[32], items[32], bytes[32];

	if (bench_summarize(s, e, &sum)) {
		fprintf(out, "%-*s  (no results", w, e->name);
		if (e->nfailed)
			fprintf(out, ": %u repetitions failed: %s", e->nfailed, e->fail_why);
		fputs(")\n", out);
		return;
	}
	fmt_time(t, sizeof(t), sum.per_item.median);
	fmt_rate(items, sizeof(items), sum.items_ps.median);
	fmt_bytes(bytes, sizeof(bytes), sum.bytes_ps.median);
	fprintf(out, "%-*s  %11s  %12s  %13s  %6.1f%%%s", w, e->name, t, items, bytes,
		sum.real.cv * 100, sum.noisy ? "  noisy" : "");
	if (e->nfailed)
		fprintf(out, "  %u of %u failed: %s", e->nfailed, e->nfailed + e->nsamples,
			e->fail_why);
	fputc('\n', out);
	*noisy += sum.noisy;
}

int pc_bench_session_print(const struct pc_bench_session *s, FILE *out)
{
	int w = name_width(s);
	size_t noisy = 0, skipped = 0;

	fprintf(out, "%-*s  %11s  %12s  %13s  %7s\n", w, "benchmark", "time/item", "items/s",
		"bytes/s", "CV");
	for (size_t i = 0; i < s->n; i++) {
		if (s->e[i].skip)
			skipped++;
		else
			print_row(s, &s->e[i], w, out, &noisy);
	}
	if (s->rounds > s->opt.repetitions)
		fprintf(out, "\nmedian of %u to %u repetitions (more for undecided rows; "
			     "stopped: %s)%s, seed %llu\n", s->opt.repetitions, s->rounds,
			s->stop ? s->stop : "?", s->opt.interleave ? " interleaved" : "",
			(unsigned long long)s->opt.seed);
	else
		fprintf(out, "\nmedian of %u repetitions%s, seed %llu\n", s->opt.repetitions,
			s->opt.interleave ? " interleaved" : " back to back",
			(unsigned long long)s->opt.seed);
	if (noisy)
		fprintf(out, "noisy: %zu result%s with a CV above %.1f%%; "
			     "compare them only on a quieter machine (see percore env)\n",
			noisy, noisy == 1 ? "" : "s", s->opt.max_cv * 100);
	for (size_t i = 0; skipped && i < s->n; i++)
		if (s->e[i].skip)
			fprintf(out, "skipped: %s: %s\n", s->e[i].name, s->e[i].why);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}
