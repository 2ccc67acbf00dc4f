/* SPDX-License-Identifier: MIT */
/* Runtime benchmarks: an engine per repetition, driven from the harness's
 * thread. setup() starts the engine (pinned with affinity on, unpinned
 * with it off); run() hands shard `home` a job and sleeps on a semaphore
 * (so the driving thread takes no CPU from the shards) until the job says
 * it is done; the shards time themselves (PC_BENCH_MANUAL_TIME), so engine
 * start-up and the driver's wake-up are never in the figure. */
#ifndef PERCORE_BENCH_RT_UTIL_H
#define PERCORE_BENCH_RT_UTIL_H

#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>

#include "percore/bench.h"
#include "percore/engine.h"

struct rtb {
	struct pc_engine *e;
	sem_t done;
	uint64_t iterations;   /* this repetition's, set by run() */
	uint64_t t0, t1;       /* written by the shards */
	uint64_t items, bytes;
	void *user;            /* the benchmark's own state */
};

/* Start an engine of `shards` shards with the given idle policy for the
 * state's affinity setting ("auto" placement or "off"), capacity 0 for the
 * default. When the engine cannot start (more shards than usable CPUs with
 * affinity on) says why on stderr and returns -ENOTSUP: the row is
 * skipped. */
int rtb_setup(struct pc_bench_state *st, unsigned shards, enum pc_idle idle,
	      uint32_t ring_capacity, void *user);
/* The same with the engine's placement given ("auto", "off", a CPU list). */
int rtb_setup_placed(struct pc_bench_state *st, unsigned shards, enum pc_idle idle,
		     uint32_t ring_capacity, const char *placement, void *user);
/* rtb_setup() with the shards' reactor backend given (rows skipped the
 * same way where it cannot be set up). */
int rtb_setup_backend(struct pc_bench_state *st, unsigned shards, enum pc_idle idle,
		      enum pc_backend backend, void *user);

/* Run job(b) on shard `home` and wait until a shard calls rtb_finish();
 * store the shards' own time in st->manual_ns. */
void rtb_run(struct pc_bench_state *st, unsigned home, void (*job)(void *b));

/* On a shard: the job starts now / is over now (wakes rtb_run). */
void rtb_begin(struct rtb *b);
void rtb_finish(struct rtb *b);
/* On a shard: the job is over and took ns (measured its own way). */
void rtb_finish_as(struct rtb *b, uint64_t ns);

/* Stop and free the engine (teardown). */
void rtb_teardown(struct pc_bench_state *st);

/* CPUs this process may use (registration time: cheap, no topology). */
unsigned rtb_usable_cpus(void);

/* A name kept for the life of the process (for generated benchmarks). */
const char *rtb_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A path for this process's scratch files of kind `what`, on a disk
 * (PC_BENCH_DIR, else /var/tmp: /tmp may be memory). */
void rtb_scratch_path(char *out, size_t len, const char *what);

/* Removes path and everything under it (what is left stays: the next
 * user of the path starts after it). */
void rtb_remove_tree(const char *path);

#endif
