/* SPDX-License-Identifier: MIT */
/* No lost wake-up: two shards bounce a message back and forth under the
 * sleep policy, so that every hop goes through announce-then-recheck on
 * the receiver and the doorbell/flag check on the sender. A single lost
 * wake-up stalls the exchange for good; a watchdog turns that into a
 * failure naming the hop instead of a hung test.
 *
 * Rounds: both shards on one CPU, where a shard preempted between its
 * announce and its recheck meets the other mid-protocol (PC_RT_PINGPONGS
 * round trips, default 1,000,000; 50,000 under ThreadSanitizer); then the
 * shards on two CPUs, truly concurrent, with epoll and with io_uring
 * (skipped with the reason when the kernel refuses it), PC_RT_CROSS round
 * trips each (default 20,000; 3,000 under ThreadSanitizer): a wake-up
 * across CPUs costs the kernel (and a virtual machine's hypervisor) far
 * more than the protocol, about 100 us a hop on a small VM. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/clock.h"
#include "percore/engine.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "rt_util.h"
#include "testmain.h"

#ifdef PC_TSAN
#define DEFAULT_TRIPS 50000
#define DEFAULT_CROSS 3000
#else
#define DEFAULT_TRIPS 1000000
#define DEFAULT_CROSS 20000
#endif

#define STALL_NS (10ull * 1000000000)

static struct pc_engine *engine;
static uint64_t trips;
static _Atomic uint64_t progress;   /* round trips completed (shard 0) */
static uint64_t expect_ping;        /* shard 1 only */
/* Each shard's reactor figures at its last message of a round. */
static struct pc_reactor_io_stats io_seen[2];

static void pong(void *arg);

/* On shard 1: check the sequence and send it back. */
static void ping(void *arg)
{
	uint64_t seq = (uint64_t)(uintptr_t)arg;
	int rc;

	RT_CHECK(seq == expect_ping, "ping %llu arrived, expected %llu", (unsigned long long)seq,
		 (unsigned long long)expect_ping);
	expect_ping = seq + 1;
	if (seq + 1 == trips)
		pc_reactor_io_stats(pc_shard_reactor(), &io_seen[1]);
	rc = pc_shard_submit(0, pong, arg);
	RT_CHECK(rc == 0, "pong submit failed: %d", rc);
}

/* On shard 0: count the trip and start the next, or stop. */
static void pong(void *arg)
{
	uint64_t seq = (uint64_t)(uintptr_t)arg;
	uint64_t done = atomic_load_explicit(&progress, memory_order_relaxed);
	int rc;

	RT_CHECK(seq == done, "pong %llu arrived, expected %llu", (unsigned long long)seq,
		 (unsigned long long)done);
	atomic_store_explicit(&progress, done + 1, memory_order_relaxed);
	if (done + 1 == trips) {
		pc_reactor_io_stats(pc_shard_reactor(), &io_seen[0]);
		pc_engine_stop(pc_shard_engine());
		return;
	}
	rc = pc_shard_submit(1, ping, (void *)(uintptr_t)(seq + 1));
	RT_CHECK(rc == 0, "ping submit failed: %d", rc);
}

static void on_start(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 0)
		RT_CHECK(pc_shard_submit(1, ping, (void *)0) == 0, "first ping refused");
}

