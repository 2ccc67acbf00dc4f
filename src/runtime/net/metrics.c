/* SPDX-License-Identifier: MIT */
/* percore net: the metrics registry and its Prometheus text exposition.
 *
 * Shards write their slots with relaxed stores (percore/metrics.h); this
 * file only registers families and reads. The lock orders registration
 * against scrapes, never against a shard. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "net/metrics_impl.h"
#include "sys/errmsg.h"

static bool name_ok(const char *s, bool colon)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || (colon && *s == ':')))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && !strcmp(s + a - b, tail);
}

/* Is name free? Under the lock. */
static bool name_taken(const struct pc_metrics *m, const char *name)
{
	for (const struct met_entry *e = m->first; e; e = e->next) {
		if (e->table) {
			for (unsigned r = 0; r < e->table->nrows; r++)
				if (!strcmp(e->table->rows[r].name, name))
					return true;
		} else if (!strcmp(e->fam.name, name)) {
			return true;
		}
	}
	return false;
}

int met_check_family(const char *name, const char *help, enum pc_metric_kind kind, char *err,
		     size_t len)
{
	if (!name_ok(name, true))
		return sys_errmsg(err, len, -EINVAL, "metric name \"%s\" is not [a-zA-Z_:][a-zA-Z0-9_:]*",
			    name ? name : "(null)");
	if (kind == PC_METRIC_COUNTER && !ends_with(name, "_total"))
		return sys_errmsg(err, len, -EINVAL, "counter \"%s\" must end in _total", name);
	if (kind != PC_METRIC_COUNTER && ends_with(name, "_total"))
		return sys_errmsg(err, len, -EINVAL, "only counters end in _total (\"%s\")", name);
	if (!help || strchr(help, '\n'))
		return sys_errmsg(err, len, -EINVAL, "metric \"%s\" needs a one-line help", name);
	return 0;
}

struct pc_metrics *pc_metrics_create(unsigned shards, unsigned slots)
{
	struct pc_metrics *m;
	size_t stride;

	if (!shards || shards > MET_MAX_SHARDS)
		return NULL;
	if (!slots)
		slots = PC_METRICS_DEFAULT_SLOTS;
	/* Each shard's block on lines of its own. */
	stride = (slots * sizeof(uint64_t) + PC_CACHE_PAD - 1) / PC_CACHE_PAD * PC_CACHE_PAD;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	m->shards = shards;
	m->slots = slots;
	m->stride = stride / sizeof(uint64_t);
	m->values = aligned_alloc(PC_CACHE_PAD, stride * shards);
	if (!m->values || met_add_process(m, NULL, 0)) {
		pc_metrics_destroy(m);
		return NULL;
	}
	memset(m->values, 0, stride * shards);
	return m;
}

static void table_free(struct met_table *t)
{
	if (!t)
		return;
	for (unsigned r = 0; r < t->nrows; r++) {
		free((char *)t->rows[r].name);
		free((char *)t->rows[r].help);
		free((char *)t->rows[r].label);
		free((char *)t->rows[r].label_value);
	}
	free(t->rows);
	free(t);
}

static void entry_free(struct met_entry *e)
{
	table_free(e->table);
	free(e->fam.name);
	free(e->fam.help);
	free(e->fam.bounds);
	free(e);
}

void pc_metrics_destroy(struct pc_metrics *m)
{
	if (!m)
		return;
	while (m->first) {
		struct met_entry *e = m->first;

		m->first = e->next;
		entry_free(e);
	}
	pthread_mutex_destroy(&m->lock);
	free(m->values);
	free(m);
}

unsigned pc_metrics_shards(const struct pc_metrics *m)
{
	return m->shards;
}

/* Link e last; under the lock. */
static void link_entry(struct pc_metrics *m, struct met_entry *e)
{
	struct met_entry **p = &m->first;

	while (*p)
		p = &(*p)->next;
	*p = e;
}

static struct pc_metric *add_family(struct pc_metrics *m, const char *name, const char *help,
				    enum pc_metric_kind kind, const uint64_t *bounds,
				    unsigned nbounds, double scale, char *err, size_t len)
{
	unsigned need = kind == PC_METRIC_HISTOGRAM ? nbounds + 2 : 1;
	struct met_entry *e;
	int rc = met_check_family(name, help, kind, err, len);

	if (rc)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->fam.name = strdup(name)) || !(e->fam.help = strdup(help)) ||
	    (nbounds && !(e->fam.bounds = malloc(nbounds * sizeof(*bounds))))) {
		sys_errmsg(err, len, -ENOMEM, "out of memory");
		goto out;
	}
	if (nbounds)
		memcpy(e->fam.bounds, bounds, nbounds * sizeof(*bounds));
	e->fam.scale = scale ? scale : 1;
	pthread_mutex_lock(&m->lock);
	if (name_taken(m, name)) {
		sys_errmsg(err, len, -EEXIST, "metric \"%s\" is registered already", name);
	} else if (m->used + need > m->slots) {
		sys_errmsg(err, len, -ENOSPC, "no slots left for \"%s\" (%u of %u used)", name, m->used,
		     m->slots);
	} else {
		e->fam.h = (struct pc_metric){ ._slot = m->values + m->used, ._stride = m->stride,
					       ._shards = m->shards, ._kind = kind,
					       ._nbounds = nbounds, ._bounds = e->fam.bounds };
		m->used += need;
		link_entry(m, e);
		pthread_mutex_unlock(&m->lock);
		return &e->fam.h;
	}
	pthread_mutex_unlock(&m->lock);
out:
	if (e)
		entry_free(e);
	return NULL;
}

