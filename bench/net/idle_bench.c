/* SPDX-License-Identifier: MIT */
/* Session/IdleMemory/10000: what 10,000 idle sessions cost a server.
 * Session/PartialFrame/10000: the same with each connection holding half
 * of a 1 KiB frame (512 bytes sent, the rest never), so the server keeps
 * an input buffer per session.
 *
 * The server is `percore echo` in a process of its own (this program run
 * as a child), so its resident memory holds nothing of the generator's.
 * Every iteration measures a server that has served nothing yet: the one
 * setup() started for the first, a new one for each after (a server that
 * already held 10,000 sessions keeps their slab pages and heap, and a
 * second round on it would measure reuse, not cost). Starting and stopping
 * the servers is not timed. The generator opens the sessions and asks the
 * server for its figures (PC_MSG_STATS) before and after; the counters,
 * means over the iterations, are
 *   rss_bytes_per_session      growth of the server's VmRSS per session:
 *                              slab objects, id slots, the reactor's fd
 *                              table, heap growth, page granularity
 *   accounted_bytes_per_session the server's own count: slab object plus
 *                              id slot (no buffer: idle sessions hold none)
 *   kernel_tcp_mem_bytes       growth of the machine's TCP buffer memory
 *                              (/proc/net/sockstat), both ends
 *   maps_per_session           growth of the server's memory mappings
 *                              (lines of /proc/PID/maps) per session
 *   maps_after                 the server's mappings at the end (the
 *                              kernel refuses every mmap past
 *                              vm.max_map_count, 65,530 by default)
 *   buffered_bytes_per_session PartialFrame: what the server holds per
 *                              session (512 when every half frame arrived)
 *   server_accepted_before     the most connections any measured server
 *                              had accepted before its measurement: 1 (the
 *                              generator's statistics connection) when
 *                              every one was fresh; more is an error
 * Time and items: opening the sessions (sessions/s). The generator needs
 * 10,000 descriptors and the server as many: each raises its soft limit to
 * the hard one; below that the row is skipped with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "percore/bench.h"
#include "percore/clock.h"
#include "percore/load.h"

#define IDLE_SESSIONS 10000
#define PARTIAL_BYTES 512 /* half of a 1 KiB frame */

struct idle_ctx {
	pid_t pid;         /* the server for the next measurement; 0: none */
	int err_fd;        /* its stderr, kept open so it never blocks */
	uint16_t port;
};

/* A full buffer keeps only its last, unfinished line (none when the
 * whole buffer is one line): the lines before it were not the one
 * wanted, and a log line (a stall warning with its backtrace) may be
 * longer than the buffer. */
static size_t keep_last_line(char *buf, size_t n)
{
	char *nl = memrchr(buf, '\n', n);
	size_t keep = nl ? n - (size_t)(nl + 1 - buf) : 0;

	memmove(buf, buf + n - keep, keep);
	return keep;
}

/* Read the child's stderr until it says where it listens, whatever it
 * logs before: 60 s at most, a bound for a child that hangs, not for a
 * slow start (a sanitizer build on a busy machine took more than 5). */
static int wait_port(int fd, uint16_t *port)
{
	char buf[512];
	size_t n = 0;
	uint64_t end = pc_now_ns() + 60000000000ull;

	while (pc_now_ns() < end) {
		if (n == sizeof(buf) - 1)
			n = keep_last_line(buf, n);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			return -ECHILD;
		n += (size_t)k;
		buf[n] = '\0';
		const char *at = strstr(buf, "listening on 127.0.0.1:");
		unsigned p16;
		if (at && sscanf(at, "listening on 127.0.0.1:%u", &p16) == 1 && strchr(at, '\n')) {
			*port = (uint16_t)p16;
			return 0;
		}
	}
	return -ETIMEDOUT;
}

