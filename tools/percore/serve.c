/* SPDX-License-Identifier: MIT */
/* The serving commands' signal loop (serve.h). Nothing runs in a signal
 * handler: the signals are taken with sigtimedwait. */
#include "serve.h"

#include <stdio.h>
#include <time.h>

#include <sys/socket.h>

#include "percore/listener.h"

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

void pc_serve_say_metrics(const char *cmd, struct pc_server *srv, const struct pc_server_cfg *cfg)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char addr[80];

	if (!cfg->metrics)
		return;
	pc_sockaddr_parse(cfg->metrics_host ? cfg->metrics_host : "127.0.0.1",
			  pc_server_metrics_port(srv), &ss, &len);
	pc_sockaddr_format((struct sockaddr *)&ss, addr, sizeof(addr));
	fprintf(stderr, "percore %s: metrics on http://%s/metrics\n", cmd, addr);
}
