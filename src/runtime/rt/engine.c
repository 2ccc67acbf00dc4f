/* SPDX-License-Identifier: MIT */
/* percore rt: the engine: placing, starting, running and stopping shards. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/clock.h"
#include "percore/cpulist.h"
#include "percore/crash.h"
#include "percore/log.h"
#include "percore/place.h"
#include "percore/service.h"
#include "percore/topo.h"
#include "rt/reactor_impl.h"
#include "rt/rt.h"

__thread struct rt_shard *rt_self;

static const char *const idle_names[] = {
	[PC_IDLE_ADAPTIVE] = "adaptive",
	[PC_IDLE_SPIN] = "spin",
	[PC_IDLE_SLEEP] = "sleep",
	[PC_IDLE_MESH] = "mesh",
	[PC_IDLE_AWAIT] = "await",
};

const char *pc_idle_name(enum pc_idle idle)
{
	return (unsigned)idle < PC_ARRAY_LEN(idle_names) ? idle_names[idle] : "?";
}

int pc_idle_parse(const char *name, enum pc_idle *out)
{
	for (unsigned i = 0; name && i < PC_ARRAY_LEN(idle_names); i++)
		if (!strcmp(name, idle_names[i])) {
			*out = (enum pc_idle)i;
			return 0;
		}
	return -EINVAL;
}

void pc_engine_cfg_init(struct pc_engine_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->placement = "auto";
	cfg->idle = PC_IDLE_ADAPTIVE;
	cfg->poll_budget_us = PC_ENGINE_DEFAULT_BUDGET_US;
	cfg->publish_batch = PC_ENGINE_DEFAULT_BATCH;
	cfg->backend = PC_BACKEND_EPOLL;
	cfg->log_level = PC_LOG_INFO;
	cfg->log_format = PC_LOG_LOGFMT;
	cfg->stall_threshold_ms = PC_ENGINE_DEFAULT_STALL_MS;
}

static int fail(char *err, size_t len, int rc, const char *why)
{
	if (err && len)
		snprintf(err, len, "%s", why);
	return rc;
}

/* Ring capacity when the configuration leaves it to us: 256 messages up
 * to 64 shards; beyond, shrink so the N x N mesh stays near 1 GiB. */
static uint32_t auto_capacity(unsigned n)
{
	uint32_t c = 256;

	while (c > 16 && (uint64_t)n * n * c * sizeof(struct rt_msg) > (1ull << 30))
		c /= 2;
	return c;
}

static int check_cfg(const struct pc_engine_cfg *c, char *err, size_t len)
{
	if (c->shards > PC_ENGINE_MAX_SHARDS)
		return fail(err, len, -EINVAL, "more shards than PC_ENGINE_MAX_SHARDS");
	/* At most 2^30: mailbox tags carry ring positions modulo 2^31. */
	if (c->ring_capacity && (!PC_IS_POW2(c->ring_capacity) || c->ring_capacity < 16 ||
				 c->ring_capacity > 1u << 30))
		return fail(err, len, -EINVAL, "ring capacity must be a power of two from 16 to 2^30");
	if ((unsigned)c->idle > PC_IDLE_AWAIT)
		return fail(err, len, -EINVAL, "unknown idle policy");
	if (c->backend != PC_BACKEND_EPOLL && c->backend != PC_BACKEND_URING)
		return fail(err, len, -EINVAL, "unknown reactor backend");
	return rt_outbox_check_cfg(c, err, len);
}

/* ---- placement ------------------------------------------------------- */

/* Where each shard runs, from the machine's topology: a policy name or a
 * CPU list. Stores the placement in *out (kept for pc_engine_placement). */
