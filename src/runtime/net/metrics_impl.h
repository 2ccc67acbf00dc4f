/* SPDX-License-Identifier: MIT */
/* percore net: the metrics registry's insides, shared by its files:
 * metrics.c (registration), metrics_table.c (tables), metrics_text.c
 * (exposition), metrics_lib.c (the library's own tables). */
#ifndef PERCORE_NET_METRICS_IMPL_H
#define PERCORE_NET_METRICS_IMPL_H

#include <pthread.h>

#include "percore/metrics.h"

#define MET_MAX_SHARDS 1024

/* A family of slots registered with pc_metrics_counter/gauge/histogram. */
struct met_family {
	char *name, *help;
	uint64_t *bounds;
	double scale;
	struct pc_metric h;
};

/* A table registered with pc_metrics_add_table; rows and strings copied. */
struct met_table {
	struct pc_metric_field *rows;
	unsigned nrows;
	size_t size;
	bool per_shard;
	pc_metrics_read_fn read;
	void *ctx;
};

struct met_entry {
	struct met_entry *next;
	struct met_table *table;   /* a table, or NULL: fam */
	struct met_family fam;
};

struct pc_metrics {
	/* Orders registration against scrapes; shards never take it. */
	pthread_mutex_t lock;
	unsigned shards;
	unsigned slots, used;      /* per shard */
	size_t stride;             /* slots between two shards' blocks */
	uint64_t *values;          /* shards blocks of stride slots */
	struct met_entry *first;   /* in registration order */
};

/* metrics.c */
int met_check_family(const char *name, const char *help, enum pc_metric_kind kind, char *err,
		     size_t len);

/* metrics_lib.c: the process table every registry starts with. */
int met_add_process(struct pc_metrics *m, char *err, size_t len);

#endif
