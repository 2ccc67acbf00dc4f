/* echo_server: the smallest percore server. Every frame comes back with
 * the same message id, flags and body, on as many shards as there are
 * cores; Ctrl-C drains (replies in flight are delivered) and prints what
 * the server counted.
 *
 *   echo_server [PORT [SHARDS]]
 *   percore load --port PORT          # drive it from another terminal
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <percore.h>

/* Runs on the session's shard, once per frame: queue the same frame
 * back. Everything queued this turn leaves in one writev. */
static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)user;
	if (pc_session_send_flags(s, f->msg_id, f->flags, f->body, f->len) == -ENOBUFS)
		pc_session_close(s); /* it sends without reading: let it go */
}

int main(int argc, char **argv)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	struct pc_server_stats st;
	char err[200];
	sigset_t stop;
	int sig;

	pc_server_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.port = (uint16_t)(argc > 1 ? atoi(argv[1]) : 7000);
	cfg.engine.shards = argc > 2 ? (unsigned)atoi(argv[2]) : 0; /* 0: one per core */
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
