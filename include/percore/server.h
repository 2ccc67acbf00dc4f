/* SPDX-License-Identifier: MIT */
/* percore: a TCP server in one call.
 *
 * pc_server_start() opens one listening socket per shard on the same
 * address (SO_REUSEPORT), starts an engine (percore/engine.h) and has each
 * shard accept, read, decode, dispatch and write its own sessions
 * (percore/session.h). Limits refuse connections at once and count them;
 * idle timeouts and heartbeats run on each shard's timing wheel; shutdown
 * drains.
 *
 * Life of a server:
 *   pc_server_start(cfg)      listen, start the shards; returns once every
 *                             shard is accepting
 *   pc_server_shutdown(ms)    stop accepting, let sessions finish what they
 *                             received and flush it, close them at the
 *                             deadline at the latest; then the engine stops
 *   pc_server_stop()          stop now (sessions are closed unflushed)
 *   pc_server_wait()          wait until the shards have ended
 *   pc_server_destroy()       free everything (statistics stay readable
 *                             until then)
 * pc_server_start, pc_server_shutdown, pc_server_wait and pc_server_destroy
 * are for a thread that is not one of the server's shards.
 */
#ifndef PERCORE_SERVER_H
#define PERCORE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "percore/defs.h"
#include "percore/dispatch.h"
#include "percore/engine.h"
#include "percore/session.h"

PC_BEGIN_DECLS

struct pc_server;
struct pc_metrics;

/* Defaults for the fields left 0. */
#define PC_SERVER_RX_BUFFER   (64u << 10)  /* first input ring of a session */
#define PC_SERVER_TX_BUFFER   (64u << 10)  /* first output ring */
#define PC_SERVER_HIGH_WATER  (256u << 10) /* stop reading above this much unsent */
#define PC_SERVER_LINGER_MS   1000u        /* after FIN, wait this long for the client */
#define PC_SERVER_POOL_KEEP   64u          /* idle rings a shard keeps per size */
#define PC_SERVER_POOL_BYTES  (16u << 20)  /* and in all */

/* A server's configuration. Start from pc_server_cfg_init(), then set
 * the handlers and what differs. */
struct pc_server_cfg {
	/* Where: a numeric address (percore/listener.h; NULL: every
	 * address) and a port (0: the kernel picks one, pc_server_port()
	 * says which). backlog 0: PC_LISTEN_BACKLOG_DEFAULT. */
	const char *host;
	uint16_t port;
	int backlog;
	/* Share a port another socket already listens on (SO_REUSEPORT:
	 * the kernel splits connections between the servers; only sockets
	 * of the same user can join). false: such a port is refused with
	 * -EADDRINUSE (PC_LISTEN_FIRST), so a second server never takes
	 * half of a running one's clients by mistake. */
	bool reuseport_join;

	/* The shards: count, placement, idle policy, backend. on_start,
	 * on_stop and arg are the server's own: use on_shard_start and
	 * on_shard_stop below. */
	struct pc_engine_cfg engine;

	/* Protocol: framed or raw (on_data, every byte as it comes). A
	 * framed server routes each frame by message id: on_dispatch
	 * registers handlers on every shard's dispatcher (percore/dispatch.h;
	 * a handler's arg is the struct pc_session *; nonzero fails the
	 * start); ids without a handler go to on_frame, or, with on_frame
	 * NULL, get an error reply and are counted (unknown_ids). Without
	 * on_dispatch every frame goes straight to on_frame. on_frames
	 * instead of both takes every frame in bursts (percore/session.h).
	 * on_open and on_close may be NULL. user goes to every handler. */
	bool raw;
	int (*on_dispatch)(struct pc_dispatch *d, unsigned shard, void *user);
	pc_frame_fn on_frame;
	pc_frames_fn on_frames;
	pc_data_fn on_data;
	pc_open_fn on_open;
	pc_close_fn on_close;
	/* Where a session arrives after pc_session_move(); NULL: sessions
	 * cannot move. */
	pc_moved_fn on_moved;
	void *user;
	/* On each shard after its sessions machinery is ready and before it
	 * accepts (shard state of the application), and after its last
	 * session closed. NULL: nothing. */
	void (*on_shard_start)(unsigned shard, void *user);
	void (*on_shard_stop)(unsigned shard, void *user);