struct pc_metric *pc_metrics_counter(struct pc_metrics *m, const char *name, const char *help,
				     char *err, size_t errlen)
{
	return add_family(m, name, help, PC_METRIC_COUNTER, NULL, 0, 1, err, errlen);
}

struct pc_metric *pc_metrics_gauge(struct pc_metrics *m, const char *name, const char *help,
				   char *err, size_t errlen)
{
	return add_family(m, name, help, PC_METRIC_GAUGE, NULL, 0, 1, err, errlen);
}

struct pc_metric *pc_metrics_histogram(struct pc_metrics *m, const char *name, const char *help,
				       const uint64_t *bounds, unsigned nbounds, double scale,
				       char *err, size_t errlen)
{
	if (!bounds || !nbounds || nbounds > PC_METRICS_MAX_BUCKETS) {
		sys_errmsg(err, errlen, -EINVAL, "histogram \"%s\" needs 1 to %u bounds, not %u",
		     name ? name : "(null)", PC_METRICS_MAX_BUCKETS, nbounds);
		return NULL;
	}
	for (unsigned b = 1; b < nbounds; b++)
		if (bounds[b] <= bounds[b - 1]) {
			sys_errmsg(err, errlen, -EINVAL,
			     "histogram \"%s\": bound %u (%llu) is not above bound %u (%llu)", name,
			     b, (unsigned long long)bounds[b], b - 1,
			     (unsigned long long)bounds[b - 1]);
			return NULL;
		}
	if (scale < 0) {
		sys_errmsg(err, errlen, -EINVAL, "histogram \"%s\": negative scale", name ? name : "(null)");
		return NULL;
	}
	return add_family(m, name, help, PC_METRIC_HISTOGRAM, bounds, nbounds, scale, err, errlen);
}

/* Rows of a family adjacent, with one help and kind; every offset inside
 * the struct; label names valid. */
static int check_rows(const struct pc_metric_field *rows, unsigned n, size_t size, char *err,
		      size_t len)
{
	for (unsigned r = 0; r < n; r++) {
		const struct pc_metric_field *f = &rows[r];
		bool same = r && !strcmp(rows[r - 1].name, f->name);
		int rc;

		if (f->kind == PC_METRIC_HISTOGRAM)
			return sys_errmsg(err, len, -EINVAL, "row %u (%s): a table holds counters and gauges",
				    r, f->name);
		rc = met_check_family(f->name, f->help, f->kind, err, len);
		if (rc)
			return rc;
		if (f->offset + sizeof(uint64_t) > size || f->offset % sizeof(uint64_t))
			return sys_errmsg(err, len, -EINVAL,
				    "row %u (%s): offset %zu is not a uint64_t inside %zu bytes", r,
				    f->name, f->offset, size);
		if (f->label && (!name_ok(f->label, false) || !strcmp(f->label, "shard") ||
				 !strcmp(f->label, "le") || !f->label_value))
			return sys_errmsg(err, len, -EINVAL, "row %u (%s): bad label \"%s\"", r, f->name,
				    f->label);
		if (same && (rows[r - 1].kind != f->kind || strcmp(rows[r - 1].help, f->help)))
			return sys_errmsg(err, len, -EINVAL, "row %u (%s): kind or help differs from row %u",
				    r, f->name, r - 1);
		for (unsigned k = 0; !same && k + 1 < r; k++)
			if (!strcmp(rows[k].name, f->name))
				return sys_errmsg(err, len, -EINVAL,
					    "row %u (%s): rows of one family must be adjacent", r,
					    f->name);
	}
	return 0;
}

static char *dup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

static struct met_table *copy_table(const struct pc_metric_field *rows, unsigned n)
{
	struct met_table *t = calloc(1, sizeof(*t));
	bool oom = !t;

	if (t && !(t->rows = calloc(n, sizeof(*rows))))
		oom = true;
	for (unsigned r = 0; !oom && r < n; r++) {
		t->rows[r] = rows[r];
		t->nrows = r + 1;
		t->rows[r].name = dup_or_null(rows[r].name, &oom);
		t->rows[r].help = dup_or_null(rows[r].help, &oom);
		t->rows[r].label = dup_or_null(rows[r].label, &oom);
		t->rows[r].label_value = dup_or_null(rows[r].label_value, &oom);
		if (!t->rows[r].scale)
			t->rows[r].scale = 1;
	}
	if (oom) {
		table_free(t);
		return NULL;
	}
	return t;
}

int pc_metrics_add_table(struct pc_metrics *m, const struct pc_metric_field *rows, unsigned nrows,
			 size_t size, bool per_shard, pc_metrics_read_fn read, void *ctx, char *err,
			 size_t errlen)
{
	struct met_entry *e;
	int rc;

	if (!rows || !nrows || !read || !size)
		return sys_errmsg(err, errlen, -EINVAL, "a table needs rows, a size and a read function");
	rc = check_rows(rows, nrows, size, err, errlen);
	if (rc)
		return rc;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->table = copy_table(rows, nrows))) {
		free(e);
		return sys_errmsg(err, errlen, -ENOMEM, "out of memory");
	}
	e->table->size = size;
	e->table->per_shard = per_shard;
	e->table->read = read;
	e->table->ctx = ctx;
	pthread_mutex_lock(&m->lock);
	for (unsigned r = 0; r < nrows && !rc; r++)
		if ((!r || strcmp(rows[r - 1].name, rows[r].name)) && name_taken(m, rows[r].name))
			rc = sys_errmsg(err, errlen, -EEXIST, "metric \"%s\" is registered already",
				  rows[r].name);
	if (!rc)
		link_entry(m, e);
	pthread_mutex_unlock(&m->lock);
	if (rc)
		entry_free(e);
	return rc;
}
