/* SPDX-License-Identifier: MIT */
/* percore bench: running one repetition of one benchmark and timing it.
 *
 * A single-threaded benchmark runs on the calling thread between two clock
 * reads. A threaded one gets fresh threads, each pinned before it first
 * runs (the affinity is set in the thread attributes, so it never starts
 * on a CPU it will leave). The threads wait at a gate until all exist, then
 * at a barrier; the timed span runs from the first thread leaving the
 * barrier to the last thread returning from run(). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/clock.h"
#include "percore/defs.h"
#include "percore/place.h"
#include "percore/topo.h"
#include "bench/measure.h"

/* One thread of a repetition. Each slot is written by its own thread while
 * it runs and read by the controlling thread after pthread_join, so slots
 * sit on separate cache lines to keep the threads from sharing one. */
struct slot {
	struct pc_bench_state st;       /* written by the slot's thread */
	uint64_t start_ns, end_ns, cpu_ns;
	pthread_t tid;                  /* written by the controlling thread */
} PC_CACHE_ALIGNED;

struct group {
	pthread_mutex_t lock;           /* guards go and abort */
	pthread_cond_t cond;
	bool go, abort;
	pthread_barrier_t start;        /* releases the threads together */
	pthread_barrier_t user;         /* pc_bench_barrier() */
	unsigned n;
	struct slot *slots;
};

void pc_bench_pause(struct pc_bench_state *st)
{
	if (st->_pause_start)
		return;
	st->_pause_cpu_start = pc_thread_cpu_ns();
	st->_pause_start = pc_now_ns();
}

/* Close an open pause at the given clock readings. */
static void close_pause(struct pc_bench_state *st, uint64_t now, uint64_t cpu)
{
	if (!st->_pause_start)
		return;
	st->_paused_ns += pc_elapsed(now, st->_pause_start);
	st->_paused_cpu_ns += pc_elapsed(cpu, st->_pause_cpu_start);
	st->_pause_start = 0;
}

void pc_bench_resume(struct pc_bench_state *st)
{
	uint64_t now = pc_now_ns();

	close_pause(st, now, pc_thread_cpu_ns());
}

void pc_bench_counter(struct pc_bench_state *st, const char *name, double value)
{
	for (unsigned i = 0; i < st->ncounters; i++) {
		if (!strcmp(st->counters[i].name, name)) {
			st->counters[i].value = value;
			return;
		}
	}
	if (st->ncounters < PC_BENCH_MAX_COUNTERS)
		st->counters[st->ncounters++] = (struct pc_bench_metric){ name, value };
}

void pc_bench_fail(struct pc_bench_state *st, const char *why)
{
	if (st->_failed)
		return;
	st->_failed = true;
	snprintf(st->_fail_why, sizeof(st->_fail_why), "%s", why && *why ? why : "failed");
}

/* A failed thread fails the whole sample, with the first reason found. */
static void collect_failure(const struct pc_bench_state *st, struct pc_bench_sample *out)
{
	if (!st->_failed || out->failed)
		return;
	out->failed = true;
	snprintf(out->why, sizeof(out->why), "%s", st->_fail_why);
}

void pc_bench_barrier(struct pc_bench_state *st)
{
	struct group *g = st->_group;

	if (g && g->n > 1)
		pthread_barrier_wait(&g->user);
}

/* The machine, read once: placement is asked before every repetition and
 * hwloc discovery takes milliseconds. Its limits (affinity mask, cgroup)
 * are those at the first call, made from the runner's unpinned thread. */
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;
static struct pc_topo *topo;
static int topo_rc;

static void load_topo(void)
{
	char err[256];

	topo_rc = pc_topo_load(NULL, &topo, err, sizeof(err));
	if (topo_rc)
		fprintf(stderr, "percore bench: %s\n", err);
}

