/* SPDX-License-Identifier: MIT */
/* The kv server: RESP2 over TCP on a percore server, keys owned by shards.
 *
 * Every key belongs to the shard kv_keyhash(key) % shards names. A
 * connection lives on the shard that accepted it; a request for a key
 * of another shard runs there (a job sent through the outbox) and its
 * reply comes back in request order. Commands over keys of several
 * shards, and the server-wide ones, lock the shards they touch in
 * ascending order, run their parts, then unlock (server_internal.h, multi.c), so no
 * client sees half of one.
 *
 * kv_server_start, _stop, _wait, _destroy are for a thread that is not
 * one of the server's shards, as pc_server's are. */
#ifndef KV_SERVER_H
#define KV_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/server.h"
#include "conn.h"
#include "resp.h"

struct kv_server;

/* Defaults. */
#define KV_SERVER_PORT          6379
#define KV_SERVER_MAX_CLIENTS   10000u
#define KV_SERVER_EXPIRE_MS     100u    /* active expiry period (Redis's hz 10) */
/* Input a shard may hold (net.max_input_bytes): unread, and requests kv
 * holds unparsed or partial. Room for two requests of the default
 * proto-max-bulk-len. */
#define KV_SERVER_MAX_INPUT     (1ull << 30)
/* Unsent reply bytes a client may have without client_output_limit: the
 * session's own output bound (its ring, the power of two that holds high
 * water plus one largest write), so one reply of up to 16 MiB fits beside
 * a full high water. */
#define KV_SERVER_OUTPUT_BOUND  (32ull << 20)
/* The least max_input_bytes may be (0 aside): the library's floor, one
 * largest write of a kv session (server.c sets max_body so). */
#define KV_SERVER_MIN_INPUT     (16ull << 20)

struct kv_server_opts {
	/* Address, shards, placement, idle policy, the input budget
	 * (max_input_bytes, KV_SERVER_MAX_INPUT by default: a client's
	 * partial request counts in it, and a client closed for it is
	 * logged and counted in input_shed). Handlers, raw mode and buffer
	 * sizes are the kv server's own: kv_server_opts_init() sets them. */
	struct pc_server_cfg net;
	/* The settings, as CONFIG GET reports them (kv_config_init()'s
	 * defaults). The server reads: maxclients (a client past it is
	 * answered "-ERR max number of clients reached" and closed; 0: no
	 * limit), client_output_limit (a client whose unsent replies pass
	 * it is closed, the rest of its requests not run; 0:
	 * KV_SERVER_OUTPUT_BOUND), maxmemory (split evenly over the shards)
	 * and its policy, proto_max_bulk_len and max_multibulk_len. port and
	 * shards are filled in from net. */
	struct kv_config cfg;
	/* Active expiry period in ms (0: KV_SERVER_EXPIRE_MS). */
	uint32_t expire_ms;
	/* Load the dump cfg names (dir, dbfilename) at start when there is
	 * one, as Redis does: every shard takes its keys before it serves;
	 * an unreadable, corrupt or truncated dump, or a type not read,
	 * fails the start with err naming the file and the key, type or
	 * offset. rdb_skip_unsupported: skip and count keys of types not
	 * read (streams, the encodings of Redis before 7.0) instead. */
	bool load_dump;
	bool rdb_skip_unsupported;
	/* A connection whose last KV_MOVE_AFTER one-key requests all went to
	 * one other shard moves there (pc_session_move), between requests
	 * and with nothing of its own under way: its requests then run
	 * where their keys live, without a hop each. On by default. */
	bool move_clients;
	/* Save the dump when the server stops other than by SHUTDOWN (a
	 * signal, kv_server_stop) while save rules are set, as Redis saves
	 * on SIGTERM: every shard serializes its keys as it stops, and
	 * kv_server_wait writes the file. */
	bool save_on_stop;
};

/* Defaults: 127.0.0.1:6379, one shard per usable CPU that sleeps when it
 * has nothing to do (PC_IDLE_SLEEP), Redis 7's settings (10,000 clients,
 * its request limits, no maxmemory) and its save rules (KV_SAVE_DEFAULT);
 * no dump loaded nor saved at a stop (load_dump, save_on_stop: percore kv
 * sets both, as Redis does both). */
void kv_server_opts_init(struct kv_server_opts *o);

/* Start a server. Returns 0 and *out, or pc_server_start()'s errors
 * (err says why; may be NULL). */
int kv_server_start(const struct kv_server_opts *o, struct kv_server **out, char *err,
		    size_t errlen);

/* The port it listens on, and the server underneath. */
uint16_t kv_server_port(const struct kv_server *k);
struct pc_server *kv_server_net(struct kv_server *k);

/* What every shard counts, summed: keys (expired ones not yet deleted
 * included), bytes of the keyspaces, keys deleted by expiry, commands
 * run. Any thread; each figure is written by its shard alone after every
 * command it runs and read relaxed, so a total counts every command
 * answered before the call. */
struct kv_server_totals {
	uint64_t keys;
	uint64_t expires;
	uint64_t used_bytes;
	uint64_t expired;
	uint64_t commands;
	uint64_t clients;
	uint64_t rejected_clients;
	uint64_t output_limit_closes;
	uint64_t closing;             /* closed, answers still to come back */
	uint64_t input_held;          /* input bytes held now (the budget's) */
	uint64_t input_shed;          /* clients closed over the input budget */
	uint64_t protocol_errors;
};
void kv_server_totals(const struct kv_server *k, struct kv_server_totals *t);

/* Stops at once (pc_server_stop; any thread, async-signal-safe). A
 * graceful stop is the engine's signal handling (--drain). */
void kv_server_stop(struct kv_server *k);

/* Waits until the shards have ended, then writes the dump when
 * save_on_stop asks for it. Returns 0, or the save's negative errno
 * (logged, naming the file; the previous dump stays). */
int kv_server_wait(struct kv_server *k);
void kv_server_destroy(struct kv_server *k);

#endif
