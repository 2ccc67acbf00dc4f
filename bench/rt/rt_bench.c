/* SPDX-License-Identifier: MIT */
/* Runtime benchmarks: the engine driver shared by the rt benchmarks. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/clock.h"
#include "percore/shard.h"
#include "rt_bench.h"

int rtb_setup(struct pc_bench_state *st, unsigned shards, enum pc_idle idle,
	      uint32_t ring_capacity, void *user)
{
	return rtb_setup_placed(st, shards, idle, ring_capacity, st->affinity ? "auto" : "off",
				user);
}

/* Start the engine for the state's row; placement as rtb_setup_placed(). */
static int setup(struct pc_bench_state *st, unsigned shards, enum pc_idle idle,
		 uint32_t ring_capacity, const char *placement, enum pc_backend backend, void *user)
{
	struct pc_engine_cfg cfg;
	struct rtb *b = calloc(1, sizeof(*b));
	char err[256];
	int rc;

	if (!b)
		return -ENOMEM;
	pc_engine_cfg_init(&cfg);
	cfg.shards = shards;
	cfg.idle = idle;
	cfg.ring_capacity = ring_capacity;
	cfg.placement = placement;
	cfg.backend = backend;
	rc = pc_engine_start(&cfg, &b->e, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: %s\n", st->bench->name, err);
		free(b);
		return -ENOTSUP;
	}
	if (pc_engine_backend(b->e) != backend) {
		fprintf(stderr, "%s: the %s backend cannot be set up here\n", st->bench->name,
			pc_backend_name(backend));
		pc_engine_destroy(b->e);
		free(b);
		return -ENOTSUP;
	}
	sem_init(&b->done, 0, 0);
	b->user = user;
	st->ctx = b;
	return 0;
}

int rtb_setup_placed(struct pc_bench_state *st, unsigned shards, enum pc_idle idle,
		     uint32_t ring_capacity, const char *placement, void *user)
{
	return setup(st, shards, idle, ring_capacity, placement, PC_BACKEND_EPOLL, user);
}

int rtb_setup_backend(struct pc_bench_state *st, unsigned shards, enum pc_idle idle,
		      enum pc_backend backend, void *user)
{
	return setup(st, shards, idle, 0, st->affinity ? "auto" : "off", backend, user);
}

void rtb_run(struct pc_bench_state *st, unsigned home, void (*job)(void *b))
{
	struct rtb *b = st->ctx;

	b->iterations = st->iterations;
	b->items = b->bytes = 0;
	/* The external ring of a shard that just started is empty. */
	if (pc_engine_submit(b->e, home, job, b)) {
		fprintf(stderr, "%s: cannot reach shard %u\n", st->bench->name, home);
		return;
	}
	while (sem_wait(&b->done) && errno == EINTR)
		;
	st->manual_ns = b->t1 - b->t0;
	st->items = b->items;
	st->bytes = b->bytes;
}

void rtb_begin(struct rtb *b)
{
	b->t0 = pc_now_ns();
}

void rtb_finish(struct rtb *b)
{
	b->t1 = pc_now_ns();
	/* sem_post orders every write above before rtb_run's return. */
	sem_post(&b->done);
}

void rtb_finish_as(struct rtb *b, uint64_t ns)
{
	b->t0 = 0;
	b->t1 = ns;
	sem_post(&b->done);
}

void rtb_teardown(struct pc_bench_state *st)
{
	struct rtb *b = st->ctx;

	pc_engine_stop(b->e);
	pc_engine_join(b->e);
	pc_engine_destroy(b->e);
	sem_destroy(&b->done);
	free(b);
}

unsigned rtb_usable_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned)CPU_COUNT(&set);
}

const char *rtb_name(const char *fmt, ...)
{
	char buf[128], *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = strdup(buf);
	return s ? s : "(out of memory)";
}

void rtb_scratch_path(char *out, size_t len, const char *what)
{
	const char *dir = getenv("PC_BENCH_DIR");

	snprintf(out, len, "%s/percore-%s-bench.%d", dir ? dir : "/var/tmp", what, (int)getpid());
}

void rtb_remove_tree(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd)) {
		/* left behind: see the header */
	}
}
