/* SPDX-License-Identifier: MIT */
/* The plain io_uring echo server (uring_echo.c): what a careful C programmer
 * writes with liburing and no framework, on one thread. The io_uring limit
 * for this machine, driven by the same load generator as the others. */
#ifndef PERCORE_BENCH_URING_ECHO_H
#define PERCORE_BENCH_URING_ECHO_H

#include <stdint.h>

struct uring_echo;

/* Listen on 127.0.0.1 (an ephemeral port, returned in *port) and serve on a
 * new thread pinned to cpu (-1: not pinned), waiting in io_uring_enter.
 * Returns 0 or -errno (io_uring unavailable, no multishot receive). */
int uring_echo_start(struct uring_echo **out, uint16_t *port, int cpu);

/* Stop serving, close every connection and free the server. */
void uring_echo_stop(struct uring_echo *srv);

#endif
