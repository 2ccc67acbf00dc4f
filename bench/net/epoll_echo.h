/* SPDX-License-Identifier: MIT */
/* The plain peers: single-threaded epoll echo servers with no framework,
 * echoing raw bytes (epoll_echo.c says how). Benchmarks drive them with the
 * same load generator as percore's server, so the two are compared like for
 * like. */
#ifndef PERCORE_BENCH_EPOLL_ECHO_H
#define PERCORE_BENCH_EPOLL_ECHO_H

#include <stdbool.h>
#include <stdint.h>

struct epoll_echo;

/* Listen on 127.0.0.1 (an ephemeral port, returned in *port) and serve on a
 * new thread pinned to cpu (-1: not pinned). busy: poll epoll_wait with a
 * zero timeout and never sleep (else wait in epoll_wait(-1)). Returns 0 or
 * -errno. */
int epoll_echo_start(struct epoll_echo **out, uint16_t *port, int cpu, bool busy);

/* Stop serving, close every connection and free the server. */
void epoll_echo_stop(struct epoll_echo *srv);

/* A non-blocking listening socket on 127.0.0.1, at an ephemeral port
 * (returned in *port), for the plain peers. Returns the fd or -errno. */
int echo_listen_loopback(uint16_t *port);

#endif
