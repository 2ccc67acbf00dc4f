/* The noise experiment: a fixed piece of work with an idle pause between
 * iterations.
 *
 * Noise/ArraySum sums 4,096 doubles (32 KiB, one L1d's worth) 256 times per
 * iteration, then sleeps 2 ms outside the timed region. A core that idles
 * for 2 ms may drop into a deep C-state, lower its clock and lose its
 * cache, so the next iteration starts cold; how much that varies from
 * repetition to repetition is what the report compares across pinning
 * (PC_BENCH_AFFINITY gives /affinity:on and /affinity:off rows) and the PM
 * QoS request (percore bench --pm-qos). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "percore/bench.h"
#include "percore/defs.h"

#define NOISE_ELEMS 4096
#define NOISE_PASSES 256
#define NOISE_PAUSE_NS 2000000L

static int arraysum_setup(struct pc_bench_state *st)
{
	double *v = aligned_alloc(PC_CACHE_LINE, NOISE_ELEMS * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < NOISE_ELEMS; i++)
		v[i] = (double)(i % 64) * 0.5;
	st->ctx = v;
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
	const double *v = st->ctx;
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
	free(st->ctx);
}

static const struct pc_bench noise_arraysum = {
	.name = "Noise/ArraySum",
	.flags = PC_BENCH_AFFINITY,
	.setup = arraysum_setup,
	.run = arraysum_run,
	.teardown = arraysum_teardown,
};
PC_BENCH_REGISTER(noise_arraysum)
