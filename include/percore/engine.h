/* SPDX-License-Identifier: MIT */
/* percore: the engine, N shards each running one event loop on its own CPU.
 *
 * A shard is a thread pinned to the CPU its placement chose (or, when the
 * shards take every usable CPU, to its node's: place.h), with its own
 * reactor (fds, timers, deferred tasks) and its incoming mesh rings. Shards
 * share nothing writable: they talk through messages (percore/shard.h).
 *
 * Life of an engine:
 *   pc_engine_start(cfg)   place the shards, start their threads, wait until
 *                          every shard has built its reactor and rings;
 *                          then each runs cfg.on_start and loops
 *   pc_engine_run()        only with cfg.caller_is_shard0: the calling
 *                          thread runs shard 0 until the engine stops
 *   pc_engine_stop()       any thread, or a signal handler
 *   pc_engine_join()       wait until every shard thread has ended
 *   pc_engine_destroy()    free everything
 *
 * Idle policy, per engine: spin (never sleep), adaptive (poll for a budget,
 * then sleep), sleep (sleep as soon as a turn finds nothing). A shard
 * sleeps in its reactor's wait (epoll_wait or io_uring_enter) with an
 * eventfd registered; producers write that eventfd only when the shard has
 * announced it is going to sleep, so a busy shard costs them no system
 * call. docs/ARCHITECTURE.md gives the argument that no wake-up is lost.
 */
#ifndef PERCORE_ENGINE_H
#define PERCORE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "percore/defs.h"
#include "percore/log.h"
#include "percore/reactor.h"

PC_BEGIN_DECLS

struct pc_engine;
struct pc_placement;

/* What a shard does when its loop finds nothing to do. */
enum pc_idle {
	PC_IDLE_ADAPTIVE = 0, /* poll for poll_budget_us, then sleep (default) */
	PC_IDLE_SPIN = 1,     /* never sleep: lowest latency, one core busy */
	PC_IDLE_SLEEP = 2,    /* sleep at the first empty turn */
	/* sleep at the first empty turn, unless the shard sent or received
	 * mesh messages since it last slept: then poll for poll_budget_us
	 * first, since the answer to a message is usually microseconds away
	 * and a sleeping shard pays a wake-up for it */
	PC_IDLE_MESH = 3,
	/* sleep at the first empty turn, unless the shard awaits answers
	 * from other shards (pc_shard_expect): then poll for poll_budget_us
	 * first. Only the shard waiting for an answer polls, not the one
	 * that received a message and has nothing more coming */
	PC_IDLE_AWAIT = 4,
};

#define PC_ENGINE_MAX_SHARDS     1024
#define PC_ENGINE_DEFAULT_BUDGET_US 50
#define PC_ENGINE_DEFAULT_BATCH  32
/* A shard that runs its own code this long (CPU time, not time waiting
 * for a CPU or asleep) without coming back to its loop gets a stall
 * warning. */
#define PC_ENGINE_DEFAULT_STALL_MS 25
/* Messages one shard's outboxes may hold together (4 MiB of them). */
#define PC_ENGINE_DEFAULT_OUTBOX 65536

/* An engine's configuration. Start from pc_engine_cfg_init(), then set
 * what differs. */
struct pc_engine_cfg {
	/* Shards to run; 0: one per usable physical core of the fastest
	 * kind, capped by the CPU quota (the placement's default). */
	unsigned shards;
	/* Where shards run (pc_place): a policy name ("auto", "compact",
	 * "spread", "pcore", "off" for no pinning) or a CPU list ("0,2-3").
	 * NULL is "auto". */
	const char *placement;
	/* More shards than usable CPUs: share CPUs instead of failing (not
	 * with a CPU list or "pcore", which always refuse). */
	bool oversubscribe;
	/* The thread calling pc_engine_start() becomes shard 0 (pinned
	 * there) and runs it in pc_engine_run(). */
	bool caller_is_shard0;

