/* SPDX-License-Identifier: MIT */
/* echo_server: the smallest percore server. Every frame comes back with
 * the same message id, flags and body, on as many shards as there are
 * cores; Ctrl-C drains (replies in flight are delivered) and prints what
 * the server counted.
 *
 *   echo_server [PORT [SHARDS]]
 *   percore load --port PORT          # drive it from another terminal
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percore.h>

/* Runs on the session's shard, once per frame: queue the same frame
 * back. Everything queued this turn leaves in one writev. */
static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)user;
	if (pc_session_send_flags(s, f->msg_id, f->flags, f->body, f->len) == -ENOBUFS)
		pc_session_close(s); /* it sends without reading: let it go */
}

static void usage(FILE *f)
{
	fprintf(f, "usage: echo_server [PORT [SHARDS]]\n"
		   "Echo every frame on 127.0.0.1:PORT (default 7000; 0: the kernel picks)\n"
		   "with SHARDS shards (default 0: one per core). Ctrl-C drains and exits.\n");
}

/* A decimal number from 0 to max, nothing else. Returns 0 or -EINVAL. */
static int parse_num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out > max ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	struct pc_server_stats st;
	unsigned long port = 7000, shards = 0; /* 0: one per core */
	char err[200];
	sigset_t stop;
	int sig;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 3 || (argc > 1 && parse_num(argv[1], 65535, &port)) ||
	    (argc > 2 && parse_num(argv[2], PC_ENGINE_MAX_SHARDS, &shards))) {
		usage(stderr);
		return 2;
	}
	pc_server_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.port = (uint16_t)port;
	cfg.engine.shards = (unsigned)shards;
	cfg.on_frame = on_frame;
	cfg.idle_timeout_ms = 60000;  /* close sessions silent for a minute */
	cfg.max_body = 64 << 10;      /* refuse larger frames (error reply, close) */
	cfg.stats_frames = true;      /* answer PC_MSG_STATS (percore load --idle) */

	/* Take SIGINT and SIGTERM on this thread; the shards inherit the mask. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	if (pc_server_start(&cfg, &srv, err, sizeof(err))) {
		fprintf(stderr, "echo_server: %s\n", err);
		return 1;
	}
	fprintf(stderr, "echo_server: listening on 127.0.0.1:%u with %u shards\n",
		pc_server_port(srv), pc_server_shards(srv));

	sigwait(&stop, &sig);
	fprintf(stderr, "echo_server: draining\n");
	pc_server_shutdown(srv, 5000); /* at most 5 s to flush what is in flight */
	pc_server_wait(srv);

	pc_server_stats(srv, -1, &st);
	printf("sessions %llu, frames %llu in / %llu out, refused: %llu malformed, %llu oversize\n",
	       (unsigned long long)st.accepted, (unsigned long long)st.frames_in,
	       (unsigned long long)st.frames_out, (unsigned long long)st.malformed,
	       (unsigned long long)st.oversize);
	pc_server_destroy(srv);
	return 0;
}
