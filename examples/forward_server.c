/* SPDX-License-Identifier: MIT */
/* forward_server: a sharded counter service. Each shard owns the keys
 * equal to its index modulo the shard count; a request that lands on any
 * shard is forwarded to the key's owner (pc_shard_call_q), which adds to
 * the key's counter, and the answer is written back to the client in
 * request order (pc_reply_reserve / pc_reply_fill_to), however deep the
 * client pipelines.
 *
 * Request: any message id, a 16-byte body: key, then delta (unsigned
 * 64-bit, little-endian). Reply: the same id, an 8-byte body: the key's
 * counter after the addition. Keys run from 0 to KEYS_PER_SHARD x shards.
 *
 * Forwarded calls past the call limit wait on the shard, in order; only
 * when the shard's outbox budget is spent does a call get -ENOBUFS. The
 * session then stops reading (the frame is kept for later, and TCP
 * pushes back on the client) until an answer comes back or the pressure
 * ends, and is found again by its id.
 *
 *   forward_server [PORT [SHARDS]]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <percore.h>

#define KEYS_PER_SHARD 4096

/* Row k: shard k's counters, touched by shard k only (allocated there). */
static uint64_t *counters[PC_ENGINE_MAX_SHARDS];

/* Per shard: the ids of sessions that stopped reading for the budget. */
struct waiting {
	uint64_t *ids;
	size_t n, cap;
};
static struct waiting waiting[PC_ENGINE_MAX_SHARDS];

/* One forwarded request, from its session's shard to the key's owner and
 * back. */
struct add {
	uint64_t session, key, delta;
	uint32_t ticket, msg_id;
};

static unsigned owner(uint64_t key)
{
	return (unsigned)(key % pc_shard_count());
}

/* On the owner. The counter's value is the result; a counter would have
 * to reach 2^63 to be taken for an error (-ETIMEDOUT, -ECANCELED). */
static intptr_t add_here(void *arg)
{
	const struct add *a = arg;
	uint64_t *c = &counters[pc_shard_id()][a->key / pc_shard_count() % KEYS_PER_SHARD];

	*c += a->delta;
	return (intptr_t)*c;
}

/* Sessions stopped for the budget read again; one still refused stops
 * once more. */
static void resume_waiting(void)
{
	struct waiting *w = &waiting[pc_shard_id()];
	size_t n = w->n;

	w->n = 0;
	for (size_t i = 0; i < n; i++) {
		struct pc_session *s = pc_session_find(w->ids[i]);

		if (s)
			pc_session_resume_read(s); /* frames offered from a task, not here */
	}
}

static void on_pressure(unsigned to, bool high, void *arg)
{
	(void)to;
	(void)arg;
	if (!high)
		resume_waiting();
}

/* Back on the session's shard: the answer takes its reserved place. */
static void answered(void *ctx, intptr_t v)
{
	struct add *a = ctx;
	uint64_t value = (uint64_t)v;

	if (v != -ECANCELED) /* -ECANCELED: the server is stopping */
		pc_reply_fill_to(a->session, a->ticket, a->msg_id, 0, &value, sizeof(value));
	free(a);
	resume_waiting();
}

/* Stop reading s until room frees. Returns 0 or -ENOMEM. */
static int wait_for_room(struct pc_session *s)
{
	struct waiting *w = &waiting[pc_shard_id()];

	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		uint64_t *ids = realloc(w->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		w->ids = ids;
		w->cap = cap;
	}
	w->ids[w->n++] = pc_session_id(s);
	return pc_session_unread_frame(s); /* paused; this frame comes again first */
}

static void on_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	static const char bad[] = "want a 16-byte body: key and delta";
	struct add *a;
	int rc;

	(void)user;
	if (f->len != 16) {
		pc_session_refuse(s, PC_CLOSE_MALFORMED, f->msg_id, bad, sizeof(bad) - 1);
		return;
	}
	a = malloc(sizeof(*a));
	if (!a || pc_reply_reserve(s, &a->ticket)) { /* its place among the replies */
		free(a);
		pc_session_close(s);
		return;
	}
	memcpy(&a->key, f->body, 8);
	memcpy(&a->delta, f->body + 8, 8);
	a->session = pc_session_id(s);
	a->msg_id = f->msg_id;
	rc = pc_shard_call_q(owner(a->key), add_here, a, answered, a, NULL);
	if (rc == 0)
		return;
	pc_reply_unreserve(s, a->ticket);
	free(a);
	if (rc != -ENOBUFS || wait_for_room(s))
		pc_session_close(s); /* stopping (-ECANCELED) or out of memory */
}

static void shard_start(unsigned shard, void *user)
{
	(void)user;
	counters[shard] = calloc(KEYS_PER_SHARD, sizeof(uint64_t));
	if (!counters[shard])
		abort(); /* nothing to serve from */
	pc_shard_on_pressure(on_pressure, NULL);
}

static void shard_stop(unsigned shard, void *user)
{
	(void)user;
	free(counters[shard]);
	counters[shard] = NULL;
	free(waiting[shard].ids);
	waiting[shard] = (struct waiting){ 0 };
}

static void usage(FILE *f)
{
	fprintf(f, "usage: forward_server [PORT [SHARDS]]\n"
		   "Serve sharded counters on 127.0.0.1:PORT (default 7000; 0: the kernel\n"
		   "picks) with SHARDS shards (default 0: one per core). Ctrl-C drains.\n");
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
	unsigned long port = 7000, shards = 0;
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
	cfg.on_shard_start = shard_start;
	cfg.on_shard_stop = shard_stop;
	cfg.max_body = 64;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	if (pc_server_start(&cfg, &srv, err, sizeof(err))) {
		fprintf(stderr, "forward_server: %s\n", err);
		return 1;
	}
	fprintf(stderr, "forward_server: listening on 127.0.0.1:%u with %u shards\n",
		pc_server_port(srv), pc_server_shards(srv));
	sigwait(&stop, &sig);
	pc_server_shutdown(srv, 5000);
	pc_server_wait(srv);
	pc_server_destroy(srv);
	return 0;
}
