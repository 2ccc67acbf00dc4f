/* SPDX-License-Identifier: MIT */
/* percore: the load generator behind `percore load` and the network
 * benchmarks.
 *
 * It runs on the same runtime as the server (an engine of its own, one or
 * more shards, each driving its share of the connections from its reactor)
 * and checks every byte that comes back: message k of connection c has a
 * size and a payload that both sides derive from (seed, c, k), so the
 * expected reply stream is known without keeping what was sent. A reply
 * that differs by one byte is a verification error and ends that
 * connection.
 *
 * Modes:
 *   echo     C connections, each keeping D messages in flight, for a time
 *            or a number of messages; framed (the echo protocol) or raw
 *            (bytes, so a plain server can be driven the same way)
 *   connect  C connections, each cycling: connect, one round trip, close
 *            (with a reset, so no TIME_WAIT exhausts the ports), again
 *   idle     open N connections that send nothing (or, with idle_partial,
 *            the first half of a frame each) and ask the server, with
 *            PC_MSG_STATS frames before and after, what they cost it
 *
 * pc_load_run() is for a thread that is not a shard of another engine.
 */
#ifndef PERCORE_LOAD_H
#define PERCORE_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"
#include "percore/engine.h"
#include "percore/hist.h"

PC_BEGIN_DECLS

/* What a load run's connections do: echo round trips, connect and close,
 * or hold idle connections open. */
enum pc_load_mode {
	PC_LOAD_ECHO = 0,
	PC_LOAD_CONNECT,
	PC_LOAD_IDLE,
};

/* A load run's configuration. Start from pc_load_cfg_init(). */
struct pc_load_cfg {
	const char *host;        /* numeric address; NULL: 127.0.0.1 */
	uint16_t port;
	enum pc_load_mode mode;
	unsigned conns;          /* connections (echo, connect); 0: 1 */
	unsigned depth;          /* messages in flight per connection; 0: 1 */
	/* Payload bytes per message: size_min when size_max <= size_min,
	 * else each message's size drawn from [size_min, size_max]. */
	uint32_t size_min, size_max;
	bool raw;                /* no framing: bytes echoed as they are */
	/* How long to send (then in-flight replies are awaited), or, when
	 * duration_ns is 0, how many messages (echo) or cycles (connect) in
	 * all. */
	uint64_t duration_ns;
	uint64_t messages;
	uint64_t drain_ns;       /* wait for in-flight replies at the end;
	                          * 0: 5 s. Unanswered ones count as lost */
	uint64_t seed;
	unsigned idle;           /* idle mode: connections to open */
	/* idle mode: bytes of a frame twice as large (header and body, at
	 * most 1 MiB) that each connection sends after connecting, so the
	 * server holds an incomplete frame per connection; 0: nothing. */
	uint32_t idle_partial;
	/* The load generator's own shards: count (0: 1), placement, idle
	 * policy. on_start, on_stop and arg are its own. */
	struct pc_engine_cfg engine;
};

/* What a load run measured. pc_load_run() fills it; free it with
 * pc_load_result_fini(). */
struct pc_load_result {
	uint64_t messages;       /* round trips completed and verified */
	uint64_t bytes;          /* payload bytes verified (each way) */
	uint64_t elapsed_ns;     /* from every connection up to the last reply
	                          * (idle mode: opening them all) */
	uint64_t connects;       /* connect mode: cycles completed */
	/* CPU time of the generator's shard threads over their timed parts
	 * (echo and connect modes), ns: each shard's thread CPU clock read
	 * where its part of elapsed_ns starts and ends, so start-up,
	 * connecting and tear-down are left out. Over elapsed_ns x shards it
	 * is how busy the generator was. */
	uint64_t cpu_ns;
	/* errors */
	uint64_t errors;         /* the sum of the four below */
	uint64_t connect_errors;
	uint64_t verify_errors;  /* a byte, a length or an id not as sent */
	uint64_t io_errors;      /* resets and closes before the end */
	uint64_t lost;           /* sent and never answered within drain_ns */
	char first_error[160];   /* what went wrong first, "" when nothing */
	/* Round-trip latency in ns (connect mode: connect to close). */
	struct pc_hist *latency;
	/* idle mode */
	uint64_t idle_open;      /* connections opened and counted by the server */
	uint64_t server_accepted_before; /* connections the server had accepted
	                          * before the run opened its own: 1 (the run's
	                          * statistics connection) on a fresh server */
	uint64_t server_rss_before, server_rss_after;          /* bytes */
	uint64_t server_session_bytes_before, server_session_bytes_after;
	uint64_t server_buffer_bytes_after;                    /* idle: should be 0 */
	uint64_t server_maps_before, server_maps_after;        /* memory mappings */
	uint64_t server_buffered_growth; /* bytes the server received and holds
	                          * after - before (idle_partial x idle_open) */
	double rss_per_session;  /* (after - before) / idle_open */
	double acct_per_session; /* the server's own accounting, same way */
	double maps_per_session; /* (maps after - before) / idle_open */
	int64_t kernel_tcp_mem_delta; /* /proc/net/sockstat TCP mem, bytes:
	                          * socket buffers of both ends (loopback) */
};

/* Zero cfg, then: 127.0.0.1, echo mode, 1 connection, depth 1, 64 bytes,
 * 5 s drain, engine defaults with one shard. */
PC_API void pc_load_cfg_init(struct pc_load_cfg *cfg);

/* Run the load. Returns 0 with *res filled (check res->errors: a run with
 * verification errors still returns 0); -EINVAL for a bad configuration;
 * -ECONNREFUSED when not one connection could be made; -EMFILE when the
 * descriptor limit (raised to its hard limit first) is too low for the
 * connections asked; -EPROTO (idle mode) when the server does not answer
 * statistics requests; -ENOMEM; or the engine's error. err (may be NULL)
 * gets a one-line reason. Free res with pc_load_result_fini(). */
PC_API int pc_load_run(const struct pc_load_cfg *cfg, struct pc_load_result *res,
		       char *err, size_t errlen);

/* Free what pc_load_run() allocated in res (its latency histogram); res
 * may then be reused. A zeroed res is fine. */
PC_API void pc_load_result_fini(struct pc_load_result *res);

/* Raise this process's soft limit on open files to at least want (up to
 * the hard limit). Returns 0, or -EMFILE when the hard limit is lower
 * (the soft limit is then raised as far as it goes). */
PC_API int pc_raise_nofile(uint64_t want);

PC_END_DECLS

#endif
