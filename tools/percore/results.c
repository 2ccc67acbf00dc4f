/* SPDX-License-Identifier: MIT */
/* percore report/compare: loading benchmark results files (cJSON). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/bench.h"
#include "results.h"
#include "report_stats.h"
#include "verdict.h"

/* Larger than any results file the suite writes by far; a guard against
 * being handed something that is not one. */
#define RESULTS_MAX_BYTES (256u << 20)

/* Fields of a row that Google Benchmark defines; every other number in an
 * iteration row is a user counter. */
static const char *const std_fields[] = {
	"family_index", "per_family_instance_index", "repetitions",
	"repetition_index", "threads", "iterations", "real_time", "cpu_time",
	"items_per_second", "bytes_per_second",
};

static void fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		fail(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			char *nb = cap >= RESULTS_MAX_BYTES ? NULL : realloc(buf, cap ? cap * 2 : 65536);
			if (!nb) {
				fail(err, errlen, "%s: %s", path, cap >= RESULTS_MAX_BYTES
				     ? "larger than 256 MiB, not a results file" : strerror(ENOMEM));
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		fail(err, errlen, "%s: read error", path);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

static double unit_scale(const cJSON *row)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(row, "time_unit");
	const char *s = cJSON_IsString(u) ? u->valuestring : "ns";

	return !strcmp(s, "us") ? 1e3 : !strcmp(s, "ms") ? 1e6 : !strcmp(s, "s") ? 1e9 : 1;
}

static double num(const cJSON *row, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static bool truthy(const cJSON *v)
{
	if (cJSON_IsTrue(v))
		return true;
	if (cJSON_IsNumber(v))
		return v->valuedouble != 0;
	if (cJSON_IsString(v))
		return !strcmp(v->valuestring, "on") || !strcmp(v->valuestring, "true") ||
		       !strcmp(v->valuestring, "1");
	return false;
}

static struct pc_rbench *bench_get(struct pc_results *r, const char *name, unsigned src)
{
	long i = pc_results_index(r, name);

	if (i >= 0)
		return &r->b[i];
	struct pc_rbench *nb = realloc(r->b, (r->n + 1) * sizeof(*nb));
	if (!nb)
		return NULL;
	r->b = nb;
	nb = &r->b[r->n];
	memset(nb, 0, sizeof(*nb));
	if (!(nb->name = strdup(name)))
		return NULL;
	nb->source = src;
	nb->threads = 1;
	nb->agg_median_ns = nb->agg_mean_ns = nb->agg_stddev_ns = nb->agg_cv = NAN;
	nb->agg_items_ps = nb->agg_bytes_ps = NAN;
	r->n++;
	return nb;
}

static size_t sample_cap(size_t n)
{
	size_t cap = 4;

	while (cap < n)
		cap *= 2;
	return cap;
}

/* Room for one more sample. The arrays hold sample_cap(nsamples) entries,
 * so they are full exactly when nsamples is 0 or a power of two >= 4;
 * counters grow with the samples. */
static int bench_grow(struct pc_rbench *b)
{
	size_t n = b->nsamples, cap = sample_cap(n + 1);

	if (n && (n < 4 || (n & (n - 1))))
		return 0;
	struct pc_rsample *s = realloc(b->s, cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	b->s = s;
	for (size_t i = 0; i < b->ncounters; i++) {
		double *v = realloc(b->c[i].v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		b->c[i].v = v;
	}
	return 0;
}

static int counter_set(struct pc_rbench *b, const char *name, size_t at, double v)
{
	size_t i;

	for (i = 0; i < b->ncounters && strcmp(b->c[i].name, name); i++)
		;
	if (i == b->ncounters) {
		struct pc_rcounter *nc = realloc(b->c, (i + 1) * sizeof(*nc));
		size_t cap = sample_cap(b->nsamples);
		if (!nc)
			return -ENOMEM;
		b->c = nc;
		nc[i].name = strdup(name);
		nc[i].v = malloc(cap * sizeof(double));
		if (!nc[i].name || !nc[i].v) {
			free(nc[i].name);
			free(nc[i].v);
			return -ENOMEM;
		}
		for (size_t k = 0; k < cap; k++)
			nc[i].v[k] = NAN;
		b->ncounters++;
	}
	b->c[i].v[at] = v;
	return 0;
}

static bool is_std_field(const char *key)
{
	for (size_t i = 0; i < sizeof(std_fields) / sizeof(std_fields[0]); i++)
		if (!strcmp(key, std_fields[i]))
			return true;
	return false;
}

static int add_sample(struct pc_rbench *b, const cJSON *row, double scale)
{
	const cJSON *f;

	double t = num(row, "real_time") * scale;

	if (!(t > 0) || !isfinite(t)) {
		b->nfailed++;
		return 0;
	}
	if (bench_grow(b) < 0)
		return -ENOMEM;
	size_t at = b->nsamples++;
	b->s[at] = (struct pc_rsample){
		.real_ns = num(row, "real_time") * scale,
		.cpu_ns = num(row, "cpu_time") * scale,
		.items_ps = num(row, "items_per_second"),
		.bytes_ps = num(row, "bytes_per_second"),
	};
	for (size_t i = 0; i < b->ncounters; i++)
		b->c[i].v[at] = NAN;
	cJSON_ArrayForEach(f, row)
		if (cJSON_IsNumber(f) && !is_std_field(f->string) &&
		    counter_set(b, f->string, at, f->valuedouble) < 0)
			return -ENOMEM;
	return 0;
}

static void add_aggregate(struct pc_rbench *b, const cJSON *row, const char *agg, double scale)
{
	double t = num(row, "real_time");

	if (!strcmp(agg, "median")) {
		b->agg_median_ns = t * scale;
		b->agg_items_ps = num(row, "items_per_second");
		b->agg_bytes_ps = num(row, "bytes_per_second");
	} else if (!strcmp(agg, "mean")) {
		b->agg_mean_ns = t * scale;
	} else if (!strcmp(agg, "stddev")) {
		b->agg_stddev_ns = t * scale;
	} else if (!strcmp(agg, "cv")) {
		b->agg_cv = t; /* a fraction, whatever time_unit says */
	}
}

/* The benchmark a row belongs to: run_name, or the name without the
 * "_<aggregate>" suffix of an aggregate row. Writes into buf. */
static const char *row_run_name(const cJSON *row, const char *name, const char *agg,
				char *buf, size_t len)
{
	const cJSON *rn = cJSON_GetObjectItemCaseSensitive(row, "run_name");
	size_t nl = strlen(name), al = agg ? strlen(agg) : 0;

	if (cJSON_IsString(rn))
		return rn->valuestring;
	if (agg && nl > al + 1 && name[nl - al - 1] == '_' && !strcmp(name + nl - al, agg)) {
		snprintf(buf, len, "%.*s", (int)(nl - al - 1), name);
		return buf;
	}
	return name;
}

static int load_row(struct pc_results *r, const cJSON *row, size_t idx, unsigned src,
		    const char *suffix, const char *path, char *err, size_t errlen)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(row, "name");
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(row, "run_type");
	const cJSON *agg = cJSON_GetObjectItemCaseSensitive(row, "aggregate_name");
	bool is_agg = cJSON_IsString(type) && !strcmp(type->valuestring, "aggregate");
	char base[512], full[600];
	struct pc_rbench *b;

	if (!cJSON_IsObject(row) || !cJSON_IsString(name)) {
		fail(err, errlen, "%s: benchmarks[%zu] is not an object with a name", path, idx);
		return -EINVAL;
	}
	if (truthy(cJSON_GetObjectItemCaseSensitive(row, "error_occurred"))) {
		/* the repetition failed: no figures, but counted against its row */
		snprintf(full, sizeof(full), "%s%s", row_run_name(row, name->valuestring, NULL,
								  base, sizeof(base)), suffix);
		if (!is_agg && !(b = bench_get(r, full, src)))
			goto nomem;
		if (!is_agg)
			b->nfailed++;
		return 0;
	}
	if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(row, "real_time"))) {
		fail(err, errlen, "%s: benchmarks[%zu] (%s): real_time is not a number",
		     path, idx, name->valuestring);
		return -EINVAL;
	}
	snprintf(full, sizeof(full), "%s%s",
		 row_run_name(row, name->valuestring, cJSON_IsString(agg) ? agg->valuestring : NULL,
			      base, sizeof(base)), suffix);
	if (!(b = bench_get(r, full, src)))
		goto nomem;
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(row, "threads")))
		b->threads = (unsigned)num(row, "threads");
	if (is_agg) {
		if (cJSON_IsString(agg))
			add_aggregate(b, row, agg->valuestring, unit_scale(row));
		return 0;
	}
	if (add_sample(b, row, unit_scale(row)) == 0)
		return 0;