	enum pc_idle idle;
	uint32_t poll_budget_us;  /* adaptive, mesh, await: empty polling before sleeping */
	/* Slots each mesh ring has (power of two, 16 to 2^30): a slot holds
	 * one message, or up to PC_MSG_PACK pointer messages to one function
	 * (PC_MSG_PACK_MIXED to several) sent back to back (percore/shard.h);
	 * 0: 256 up to 64 shards, fewer beyond so the N x N mesh stays
	 * small. */
	uint32_t ring_capacity;
	/* Publish a ring's tail after this many staged messages even inside
	 * a turn (every turn ends with a publish anyway); 0: 32. */
	uint32_t publish_batch;
	enum pc_backend backend;
	/* Run each shard's thread under SCHED_BATCH (the caller's too with
	 * caller_is_shard0): a shard woken by a message or a socket does not
	 * preempt the thread running on its CPU, another shard or a client,
	 * but runs when that one blocks or its slice ends. Where shards share
	 * CPUs with each other or with clients, preemption on every wake-up
	 * costs more than it saves (docs/BENCHMARKS.md, "Shards under
	 * SCHED_BATCH"); a shard alone on its CPU is unaffected. A kernel
	 * that refuses leaves the policy as it was, with a warning in the
	 * log. */
	bool sched_batch;

	/* The outbox (percore/outbox.h): messages the queueing calls could
	 * not put in a full ring wait on the sending shard, in order.
	 * outbox_budget: messages one shard's outboxes hold together, all
	 * destinations, before those calls refuse with -ENOBUFS; each costs
	 * 64 bytes. 0: PC_ENGINE_DEFAULT_OUTBOX. outbox_high, outbox_low:
	 * the depth of one destination's outbox at which it comes under
	 * pressure, and at which the pressure ends (pc_shard_on_pressure);
	 * 0: a quarter of the budget, and a quarter of the high mark. low
	 * must be below high, high at most the budget. */
	uint32_t outbox_budget, outbox_high, outbox_low;
	/* Calls from one shard to another that may await their replies at
	 * once: past it pc_shard_call() returns -EAGAIN and pc_shard_call_q()
	 * waits for an answer to free one. 0: a quarter of the ring capacity (the ring room kept for
	 * replies); a larger limit is fine, replies beyond that room wait in
	 * the outbox. */
	uint32_t call_limit;

	/* The log (percore/log.h): pc_engine_start() opens it with these
	 * unless it is open already (the program's settings then hold), and
	 * the last engine that opened it closes it in pc_engine_destroy().
	 * pc_engine_cfg_init: info, logfmt, stderr, the default ring. */
	enum pc_log_level log_level;
	enum pc_log_format log_format;
	const char *log_file;        /* NULL: stderr */
	uint32_t log_ring_size;      /* bytes per shard; 0: PC_LOG_DEFAULT_RING */

	/* A shard that has run this long (its thread's CPU time: a handler
	 * that spins, not one asleep or a thread waiting for a CPU) without
	 * coming back to its loop gets one warning in the log, with
	 * how long and a backtrace of its thread, and is counted in its
	 * stats' stalls. 0: no watchdog. pc_engine_cfg_init:
	 * PC_ENGINE_DEFAULT_STALL_MS. */
	uint32_t stall_threshold_ms;
	/* Leave the fatal signals alone: no crash report (percore/crash.h),
	 * which the engine otherwise installs. */
	bool no_crash_report;

	/* Run on each shard before its first turn and after its last (find
	 * which with pc_shard_id()). May submit messages. NULL: nothing. */
	void (*on_start)(void *arg);
	void (*on_stop)(void *arg);
	void *arg;
};

