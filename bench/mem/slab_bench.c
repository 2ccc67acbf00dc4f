/* SPDX-License-Identifier: MIT */
/* SlabAlloc/{64,256,1024}[/batch] beside the same loops on glibc, jemalloc,
 * mimalloc and tcmalloc (Peer/<name>/<size>[/batch]).
 *
 * Ours runs in process. Each peer runs in a helper program of its own
 * (percore-peer-<name>, built next to the percore binary and linked
 * against that allocator) so allocators that replace malloc never share a
 * process; the helper times its loop and reports the nanoseconds over a
 * pipe (PC_BENCH_MANUAL_TIME). glibc goes through a helper too, so every
 * peer is measured the same way. One iteration is one alloc+free pair, or
 * one batch of 1,000 allocs then 1,000 frees (items count the pairs). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "percore/bench.h"
#include "percore/slab.h"
#include "alloc_loop.h"

extern char **environ;

#define SLAB_ALLOC(s) pc_slab_alloc(s)
#define SLAB_FREE(s, p) pc_slab_free(s, p)
PC_ALLOC_LOOPS(slab, struct pc_slab *, SLAB_ALLOC, SLAB_FREE)

enum { MODE_PAIR, MODE_BATCH };

static const char *const peers[] = {"glibc", "jemalloc", "mimalloc", "tcmalloc"};
#define NPEERS PC_ARRAY_LEN(peers)

/* ---- ours ------------------------------------------------------------- */

static int slab_setup(struct pc_bench_state *st)
{
	struct pc_slab_opts o = {.size = (size_t)st->bench->arg, .node = -1};
	struct pc_slab *s = pc_slab_create(&o);

	if (!s)
		return -ENOMEM;
	slab_batch(s, 1); /* carve and touch a batch's worth, untimed */
	st->ctx = s;
	return 0;
}

static void slab_run(struct pc_bench_state *st)
{
	if (st->bench->arg2 == MODE_BATCH) {
		slab_batch(st->ctx, st->iterations);
		st->items = st->iterations * PC_ALLOC_BATCH;
	} else {
		slab_pair(st->ctx, st->iterations);
	}
}

static void slab_teardown(struct pc_bench_state *st)
{
	pc_slab_destroy(st->ctx);
}

/* ---- peers, each in its own process ------------------------------------- */

/* The helper for a peer: next to this executable (build tree), else in
 * ../libexec/percore (installed). Returns 0 and fills path, or -ENOENT. */
static int peer_path(const char *peer, char *path, size_t len)
{
	static const char *const where[] = {"%s/percore-peer-%s", "%s/../libexec/percore/percore-peer-%s"};
	char exe[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	for (size_t i = 0; i < PC_ARRAY_LEN(where); i++) {
		if ((size_t)snprintf(path, len, where[i], exe, peer) < len && access(path, X_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

/* Run the helper; on success store its loop time in *ns and return 0. */
static int peer_exec(const char *path, size_t size, int mode, uint64_t iters, uint64_t *ns)
{
	char arg_size[32], arg_iters[32], out[64];
	char *argv[] = {(char *)path, arg_size, mode == MODE_BATCH ? "batch" : "pair", arg_iters, NULL};
	posix_spawn_file_actions_t fa;
	int fds[2], status, rc;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	snprintf(arg_size, sizeof(arg_size), "%zu", size);
	snprintf(arg_iters, sizeof(arg_iters), "%" PRIu64, iters);
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	/* the child inherits this thread's CPU affinity: it runs where the
	 * harness placed the benchmark */
	rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc) {
		close(fds[0]);
		return -rc;
	}
	while (len < sizeof(out) - 1 && (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -EPROTO;
	return sscanf(out, "%" SCNu64, ns) == 1 ? 0 : -EPROTO;
}

struct peer_ctx {
	char path[PATH_MAX];
};

static int peer_setup(struct pc_bench_state *st)
{
	const char *peer = peers[st->bench->arg2 / 2];
	struct peer_ctx *c = malloc(sizeof(*c));
	uint64_t ns;
	int rc;

	if (!c)
		return -ENOMEM;
	rc = peer_path(peer, c->path, sizeof(c->path));
	if (rc == 0)
		rc = peer_exec(c->path, (size_t)st->bench->arg, MODE_PAIR, 1, &ns);
	if (rc) {
		fprintf(stderr, "%s: the helper percore-peer-%s is missing or failed (%s)\n",
			st->bench->name, peer, strerror(-rc));
		free(c);
		return -ENOTSUP;
	}
	st->ctx = c;
	return 0;
}

static void peer_run(struct pc_bench_state *st)
{
	struct peer_ctx *c = st->ctx;
	int mode = (int)(st->bench->arg2 % 2);
	uint64_t ns = 0;
	int rc = peer_exec(c->path, (size_t)st->bench->arg, mode, st->iterations, &ns);

	if (rc)
		fprintf(stderr, "%s: helper failed (%s)\n", st->bench->name, strerror(-rc));
	st->manual_ns = ns;
	if (mode == MODE_BATCH)
		st->items = st->iterations * PC_ALLOC_BATCH;
}

static void peer_teardown(struct pc_bench_state *st)
{
	free(st->ctx);
}

/* ---- the rows ------------------------------------------------------------ */

#define OURS(label, size, mode, fl)                                            \
	{.name = label, .arg = size, .arg2 = mode, .flags = (fl),              \
	 .setup = slab_setup, .run = slab_run, .teardown = slab_teardown}
#define PEER(label, size, peer, mode, fl)                                      \
	{.name = label, .arg = size, .arg2 = (peer) * 2 + (mode),              \
	 .flags = PC_BENCH_MANUAL_TIME | (fl), .setup = peer_setup,            \
	 .run = peer_run, .teardown = peer_teardown}
#define SIZE_ROWS(sz, fl)                                                      \
	OURS("SlabAlloc/" #sz, sz, MODE_PAIR, fl),                             \
	PEER("Peer/glibc/" #sz, sz, 0, MODE_PAIR, fl),                         \
	PEER("Peer/jemalloc/" #sz, sz, 1, MODE_PAIR, fl),                      \
	PEER("Peer/mimalloc/" #sz, sz, 2, MODE_PAIR, fl),                      \
	PEER("Peer/tcmalloc/" #sz, sz, 3, MODE_PAIR, fl),                      \
	OURS("SlabAlloc/" #sz "/batch", sz, MODE_BATCH, fl),                   \
	PEER("Peer/glibc/" #sz "/batch", sz, 0, MODE_BATCH, fl),               \
	PEER("Peer/jemalloc/" #sz "/batch", sz, 1, MODE_BATCH, fl),            \
	PEER("Peer/mimalloc/" #sz "/batch", sz, 2, MODE_BATCH, fl),            \
	PEER("Peer/tcmalloc/" #sz "/batch", sz, 3, MODE_BATCH, fl)

/* The middle size only in the full suite: 64 and 1024 bracket it, and the
 * default suite has a time budget. */
static const struct pc_bench rows[] = {
	SIZE_ROWS(64, 0), SIZE_ROWS(256, PC_BENCH_FULL), SIZE_ROWS(1024, 0),
};
_Static_assert(PC_ARRAY_LEN(peers) == 4, "SIZE_ROWS names four peers");

__attribute__((constructor)) static void slab_bench_register(void)
{
	for (size_t i = 0; i < PC_ARRAY_LEN(rows); i++)
		pc_bench_register(&rows[i]);
}