nomem:
	fail(err, errlen, "%s: out of memory", path);
	return -ENOMEM;
}

static double finite_median(const double *v, size_t n, size_t stride)
{
	double *c = malloc((n ? n : 1) * sizeof(*c)), m;
	size_t k = 0;

	if (!c)
		return NAN;
	for (size_t i = 0; i < n; i++) {
		double x = *(const double *)((const char *)v + i * stride);
		if (isfinite(x))
			c[k++] = x;
	}
	m = k ? pc_stat_median(c, k) : NAN;
	free(c);
	return m;
}

static void bench_stat(struct pc_rbench *b)
{
	struct pc_rstat *st = &b->st;
	size_t n = b->nsamples, sz = sizeof(struct pc_rsample);
	double *real = malloc((n ? n : 1) * sizeof(double));
	double *tpi = malloc((n ? n : 1) * sizeof(double));

	st->n = n;
	st->cv = b->agg_cv;
	st->real_ns = b->agg_median_ns;
	st->mean_ns = b->agg_mean_ns;
	st->stddev_ns = b->agg_stddev_ns;
	st->items_ps = b->agg_items_ps;
	st->bytes_ps = b->agg_bytes_ps;
	st->tpi_ns = st->items_ps > 0 ? 1e9 / st->items_ps : st->real_ns;
	if (n && real && tpi) {
		for (size_t i = 0; i < n; i++) {
			real[i] = b->s[i].real_ns;
			tpi[i] = pc_rsample_tpi(&b->s[i]);
		}
		struct pc_bench_stats rs;
		if (pc_bench_stats_compute(real, n, &rs) == 0) {
			st->real_ns = rs.median;
			st->mean_ns = rs.mean;
			st->stddev_ns = rs.stddev;
			if (n >= 2) /* one repetition has no spread to speak of */
				st->cv = rs.cv;
		}
		st->tpi_ns = pc_stat_median(tpi, n);
		st->items_ps = finite_median(&b->s[0].items_ps, n, sz);
		st->bytes_ps = finite_median(&b->s[0].bytes_ps, n, sz);
	}
	free(real);
	free(tpi);
}

