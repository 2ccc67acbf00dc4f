/* SPDX-License-Identifier: MIT */
/* percore: per-shard metrics and their Prometheus text exposition.
 *
 * A registry holds metric families: counters, gauges and histograms, each
 * with one value per shard. A shard writes only its own values, with
 * relaxed atomic stores (a plain store on x86-64 and aarch64): no lock, no
 * read-modify-write, no line another core writes. The exporter reads them
 * relaxed from its own thread, so a scrape costs the shards nothing but
 * the occasional cache miss on a line they own.
 *
 * Values live in one block of slots per shard, each block starting on its
 * own cache line; a family takes one slot per shard (a histogram takes one
 * per bucket, +Inf included, and one for its sum). Blocks never move, so a handle
 * stays valid while the registry lives.
 *
 * Figures that already exist in a struct of uint64_t (the engine's and the
 * server's statistics) come in through a table: one struct pc_metric_field
 * row per figure (pc_metrics_add_table), read by the caller's function at
 * each scrape. A new figure is one more row.
 *
 * The exposition (pc_metrics_write) is the text format 0.0.4: every name
 * starts with "percore_", counters end in "_total", per-shard series carry
 * a shard="i" label, each family has its HELP and TYPE lines, histograms
 * come as _bucket (cumulative, with le), _sum and _count.
 */
#ifndef PERCORE_METRICS_H
#define PERCORE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

struct pc_metrics;
struct pc_engine;
struct pc_server;

/* The kind of a registered series, as the exposition's TYPE line names it. */
enum pc_metric_kind {
	PC_METRIC_COUNTER = 0,
	PC_METRIC_GAUGE = 1,
	PC_METRIC_HISTOGRAM = 2,
};

/* Slots each shard's block holds unless pc_metrics_create() says more:
 * room for every application family beside the tables. */
#define PC_METRICS_DEFAULT_SLOTS 1024
/* Buckets one histogram may have (+Inf not counted). */
#define PC_METRICS_MAX_BUCKETS 64

/* A registered family. The fields are for the inline writers below. */
struct pc_metric {
	uint64_t *_slot;          /* shard 0's first slot */
	size_t _stride;           /* slots from one shard's block to the next */
	unsigned _shards;
	enum pc_metric_kind _kind;
	unsigned _nbounds;        /* histograms: finite upper bounds */
	const uint64_t *_bounds;  /* histograms: ascending, native units */
};

/* One row of a table: a uint64_t figure at `offset` in the struct the
 * table's read function fills. name is the series name after "percore_"
 * (counters end in "_total"); rows of one family (same name, different
 * label_value) must be adjacent and share help and kind. label/label_value
 * add a label beside shard (NULL: none). scale multiplies the figure on
 * output (1e-9 turns nanoseconds into seconds); 0 means 1. */
struct pc_metric_field {
	const char *name;
	const char *help;
	enum pc_metric_kind kind;     /* counter or gauge */
	size_t offset;
	double scale;
	const char *label;
	const char *label_value;
};

/* Fill the struct of a table for shard i (or for the process, i = 0, in a
 * table added with per_shard false). Runs on the exporter's thread.
 * Returns 0, or nonzero to leave the shard out of this scrape. */
typedef int (*pc_metrics_read_fn)(void *ctx, unsigned shard, void *out);

/* A registry for `shards` shards with `slots` value slots per shard
 * (0: PC_METRICS_DEFAULT_SLOTS). It starts with the process's resident
 * memory (percore_process_resident_memory_bytes). NULL for shards 0 or
 * over 1024, or out of memory. Any thread. */
PC_API struct pc_metrics *pc_metrics_create(unsigned shards, unsigned slots);

/* Free the registry; no handle or endpoint may use it any more. NULL is
 * ignored. */
PC_API void pc_metrics_destroy(struct pc_metrics *m);

/* How many shards the registry has a slot for. Any thread. */
PC_API unsigned pc_metrics_shards(const struct pc_metrics *m);

/* Register a family of per-shard values. name is the series name after
 * "percore_": [a-zA-Z_:][a-zA-Z0-9_:]*, unique, a counter's ending in
 * "_total"; help is one line. A histogram has nbounds (1 to
 * PC_METRICS_MAX_BUCKETS) strictly ascending upper bounds in the unit the
 * application records (+Inf is added); scale converts that unit to the
 * base unit on output (1e-9 for nanoseconds to seconds; 0 means 1).
 * Returns the handle, or NULL with the reason in err: a bad or taken
 * name, bad bounds, no slots left, out of memory. Any thread, also while
 * shards run and scrapes happen (registration takes a lock). */
PC_API struct pc_metric *pc_metrics_counter(struct pc_metrics *m, const char *name,
					    const char *help, char *err, size_t errlen);
PC_API struct pc_metric *pc_metrics_gauge(struct pc_metrics *m, const char *name,
					  const char *help, char *err, size_t errlen);
PC_API struct pc_metric *pc_metrics_histogram(struct pc_metrics *m, const char *name,
					      const char *help, const uint64_t *bounds,
					      unsigned nbounds, double scale, char *err,
					      size_t errlen);

/* Register a table of figures read at each scrape through read(ctx, i,
 * buf) into a buffer of `size` bytes, for every shard (per_shard) or once
 * for the process (no shard label). The rows are copied. Returns 0, or
 * -EINVAL with the reason in err (a bad name or kind, a family's rows not
 * adjacent, an offset outside the struct), -EEXIST for a name already
 * registered, -ENOMEM. Any thread. */