static void child_stop(struct idle_ctx *c)
{
	int status;

	if (!c->pid)
		return;
	kill(c->pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			goto out;
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
out:
	close(c->err_fd);
	c->pid = 0;
}

/* Start a fresh `percore echo` and learn its port. Returns 0 or -errno,
 * with the reason on stderr. */
static int child_start(struct pc_bench_state *st, struct idle_ctx *c)
{
	int fds[2], rc;
	char *argv[] = { "percore", "echo", "--host", "127.0.0.1", "--port", "0", "--shards", "1",
			 "--policy", st->affinity ? "auto" : "off", "--idle-policy", "sleep",
			 "--idle-timeout", "0", "--frame-timeout", "0", NULL };
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null < 0 || pipe2(fds, O_CLOEXEC)) {
		rc = -errno;
		if (null >= 0)
			close(null);
		fprintf(stderr, "%s: %s\n", st->bench->name, strerror(-rc));
		return rc;
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* Only async-signal-safe calls between fork and exec. Its
		 * statistics on exit (stdout) are not ours to print. */
		dup2(null, 1);
		dup2(fds[1], 2);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	rc = pid < 0 ? -errno : 0;
	close(null);
	close(fds[1]);
	c->err_fd = fds[0];
	c->pid = pid > 0 ? pid : 0;
	if (!rc)
		rc = wait_port(c->err_fd, &c->port);
	if (rc) {
		fprintf(stderr, "%s: could not start percore echo as a child (%s)\n", st->bench->name,
			strerror(-rc));
		if (c->pid)
			child_stop(c);
		else
			close(c->err_fd);
	}
	return rc;
}

static int idle_setup(struct pc_bench_state *st)
{
	struct idle_ctx *c;

	if (pc_raise_nofile(IDLE_SESSIONS + 100)) {
		fprintf(stderr, "%s: needs %d open files; the hard limit is lower (ulimit -Hn)\n",
			st->bench->name, IDLE_SESSIONS + 100);
		return -ENOTSUP;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* The first server starts here, so a machine that cannot run one
	 * skips the row with the reason rather than reporting errors. */
	if (child_start(st, c)) {
		free(c);
		return -ENOTSUP;
	}
	st->ctx = c;
	return 0;
}

/* One measurement on the server c holds, which it then stops. Returns 0,
 * or -1 after counting an error. */
static int idle_once(struct pc_bench_state *st, struct idle_ctx *c, struct pc_load_result *r)
{
	struct pc_load_cfg l;
	char err[200];
	int rc;

	pc_load_cfg_init(&l);
	l.port = c->port;
	l.mode = PC_LOAD_IDLE;
	l.idle = IDLE_SESSIONS;
	l.idle_partial = (uint32_t)st->bench->arg;
	rc = pc_load_run(&l, r, err, sizeof(err));
	child_stop(c); /* spent: the next measurement gets a new one */
	if (rc)
		fprintf(stderr, "%s: %s\n", st->bench->name, err);
	else if (r->server_accepted_before != 1)
		fprintf(stderr, "%s: the server had accepted %llu connections before the "
				"measurement; a fresh one has accepted 1\n", st->bench->name,
			(unsigned long long)r->server_accepted_before);
	return rc || r->server_accepted_before != 1 ? -1 : 0;
}

static void idle_run(struct pc_bench_state *st)
{
	struct idle_ctx *c = st->ctx;
	double rss = 0, acct = 0, kmem = 0, errors = 0, before = 0, maps = 0, maps_end = 0;
	double held = 0;
	uint64_t done = 0;

	for (uint64_t i = 0; i < st->iterations; i++) {
		struct pc_load_result r;
		int rc = c->pid ? 0 : child_start(st, c);
		if (rc || idle_once(st, c, &r)) {
			errors++;
			if (!rc)
				pc_load_result_fini(&r);
			break;
		}
		st->manual_ns += r.elapsed_ns;
		st->items += r.idle_open;
		rss += r.rss_per_session;
		acct += r.acct_per_session;
		kmem += (double)r.kernel_tcp_mem_delta;
		maps += r.maps_per_session;
		maps_end += (double)r.server_maps_after;
		held += r.idle_open ? (double)r.server_buffered_growth / (double)r.idle_open : 0;
		errors += (double)r.errors;
		if ((double)r.server_accepted_before > before)
			before = (double)r.server_accepted_before;
		done++;
		pc_load_result_fini(&r);
	}
	if (done) {
		pc_bench_counter(st, "rss_bytes_per_session", rss / (double)done);
		pc_bench_counter(st, "accounted_bytes_per_session", acct / (double)done);
		pc_bench_counter(st, "kernel_tcp_mem_bytes", kmem / (double)done);
		pc_bench_counter(st, "maps_per_session", maps / (double)done);
		pc_bench_counter(st, "maps_after", maps_end / (double)done);
		if (st->bench->arg)
			pc_bench_counter(st, "buffered_bytes_per_session", held / (double)done);
		pc_bench_counter(st, "server_accepted_before", before);
	}
	pc_bench_counter(st, "errors", errors);
}

static void idle_teardown(struct pc_bench_state *st)
{
	struct idle_ctx *c = st->ctx;

	child_stop(c);
	free(c);
}

static const struct pc_bench idle_memory = {
	.name = "Session/IdleMemory/10000",
	.flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME | PC_BENCH_UNPINNED_FULL,
	.setup = idle_setup, .run = idle_run, .teardown = idle_teardown,
};
PC_BENCH_REGISTER(idle_memory)

static const struct pc_bench partial_memory = {
	.name = "Session/PartialFrame/10000", .arg = PARTIAL_BYTES,
	.flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME | PC_BENCH_UNPINNED_FULL,
	.setup = idle_setup, .run = idle_run, .teardown = idle_teardown,
};
PC_BENCH_REGISTER(partial_memory)