/* Whether the run held its PM QoS request: percore.pm_qos.held where the
 * harness says (a request it could not make must not label rows), else
 * what the options asked for. */
static bool pm_qos_held(const struct pc_results *r)
{
	const cJSON *held = pc_results_get(r, 0, "percore.pm_qos.held");

	if (cJSON_IsBool(held))
		return cJSON_IsTrue(held);
	return truthy(pc_results_get(r, 0, "percore.options.pm_qos"));
}

cJSON *pc_json_load(const char *path, char *err, size_t errlen)
{
	size_t len;
	char *text = read_file(path, &len, err, errlen);
	cJSON *root;

	if (!text)
		return NULL;
	root = cJSON_ParseWithLength(text, len);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		size_t line = 1;
		for (const char *p = text; at && p < at && p < text + len; p++)
			line += *p == '\n';
		fail(err, errlen, "%s:%zu: malformed JSON", path, line);
	}
	free(text);
	return root;
}

/* Build a results set from a parsed document, which it takes over (freed
 * on failure). path names the input in messages. */
static struct pc_results *from_root(cJSON *root, const char *path, unsigned flags,
				    unsigned src, char *err, size_t errlen)
{
	struct pc_results *r = calloc(1, sizeof(*r));
	size_t i = 0;
	const cJSON *rows, *row;

	if (r)
		r->roots = malloc(sizeof(*r->roots));
	if (!r || !r->roots) {
		cJSON_Delete(root);
		free(r);
		fail(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->roots[0] = root;
	r->nfiles = 1;
	rows = cJSON_GetObjectItemCaseSensitive(root, "benchmarks");
	if (!cJSON_IsObject(root) || !cJSON_IsArray(rows)) {
		fail(err, errlen, "%s: not a benchmark results file (no \"benchmarks\" array)", path);
		pc_results_free(r);
		return NULL;
	}
	r->context = cJSON_GetObjectItemCaseSensitive(root, "context");
	r->percore = cJSON_GetObjectItemCaseSensitive(root, "percore");
	const char *suffix = (flags & PC_RESULTS_TAG_PMQOS) && pm_qos_held(r) ? "/pm_qos:on" : "";
	cJSON_ArrayForEach(row, rows) {
		if (load_row(r, row, i++, src, suffix, path, err, errlen) < 0) {
			pc_results_free(r);
			return NULL;
		}
	}
	for (i = 0; i < r->n; i++)
		bench_stat(&r->b[i]);
	return r;
}

static struct pc_results *parse(const char *path, unsigned flags, unsigned src,
				char *err, size_t errlen)
{
	cJSON *root = pc_json_load(path, err, errlen);

	return root ? from_root(root, path, flags, src, err, errlen) : NULL;
}

struct pc_results *pc_results_from_json(cJSON *root, const char *name, unsigned flags,
					char *err, size_t errlen)
{
	return from_root(root, name, flags, 0, err, errlen);
}

struct pc_results *pc_results_load(const char *path, unsigned flags, char *err, size_t errlen)
{
	return parse(path, flags, 0, err, errlen);
}

static void bench_free(struct pc_rbench *b)
{
	for (size_t k = 0; k < b->ncounters; k++) {
		free(b->c[k].name);
		free(b->c[k].v);
	}
	free(b->c);
	free(b->s);
	free(b->name);
}

int pc_results_append(struct pc_results *res, const char *path, unsigned flags,
		      char *err, size_t errlen)
{
	struct pc_results *add = parse(path, flags, (unsigned)res->nfiles, err, errlen);
	struct pc_rbench *nb;
	cJSON **roots;

	if (!add)
		return -EINVAL;
	nb = realloc(res->b, (res->n + add->n) * sizeof(*nb));
	roots = nb ? realloc(res->roots, (res->nfiles + 1) * sizeof(*roots)) : NULL;
	if (nb)
		res->b = nb;
	if (!roots) {
		pc_results_free(add);
		fail(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	res->roots = roots;
	res->roots[res->nfiles++] = add->roots[0];
	add->nfiles = 0;
	for (size_t i = 0; i < add->n; i++) {
		if (pc_results_index(res, add->b[i].name) >= 0) {
			fprintf(stderr, "percore: %s: %s already loaded from an earlier file, skipped\n",
				path, add->b[i].name);
			bench_free(&add->b[i]);
			continue;
		}
		res->b[res->n++] = add->b[i];
	}
	add->n = 0;
	pc_results_free(add);
	return 0;
}

void pc_results_free(struct pc_results *res)
{
	if (!res)
		return;
	for (size_t i = 0; i < res->n; i++)
		bench_free(&res->b[i]);
	for (size_t i = 0; i < res->nfiles; i++)
		cJSON_Delete(res->roots[i]);
	free(res->roots);
	free(res->b);
	free(res);
}

long pc_results_index(const struct pc_results *res, const char *name)
{
	for (size_t i = 0; i < res->n; i++)
		if (!strcmp(res->b[i].name, name))
			return (long)i;
	return -1;
}

const struct pc_rbench *pc_results_find(const struct pc_results *res, const char *name)
{
	long i = pc_results_index(res, name);

	return i < 0 ? NULL : &res->b[i];
}

const cJSON *pc_results_get(const struct pc_results *res, unsigned file, const char *path)
{
	const cJSON *at;
	char key[128];

	if (file >= res->nfiles)
		return NULL;
	at = res->roots[file];
	while (at && *path) {
		size_t l = strcspn(path, ".");
		if (l >= sizeof(key))
			return NULL;
		memcpy(key, path, l);
		key[l] = 0;
		at = cJSON_GetObjectItemCaseSensitive(at, key);
		path += l + (path[l] == '.');
	}
	return at;
}

double pc_results_max_cv(const struct pc_results *res, double fallback)
{
	const cJSON *v = pc_results_get(res, 0, "percore.options.max_cv");

	return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : fallback;
}

double pc_rcounter_median(const struct pc_rbench *b, const struct pc_rcounter *c)
{
	return finite_median(c->v, b->nsamples, sizeof(double));
}
