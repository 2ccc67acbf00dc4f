/* Session/IdleMemory/10000: what 10,000 idle sessions cost a server.
 *
 * The server is `percore echo` in a process of its own (this program run
 * as a child), so its resident memory holds nothing of the generator's.
 * The generator opens the sessions and asks the server for its figures
 * (PC_MSG_STATS) before and after; the counters are
 *   rss_bytes_per_session      growth of the server's VmRSS per session:
 *                              slab objects, id slots, the reactor's fd
 *                              table, heap growth, page granularity
 *   accounted_bytes_per_session the server's own count: slab object plus
 *                              id slot (no buffer: idle sessions hold none)
 *   kernel_tcp_mem_bytes       growth of the machine's TCP buffer memory
 *                              (/proc/net/sockstat), both ends
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

struct idle_ctx {
	pid_t pid;
	int err_fd;        /* the child's stderr, kept open so it never blocks */
	uint16_t port;
};

/* Read the child's stderr until it says where it listens (5 s at most). */
static int wait_port(int fd, uint16_t *port)
{
	char buf[512];
	size_t n = 0;
	uint64_t end = pc_now_ns() + 5000000000ull;

	while (n < sizeof(buf) - 1 && pc_now_ns() < end) {
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
}

static int idle_setup(struct pc_bench_state *st)
{
	struct idle_ctx *c;
	int fds[2], rc;
	char *argv[] = { "percore", "echo", "--host", "127.0.0.1", "--port", "0", "--shards", "1",
			 "--policy", st->affinity ? "auto" : "off", "--idle-policy", "sleep",
			 "--idle-timeout", "0", NULL };

	if (pc_raise_nofile(IDLE_SESSIONS + 100)) {
		fprintf(stderr, "%s: needs %d open files; the hard limit is lower (ulimit -Hn)\n",
			st->bench->name, IDLE_SESSIONS + 100);
		return -ENOTSUP;
	}
	c = calloc(1, sizeof(*c));
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (!c || null < 0 || pipe2(fds, O_CLOEXEC)) {
		if (null >= 0)
			close(null);
		free(c);
		return -ENOMEM;
	}
	c->pid = fork();
	if (c->pid == 0) {
		/* Only async-signal-safe calls between fork and exec. Its
		 * statistics on exit (stdout) are not ours to print. */
		dup2(null, 1);
		dup2(fds[1], 2);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(null);
	close(fds[1]);
	c->err_fd = fds[0];
	rc = c->pid < 0 ? -errno : wait_port(c->err_fd, &c->port);
	if (rc) {
		fprintf(stderr, "%s: could not start percore echo as a child (%s)\n", st->bench->name,
			strerror(-rc));
		if (c->pid > 0)
			child_stop(c);
		else
			close(c->err_fd);
		free(c);
		return -ENOTSUP;
	}
	st->ctx = c;
	return 0;
}

static void idle_run(struct pc_bench_state *st)
{
	struct idle_ctx *c = st->ctx;
	struct pc_load_cfg l;
	struct pc_load_result r;
	char err[200];

	pc_load_cfg_init(&l);
	l.port = c->port;
	l.mode = PC_LOAD_IDLE;
	l.idle = IDLE_SESSIONS;
	for (uint64_t i = 0; i < st->iterations; i++) {
		if (pc_load_run(&l, &r, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", st->bench->name, err);
			pc_bench_counter(st, "errors", 1);
			pc_load_result_fini(&r);
			return;
		}
		st->manual_ns += r.elapsed_ns;
		st->items += r.idle_open;
		pc_bench_counter(st, "rss_bytes_per_session", r.rss_per_session);
		pc_bench_counter(st, "accounted_bytes_per_session", r.acct_per_session);
		pc_bench_counter(st, "kernel_tcp_mem_bytes", (double)r.kernel_tcp_mem_delta);
		pc_bench_counter(st, "errors", (double)r.errors);
		pc_load_result_fini(&r);
	}
}

static void idle_teardown(struct pc_bench_state *st)
{
	struct idle_ctx *c = st->ctx;

	child_stop(c);
	free(c);
}

static const struct pc_bench idle_memory = {
	.name = "Session/IdleMemory/10000",
	.flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME,
	.setup = idle_setup, .run = idle_run, .teardown = idle_teardown,
};
PC_BENCH_REGISTER(idle_memory)