	/* Limits; 0: none (max_body 0: PC_FRAME_MAX_BODY_DEFAULT, capped
	 * at PC_FRAME_MAX_BODY_CAP). A refused connection is reset at once
	 * and counted. */
	uint32_t max_sessions;      /* per shard */
	uint32_t max_per_addr;      /* per client address, over all shards */
	uint32_t max_body;
	/* Input bytes a shard may hold (received, not yet consumed: mostly
	 * incomplete frames; and what a raw server's application holds,
	 * pc_session_hold_input), at least one largest frame. Above it the shard
	 * stops reading the sessions holding the most; when that leaves no
	 * session that could complete a frame, it drops the oldest
	 * incomplete frames (error reply, close as PC_CLOSE_NOMEM) down to
	 * three quarters of it, where the paused sessions are read again.
	 * Counted in input_pauses and input_shed. */
	uint64_t max_input_bytes;

	/* Buffers (0: the defaults above). low_water 0: high_water / 4.
	 * A session holds at most an input ring for the largest frame and
	 * an output ring of high_water plus the largest frame. */
	uint32_t rx_buffer, tx_buffer;
	uint32_t high_water, low_water;
	uint32_t pool_keep;
	size_t pool_bytes;

	/* Timers in milliseconds; 0: off. idle_timeout closes a session
	 * that sent nothing for that long; heartbeat sends a heartbeat
	 * request (flags bit 0, id 1) to a session quiet that long, which a
	 * client answers with a heartbeat of id 0. frame_timeout (framed
	 * servers) refuses a session whose incomplete frame began arriving
	 * that long ago: an error reply (flags bit 1, id 0), then a graceful
	 * close counted as PC_CLOSE_FRAME_TIMEOUT; a client sending one byte
	 * at a time never looks idle, this catches it. Not counted while
	 * the session is paused for backpressure. linger 0: the default.
	 * Each at most 2^31 - 1 ms. */
	uint32_t idle_timeout_ms;
	uint32_t heartbeat_ms;
	uint32_t frame_timeout_ms;
	uint32_t linger_ms;

	/* Answer PC_MSG_STATS frames with the server's statistics. */
	bool stats_frames;

	/* The metrics endpoint (percore/metrics.h): with metrics true the
	 * server makes a registry with its own and its engine's figures
	 * (pc_server_metrics: add the application's) and serves /metrics,
	 * /health and /ready on its own thread at metrics_host (NULL:
	 * 127.0.0.1, never every address unless asked) and metrics_port (0:
	 * the kernel picks, pc_server_metrics_port says which). */
	bool metrics;
	const char *metrics_host;
	uint16_t metrics_port;
	/* With metrics true: the application's registry, served instead of
	 * a new one, so that its families exist and count before the start
	 * (what they recorded is kept). Made with pc_metrics_create() for
	 * at least as many shards as the server runs (else the start fails
	 * with -EINVAL), for one server; the server adds its figures to it
	 * and never frees it: after pc_server_destroy() it is only for
	 * pc_metrics_destroy(). NULL: the server makes its own. */
	struct pc_metrics *metrics_registry;
};

/* What a server counts: per shard, or summed over shards. Every figure is
 * written by its shard alone; readers see a recent value. */
struct pc_server_stats {
	/* sessions */
	uint64_t sessions;          /* open now */
	uint64_t accepted;
	uint64_t closed;
	uint64_t closed_reason[PC_CLOSE_REASONS];
	/* sessions that moved to another shard (pc_session_move), and from
	 * one: neither counted as accepted or closed */
	uint64_t moved_out;
	uint64_t moved_in;
	/* refusals: each closed the connection at once */
	uint64_t rejected_shard_limit;
	uint64_t rejected_addr_limit;
	uint64_t accept_errors;     /* out of fds or memory while accepting */
	uint64_t malformed;         /* frames with a bad header, bodies refused
	                             * as malformed (pc_session_refuse) */
	uint64_t oversize;          /* frames whose body exceeds max_body, or
	                             * refused as oversize by the application */
	uint64_t error_replies;     /* error frames written before closing (a
	                             * reply queued but never written, the
	                             * client gone first, is not counted) */
	uint64_t unknown_ids;       /* frames no handler was registered for */
	/* traffic */
	uint64_t frames_in, frames_out;
	uint64_t bytes_in, bytes_out;
	uint64_t heartbeats_in, heartbeats_out;
	/* backpressure */
	uint64_t read_pauses;       /* sessions stopped at high water */
	uint64_t paused;            /* sessions stopped now */
	uint64_t send_refused;      /* sends over a session's output bound */
	uint64_t send_to_gone;      /* pc_session_send_to() for a closed id */
	uint64_t replies_discarded; /* sequenced answers for a closed session,
	                             * or refused when written (percore/reply.h) */
	uint64_t read_holds;        /* pc_session_pause_read() calls that paused */
	uint64_t input_pauses;      /* sessions stopped over the input budget */
	uint64_t input_paused;      /* stopped for it now */
	uint64_t input_shed;        /* incomplete frames dropped for it */
	/* memory now (what is not counted: docs/BENCHMARKS.md) */
	uint64_t queued_bytes;      /* unsent output */
	uint64_t buffered_bytes;    /* received, not yet consumed (or held by
	                             * the application: pc_session_hold_input) */
	uint64_t session_bytes;     /* sessions' own state (slab objects, id slots) */
	uint64_t buffer_bytes;      /* ring capacity attached to sessions */
	uint64_t pool_bytes;        /* ring capacity idle in the pools */
	uint64_t buffers_mapped;    /* rings created, all time */
	uint64_t buffer_maps;       /* memory mappings holding rings now */
	uint64_t drain_aborted;     /* sessions cut at the drain deadline */
};

