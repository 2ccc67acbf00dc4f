/* SPDX-License-Identifier: MIT */
/* The serving commands' signal loop (serve.h). Nothing runs in a signal
 * handler: the signals are taken with sigtimedwait. */
#include "serve.h"

#include <time.h>

#include "percore/log.h"

void pc_serve_signals(struct pc_server *srv, const sigset_t *set, uint64_t drain_ns,
		      void (*usr1)(void *arg), void (*draining)(void *arg), void *arg)
{
	struct timespec tick = { .tv_nsec = 100000000 };
	bool drain = false;

	while (!pc_server_stopping(srv)) {
		int sig = sigtimedwait(set, NULL, &tick);

		if (sig == SIGUSR1) {
			usr1(arg);
		} else if (sig == SIGHUP) {
			pc_log_reopen();
		} else if ((sig == SIGINT || sig == SIGTERM) && !drain) {
			if (draining)
				draining(arg);
			drain = true;
			if (pc_server_shutdown(srv, (uint32_t)(drain_ns / 1000000)))
				pc_server_stop(srv);
		} else if (sig == SIGINT || sig == SIGTERM) {
			pc_server_stop(srv);
		}
	}
}