int bench_place_threads(unsigned n, bool affinity, int cpus[])
{
	struct pc_placement *p = NULL;
	char err[256];
	int rc;

	for (unsigned i = 0; i < n; i++)
		cpus[i] = -1;
	if (!affinity || n == 0)
		return 0;
	pthread_once(&topo_once, load_topo);
	if (topo_rc)
		return topo_rc;
	/* Shards and benchmark threads are placed alike: one per physical
	 * core, fastest kind first, spread over nodes; more threads than CPUs
	 * share them rather than fail (the row is still worth having). */
	rc = pc_place(topo, n, PC_PLACE_AUTO, NULL, PC_PLACE_OVERSUBSCRIBE, &p, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "percore bench: %s\n", err);
		return rc;
	}
	for (unsigned i = 0; i < n; i++)
		cpus[i] = p->shards[i].cpu;
	pc_placement_free(p);
	return 0;
}

static void *thread_main(void *arg)
{
	struct slot *sl = arg;
	struct group *g = sl->st._group;
	uint64_t cpu0;
	bool abort;

	pthread_mutex_lock(&g->lock);
	while (!g->go && !g->abort)
		pthread_cond_wait(&g->cond, &g->lock);
	abort = g->abort;
	pthread_mutex_unlock(&g->lock);
	if (abort)
		return NULL;
	pthread_barrier_wait(&g->start);
	cpu0 = pc_thread_cpu_ns();
	sl->start_ns = pc_now_ns();
	sl->st.bench->run(&sl->st);
	sl->end_ns = pc_now_ns();
	sl->cpu_ns = pc_elapsed(pc_thread_cpu_ns(), cpu0);
	return NULL;
}

/* Open the gate: every thread proceeds (go) or returns at once (abort). */
static void release(struct group *g, bool abort)
{
	pthread_mutex_lock(&g->lock);
	g->go = !abort;
	g->abort = abort;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static int start_one(struct group *g, unsigned i, int cpu)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int rc;

	rc = pthread_attr_init(&attr);
	if (rc)
		return -rc;
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		rc = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	if (!rc)
		rc = pthread_create(&g->slots[i].tid, &attr, thread_main, &g->slots[i]);
	pthread_attr_destroy(&attr);
	return -rc;
}

/* Start the threads, run them, join them. On a failed start the threads
 * already created are released with abort and joined. */
static int run_group(struct group *g, const int *cpus, char *why, size_t whylen)
{
	unsigned started = 0;
	int rc = 0;

	for (; started < g->n; started++) {
		rc = start_one(g, started, cpus[started]);
		if (rc) {
			snprintf(why, whylen, "cannot start thread %u on CPU %d: %s",
				 started, cpus[started], strerror(-rc));
			break;
		}
	}
	release(g, rc != 0);
	for (unsigned i = 0; i < started; i++)
		pthread_join(g->slots[i].tid, NULL);
	return rc;
}

static int group_init(struct group *g, unsigned n)
{
	g->n = n;
	g->go = g->abort = false;
	g->slots = aligned_alloc(PC_CACHE_PAD, sizeof(*g->slots) * n);
	if (!g->slots)
		return -ENOMEM;
	memset(g->slots, 0, sizeof(*g->slots) * n);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	pthread_barrier_init(&g->start, NULL, n);
	pthread_barrier_init(&g->user, NULL, n);
	return 0;
}

static void group_fini(struct group *g)
{
	pthread_barrier_destroy(&g->user);
	pthread_barrier_destroy(&g->start);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g->slots);
}

/* Fold the threads' figures into one sample. */
static void collect(const struct pc_bench_job *job, const struct group *g,
		    struct pc_bench_sample *out)
{
	uint64_t first = UINT64_MAX, last = 0, manual = 0;

	for (unsigned i = 0; i < g->n; i++) {
		const struct slot *sl = &g->slots[i];

		first = sl->start_ns < first ? sl->start_ns : first;
		last = sl->end_ns > last ? sl->end_ns : last;
		manual = sl->st.manual_ns > manual ? sl->st.manual_ns : manual;
		out->cpu_ns += (double)sl->cpu_ns;
		out->items += sl->st.items;
		out->bytes += sl->st.bytes;
		collect_failure(&sl->st, out);
	}
	out->run_wall_ns = (double)pc_elapsed(last, first);
	out->time_ns = job->bench->flags & PC_BENCH_MANUAL_TIME ? (double)manual
								 : out->run_wall_ns;
	out->ncounters = g->slots[0].st.ncounters;
	memcpy(out->counters, g->slots[0].st.counters, sizeof(out->counters));
}

