/* SPDX-License-Identifier: MIT */
/* percore-peer-epoll-echo: the plain epoll echo server (epoll_echo.c) in a
 * process of its own, so that scripts measure its CPU time from /proc the
 * way they measure `percore echo`'s, under the same load generator.
 *
 * usage: percore-peer-epoll-echo [CPU]
 *   CPU  the CPU its serving thread is pinned to (default: not pinned)
 *
 * Listens on 127.0.0.1 at a port the kernel picks, prints
 * "listening on 127.0.0.1:PORT" on stderr once it serves, and serves until
 * SIGINT or SIGTERM. The serving thread waits in epoll_wait(-1), as
 * `percore echo --idle-policy sleep` does. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "epoll_echo.h"

int main(int argc, char **argv)
{
	struct epoll_echo *srv;
	uint16_t port;
	sigset_t stop;
	int cpu = argc > 1 ? atoi(argv[1]) : -1, sig, rc;

	if (argc > 2 || (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9'))) {
		fprintf(stderr, "usage: %s [CPU]\n", argv[0]);
		return 2;
	}
	/* Blocked before the serving thread starts, so that it inherits the
	 * mask and the signals reach sigwait() below. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	rc = epoll_echo_start(&srv, &port, cpu, false);
	if (rc) {
		fprintf(stderr, "%s: cannot serve: %s\n", argv[0], strerror(-rc));
		return 1;
	}
	fprintf(stderr, "listening on 127.0.0.1:%u\n", port);
	sigwait(&stop, &sig);
	epoll_echo_stop(srv);
	return 0;
}
