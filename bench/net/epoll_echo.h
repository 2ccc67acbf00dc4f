/* The plain peer: a single-threaded epoll echo server with no framework,
 * echoing raw bytes. Benchmarks drive it with the same load generator as
 * percore's server, so the two are compared like for like. */
#ifndef PERCORE_BENCH_EPOLL_ECHO_H
#define PERCORE_BENCH_EPOLL_ECHO_H

#include <stdint.h>

struct epoll_echo;

/* Listen on 127.0.0.1 (an ephemeral port, returned in *port) and serve on a
 * new thread pinned to cpu (-1: not pinned). Returns 0 or -errno. */
int epoll_echo_start(struct epoll_echo **out, uint16_t *port, int cpu);

/* Stop serving, close every connection and free the server. */
void epoll_echo_stop(struct epoll_echo *srv);

#endif