static int place(const struct pc_engine_cfg *c, struct pc_placement **out, char *err, size_t len)
{
	const char *p = c->placement ? c->placement : "auto";
	enum pc_place_policy policy;
	cpu_set_t list;
	struct pc_topo *topo;
	int rc;

	if (pc_place_policy_parse(p, &policy)) {
		if (pc_cpulist_parse(p, &list))
			return fail(err, len, -EINVAL, "placement is neither a policy nor a CPU list");
		policy = PC_PLACE_LIST;
	}
	rc = pc_topo_load(NULL, &topo, err, len);
	if (rc)
		return rc;
	rc = pc_place(topo, c->shards, policy, policy == PC_PLACE_LIST ? &list : NULL,
		      c->oversubscribe ? PC_PLACE_OVERSUBSCRIBE : 0, out, err, len);
	pc_topo_free(topo);
	return rc;
}

/* ---- one shard --------------------------------------------------------- */

/* Holds the calling shard to its CPU, or to its node's when the
 * placement floats (place.h). */
static int pin(const struct rt_shard *s)
{
	cpu_set_t cpus;

	if (s->cpu < 0)
		return 0;
	pc_placement_cpus(s->e->placement, s->id, &cpus);
	return pc_pin_self_set(&cpus);
}

/* The thread's scheduling policy, when the configuration asks for
 * SCHED_BATCH (engine.h). Not fatal: the shard runs either way. */
static void set_sched(const struct rt_shard *s)
{
	struct sched_param none = { .sched_priority = 0 };
	int rc;

	if (!s->e->cfg.sched_batch)
		return;
	rc = pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
	if (rc)
		pc_log(PC_LOG_WARN, "shard %u keeps its scheduling policy: SCHED_BATCH refused (%s)",
		       s->id, strerror(rc));
}

/* On the shard's own thread: pin first, so every allocation below is
 * first touched from the right CPU and node. */
static int shard_setup(struct rt_shard *s)
{
	int rc = pin(s);

	rt_log_attach((int)s->id, &s->stats.log_dropped);
	set_sched(s);
	if (!s->e->cfg.no_crash_report)
		rt_crash_thread_stack();

	if (!rc)
		rc = pc_reactor_create(&s->reactor, s->e->cfg.backend, 0);
	if (!rc)
		rc = rt_mesh_setup(s);
	if (!rc)
		rc = rt_shard_mem_setup(s);
	if (!rc)
		rc = rt_outbox_setup(s);
	s->stats.shard = s->id;
	s->stats.cpu = s->cpu;
	s->stats.node = s->node;
	return rc;
}

static void shard_loop(struct rt_shard *s)
{
	struct pc_engine *e = s->e;
	struct rt_idle idle = { 0 };

	while (!atomic_load_explicit(&e->stop, memory_order_relaxed)) {
		unsigned n = rt_mesh_drain(s);

		if (PC_UNLIKELY(s->app.nobx))
			n += rt_outbox_drain(s);

		if (s->io_poll)
			n += s->io_poll(s->io);
		if (s->woke) {
			/* The wait just asked the kernel and ran what it found:
			 * asking again at once finds nothing, one system call a
			 * wake-up for nothing. The next turn asks, or the next
			 * wait does. */
			s->woke = false;
			n += (unsigned)rt_reactor_run_due(s->reactor);
		} else if (rt_reactor_wants_poll(s->reactor)) {
			int k = pc_reactor_poll(s->reactor, 0);

			if (k > 0)
				n += (unsigned)k;
		}
		rt_mesh_flush(s);
		RT_STAT_ADD(s, turns, 1);
		if (n)
			rt_idle_busy(s, &idle);
		else
			rt_idle_step(s, &idle);
		/* The flush's wake-ups, unless the idle step's wait took them
		 * along (a shard that goes to sleep wakes the others and
		 * waits in one system call). */
		rt_reactor_push_wakes(s->reactor);
	}
	rt_idle_busy(s, &idle);
}

/* After the ready rendezvous: run until stopped, then leave in step with
 * the other shards so that nothing is sent to a shard that has gone. */
