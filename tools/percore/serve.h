/* SPDX-License-Identifier: MIT */
/* The foreground loop of the serving commands (echo, kv): signals taken
 * synchronously on the main thread until the server stops. */
#ifndef PERCORE_TOOL_SERVE_H
#define PERCORE_TOOL_SERVE_H

#include <signal.h>
#include <stdint.h>

#include "percore/server.h"

/* Waits on the signals in set (SIGINT, SIGTERM, SIGUSR1, SIGHUP, blocked
 * by the caller before the server started, so the shards block them too)
 * until srv stops: SIGUSR1 calls usr1(arg); SIGHUP reopens the log file
 * (pc_log_reopen: after logrotate moved it); the first SIGINT or SIGTERM shuts
 * the server down gracefully within drain_ns (draining(arg) first, when
 * not NULL), a second one stops it at once. */
void pc_serve_signals(struct pc_server *srv, const sigset_t *set, uint64_t drain_ns,
		      void (*usr1)(void *arg), void (*draining)(void *arg), void *arg);

/* With cfg->metrics: "percore CMD: metrics on http://ADDRESS/metrics" on
 * stderr, the address the endpoint of srv (started from cfg) listens on. */
void pc_serve_say_metrics(const char *cmd, struct pc_server *srv, const struct pc_server_cfg *cfg);

#endif
