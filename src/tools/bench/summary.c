/* SPDX-License-Identifier: MIT */
/* percore bench: the figures derived from an entry's repetitions, shared by
 * the JSON rows and the table so both always say the same thing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench/runner.h"

static double total_iterations(const struct pc_bench_entry *e, const struct pc_bench_sample *s)
{
	return (double)s->iterations * e->threads;
}

double bench_sample_real(const struct pc_bench_entry *e, const struct pc_bench_sample *s)
{
	return s->time_ns / total_iterations(e, s);
}

double bench_sample_cpu(const struct pc_bench_entry *e, const struct pc_bench_sample *s)
{
	return s->cpu_ns / total_iterations(e, s);
}

/* A timed span of 0 (a manual time never set) gives rates of 0, not
 * infinities that JSON cannot carry. */
static double per_second(double count, double ns)
{
	return ns > 0 ? count * 1e9 / ns : 0;
}

double bench_sample_items_ps(const struct pc_bench_entry *e, const struct pc_bench_sample *s)
{
	(void)e;
	return per_second((double)s->items, s->time_ns);
}

double bench_sample_bytes_ps(const struct pc_bench_entry *e, const struct pc_bench_sample *s)
{
	(void)e;
	return per_second((double)s->bytes, s->time_ns);
}

static double per_item(const struct pc_bench_entry *e, const struct pc_bench_sample *s)
{
	(void)e;
	return s->items ? s->time_ns / (double)s->items : 0;
}

static const struct pc_bench_metric *find_counter(const struct pc_bench_sample *s,
						  const char *name)
{
	for (unsigned i = 0; i < s->ncounters; i++)
		if (!strcmp(s->counters[i].name, name))
			return &s->counters[i];
	return NULL;
}

/* Counters of the first repetition that every repetition reported. */
static int summarize_counters(const struct pc_bench_entry *e, double *v,
			      struct pc_bench_summary *out)
{
	const struct pc_bench_sample *first = &e->samples[0];

	for (unsigned c = 0; c < first->ncounters; c++) {
		const char *name = first->counters[c].name;
		unsigned k = 0;
		int rc;

		for (; k < e->nsamples; k++) {
			const struct pc_bench_metric *m = find_counter(&e->samples[k], name);

			if (!m)
				break;
			v[k] = m->value;
		}
		if (k < e->nsamples)
			continue;
		rc = pc_bench_stats_compute(v, e->nsamples, &out->counters[out->ncounters]);
		if (rc)
			return rc;
		out->counter_names[out->ncounters++] = name;
	}
	return 0;
}

typedef double (*figure_fn)(const struct pc_bench_entry *, const struct pc_bench_sample *);

static int summarize_figure(const struct pc_bench_entry *e, figure_fn fn, double *v,
			    struct pc_bench_stats *out)
{
	for (unsigned k = 0; k < e->nsamples; k++)
		v[k] = fn(e, &e->samples[k]);
	return pc_bench_stats_compute(v, e->nsamples, out);
}

int bench_summarize(const struct pc_bench_session *s, const struct pc_bench_entry *e,
		    struct pc_bench_summary *out)
{
	double *v;
	int rc;

	memset(out, 0, sizeof(*out));
	if (e->nsamples == 0)
		return -EINVAL;
	v = calloc(e->nsamples, sizeof(*v));
	if (!v)
		return -ENOMEM;
	rc = summarize_figure(e, bench_sample_real, v, &out->real);
	rc = rc ?: summarize_figure(e, bench_sample_cpu, v, &out->cpu);
	rc = rc ?: summarize_figure(e, per_item, v, &out->per_item);
	rc = rc ?: summarize_figure(e, bench_sample_items_ps, v, &out->items_ps);
	rc = rc ?: summarize_figure(e, bench_sample_bytes_ps, v, &out->bytes_ps);
	rc = rc ?: summarize_counters(e, v, out);
	out->noisy = out->real.cv > s->opt.max_cv;
	free(v);
	return rc;
}