static void shard_body(struct rt_shard *s)
{
	struct pc_engine *e = s->e;

	rt_self = s;
	rt_mesh_connect(s);
	/* relaxed atomic: pc_engine_stats_read reads it from other threads */
	__atomic_store_n(&s->start_ns, pc_now_ns(), __ATOMIC_RELAXED);
	if (e->cfg.on_start)
		e->cfg.on_start(e->cfg.arg);
	/* Watched from here: on_start is set-up, which may wait for the
	 * other shards. */
	rt_stall_loop_begin(s);
	shard_loop(s);
	rt_stall_loop_end(s);
	rt_calls_cancel(s);
	if (e->cfg.on_stop)
		e->cfg.on_stop(e->cfg.arg);
	rt_mesh_flush(s);
	rt_reactor_push_wakes(s->reactor);
	/* Every shard has published its last message past this point. */
	pthread_barrier_wait(&e->done);
	rt_mesh_final_drain(s);
	rt_mesh_drop_returns(s);
	rt_outbox_end(s);
	rt_calls_free(s);
	rt_maps_free(s);
	RT_STAT_SET(s, busy_ns, rt_busy_ns(s));
	rt_self = NULL;
	rt_log_detach();
}

static void *shard_main(void *arg)
{
	struct rt_shard *s = arg;
	struct pc_engine *e = s->e;

	s->setup_err = shard_setup(s);
	if (s->setup_err)
		atomic_store(&e->setup_failed, 1);
	/* Wait for the starter's verdict: every shard's rings exist (or
	 * some shard failed and nobody runs). */
	pthread_mutex_lock(&e->gate_lock);
	e->arrived++;
	pthread_cond_broadcast(&e->gate_cond);
	while (!e->gate_open)
		pthread_cond_wait(&e->gate_cond, &e->gate_lock);
	pthread_mutex_unlock(&e->gate_lock);
	if (!atomic_load(&e->setup_failed))
		shard_body(s);
	rt_log_detach();
	rt_crash_thread_end();
	return NULL;
}

/* Starter: wait until `count` shard threads have set up, then let them
 * go. The mutex orders every shard's set-up before every shard's run. */
static void open_gate(struct pc_engine *e, unsigned count)
{
	pthread_mutex_lock(&e->gate_lock);
	while (e->arrived < count)
		pthread_cond_wait(&e->gate_cond, &e->gate_lock);
	e->gate_open = true;
	pthread_cond_broadcast(&e->gate_cond);
	pthread_mutex_unlock(&e->gate_lock);
}

/* ---- the engine ------------------------------------------------------ */

static struct pc_engine *engine_alloc(const struct pc_engine_cfg *cfg, struct pc_placement *pl)
{
	unsigned n = pl->n;
	struct pc_engine *e;

	if (posix_memalign((void **)&e, PC_CACHE_PAD, sizeof(*e)))
		return NULL;
	memset(e, 0, sizeof(*e));
	if (posix_memalign((void **)&e->shards, PC_CACHE_PAD, n * sizeof(*e->shards))) {
		free(e);
		return NULL;
	}
	memset(e->shards, 0, n * sizeof(*e->shards));
	e->n = n;
	e->cfg = *cfg;
	e->cfg.placement = NULL; /* the caller's string may not outlive us */
	if (!e->cfg.publish_batch)
		e->cfg.publish_batch = PC_ENGINE_DEFAULT_BATCH;
	e->capacity = cfg->ring_capacity ? cfg->ring_capacity : auto_capacity(n);
	e->reserve = e->capacity / 4;
	e->budget_ns = (uint64_t)cfg->poll_budget_us * 1000;
	e->placement = pl;
	for (unsigned i = 0; i < n; i++) {
		e->shards[i].id = i;
		e->shards[i].e = e;
		e->shards[i].cpu = pl->shards[i].cpu;
		e->shards[i].node = pl->shards[i].node;
		pthread_mutex_init(&e->shards[i].ext_lock, NULL);
		pthread_mutex_init(&e->shards[i].stall_lock, NULL);
	}
	pthread_mutex_init(&e->gate_lock, NULL);
	pthread_mutex_init(&e->io_lock, NULL);
	pthread_cond_init(&e->gate_cond, NULL);
	pthread_barrier_init(&e->done, NULL, n);
	return e;
}