/* Run one round; returns 77 when the backend cannot be set up. */
static int round_trip(enum pc_backend backend, uint64_t n)
{
	struct pc_engine_cfg cfg;
	char err[200];
	uint64_t t0 = pc_now_ns(), last = 0, last_change = t0;
	int rc;

	pc_engine_cfg_init(&cfg);
	cfg.shards = 2;
	cfg.oversubscribe = true;
	/* one CPU each, whatever the count: the wake-ups cross CPUs (auto
	 * would let two shards on two CPUs share either) */
	cfg.placement = "spread";
	cfg.idle = PC_IDLE_SLEEP;
	cfg.backend = backend;
	cfg.on_start = on_start;
	trips = n;
	expect_ping = 0;
	memset(io_seen, 0, sizeof(io_seen));
	atomic_store(&progress, 0);
	rc = pc_engine_start(&cfg, &engine, err, sizeof(err));
	assert_int_equal(rc, 0);
	if (pc_engine_backend(engine) != backend) {
		pc_engine_stop(engine);
		pc_engine_join(engine);
		pc_engine_destroy(engine);
		return 77;
	}
	/* Watchdog: the exchange must keep moving. */
	while (!pc_engine_stopping(engine)) {
		uint64_t now = pc_now_ns(), p = atomic_load(&progress);

		if (p != last) {
			last = p;
			last_change = now;
		} else if (now - last_change > STALL_NS) {
			fprintf(stderr, "stalled at round trip %llu of %llu (%s, cpus %d,%d): a wake-up was lost\n",
				(unsigned long long)p, (unsigned long long)n, pc_backend_name(backend),
				pc_engine_shard_cpu(engine, 0), pc_engine_shard_cpu(engine, 1));
			_exit(1); /* the shards cannot be joined */
		}
		usleep(20000);
	}
	pc_engine_join(engine);
	assert_int_equal(atomic_load(&rt_failures), 0);
	assert_int_equal(atomic_load(&progress), n);
	/* The sleep path was really taken. */
	assert_true(RT_SUM(engine, sleeps) > 0);
	assert_true(RT_SUM(engine, wakeups_sent) > 0);
	assert_int_equal(RT_SUM(engine, unrun_at_stop), 0);
	/* On io_uring the wake-ups went from ring to ring, each way, where
	 * the kernel offers it (what arrives so is counted before the
	 * message it woke the shard for runs). */
	for (unsigned i = 0; i < 2 && backend == PC_BACKEND_URING && io_seen[0].ring_wake; i++) {
		assert_true(io_seen[i].ring_wakes_sent > 0);
		assert_true(io_seen[i].ring_wakes_received > 0);
	}
	printf("%s, cpus %d,%d: %llu round trips in %.2f s (%.1f us each), %llu sleeps, %llu wake-ups\n",
	       pc_backend_name(backend), pc_engine_shard_cpu(engine, 0), pc_engine_shard_cpu(engine, 1),
	       (unsigned long long)n, (double)(pc_now_ns() - t0) / 1e9,
	       (double)(pc_now_ns() - t0) / 1e3 / (double)n, (unsigned long long)RT_SUM(engine, sleeps),
	       (unsigned long long)RT_SUM(engine, wakeups_sent));
	pc_engine_destroy(engine);
	return 0;
}

/* Confine this thread (and so the topology the engine sees) to its first
 * usable CPU, or give back the old mask. */
static void confine(bool on)
{
	static cpu_set_t saved;
	cpu_set_t one;

	if (!on) {
		assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
		return;
	}
	assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &saved)) {
			CPU_SET(c, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
}

static void sleep_policy_epoll_two_cpus(void **state)
{
	(void)state;
	round_trip(PC_BACKEND_EPOLL, rt_env_u64("PC_RT_CROSS", DEFAULT_CROSS));
}

static void sleep_policy_uring_two_cpus(void **state)
{
	(void)state;
	if (round_trip(PC_BACKEND_URING, rt_env_u64("PC_RT_CROSS", DEFAULT_CROSS)) == 77) {
		PC_SKIP("io_uring cannot be set up here (see the line above)");
	}
}

static void sleep_policy_one_cpu(void **state)
{
	(void)state;
	confine(true);
	round_trip(PC_BACKEND_EPOLL, rt_env_u64("PC_RT_PINGPONGS", DEFAULT_TRIPS));
	confine(false);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sleep_policy_one_cpu),
		cmocka_unit_test(sleep_policy_epoll_two_cpus),
		cmocka_unit_test(sleep_policy_uring_two_cpus),
	};
	return pc_test_main(tests, argc, argv);
}
