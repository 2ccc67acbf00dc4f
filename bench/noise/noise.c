/* SPDX-License-Identifier: MIT */
/* The noise experiment: a fixed piece of work with an idle pause between
 * iterations.
 *
 * Noise/ArraySum sums 4,096 doubles (32 KiB, one L1d's worth) 256 times per
 * iteration, then sleeps 2 ms outside the timed region. A core that idles
 * for 2 ms may drop into a deep C-state, lower its clock and lose its
 * cache, so the next iteration starts cold; how much that varies from
 * repetition to repetition is what the report compares across pinning
 * (PC_BENCH_AFFINITY gives /affinity:on and /affinity:off rows) and the PM
 * QoS request: Noise/ArraySum/pm_qos:on is the same work with a request of
 * 0 us held on /dev/cpu_dma_latency during each of its repetitions (taken
 * in setup, dropped in teardown), so its rows are interleaved with the
 * others in one run. Where the request cannot be made (no device, not
 * root) that row is skipped with the reason. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "percore/bench.h"
#include "percore/defs.h"

#define NOISE_ELEMS 4096
#define NOISE_PASSES 256
#define NOISE_PAUSE_NS 2000000L

struct arraysum {
	double *v;
	int qos_fd;        /* the PM QoS request held, -1: none */
};

static int arraysum_setup(struct pc_bench_state *st)
{
	struct arraysum *a = malloc(sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->qos_fd = -1;
	if (st->bench->arg) {
		a->qos_fd = pc_bench_pm_qos_hold();
		if (a->qos_fd < 0) {
			int err = a->qos_fd;
			fprintf(stderr, "%s: cannot hold a PM QoS request on %s: %s\n",
				st->bench->name, PC_BENCH_PM_QOS_DEVICE, strerror(-err));
			free(a);
			return err;
		}
	}
	a->v = aligned_alloc(PC_CACHE_LINE, NOISE_ELEMS * sizeof(*a->v));
	if (!a->v) {
		if (a->qos_fd >= 0)
			close(a->qos_fd);
		free(a);
		return -ENOMEM;
	}
	for (size_t i = 0; i < NOISE_ELEMS; i++)
		a->v[i] = (double)(i % 64) * 0.5;
	st->ctx = a;
	return 0;
}

/* One pass is a chain of dependent additions: its speed follows the
 * core's clock, not memory bandwidth, once the array is in L1. */
static double sum_pass(const double *v)
{
	double s = 0;

	for (size_t i = 0; i < NOISE_ELEMS; i++)
		s += v[i];
	return s;
}

static void arraysum_run(struct pc_bench_state *st)
{
	const double *v = ((struct arraysum *)st->ctx)->v;
	const struct timespec pause = { 0, NOISE_PAUSE_NS };

	for (uint64_t it = 0; it < st->iterations; it++) {
		for (int p = 0; p < NOISE_PASSES; p++) {
			double s = sum_pass(v);
			PC_DO_NOT_OPTIMIZE(s);
		}
		pc_bench_pause(st);
		/* a signal may cut the sleep short: the idle time only has to be
		 * long enough for the core to go idle, not exact */
		nanosleep(&pause, NULL);
		pc_bench_resume(st);
	}
	st->bytes = st->iterations * NOISE_PASSES * NOISE_ELEMS * sizeof(double);
}

static void arraysum_teardown(struct pc_bench_state *st)
{
	struct arraysum *a = st->ctx;

	if (a->qos_fd >= 0)
		close(a->qos_fd); /* drops the request */
	free(a->v);
	free(a);
}

/* arg: 1 to hold the PM QoS request. */
#define NOISE_BENCH(var, title, qos)                                             \
	static const struct pc_bench var = {                                      \
		.name = title, .arg = qos, .flags = PC_BENCH_AFFINITY,             \
		.setup = arraysum_setup, .run = arraysum_run,                      \
		.teardown = arraysum_teardown,                                     \
	};                                                                        \
	PC_BENCH_REGISTER(var)

NOISE_BENCH(noise_arraysum, "Noise/ArraySum", 0)
NOISE_BENCH(noise_arraysum_qos, "Noise/ArraySum/pm_qos:on", 1)