PC_API int pc_metrics_add_table(struct pc_metrics *m, const struct pc_metric_field *rows,
				unsigned nrows, size_t size, bool per_shard,
				pc_metrics_read_fn read, void *ctx, char *err, size_t errlen);

/* The engine's figures (percore_reactor_*, percore_mesh_*, per shard):
 * turns, busy and idle seconds, sleeps, wake-ups, messages in and out,
 * ring-full events, the outbox, calls. The engine must outlive m's use.
 * Returns as pc_metrics_add_table(). */
PC_API int pc_metrics_add_engine(struct pc_metrics *m, struct pc_engine *e);

/* The server's figures (percore_sessions_*, percore_frames_*, ...; per
 * shard), its engine's (pc_metrics_add_engine) and its request latency
 * histogram. Returns as pc_metrics_add_table(). */
PC_API int pc_metrics_add_server(struct pc_metrics *m, struct pc_server *srv);

/* Write the exposition of every family to out. Any thread but a shard
 * (it reads /proc and formats text). Returns 0, -ENOMEM, or -EIO when
 * out fails. */
PC_API int pc_metrics_write(struct pc_metrics *m, FILE *out);

/* ---- the HTTP endpoint --------------------------------------------------- */

/* What /health and /ready answer: /health 200 unless STOPPED, /ready 200
 * only when READY (503 while STARTING or DRAINING). */
enum pc_metrics_state {
	PC_METRICS_STARTING = 0,
	PC_METRICS_READY = 1,
	PC_METRICS_DRAINING = 2,
	PC_METRICS_STOPPED = 3,
};

struct pc_metrics_http;

/* The metrics endpoint's configuration. Start from
 * pc_metrics_http_cfg_init(). */
struct pc_metrics_http_cfg {
	const char *host;        /* numeric address; NULL: 127.0.0.1 */
	uint16_t port;           /* 0: the kernel picks (pc_metrics_http_port) */
	unsigned max_conns;      /* connections at once; more are refused
	                          * with 503. 0: 16 */
	uint32_t timeout_ms;     /* a request not answered within this is
	                          * cut (408 while it is still arriving).
	                          * 0: 5000 */
	/* The state /health and /ready report; called on the endpoint's
	 * thread. NULL: always READY. */
	enum pc_metrics_state (*state)(void *arg);
	void *state_arg;
};

/* Fill cfg with the defaults: 127.0.0.1, a port the kernel picks, the
 * default connection limit and timeout, no state callback. */
PC_API void pc_metrics_http_cfg_init(struct pc_metrics_http_cfg *cfg);

/* Serve m on its own thread (not a shard: it takes no time from their
 * loops): GET /metrics (the exposition), /health, /ready. Anything else
 * gets 404, a method other than GET or HEAD 405, a malformed request 400,
 * a head over 8 KiB 431, a URL over 1 KiB 414; every answer closes the
 * connection. Returns 0 and *out, or -EINVAL for a bad host (err says
 * why), the -errno of bind or listen, -ENOMEM, or pthread_create's. m must
 * outlive the endpoint. Any thread but a shard. */
PC_API int pc_metrics_http_start(struct pc_metrics *m, const struct pc_metrics_http_cfg *cfg,
				 struct pc_metrics_http **out, char *err, size_t errlen);

/* The port the endpoint listens on. */
PC_API uint16_t pc_metrics_http_port(const struct pc_metrics_http *h);

/* Stop the endpoint's thread, close its connections, free it. NULL is
 * ignored. Not from a shard. */
PC_API void pc_metrics_http_stop(struct pc_metrics_http *h);

/* ---- writers: the owning shard only ------------------------------------ */

/* The slot shard i owns in family c (i < the registry's shards). */
PC_INLINE uint64_t *pc_metric_slot_(const struct pc_metric *c, unsigned i)
{
	return c->_slot + (size_t)i * c->_stride;
}

/* Add n to shard i's counter. Shard i only. Never fails. */
PC_INLINE void pc_metric_add(struct pc_metric *c, unsigned i, uint64_t n)
{
	uint64_t *p = pc_metric_slot_(c, i);

	/* A plain load: only this shard writes the slot. The store is
	 * atomic so that the exporter's relaxed load never tears. */
	__atomic_store_n(p, *p + n, __ATOMIC_RELAXED);
}

/* Set shard i's gauge to v. Shard i only. Never fails. */
PC_INLINE void pc_metric_set(struct pc_metric *g, unsigned i, int64_t v)
{
	__atomic_store_n(pc_metric_slot_(g, i), (uint64_t)v, __ATOMIC_RELAXED);
}

/* Count value v (native units) in shard i's histogram. Shard i only.
 * Never fails. */
PC_INLINE void pc_metric_observe(struct pc_metric *h, unsigned i, uint64_t v)
{
	uint64_t *p = pc_metric_slot_(h, i);
	unsigned b = 0;

	while (b < h->_nbounds && v > h->_bounds[b])
		b++;
	/* Buckets (non-cumulative, the last is +Inf), then the sum; the
	 * exporter derives the count from the buckets, so _count always
	 * equals the +Inf bucket. */
	__atomic_store_n(&p[b], p[b] + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&p[h->_nbounds + 1], p[h->_nbounds + 1] + v, __ATOMIC_RELAXED);
}

PC_END_DECLS

#endif