/* Zero everything, then the engine defaults (pc_engine_cfg_init). */
PC_API void pc_server_cfg_init(struct pc_server_cfg *cfg);

/* Start a server. Returns 0 and *out; -EINVAL for a bad configuration
 * (err says why: no handler, a bad address, water marks out of order, a
 * bad engine setting); the -errno of listening (-EADDRINUSE, ...), of the
 * engine or of a shard's set-up (-ENOMEM). err may be NULL. */
PC_API int pc_server_start(const struct pc_server_cfg *cfg, struct pc_server **out,
			   char *err, size_t errlen);

/* The port the server listens on (the kernel's choice for port 0). */
PC_API uint16_t pc_server_port(const struct pc_server *srv);

/* The engine the shards run on (for pc_engine_submit, statistics). */
PC_API struct pc_engine *pc_server_engine(struct pc_server *srv);

/* Shut down gracefully: every shard closes its listener (new connections
 * are refused by the kernel), reads what its clients sent (for half of
 * drain_ms, at most a second, until a session's socket holds no more: one
 * paused by its output reads on once it has flushed, and a client that
 * goes on sending does not hold the drain open), finishes the frames
 * received, flushes the output, ends each connection (FIN) and waits for
 * the client to close. Sessions still open drain_ms after the call are
 * closed (counted in drain_aborted). Then the engine stops. Returns at
 * once; pc_server_wait() waits. Returns 0, -EALREADY when shutting down
 * or stopped already, -EAGAIN when a shard's ring for outside threads
 * stayed full for a second. Not from a shard. */
PC_API int pc_server_shutdown(struct pc_server *srv, uint32_t drain_ms);

/* Stop now: every shard ends after its current turn, closing its sessions
 * without flushing. Any thread, and async-signal-safe. */
PC_API void pc_server_stop(struct pc_server *srv);

/* True once the engine has stopped or been asked to. Any thread. */
PC_API bool pc_server_stopping(const struct pc_server *srv);

/* Wait until every shard has ended. Returns 0. Not from a shard. */
PC_API int pc_server_wait(struct pc_server *srv);

/* Free the server after pc_server_wait(). NULL is ignored. */
PC_API void pc_server_destroy(struct pc_server *srv);

/* Shards the server runs on. */
PC_API unsigned pc_server_shards(const struct pc_server *srv);

/* Statistics of shard i, or the sum over shards (i = -1). Any thread.
 * Returns 0, or -EINVAL for a bad i. */
PC_API int pc_server_stats(const struct pc_server *srv, int i, struct pc_server_stats *out);

/* Write st as a JSON object (one member per figure, closed_reason[] as
 * closed_peer, closed_local, ...; a cJSON tree of it: pc_server_stats_json
 * in percore/json.h), or as "name value" lines when json is false.
 * Returns 0 or -EIO. */
PC_API int pc_server_stats_print(const struct pc_server_stats *st, bool json, FILE *out);

/* The server's metrics registry (cfg.metrics_registry when given), for
 * the application's own families; NULL without cfg.metrics. Valid until
 * pc_server_destroy(). Families registered here exist from the start on:
 * to count before it, give the server a registry (metrics_registry). */
PC_API struct pc_metrics *pc_server_metrics(struct pc_server *srv);

/* The port the metrics endpoint listens on; 0 without cfg.metrics. */
PC_API uint16_t pc_server_metrics_port(const struct pc_server *srv);

/* Resident memory of this process (VmRSS) in bytes, 0 when unknown. */
PC_API uint64_t pc_process_rss(void);

/* Memory mappings of this process (lines of /proc/self/maps), 0 when
 * unknown. The kernel refuses every mmap of a process past
 * vm.max_map_count of them. Any thread; reads the whole file. */
PC_API uint64_t pc_process_maps(void);

PC_END_DECLS

#endif