static void engine_free(struct pc_engine *e)
{
	rt_log_engine_close(e->log_owner);
	if (e->io_pool)
		e->io_pool_free(e->io_pool);
	for (unsigned i = 0; i < e->n; i++) {
		if (e->shards[i].io)
			e->shards[i].io_free(e->shards[i].io);
		rt_mesh_free(&e->shards[i]);
		rt_shard_mem_free(&e->shards[i]);
		rt_outbox_free(&e->shards[i]);
		pc_reactor_destroy(e->shards[i].reactor);
		pthread_mutex_destroy(&e->shards[i].ext_lock);
		pthread_mutex_destroy(&e->shards[i].stall_lock);
	}
	pthread_mutex_destroy(&e->gate_lock);
	pthread_mutex_destroy(&e->io_lock);
	pthread_cond_destroy(&e->gate_cond);
	pthread_barrier_destroy(&e->done);
	pc_placement_free(e->placement);
	free(e->shards);
	free(e);
}

static void log_started(const struct pc_engine *e)
{
	struct pc_log_field f[] = {
		PC_LOG_UINT("shards", e->n),
		PC_LOG_STR("backend", pc_backend_name(pc_engine_backend(e))),
		PC_LOG_STR("idle", pc_idle_name(e->cfg.idle)),
		PC_LOG_UINT("stall_threshold_ms", e->cfg.stall_threshold_ms),
	};

	pc_log_fields(PC_LOG_DEBUG, f, PC_ARRAY_LEN(f), "engine started");
}

/* Start the shard threads with SIGINT and SIGTERM blocked, so those
 * signals go to a thread that is not a shard. Returns how many started. */