static int run_threaded(const struct pc_bench_job *job, const struct pc_bench_state *proto,
			struct pc_bench_sample *out, char *why, size_t whylen)
{
	struct group g;
	int *cpus = calloc(job->threads, sizeof(*cpus)), rc;

	if (!cpus || group_init(&g, job->threads)) {
		free(cpus);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	rc = bench_place_threads(job->threads, job->affinity, cpus);
	if (rc) {
		snprintf(why, whylen, "cannot read the CPUs this process may use: %s",
			 strerror(-rc));
		goto out;
	}
	for (unsigned i = 0; i < g.n; i++) {
		g.slots[i].st = *proto;
		g.slots[i].st.thread_index = i;
		g.slots[i].st.cpu = cpus[i];
		g.slots[i].st._group = &g;
	}
	rc = run_group(&g, cpus, why, whylen);
	if (!rc)
		collect(job, &g, out);
out:
	group_fini(&g);
	free(cpus);
	return rc;
}

/* Pin the calling thread to the one CPU placement gives a single thread,
 * saving its mask in *old. Returns whether it moved. */
static bool pin_here(cpu_set_t *old)
{
	cpu_set_t one;
	int cpu;

	if (bench_place_threads(1, true, &cpu) || cpu < 0 ||
	    pthread_getaffinity_np(pthread_self(), sizeof(*old), old))
		return false;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return !pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

static void run_here(const struct pc_bench_job *job, struct pc_bench_state *st,
		     struct pc_bench_sample *out)
{
	/* Unpinned, the scheduler may move the row between CPUs that run at
	 * different speeds on a VM, so a row and its peer would not see the
	 * same machine (measured on a 2-vCPU VM, FlatMap/Find/1000 and its
	 * absl peer interleaved with server rows: the spread of repetitions,
	 * IQR over median, 23-36% pinned against 60-61% unpinned). Rows that
	 * time themselves start processes and threads of their own, which
	 * must not inherit one CPU: they stay unpinned. */
	bool self_timed = job->bench->flags & PC_BENCH_MANUAL_TIME;
	cpu_set_t old;
	bool pinned = !self_timed && pin_here(&old);
	uint64_t c0 = pc_thread_cpu_ns(), t0 = pc_now_ns(), t1, c1;

	job->bench->run(st);
	t1 = pc_now_ns();
	c1 = pc_thread_cpu_ns();
	if (pinned)
		pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	close_pause(st, t1, c1);
	out->run_wall_ns = (double)pc_elapsed(t1, t0);
	out->time_ns = job->bench->flags & PC_BENCH_MANUAL_TIME
			       ? (double)st->manual_ns
			       : (double)pc_elapsed(pc_elapsed(t1, t0), st->_paused_ns);
	out->cpu_ns = (double)pc_elapsed(pc_elapsed(c1, c0), st->_paused_cpu_ns);
	out->items = st->items;
	out->bytes = st->bytes;
	out->ncounters = st->ncounters;
	memcpy(out->counters, st->counters, sizeof(out->counters));
	collect_failure(st, out);
}

int bench_measure(const struct pc_bench_job *job, struct pc_bench_sample *out,
		  char *why, size_t whylen)
{
	const struct pc_bench *b = job->bench;
	struct pc_bench_state st = {
		.iterations = job->iterations, .threads = job->threads, .cpu = -1,
		.affinity = job->affinity, .bench = b,
	};
	uint64_t t0 = pc_now_ns();
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->iterations = job->iterations;
	if (b->setup && (rc = b->setup(&st)) < 0) {
		const char *desc = strerrordesc_np(-rc), *name = strerrorname_np(-rc);

		snprintf(why, whylen, "setup failed: %s (%s)", desc ? desc : "unknown error",
			 name ? name : "?");
		return rc;
	}
	rc = 0;
	if (job->threaded)
		rc = run_threaded(job, &st, out, why, whylen);
	else
		run_here(job, &st, out);
	if (b->teardown)
		b->teardown(&st);
	/* Nobody counted items: each thread's iterations are its items. */
	if (!rc && out->items == 0)
		out->items = job->iterations * job->threads;
	out->total_wall_ns = (double)pc_elapsed(pc_now_ns(), t0);
	return rc;
}