/* Per-shard figures. Each is counted by its shard alone, without atomics. */
struct pc_shard_stats {
	unsigned shard;
	int cpu;                 /* -1 when not pinned */
	int node;                /* NUMA node, -1 when unknown */
	uint64_t turns;          /* loop iterations */
	uint64_t busy_ns;        /* wall time not idle */
	uint64_t idle_ns;        /* spinning empty (from the 64th empty turn
	                          * on) or sleeping in the kernel */
	uint64_t msgs_in;        /* messages run here (replies included) */
	uint64_t msgs_out;       /* messages this shard sent (replies too) */
	uint64_t mail_out;       /* of those, sent one at a time through the
	                          * pair's mailbox line (the ring was empty) */
	uint64_t publishes;      /* ring tails published: (msgs_out -
	                          * mail_out) / publishes is the batching
	                          * factor */
	uint64_t wakeups_sent;   /* eventfd writes to sleeping shards */
	uint64_t sleeps;         /* waits in the kernel */
	uint64_t ring_full;      /* submits refused with -EAGAIN */
	uint64_t unrun_at_stop;  /* messages still queued to this shard when
	                          * the engine stopped (never run) */
	/* The outbox and calls (percore/outbox.h). */
	/* The outbox's figures are taken when it drains, at least once a
	 * turn: at most a turn old (a send touches none of them). */
	uint64_t outbox_queued;  /* messages that waited in an outbox (counted
	                          * as they leave it, or at the engine's end) */
	uint64_t outbox_depth;   /* messages in the outboxes now */
	uint64_t outbox_high_water; /* the most there at once */
	uint64_t outbox_refused; /* queueing sends refused with -ENOBUFS */
	uint64_t outbox_unsent;  /* left in an outbox when the engine
	                          * stopped (never sent) */
	uint64_t calls_timed_out; /* calls answered with -ETIMEDOUT */
	uint64_t late_replies;   /* answers after that, discarded */
	uint64_t calls_canceled; /* calls answered with -ECANCELED */
	/* The reactor's polls (percore/reactor.h). */
	uint64_t fd_events;      /* fd callbacks run */
	uint64_t timers_fired;   /* timing-wheel timers expired */
	uint64_t tasks_run;      /* deferred tasks run */
	/* Operations. */
	uint64_t log_dropped;    /* log lines dropped: the shard's ring was
	                          * full (percore/log.h) */
	uint64_t stalls;         /* times the shard stayed away from its
	                          * loop past the stall threshold */
};

/* Defaults: 0 shards (placement's default), "auto", adaptive idle with a
 * 50 microsecond budget, automatic ring capacity, batches of 32, epoll,
 * the log at info in logfmt on stderr, a 25 ms stall threshold, the crash
 * report installed. */
PC_API void pc_engine_cfg_init(struct pc_engine_cfg *cfg);

/* Start an engine. Returns 0 and stores it in *out, or: -EINVAL for a bad
 * configuration (shards over PC_ENGINE_MAX_SHARDS, a capacity that is not
 * a power of two, an unknown idle policy or backend, a placement the
 * machine cannot satisfy: err gets a one-line reason), -E2BIG for more
 * shards than usable CPUs without cfg.oversubscribe, -ENOMEM, or the
 * -errno of thread creation or reactor set-up. err may be NULL. Any thread
 * that is not a shard. */
PC_API int pc_engine_start(const struct pc_engine_cfg *cfg, struct pc_engine **out,
			   char *err, size_t errlen);

/* With cfg.caller_is_shard0: run shard 0 on the calling thread (the one
 * that started the engine) until the engine stops. Returns 0, or -EINVAL
 * when the engine was not started that way or run was already called. */
PC_API int pc_engine_run(struct pc_engine *e);

/* Ask every shard to stop after its current turn. Any thread, any shard,
 * and async-signal-safe (an atomic store and one eventfd write per
 * shard). Calling it again does nothing. Messages still queued are not
 * run: each shard counts them in unrun_at_stop. */
PC_API void pc_engine_stop(struct pc_engine *e);

/* True once pc_engine_stop() was called. Any thread. */
PC_API bool pc_engine_stopping(const struct pc_engine *e);

/* Wait until every shard thread the engine started has ended (with
 * caller_is_shard0 and pc_engine_run() not called yet, runs shard 0 here
 * first). Calling it again returns at once. Returns 0. Not from a shard. */
PC_API int pc_engine_join(struct pc_engine *e);

/* Free the engine; one still running is stopped and joined first. NULL is
 * ignored. Not from a shard. */
PC_API void pc_engine_destroy(struct pc_engine *e);