static unsigned spawn(struct pc_engine *e, unsigned first, int *rc)
{
	sigset_t block, old;
	unsigned i;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (i = first; i < e->n; i++) {
		*rc = -pthread_create(&e->shards[i].thread, NULL, shard_main, &e->shards[i]);
		if (*rc)
			break;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return i - first;
}

static int first_setup_error(const struct pc_engine *e)
{
	for (unsigned i = 0; i < e->n; i++)
		if (e->shards[i].setup_err)
			return e->shards[i].setup_err;
	return -ENOMEM;
}

/* Start the shard threads (and set shard 0 up on this thread when the
 * caller is shard 0). Returns 0 once every shard is ready to run, or the
 * first error after every started thread has ended. */
static int launch(struct pc_engine *e)
{
	unsigned first = e->cfg.caller_is_shard0 ? 1 : 0, started;
	int rc = 0;

	started = spawn(e, first, &rc);
	if (rc)
		atomic_store(&e->setup_failed, 1);
	if (first) {
		e->shards[0].setup_err = shard_setup(&e->shards[0]);
		if (e->shards[0].setup_err)
			atomic_store(&e->setup_failed, 1);
	}
	open_gate(e, started);
	if (!atomic_load(&e->setup_failed))
		return 0;
	if (first)
		rt_log_detach(); /* shard 0's ring, on this thread */
	for (unsigned i = first; i < first + started; i++)
		pthread_join(e->shards[i].thread, NULL);
	return rc ? rc : first_setup_error(e);
}

int pc_engine_start(const struct pc_engine_cfg *cfg, struct pc_engine **out, char *err, size_t errlen)
{
	struct pc_placement *placement;
	struct pc_engine *e;
	int rc = check_cfg(cfg, err, errlen);

	*out = NULL;
	if (rc)
		return rc;
	rc = place(cfg, &placement, err, errlen);
	if (rc)
		return rc;
	e = engine_alloc(cfg, placement);
	if (!e) {
		pc_placement_free(placement);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
	rc = rt_log_engine_open(cfg, &e->log_owner, err, errlen);
	if (rc) {
		engine_free(e);
		return rc;
	}
	if (!cfg->no_crash_report)
		pc_crash_install();
	rc = launch(e);
	if (rc) {
		engine_free(e);
		return fail(err, errlen, rc, "a shard could not start, set up its reactor or its rings");
	}
	rt_stall_start(e);
	log_started(e);
	*out = e;
	return 0;
}

int pc_engine_cfg_shards(const struct pc_engine_cfg *cfg, char *err, size_t errlen)
{
	struct pc_placement *placement;
	int rc = check_cfg(cfg, err, errlen);

	if (!rc)
		rc = place(cfg, &placement, err, errlen);
	if (rc)
		return rc;
	rc = (int)placement->n;
	pc_placement_free(placement);
	return rc;
}

int pc_engine_run(struct pc_engine *e)
{
	if (!e->cfg.caller_is_shard0 || e->ran0)
		return -EINVAL;
	e->ran0 = true;
	shard_body(&e->shards[0]);
	return 0;
}

void pc_engine_stop(struct pc_engine *e)
{
	/* Only async-signal-safe steps: an atomic store and write(2). */
	if (atomic_exchange(&e->stop, 1))
		return;
	for (unsigned i = 0; i < e->n; i++)
		pc_reactor_wake(e->shards[i].reactor);
}

bool pc_engine_stopping(const struct pc_engine *e)
{
	return atomic_load(&e->stop) != 0;
}

int pc_engine_join(struct pc_engine *e)
{
	unsigned first = e->cfg.caller_is_shard0 ? 1 : 0;

	if (e->joined)
		return 0;
	if (first && !e->ran0)
		pc_engine_run(e);
	for (unsigned i = first; i < e->n; i++)
		pthread_join(e->shards[i].thread, NULL);
	rt_stall_stop(e);
	e->joined = true;
	pc_log(PC_LOG_DEBUG, "engine stopped");
	return 0;
}

void pc_engine_destroy(struct pc_engine *e)
{
	if (!e)
		return;
	if (!e->joined) {
		pc_engine_stop(e);
		pc_engine_join(e);
	}
	rt_signals_release(e);
	engine_free(e);
}

unsigned pc_engine_shards(const struct pc_engine *e)
{
	return e->n;
}

enum pc_idle pc_engine_idle(const struct pc_engine *e)
{
	return e->cfg.idle;
}

enum pc_backend pc_engine_backend(const struct pc_engine *e)
{
	return pc_reactor_backend(e->shards[0].reactor);
}

int pc_engine_shard_cpu(const struct pc_engine *e, unsigned i)
{
	return i < e->n ? e->shards[i].cpu : -1;
}

const struct pc_placement *pc_engine_placement(const struct pc_engine *e)
{
	return e->placement;
}

int pc_engine_submit(struct pc_engine *e, unsigned to, void (*fn)(void *), void *arg)
{
	if (to >= e->n || !fn)
		return -EINVAL;
	if (pc_engine_stopping(e))
		return -ESHUTDOWN;
	return rt_mesh_push_external(e, to, fn, arg);
}

/* ---- who am I ------------------------------------------------------- */

int pc_shard_id(void)
{
	return rt_self ? (int)rt_self->id : -1;
}

void pc_shard_expect(int delta)
{
	if (rt_self)
		rt_self->awaiting += delta;
}

unsigned pc_shard_count(void)
{
	return rt_self ? rt_self->e->n : 0;
}

struct pc_reactor *pc_shard_reactor(void)
{
	return rt_self ? rt_self->reactor : NULL;
}

struct pc_engine *pc_shard_engine(void)
{
	return rt_self ? rt_self->e : NULL;
}
