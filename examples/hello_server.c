/* SPDX-License-Identifier: MIT */
/* hello_server: a whole percore server. Each frame is answered with
 * "hello, " and its body, on one shard per core. Ctrl-C stops it.
 *   hello_server [PORT]       (default 7000; 0: the kernel picks) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percore.h>

/* On the session's shard, once per well-formed frame. */
static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	char out[256] = "hello, ";
	size_t n = f->len < sizeof(out) - 7 ? f->len : sizeof(out) - 7;

	(void)user;
	memcpy(out + 7, f->body, n);
	pc_session_send(s, f->msg_id, out, 7 + n); /* leaves at the end of the turn */
}

int main(int argc, char **argv)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	char err[200], *end = "";
	long port = argc == 2 ? strtol(argv[1], &end, 10) : 7000;
	int help = argc == 2 && !strcmp(argv[1], "--help");

	if (argc > 2 || *end || port < 0 || port > 65535) { /* --help, or a bad PORT */
		fprintf(help ? stdout : stderr, "usage: hello_server [PORT]\n");
		return help ? 0 : 2;
	}
	pc_server_cfg_init(&cfg);
	cfg.host = "127.0.0.1";
	cfg.port = (uint16_t)port;
	cfg.on_frame = on_frame;
	if (pc_server_start(&cfg, &srv, err, sizeof(err))) {
		fprintf(stderr, "hello_server: %s\n", err);
		return 1;
	}
	printf("hello_server: port %u\n", pc_server_port(srv));
	fflush(stdout);
	pc_engine_stop_on_signals(pc_server_engine(srv)); /* Ctrl-C stops the shards */
	pc_server_wait(srv);
	pc_server_destroy(srv);
	return 0;
}