/* How many shards the engine runs. Any thread. */
PC_API unsigned pc_engine_shards(const struct pc_engine *e);
/* The idle policy the shards use. Any thread. */
PC_API enum pc_idle pc_engine_idle(const struct pc_engine *e);
/* The backend the shards use after any fallback. */
PC_API enum pc_backend pc_engine_backend(const struct pc_engine *e);
/* The CPU shard i was placed on (it may move over its node's when the
 * placement floats), -1 when not pinned or i is out of range. */
PC_API int pc_engine_shard_cpu(const struct pc_engine *e, unsigned i);

/* Where the shards run: the placement pc_place() chose (with its
 * warnings, e.g. oversubscribed CPUs), for programs to print or record.
 * Valid until pc_engine_destroy(). */
PC_API const struct pc_placement *pc_engine_placement(const struct pc_engine *e);

/* Copy shard i's statistics. Exact after pc_engine_join(); while the
 * shard runs, each figure is one the shard has recently stored, but the
 * set is not taken at one instant; busy_ns and idle_ns run up to now (the
 * idle span in progress counts as idle), so their rates give utilization
 * (pc_engine_stats() from a shard gives a consistent snapshot).
 * Returns 0 or -EINVAL for a bad i. Any thread. */
PC_API int pc_engine_stats_read(const struct pc_engine *e, unsigned i, struct pc_shard_stats *out);

/* The memory of a shard's own pools (pc_shard_slab, pc_shard_arena), as
 * the shard last measured it for pc_engine_mem_refresh(). */
struct pc_shard_mem {
	uint64_t slab_bytes;      /* chunk bytes the size-class slabs hold */
	uint64_t slab_used_bytes; /* of those, objects handed out */
	uint64_t arena_bytes;     /* bytes mapped for the arena's blocks */
};

/* Ask every shard to measure its pools once it next runs (a message per
 * shard; the shards' own figures are never read from here). Returns 0, or
 * the first refusal of pc_engine_submit (-EAGAIN, -ESHUTDOWN); a shard
 * that refused keeps its last figures. Any thread that is not a shard. */
PC_API int pc_engine_mem_refresh(struct pc_engine *e);

/* Shard i's figures from its last measurement (zeros before the first).
 * Returns 0 or -EINVAL for a bad i. Any thread. */
PC_API int pc_engine_mem_read(const struct pc_engine *e, unsigned i, struct pc_shard_mem *out);

/* Messages shard `from` has sent to each shard: out[k] for destination k,
 * k < pc_engine_shards(e) (replies and messages to itself included).
 * Each figure is one the shard recently stored, as pc_engine_stats_read.
 * Returns 0 or -EINVAL for a bad from. Any thread. */
PC_API int pc_engine_sent_to(const struct pc_engine *e, unsigned from, uint64_t *out);

/* Run fn(arg) on shard `to` from a thread that is not a shard (the main
 * thread, a test, a benchmark driver). Serialised by a lock per target
 * shard, so any number of threads may call it; not async-signal-safe.
 * Returns 0, -EAGAIN when that shard's external ring is full (nothing
 * queued), -EINVAL for a bad shard or NULL fn, -ESHUTDOWN once stopping. */
PC_API int pc_engine_submit(struct pc_engine *e, unsigned to, void (*fn)(void *arg), void *arg);

/* Make SIGINT and SIGTERM stop e (a second signal while stopping ends the
 * process the default way). Shard threads block both signals, so the
 * handler runs on another thread. The previous handlers come back in
 * pc_engine_destroy(). One engine at a time. Returns 0, -EBUSY when
 * another engine holds the signals, or sigaction's -errno. */
PC_API int pc_engine_stop_on_signals(struct pc_engine *e);

/* The policy's name ("spin", "adaptive", "sleep"); "?" for a value that
 * is none of them. */
PC_API const char *pc_idle_name(enum pc_idle idle);
/* "spin", "adaptive", "sleep". Returns 0 or -EINVAL. */
PC_API int pc_idle_parse(const char *name, enum pc_idle *out);

PC_END_DECLS

#endif
