/* SPDX-License-Identifier: MIT */
/* percore net: the load generator's inside (see percore/load.h).
 *
 * One struct lg_run per pc_load_run(); one struct lg_shard per shard of
 * the generator's engine, owning the connections i with i % shards ==
 * shard; everything of a shard is touched by its thread only, until the
 * engine has ended and the caller sums the shards up.
 */
#ifndef PERCORE_SRC_NET_LOAD_IMPL_H
#define PERCORE_SRC_NET_LOAD_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "percore/load.h"
#include "percore/reactor.h"
#include "percore/wheel.h"

#define LG_PATTERN (64u << 10)   /* payloads start anywhere in this */
#define LG_RXBUF (256u << 10)    /* one recv's worth, per shard */
#define LG_IOV 64                /* iovecs per writev */

enum lg_state { LG_CONNECTING, LG_READY, LG_RUNNING, LG_DONE };

struct lg_shard;

struct lg_conn {
	struct lg_shard *sh;
	int fd;
	uint32_t idx;            /* the connection's number: part of the stream */
	uint8_t state;
	uint8_t events;          /* interest registered */
	uint32_t tx_off, rx_off; /* bytes of the current message sent / checked */
	uint64_t tx_k, rx_k;     /* message being sent / being received */
	uint64_t limit;          /* messages (connect mode: cycles) to do */
	uint64_t cycle_t0;       /* connect mode: when this cycle began */
	uint64_t *sent_at;       /* depth entries: when message k went out */
};

struct lg_run;

struct lg_shard {
	struct lg_run *run;
	unsigned index;
	struct pc_reactor *r;
	struct lg_conn *conns;
	unsigned nconns, open, connecting;
	bool stopping;           /* time is up: no new messages */
	bool finished;
	uint64_t t_start, t_end;
	uint64_t cpu_start, cpu_end; /* the shard thread's CPU clock at both */
	uint64_t progress, progress_seen; /* for the watchdog */
	struct pc_timer end_timer, watchdog;
	uint8_t *rxbuf;
	struct pc_hist *hist;
	/* results */
	uint64_t messages, bytes, connects;
	uint64_t connect_errors, verify_errors, io_errors, lost;
	char first_error[160];
};

struct lg_run {
	struct pc_load_cfg cfg;
	struct sockaddr_storage addr;
	socklen_t addr_len;
	uint8_t *pattern;        /* LG_PATTERN + size_max bytes */
	unsigned hdr;            /* 12 framed, 0 raw */
	unsigned nshards;
	struct lg_shard **shards;
	_Atomic unsigned running; /* shards not finished; the last stops */
	struct pc_engine *engine;
	int setup_err;
};

/* load_conn.c: the byte stream of connection c and its handling. */
uint32_t lg_size(const struct lg_run *run, uint32_t c, uint64_t k);
void lg_shard_begin(struct lg_shard *sh);
void lg_shard_end_time(struct lg_shard *sh);
void lg_shard_give_up(struct lg_shard *sh);

/* load.c */
void lg_shard_finish(struct lg_shard *sh);
/* Start and end of the shard's timed part: the wall clock and the shard
 * thread's CPU clock, read together. Shard thread only. */
void lg_shard_clock_start(struct lg_shard *sh);
void lg_shard_clock_end(struct lg_shard *sh);
void lg_error(struct lg_shard *sh, uint64_t *counter, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
