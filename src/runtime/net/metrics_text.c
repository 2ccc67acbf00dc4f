/* SPDX-License-Identifier: MIT */
/* percore net: the Prometheus text exposition (format 0.0.4) of a metrics
 * registry. Reads every shard's values relaxed: each has one writer, its
 * shard, and a scrape needs a recent value of each, not one instant. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/metrics_impl.h"

static const char *kind_name(enum pc_metric_kind k)
{
	return k == PC_METRIC_COUNTER ? "counter" : k == PC_METRIC_GAUGE ? "gauge" : "histogram";
}

/* HELP text escapes backslash and newline; label values also the quote. */
static void put_escaped(FILE *out, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (quote && *s == '"')
			fputs("\\\"", out);
		else
			fputc(*s, out);
	}
}

static void put_head(FILE *out, const char *name, const char *help, enum pc_metric_kind kind)
{
	fprintf(out, "# HELP percore_%s ", name);
	put_escaped(out, help, false);
	fprintf(out, "\n# TYPE percore_%s %s\n", name, kind_name(kind));
}

/* A figure in its base unit: integers exactly, scaled ones as decimals. */
static void put_value(FILE *out, uint64_t v, double scale, bool is_signed)
{
	if (scale == 1 && is_signed)
		fprintf(out, " %lld\n", (long long)v);
	else if (scale == 1)
		fprintf(out, " %llu\n", (unsigned long long)v);
	else
		fprintf(out, " %.15g\n", (is_signed ? (double)(int64_t)v : (double)v) * scale);
}

/* name{shard="i",label="v"} or the parts of it that exist. */
static void put_series(FILE *out, const char *name, const char *suffix, int shard,
		       const char *label, const char *value)
{
	bool any = shard >= 0 || label;

	fprintf(out, "percore_%s%s%s", name, suffix, any ? "{" : "");
	if (shard >= 0)
		fprintf(out, "shard=\"%d\"%s", shard, label ? "," : "");
	if (label) {
		fprintf(out, "%s=\"", label);
		put_escaped(out, value, true);
		fputc('"', out);
	}
	fputs(any ? "}" : "", out);
}

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void put_histogram(FILE *out, const struct met_family *f, unsigned shard)
{
	const uint64_t *p = pc_metric_slot_(&f->h, shard);
	unsigned nb = f->h._nbounds;
	uint64_t cum = 0;
	char le[48];

	for (unsigned b = 0; b <= nb; b++) {
		cum += load(&p[b]);
		if (b < nb)
			snprintf(le, sizeof(le), "%.15g", (double)f->bounds[b] * f->scale);
		else
			snprintf(le, sizeof(le), "+Inf");
		put_series(out, f->name, "_bucket", (int)shard, "le", le);
		fprintf(out, " %llu\n", (unsigned long long)cum);
	}
	put_series(out, f->name, "_sum", (int)shard, NULL, NULL);
	put_value(out, load(&p[nb + 1]), f->scale, false);
	/* The count is the +Inf bucket, read once: they always agree. */
	put_series(out, f->name, "_count", (int)shard, NULL, NULL);
	fprintf(out, " %llu\n", (unsigned long long)cum);
}

static void put_family(FILE *out, const struct met_family *f, unsigned shards)
{
	put_head(out, f->name, f->help, f->h._kind);
	for (unsigned i = 0; i < shards; i++) {
		if (f->h._kind == PC_METRIC_HISTOGRAM) {
			put_histogram(out, f, i);
			continue;
		}
		put_series(out, f->name, "", (int)i, NULL, NULL);
		put_value(out, load(pc_metric_slot_(&f->h, i)), f->scale,
			  f->h._kind == PC_METRIC_GAUGE);
	}
}

/* Read every shard's struct (or the process's one), then print the rows
 * family by family. Shards whose read fails are left out. */
static int put_table(FILE *out, const struct met_table *t, unsigned shards)
{
	unsigned n = t->per_shard ? shards : 1;
	char *bufs = calloc(n, t->size);
	bool *ok = calloc(n, sizeof(*ok));

	if (!bufs || !ok) {
		free(bufs);
		free(ok);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		ok[i] = !t->read(t->ctx, i, bufs + (size_t)i * t->size);
	for (unsigned r = 0; r < t->nrows; r++) {
		const struct pc_metric_field *f = &t->rows[r];

		if (!r || strcmp(t->rows[r - 1].name, f->name))
			put_head(out, f->name, f->help, f->kind);
		for (unsigned i = 0; i < n; i++) {
			if (!ok[i])
				continue;
			put_series(out, f->name, "", t->per_shard ? (int)i : -1, f->label,
				   f->label_value);
			put_value(out, *(const uint64_t *)(bufs + (size_t)i * t->size + f->offset),
				  f->scale, f->kind == PC_METRIC_GAUGE);
		}
	}
	free(bufs);
	free(ok);
	return 0;
}

int pc_metrics_write(struct pc_metrics *m, FILE *out)
{
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	for (const struct met_entry *e = m->first; e && !rc; e = e->next) {
		if (e->table)
			rc = put_table(out, e->table, m->shards);
		else
			put_family(out, &e->fam, m->shards);
	}
	pthread_mutex_unlock(&m->lock);
	if (!rc && (fflush(out) || ferror(out)))
		rc = -EIO;
	return rc;
}
