/* SPDX-License-Identifier: MIT */
/* `percore kv` beside redis-server, driven by redis-benchmark:
 *
 *   KV/{SET,GET,INCR,MSET10}/P{1,16}          Peer/redis/{...}/P{1,16}
 *   KV/.../keys:random                        Peer/redis/.../keys:random
 *   KV/.../keys:random/cpus:all               Peer/redis/.../keys:random/cpus:all
 *   KV/SET/P{1,16}/keys:random/appendfsync:{always,everysec}
 *                                             Peer/redis/SET/... (the same)
 *   KV/Memory/1M                              Peer/redis/Memory/1M
 *   KV/{PING_MBULK,LPUSH,...,LRANGE_600}/P{1,16}/keys:random[/cpus:all]
 *                                             Peer/redis/{...} (BENCH=full)
 *
 * Untagged rows (full suite only: one key is nobody's workload, and the
 * keys:random rows on one shard ask the same question): `percore kv
 * --shards 1`, and redis-benchmark without -r, so every request names one
 * key. keys:random: -r KEYSPACE, keys spread
 * as a real key set's. Both run each server in a process of its own,
 * started in setup() with no persistence (but the appendfsync rows':
 * append-only files in a fresh directory on a disk, PC_BENCH_DIR or
 * /var/tmp, synced as the row names), pinned (every thread of it, a
 * kv's log writer and stall watchdog as much as a redis-server's
 * background threads) to the first CPU this process may use and
 * redis-benchmark to the next (unpinned where there is only one); the
 * comparison is one server core against another, so there are no
 * /affinity variants. cpus:all: percore kv with one shard per usable
 * CPU (its default leaves one CPU to the clients: these rows keep the
 * hop between shards in sight) and redis-server each given every usable CPU,
 * redis-benchmark among them: what each makes of the whole machine
 * (here the client shares the CPUs it loads). One iteration is one
 * redis-benchmark run of 50 connections at pipeline depth 1 or 16, sized
 * to last about 0.3 s; its requests are the items and requests / its
 * reported requests per second the time, so a row's time per item is
 * 1/rps (the client's start-up and connecting are outside it). Counters
 * (means over the iterations): rps, p50_ms and p99_ms as redis-benchmark
 * prints them; server_cpu_ns_per_req, the server's CPU time (every
 * thread, user and system) over the run divided by its requests, and
 * client_util, redis-benchmark's CPU time over its wall time and threads
 * (0-1: near 1 means the client set the pace, and rps measures it more
 * than the server); the configuration: shards (the server's; 1 for
 * redis-server), keyspace (-r, 0 without), pinned (1 when server and
 * client run on CPUs of their own) and server_threads_unpinned (threads
 * of a pinned server that may run outside its CPUs, read from the
 * kernel: 0 when the pinning holds); appendfsync rows, aof_bytes, the
 * bytes of the server's files after the run. A run that failed fails its
 * repetition (pc_bench_fail).
 * GET reads a key SET before the run (redis-benchmark's key, 3 bytes,
 * as its SET writes); MSET10 is redis-benchmark's "MSET (10 keys)". A
 * run that has not ended within RUN_LIMIT_S is killed: redis-benchmark
 * retries forever when its server is gone.
 *
 * The other types' rows (full suite only) run the rest of
 * redis-benchmark's default list: PING_MBULK, LPUSH, RPUSH, LPOP, RPOP,
 * SADD, HSET, SPOP, ZADD, ZPOPMIN and LRANGE of the first 100, 300, 500
 * and 600 elements. redis-benchmark names one key for each of them
 * (mylist, myset, myhash, myzset; -r varies only members), as a user
 * who runs it gets. A pop row first runs its push test, unmeasured, so
 * it pops real elements; a range row fills the list the same way, then
 * runs LRANGE as a command of its own (redis-benchmark's lrange tests
 * would time their LPUSH too).
 *
 * Memory/1M: a fresh server, 1,000,000 SETs of 16-byte names and 32-byte
 * values in pipelined batches; counter bytes_per_key is the growth of the
 * server's VmRSS divided by the keys; time and items the inserts.
 * Memory/<type>/1x1M and /1Mx4 (BENCH=full): the same for one hash, list,
 * set or sorted set of 1,000,000 elements (100 per command), and for
 * 1,000,000 collections of 4 (hashes, lists, sets of strings, sets of
 * small integers: intsets, sorted sets); counter bytes_per_elem.
 *
 * Scaling, KV/{SET,GET,INCR,MSET10}/P16/shards:N for N from 1 to the
 * usable CPUs minus one (every count up to 8, then powers of two and the
 * largest): `percore kv --shards N` on the first N CPUs, redis-benchmark
 * on the others (with a thread per CPU where there are several), at
 * depth 16 over KEYSPACE random keys (-r), so that requests spread over
 * the shards as a real key set does; GET reads keys stored in setup.
 * Requests per iteration grow with N, so a run lasts about as long at
 * every N. With two CPUs there is one point, shards:1; with one, none.
 *
 * Rows are skipped, with the reason, where redis-server or
 * redis-benchmark is not installed (scripts/deps.sh installs both). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../net/task_cpu.h"
#include "../rt/rt_bench.h"
#include "percore/bench.h"
#include "percore/clock.h"

#define KV_CONNS 50
#define MEM_KEYS 1000000
#define MEM_BATCH 1000
#define RUN_LIMIT_S 30
#define KEYSPACE 100000         /* the scaling rows' random keys */
#define MAX_SCALE_SHARDS 256

enum server_kind { SRV_KV, SRV_REDIS };

/* A row's arg2: the server kind, its options, and for a scaling row its
 * shards. */
#define ROW_RANDOM 0x10         /* -r KEYSPACE */
#define ROW_ALL_CPUS 0x20       /* every usable CPU, kv's default shards */
#define ROW_AOF_ALWAYS 0x40     /* --appendonly yes --appendfsync always */
#define ROW_AOF_EVERYSEC 0x80   /* the same, everysec */
#define ROW_KIND(arg2) ((enum server_kind)((arg2) & 0xf))
#define ROW_SHARDS(arg2) ((unsigned)((arg2) >> 8))

struct kv_ctx {
	enum server_kind kind;
	pid_t pid;
	uint16_t port;
	unsigned shards;              /* a scaling row's; 0: a comparison row */
	bool random;                  /* -r KEYSPACE */
	bool all_cpus;                /* server and client share every CPU */
	cpu_set_t server, client;     /* where each runs */
	bool pinned;                  /* false: both unpinned */
	unsigned client_cpus;
	unsigned server_shards;       /* what the server runs: 1 for redis */
	int divide;                   /* PC_BENCH_KV_DIVIDE */
	const char *appendfsync;      /* append-only files synced so; NULL: none */
	char dir[520];                /* where they go */
};

/* The CPUs this process may use, in order: how many, into cpus. */
static unsigned usable_cpus(int *cpus, unsigned max)
{
	cpu_set_t set;
	unsigned n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

/* The server on the first `server` usable CPUs, the client on the rest;
 * unpinned when no CPU is left for the client. */
static void pick_cpus(struct kv_ctx *c, unsigned server)
{
	int cpus[MAX_SCALE_SHARDS + 64];
	unsigned n = usable_cpus(cpus, sizeof(cpus) / sizeof(cpus[0]));

	CPU_ZERO(&c->server);
	CPU_ZERO(&c->client);
	if (c->all_cpus) {
		/* the whole machine to each: no CPU of the client's own */
		for (unsigned i = 0; i < n; i++)
			CPU_SET(cpus[i], &c->server);
		c->client = c->server;
		c->pinned = false;
		c->client_cpus = n ? n : 1;
		return;
	}
	c->pinned = n > server;
	c->client_cpus = c->pinned ? n - server : 1;
	for (unsigned i = 0; c->pinned && i < n; i++)
		CPU_SET(cpus[i], i < server ? &c->server : &c->client);
}

/* "0,1,5": the CPUs of set, for --policy. */
static void cpu_list(const cpu_set_t *set, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE && len + 8 < size; c++)
		if (CPU_ISSET(c, set))
			len += (size_t)snprintf(buf + len, size - len, "%s%d", len ? "," : "", c);
}

/* A port nobody listens on now (the kernel's choice, released). */
static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint16_t port = 0;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static bool on_path(const char *prog)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* fork + exec argv, pinned to the CPUs of set (NULL: not), stdout to out
 * (-1: /dev/null), stderr to /dev/null (a server's log and the client's
 * warnings are not the row's). The child dies with this process, so an
 * interrupted run leaves no server behind. Returns the pid or -errno. */
static pid_t spawn(char *const argv[], const cpu_set_t *set, int out)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pid_t pid;

	if (null < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (set)
			sched_setaffinity(0, sizeof(*set), set);
		dup2(null, 2);
		dup2(out >= 0 ? out : null, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(null);
	return pid < 0 ? -errno : pid;
}

static int connect_port(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits until the server answers PING: 60 s at most, a bound for a
 * server that hangs, not for a slow start on a busy machine. */
static int wait_ready(uint16_t port)
{
	uint64_t end = pc_now_ns() + 60000000000ull;

	while (pc_now_ns() < end) {
		int fd = connect_port(port);
		char buf[16];

		if (fd >= 0) {
			ssize_t n = write(fd, "PING\r\n", 6) == 6 ? read(fd, buf, sizeof(buf)) : -1;

			close(fd);
			if (n >= 5 && !memcmp(buf, "+PONG", 5))
				return 0;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
	}
	return -ETIMEDOUT;
}

static void server_stop(struct kv_ctx *c)
{
	pid_t rc = 0;
	int st;

	if (c->pid <= 0)
		return;
	kill(c->pid, SIGTERM);
	/* 5 s to exit on its own (0: still running, else reaped or gone) */
	for (int i = 0; i < 500 && (rc = waitpid(c->pid, &st, WNOHANG)) == 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	if (rc == 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &st, 0);
	}
	c->pid = 0;
}

static unsigned server_shards(const struct kv_ctx *c);

/* Appends to argv (k words so far) the server's append-only settings
 * and the NULL; returns argv. */
static char **with_aof(char **argv, unsigned k, struct kv_ctx *c)
{
	if (c->appendfsync) {
		argv[k++] = "--appendonly", argv[k++] = "yes";
		argv[k++] = "--appendfsync", argv[k++] = (char *)c->appendfsync;
		argv[k++] = "--dir", argv[k++] = c->dir;
	} else if (c->kind == SRV_REDIS) {
		argv[k++] = "--appendonly", argv[k++] = "no";
	}
	argv[k] = NULL;
	return argv;
}

static int server_start(struct pc_bench_state *st, struct kv_ctx *c)
{
	char port[8], cpus[1024], shards[12], *args[24];

	c->port = free_port();
	/* Both servers start inside the server's CPUs, so every thread they
	 * start (kv's log writer and stall watchdog, redis-server's background
	 * threads) stays there; kv then pins each shard to one of them. */
	const cpu_set_t *where = c->pinned || c->all_cpus ? &c->server : NULL;

	snprintf(port, sizeof(port), "%u", c->port);
	snprintf(shards, sizeof(shards), "%u", c->shards ? c->shards : 1);
	cpu_list(&c->server, cpus, sizeof(cpus));
	if (c->kind == SRV_KV && c->all_cpus) {
		/* one shard per usable CPU (kv's default leaves one to the
		 * clients), placed by auto: the hop between shards cannot hide */
		snprintf(shards, sizeof(shards), "%u", server_shards(c));
		char *argv[] = { "/proc/self/exe", "kv", "--port", port, "--shards", shards,
				 "--policy", "auto", "--max-clients", "0", "--save", "" };
		memcpy(args, argv, sizeof(argv));
		c->pid = spawn(with_aof(args, 12, c), where, -1);
	} else if (c->kind == SRV_KV) {
		/* an oversubscribed machine (one CPU) runs the shard unpinned */
		char *argv[] = { "/proc/self/exe", "kv", "--port", port, "--shards", shards, "--policy",
				 c->pinned ? cpus : "off", "--max-clients", "0", "--save", "" };
		memcpy(args, argv, sizeof(argv));
		c->pid = spawn(with_aof(args, 12, c), where, -1);
	} else {
		char *argv[] = { "redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
				 "--daemonize", "no" };
		memcpy(args, argv, sizeof(argv));
		c->pid = spawn(with_aof(args, 9, c), where, -1);
	}
	bool up = c->pid > 0 && !wait_ready(c->port);

	/* The port was free a moment ago; a server that lost it to another
	 * process has exited, and the PONG came from that process. */
	if (up && waitpid(c->pid, &(int){ 0 }, WNOHANG) == c->pid) {
		c->pid = 0;
		up = false;
	}
	if (!up) {
		fprintf(stderr, "%s: the server did not start on port %u\n", st->bench->name,
			c->port);
		server_stop(c);
		return -ENOTSUP;
	}
	return 0;
}

/* A row's run (arg): redis-benchmark's test (-t), or a command of its
 * own (cmd, words separated by spaces) where the test would measure its
 * set-up too; prep, a test run before it and not measured (what the
 * pops take and the ranges read); depth and requests, so that each run
 * lasts about 0.3 s on a loaded 2-CPU machine. The first BASE_RUNS are
 * the string rows; the rest redis-benchmark's other default tests. */
static const struct {
	const char *test, *cmd, *prep;
	int depth;
	int requests;
} runs[] = {
	{ "set", NULL, NULL, 1, 30000 },   { "get", NULL, NULL, 1, 30000 },
	{ "incr", NULL, NULL, 1, 30000 },  { "mset", NULL, NULL, 1, 20000 },
	{ "set", NULL, NULL, 16, 300000 }, { "get", NULL, NULL, 16, 300000 },
	{ "incr", NULL, NULL, 16, 300000 }, { "mset", NULL, NULL, 16, 100000 },
#define BASE_RUNS 8u
#define TYPE_RUN(t, cmd, prep, n1, n16) { t, cmd, prep, 1, n1 }, { t, cmd, prep, 16, n16 }
	TYPE_RUN("ping_mbulk", NULL, NULL, 30000, 300000),
	TYPE_RUN("lpush", NULL, NULL, 30000, 300000),
	TYPE_RUN("rpush", NULL, NULL, 30000, 300000),
	TYPE_RUN("lpop", NULL, "lpush", 30000, 300000),
	TYPE_RUN("rpop", NULL, "lpush", 30000, 300000),
	TYPE_RUN("sadd", NULL, NULL, 30000, 300000),
	TYPE_RUN("hset", NULL, NULL, 30000, 300000),
	TYPE_RUN("spop", NULL, "sadd", 30000, 300000),
	TYPE_RUN("zadd", NULL, NULL, 30000, 300000),
	TYPE_RUN("zpopmin", NULL, "zadd", 30000, 300000),
	TYPE_RUN("lrange_100", "LRANGE mylist 0 99", "lpush", 20000, 60000),
	TYPE_RUN("lrange_300", "LRANGE mylist 0 299", "lpush", 10000, 25000),
	TYPE_RUN("lrange_500", "LRANGE mylist 0 499", "lpush", 6000, 15000),
	TYPE_RUN("lrange_600", "LRANGE mylist 0 599", "lpush", 5000, 12000),
#undef TYPE_RUN
};

/* A scaling row's requests per iteration: its run's, times its shards,
 * divided by c->divide. */
static int row_requests(const struct kv_ctx *c, intptr_t row)
{
	int n = runs[row].requests * (int)(c->shards ? c->shards : 1) / c->divide;

	return n > 0 ? n : 1;
}

/* PC_BENCH_KV_DIVIDE=N (1 to 1000; default 1): every run's requests
 * divided by N, for a test that checks what the rows report rather than
 * their figures, and must finish on a loaded machine. */
static int requests_divisor(void)
{
	const char *s = getenv("PC_BENCH_KV_DIVIDE");
	long v = s ? strtol(s, NULL, 10) : 1;

	return v >= 1 && v <= 1000 ? (int)v : 1;
}

/* The key redis-benchmark's GET reads, SET as its SET test would.
 * "key:__rand_int__" is that key's literal name, not a placeholder here:
 * redis-benchmark substitutes __rand_int__ only when run with -r, and
 * these rows run it without, so every GET reads this one existing key. */
static int preload_get_key(uint16_t port)
{
	static const char req[] = "SET key:__rand_int__ xxx\r\n";
	int fd = connect_port(port);
	char buf[8];
	ssize_t n;

	if (fd < 0)
		return -EIO;
	n = write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1 ? read(fd, buf, sizeof(buf))
									  : -1;
	close(fd);
	return n >= 3 && !memcmp(buf, "+OK", 3) ? 0 : -EIO;
}

static int insert_keys(uint16_t port, int keys, int klen, int vlen);
static void kv_run(struct pc_bench_state *st);
static void kv_teardown(struct pc_bench_state *st);

/* What GET reads: the one key, or for a row with random keys every key
 * of its KEYSPACE ("key:%012d", as redis-benchmark -r names them). */
static int preload(const struct kv_ctx *c)
{
	return c->random ? insert_keys(c->port, KEYSPACE, 12, 3) : preload_get_key(c->port);
}

/* The shards the server runs: cpus:all rows one per CPU of its set. */
static unsigned server_shards(const struct kv_ctx *c)
{
	if (c->kind == SRV_REDIS)
		return 1;
	return c->all_cpus ? (unsigned)CPU_COUNT(&c->server) : c->shards ? c->shards : 1;
}

static int kv_setup(struct pc_bench_state *st)
{
	struct kv_ctx *c;

	if (!on_path("redis-benchmark") ||
	    (ROW_KIND(st->bench->arg2) == SRV_REDIS && !on_path("redis-server"))) {
		fprintf(stderr, "%s: redis-server and redis-benchmark are needed "
				"(scripts/deps.sh installs them)\n", st->bench->name);
		return -ENOTSUP;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->kind = ROW_KIND(st->bench->arg2);
	c->shards = ROW_SHARDS(st->bench->arg2);
	c->divide = requests_divisor();
	c->random = c->shards || (st->bench->arg2 & ROW_RANDOM);
	c->all_cpus = st->bench->arg2 & ROW_ALL_CPUS;
	if (st->bench->arg2 & (ROW_AOF_ALWAYS | ROW_AOF_EVERYSEC)) {
		/* a fresh directory on a disk: what each sync costs is the row */
		c->appendfsync = st->bench->arg2 & ROW_AOF_ALWAYS ? "always" : "everysec";
		rtb_scratch_path(c->dir, sizeof(c->dir), "kv-aof");
		rtb_remove_tree(c->dir);
		if (mkdir(c->dir, 0755)) {
			fprintf(stderr, "%s: cannot make %s: %s\n", st->bench->name, c->dir,
				strerror(errno));
			free(c);
			return -ENOTSUP;
		}
	}
	pick_cpus(c, c->shards ? c->shards : 1);
	c->server_shards = server_shards(c);
	if (server_start(st, c)) {
		if (c->appendfsync)
			rtb_remove_tree(c->dir);
		free(c);
		return -ENOTSUP;
	}
	st->ctx = c;
	if (st->bench->run == kv_run && !strcmp(runs[st->bench->arg].test, "get") && preload(c)) {
		fprintf(stderr, "%s: the server did not take the keys GET reads\n", st->bench->name);
		kv_teardown(st);
		return -EIO;
	}
	return 0;
}

static void kv_teardown(struct pc_bench_state *st)
{
	struct kv_ctx *c = st->ctx;

	server_stop(c);
	if (c->appendfsync)
		rtb_remove_tree(c->dir);
	free(c);
	st->ctx = NULL;
}

/* Reads redis-benchmark's output until it closes or the deadline passes:
 * 0 with buf holding it, or -ETIMEDOUT. */
static int read_until_eof(int fd, char *buf, size_t size, uint64_t deadline)
{
	size_t n = 0;

	for (;;) {
		uint64_t now = pc_now_ns();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t k;

		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
			return -errno;
		if (!p.revents)
			continue;
		k = read(fd, buf + n, size - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || (n += (size_t)k) == size - 1)
			break;
	}
	buf[n] = '\0';
	return 0;
}

/* redis-benchmark's CSV (header, then one row per test):
 * "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
 * "p95_latency_ms","p99_latency_ms","max_latency_ms". */
struct run_result {
	double rps, p50_ms, p99_ms;
	double server_cpu_ns;   /* the server's CPU time over the run */
	double client_util;     /* redis-benchmark's CPU / (wall x threads) */
};

static int parse_csv(const char *out, struct run_result *r)
{
	const char *row = strstr(out, "\n\"");
	double avg, min, p95;

	if (!row || sscanf(row + 1, "\"%*[^\"]\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\",\"%lf\"",
			   &r->rps, &avg, &min, &r->p50_ms, &p95, &r->p99_ms) != 6 || !(r->rps > 0))
		return -EPROTO;
	return 0;
}

/* 1 when the thread may run on a CPU outside the set arg points to. */
static uint64_t thread_outside(pid_t pid, pid_t tid, const void *arg)
{
	const cpu_set_t *inside = arg;
	cpu_set_t mask, beyond;

	(void)pid;
	if (sched_getaffinity(tid, sizeof(mask), &mask))
		return 0;
	CPU_OR(&beyond, &mask, inside);
	return !CPU_EQUAL(&beyond, inside);
}

static double rusage_ns(const struct rusage *ru)
{
	return ((double)ru->ru_utime.tv_sec + (double)ru->ru_stime.tv_sec) * 1e9 +
	       ((double)ru->ru_utime.tv_usec + (double)ru->ru_stime.tv_usec) * 1e3;
}

/* redis-benchmark's command line for a row: its test (or prep's, when
 * prep), or its own command, with random keys where the row asks and a
 * thread per client CPU on a scaling row. */
struct client_cmd {
	char port[8], conns[8], reqs[16], depth[8], keys[16], threads[12], words[64];
	char *argv[32];
	unsigned threads_used;
};

static void client_cmd(const struct kv_ctx *c, intptr_t row, bool prep, struct client_cmd *m)
{
	char **argv = m->argv, *save;
	int k = 0;

	snprintf(m->port, sizeof(m->port), "%u", c->port);
	snprintf(m->conns, sizeof(m->conns), "%d", KV_CONNS);
	snprintf(m->reqs, sizeof(m->reqs), "%d", row_requests(c, row));
	snprintf(m->depth, sizeof(m->depth), "%d", runs[row].depth);
	snprintf(m->keys, sizeof(m->keys), "%d", KEYSPACE);
	snprintf(m->threads, sizeof(m->threads), "%u", c->client_cpus);
	argv[k++] = "redis-benchmark";
	argv[k++] = "-p", argv[k++] = m->port, argv[k++] = "-c", argv[k++] = m->conns;
	argv[k++] = "-n", argv[k++] = m->reqs, argv[k++] = "-P", argv[k++] = m->depth;
	argv[k++] = "--csv";
	if (c->random)
		argv[k++] = "-r", argv[k++] = m->keys;
	m->threads_used = 1;
	if (c->shards && c->client_cpus > 1) {
		argv[k++] = "--threads", argv[k++] = m->threads;
		m->threads_used = c->client_cpus;
	}
	if (prep || !runs[row].cmd) {
		argv[k++] = "-t";
		argv[k++] = (char *)(prep ? runs[row].prep : runs[row].test);
	} else {
		snprintf(m->words, sizeof(m->words), "%s", runs[row].cmd);
		for (char *w = strtok_r(m->words, " ", &save); w && k < 31;
		     w = strtok_r(NULL, " ", &save))
			argv[k++] = w;
	}
	argv[k] = NULL;
}

/* Runs redis-benchmark as m says, pinned to the client CPUs, the
 * server's CPU time and the client's use of its CPUs measured over it. */
static int client_run(const struct kv_ctx *c, struct client_cmd *m, struct run_result *r)
{
	char out[4096];
	int fds[2], status, rc;
	uint64_t cpu0, t0;
	struct rusage ru;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	cpu0 = task_process_cpu_ns(c->pid);
	t0 = pc_now_ns();
	pid = spawn(m->argv, c->pinned ? &c->client : NULL, fds[1]);
	close(fds[1]);
	rc = pid < 0 ? (int)pid
		     : read_until_eof(fds[0], out, sizeof(out), pc_now_ns() + RUN_LIMIT_S * 1000000000ull);
	close(fds[0]);
	if (pid < 0)
		return rc;
	if (rc)
		kill(pid, SIGKILL);
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		rc = rc ? rc : -ECHILD;
	if (!rc) {
		double wall = (double)pc_elapsed(pc_now_ns(), t0);

		r->server_cpu_ns = (double)pc_elapsed(task_process_cpu_ns(c->pid), cpu0);
		r->client_util = wall > 0 ? rusage_ns(&ru) / (wall * m->threads_used) : 0;
	}
	return rc ? rc : parse_csv(out, r);
}

/* One measured run of a row, after its unmeasured prep run if it has
 * one (the elements its pops take and its ranges read). */
static int bench_once(const struct kv_ctx *c, intptr_t row, struct run_result *r)
{
	struct client_cmd m;
	int rc = 0;

	if (runs[row].prep) {
		struct run_result ignored;

		client_cmd(c, row, true, &m);
		rc = client_run(c, &m, &ignored);
	}
	if (!rc) {
		client_cmd(c, row, false, &m);
		rc = client_run(c, &m, r);
	}
	return rc;
}

static uint64_t tree_bytes_sum;

static int add_file_bytes(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	(void)path;
	(void)f;
	if (type == FTW_F)
		tree_bytes_sum += (uint64_t)sb->st_size;
	return 0;
}

/* The bytes of the files under dir (what a row's append-only files hold:
 * the proof that the server kept them). */
static uint64_t tree_bytes(const char *dir)
{
	tree_bytes_sum = 0;
	nftw(dir, add_file_bytes, 16, FTW_PHYS);
	return tree_bytes_sum;
}

static void kv_run(struct pc_bench_state *st)
{
	const struct kv_ctx *c = st->ctx;
	const intptr_t row = st->bench->arg;
	struct run_result sum = { 0 };
	uint64_t done = 0;
	char why[160];

	for (uint64_t i = 0; i < st->iterations; i++) {
		struct run_result r = { 0 };
		int rc = bench_once(c, row, &r);

		if (rc) {
			snprintf(why, sizeof(why), "redis-benchmark failed: %s", strerror(-rc));
			fprintf(stderr, "%s: %s\n", st->bench->name, why);
			pc_bench_fail(st, why);
			return;
		}
		st->items += (uint64_t)row_requests(c, row);
		st->manual_ns += (uint64_t)((double)row_requests(c, row) * 1e9 / r.rps);
		sum.rps += r.rps;
		sum.p50_ms += r.p50_ms;
		sum.p99_ms += r.p99_ms;
		sum.server_cpu_ns += r.server_cpu_ns;
		sum.client_util += r.client_util;
		done++;
	}
	if (!done)
		return;
	pc_bench_counter(st, "rps", sum.rps / (double)done);
	pc_bench_counter(st, "p50_ms", sum.p50_ms / (double)done);
	pc_bench_counter(st, "p99_ms", sum.p99_ms / (double)done);
	pc_bench_counter(st, "server_cpu_ns_per_req", sum.server_cpu_ns / (double)st->items);
	pc_bench_counter(st, "client_util", sum.client_util / (double)done);
	pc_bench_counter(st, "shards", c->server_shards);
	pc_bench_counter(st, "keyspace", c->random ? KEYSPACE : 0);
	pc_bench_counter(st, "pinned", c->pinned);
	if (c->appendfsync)
		pc_bench_counter(st, "aof_bytes", (double)tree_bytes(c->dir));
	/* what the machine says rather than what was asked: threads of the
	 * server free to leave its CPUs (0 when every one is held there) */
	pc_bench_counter(st, "server_threads_unpinned",
			 c->pinned ? (double)task_each(c->pid, thread_outside, &c->server) : 0);
}

/* ---- memory per key -------------------------------------------------------- */

static uint64_t rss_of(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb * 1024;
}

/* Reads until n replies ("+OK\r\n" each) came. */
static int read_oks(int fd, int n)
{
	char buf[16384];
	int lines = 0;

	while (lines < n) {
		ssize_t k = read(fd, buf, sizeof(buf));

		if (k <= 0)
			return -EIO;
		for (ssize_t i = 0; i < k; i++)
			lines += buf[i] == '\n';
	}
	return 0;
}

/* A request being written: RESP arrays appended to p. */
struct resp_buf {
	char *p;
	size_t len;
};

static void put_array(struct resp_buf *b, int n)
{
	b->len += (size_t)sprintf(b->p + b->len, "*%d\r\n", n);
}

static void put_word(struct resp_buf *b, const char *w)
{
	b->len += (size_t)sprintf(b->p + b->len, "$%zu\r\n%s\r\n", strlen(w), w);
}

static void put_bulk(struct resp_buf *b, const char *fmt, long v)
{
	char tmp[64];
	int n = snprintf(tmp, sizeof(tmp), fmt, v);

	b->len += (size_t)sprintf(b->p + b->len, "$%d\r\n%s\r\n", n, tmp);
}

/* What the memory rows store: cmds commands, each adding elems elements
 * (a key's string counts as one). Names of keys and members are 16
 * bytes, values 16 (strings: 32, as before). */
struct mem_shape {
	const char *suffix;        /* the row's name after "Memory/" */
	int cmds, elems;
	const char *name, *key;    /* a collection's command and key format */
	int args;                  /* arguments per element */
	void (*elem)(struct resp_buf *b, long j); /* NULL: strings */
	int klen, vlen;            /* strings: digits of the names and values */
};

/* SET "key:%0*d" (klen digits) to vlen digits. */
static void cmd_strings(struct resp_buf *b, long i, const struct mem_shape *sh)
{
	b->len += (size_t)sprintf(b->p + b->len,
				  "*3\r\n$3\r\nSET\r\n$%d\r\nkey:%0*ld\r\n$%d\r\n%0*ld\r\n",
				  sh->klen + 4, sh->klen, i, sh->vlen, sh->vlen, i % 1000);
}

/* Command i: its key, then elems elements from i * elems on. */
static void shape_cmd(struct resp_buf *b, long i, const struct mem_shape *sh)
{
	if (!sh->elem) {
		cmd_strings(b, i, sh);
		return;
	}
	put_array(b, 2 + sh->elems * sh->args);
	put_word(b, sh->name);
	put_bulk(b, sh->key, i);
	for (int j = 0; j < sh->elems; j++)
		sh->elem(b, i * sh->elems + j);
}

static void el_value(struct resp_buf *b, long j)
{
	put_bulk(b, "%016ld", j);
}

static void el_member(struct resp_buf *b, long j)
{
	put_bulk(b, "member:%09ld", j);
}

static void el_small_int(struct resp_buf *b, long j)
{
	put_bulk(b, "%ld", j % 4000); /* an intset of 16-bit integers */
}

static void el_field_value(struct resp_buf *b, long j)
{
	put_bulk(b, "field:%010ld", j);
	put_bulk(b, "%016ld", j);
}

static void el_score_member(struct resp_buf *b, long j)
{
	put_bulk(b, "%ld", j);
	put_bulk(b, "member:%09ld", j);
}

#define BIG "bigcoll" /* one key (i not formatted) */
#define SMALL "key:%012ld"
#define ONE MEM_KEYS / 100, 100   /* one collection: 10,000 commands of 100 */
#define MANY MEM_KEYS, 4          /* 1M collections of 4: a command each */

static const struct mem_shape mem_shapes[] = {
	{ "1M", MEM_KEYS, 1, "SET", NULL, 2, NULL, 12, 32 },
	{ "hash/1x1M", ONE, "HSET", BIG, 2, el_field_value, 0, 0 },
	{ "hash/1Mx4", MANY, "HSET", SMALL, 2, el_field_value, 0, 0 },
	{ "list/1x1M", ONE, "RPUSH", BIG, 1, el_value, 0, 0 },
	{ "list/1Mx4", MANY, "RPUSH", SMALL, 1, el_value, 0, 0 },
	{ "set/1x1M", ONE, "SADD", BIG, 1, el_member, 0, 0 },
	{ "set/1Mx4", MANY, "SADD", SMALL, 1, el_member, 0, 0 },
	{ "intset/1Mx4", MANY, "SADD", SMALL, 1, el_small_int, 0, 0 },
	{ "zset/1x1M", ONE, "ZADD", BIG, 2, el_score_member, 0, 0 },
	{ "zset/1Mx4", MANY, "ZADD", SMALL, 2, el_score_member, 0, 0 },
};

/* Sends shape's commands in pipelined batches, reading one reply line
 * each. */
static int insert_shape(uint16_t port, const struct mem_shape *sh)
{
	int batch = sh->elems > 1 && sh->cmds < MEM_BATCH ? 100 : MEM_BATCH;
	char *req = malloc((size_t)batch * (size_t)(64 + sh->klen + sh->vlen + sh->elems * 64));
	int fd = connect_port(port), rc = 0;

	if (!req || fd < 0) {
		free(req);
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	for (long b = 0; b < sh->cmds && !rc; b += batch) {
		struct resp_buf rb = { req, 0 };

		for (long i = b; i < b + batch; i++)
			shape_cmd(&rb, i, sh);
		rc = write(fd, req, rb.len) == (ssize_t)rb.len ? read_oks(fd, batch) : -EIO;
	}
	close(fd);
	free(req);
	return rc;
}

/* keys SETs of "key:%0*d" (klen digits) to vlen digits, in pipelined
 * batches (keys a multiple of MEM_BATCH). */
static int insert_keys(uint16_t port, int keys, int klen, int vlen)
{
	const struct mem_shape sh = { "", keys, 1, "SET", NULL, 2, NULL, klen, vlen };

	return insert_shape(port, &sh);
}

static void mem_run(struct pc_bench_state *st)
{
	struct kv_ctx *c = st->ctx;
	const struct mem_shape *sh = &mem_shapes[st->bench->arg];
	double elems = (double)sh->cmds * sh->elems, per_elem = 0;
	uint64_t done = 0;

	for (uint64_t i = 0; i < st->iterations; i++) {
		if (!c->pid && server_start(st, c)) {
			pc_bench_fail(st, "the server did not start");
			return;
		}
		uint64_t before = rss_of(c->pid), t0 = pc_now_ns();
		int rc = insert_shape(c->port, sh);

		st->manual_ns += pc_elapsed(pc_now_ns(), t0);
		if (rc) {
			server_stop(c);
			pc_bench_fail(st, "the server did not take every element");
			return;
		}
		per_elem += ((double)rss_of(c->pid) - (double)before) / elems;
		st->items += (uint64_t)elems;
		done++;
		server_stop(c); /* each measurement on a fresh server */
	}
	if (done)
		pc_bench_counter(st, sh->elems == 1 ? "bytes_per_key" : "bytes_per_elem",
				 per_elem / (double)done);
}

#define KV_BENCH(var, nm, row, kind)                                                   \
	static const struct pc_bench var = {                                             \
		.name = nm, .flags = PC_BENCH_MANUAL_TIME | PC_BENCH_FULL, .arg = row, \
		.arg2 = kind, .setup = kv_setup, .run = kv_run, .teardown = kv_teardown,     \
	};                                                                               \
	PC_BENCH_REGISTER(var)

KV_BENCH(kv_set1, "KV/SET/P1", 0, SRV_KV)
KV_BENCH(kv_get1, "KV/GET/P1", 1, SRV_KV)
KV_BENCH(kv_incr1, "KV/INCR/P1", 2, SRV_KV)
KV_BENCH(kv_mset1, "KV/MSET10/P1", 3, SRV_KV)
KV_BENCH(kv_set16, "KV/SET/P16", 4, SRV_KV)
KV_BENCH(kv_get16, "KV/GET/P16", 5, SRV_KV)
KV_BENCH(kv_incr16, "KV/INCR/P16", 6, SRV_KV)
KV_BENCH(kv_mset16, "KV/MSET10/P16", 7, SRV_KV)
KV_BENCH(rd_set1, "Peer/redis/SET/P1", 0, SRV_REDIS)
KV_BENCH(rd_get1, "Peer/redis/GET/P1", 1, SRV_REDIS)
KV_BENCH(rd_incr1, "Peer/redis/INCR/P1", 2, SRV_REDIS)
KV_BENCH(rd_mset1, "Peer/redis/MSET10/P1", 3, SRV_REDIS)
KV_BENCH(rd_set16, "Peer/redis/SET/P16", 4, SRV_REDIS)
KV_BENCH(rd_get16, "Peer/redis/GET/P16", 5, SRV_REDIS)
KV_BENCH(rd_incr16, "Peer/redis/INCR/P16", 6, SRV_REDIS)
KV_BENCH(rd_mset16, "Peer/redis/MSET10/P16", 7, SRV_REDIS)

#define MEM_BENCH(var, nm, shape, kind, fl, lbl)                                       \
	static const struct pc_bench var = {                                             \
		.name = nm, .flags = PC_BENCH_MANUAL_TIME | (fl), .arg = shape, .arg2 = kind, \
		.label = lbl, .setup = kv_setup, .run = mem_run, .teardown = kv_teardown,     \
	};                                                                               \
	PC_BENCH_REGISTER(var)

#define MEM_LABEL "bytes_per_key: server RSS growth / 1M keys (16 B names, 32 B values)"
#define MEM_LABEL_COLL "bytes_per_elem: server RSS growth / elements (16 B names, 16 B values)"
MEM_BENCH(kv_mem, "KV/Memory/1M", 0, SRV_KV, 0, MEM_LABEL)
MEM_BENCH(rd_mem, "Peer/redis/Memory/1M", 0, SRV_REDIS, 0, MEM_LABEL)
/* the collections' rows, beside redis-server's (BENCH=full) */
#define MEM_KV(id, shape, path) \
	MEM_BENCH(kv_mem_##id, "KV/Memory/" path, shape, SRV_KV, PC_BENCH_FULL, MEM_LABEL_COLL)
#define MEM_RD(id, shape, path) \
	MEM_BENCH(rd_mem_##id, "Peer/redis/Memory/" path, shape, SRV_REDIS, PC_BENCH_FULL, MEM_LABEL_COLL)
MEM_KV(hash_big, 1, "hash/1x1M")
MEM_RD(hash_big, 1, "hash/1x1M")
MEM_KV(hash_small, 2, "hash/1Mx4")
MEM_RD(hash_small, 2, "hash/1Mx4")
MEM_KV(list_big, 3, "list/1x1M")
MEM_RD(list_big, 3, "list/1x1M")
MEM_KV(list_small, 4, "list/1Mx4")
MEM_RD(list_small, 4, "list/1Mx4")
MEM_KV(set_big, 5, "set/1x1M")
MEM_RD(set_big, 5, "set/1x1M")
MEM_KV(set_small, 6, "set/1Mx4")
MEM_RD(set_small, 6, "set/1Mx4")
MEM_KV(intset_small, 7, "intset/1Mx4")
MEM_RD(intset_small, 7, "intset/1Mx4")
MEM_KV(zset_big, 8, "zset/1x1M")
MEM_RD(zset_big, 8, "zset/1x1M")
MEM_KV(zset_small, 9, "zset/1Mx4")
MEM_RD(zset_small, 9, "zset/1Mx4")

/* ---- random keys, one shard and one per CPU ------------------------------------ */

/* For every test and depth of the rows above, both servers: random keys
 * on one shard (one core against one core), and random keys on the whole
 * machine (kv's default shards against redis-server there). */
/* A run's name in rows: its test upper-cased ("MSET10" for mset). */
static void run_name(unsigned row, char *up, size_t size)
{
	size_t i;

	if (!strcmp(runs[row].test, "mset")) {
		snprintf(up, size, "MSET10");
		return;
	}
	for (i = 0; runs[row].test[i] && i < size - 1; i++)
		up[i] = (char)toupper((unsigned char)runs[row].test[i]);
	up[i] = '\0';
}

/* The string rows in the default suite; the other types' only in the
 * full one (BENCH=full), which measures what the data-types work adds. */
__attribute__((constructor)) static void register_random(void)
{
	static const struct {
		const char *tag;
		intptr_t flags;
		const char *label;
	} configs[] = {
		{ "keys:random", ROW_RANDOM, NULL },
		{ "keys:random/cpus:all", ROW_RANDOM | ROW_ALL_CPUS,
		  "every usable CPU for the server (kv: one shard per CPU), shared with the "
		  "client" },
	};
	static const struct {
		const char *prefix;
		enum server_kind kind;
	} servers[] = { { "KV", SRV_KV }, { "Peer/redis", SRV_REDIS } };

	for (unsigned row = 0; row < sizeof(runs) / sizeof(runs[0]); row++)
		for (unsigned k = 0; k < 2; k++)
			for (unsigned v = 0; v < 2; v++) {
				struct pc_bench *b = calloc(1, sizeof(*b));
				char test[32];

				if (!b)
					continue;
				run_name(row, test, sizeof(test));
				b->name = rtb_name("%s/%s/P%d/%s", servers[v].prefix, test,
						   runs[row].depth, configs[k].tag);
				b->flags = PC_BENCH_MANUAL_TIME |
					   (row >= BASE_RUNS ? PC_BENCH_FULL : 0);
				b->arg = (intptr_t)row;
				b->arg2 = servers[v].kind | configs[k].flags;
				b->label = configs[k].label;
				b->setup = kv_setup;
				b->run = kv_run;
				b->teardown = kv_teardown;
				pc_bench_register(b);
			}
}

/* ---- append-only files ----------------------------------------------------- */

/* SET at depth 1 and 16 over random keys on one shard, both servers with
 * append-only files (a fresh directory per server on PC_BENCH_DIR or
 * /var/tmp) synced always and everysec: what keeping data costs each. */
__attribute__((constructor)) static void register_aof(void)
{
	static const struct {
		const char *tag;
		intptr_t flags;
	} modes[] = { { "always", ROW_AOF_ALWAYS }, { "everysec", ROW_AOF_EVERYSEC } };
	static const unsigned set_runs[] = { 0, 4 }; /* SET at depth 1 and 16 */
	static const struct {
		const char *prefix;
		enum server_kind kind;
	} servers[] = { { "KV", SRV_KV }, { "Peer/redis", SRV_REDIS } };

	for (unsigned m = 0; m < 2; m++)
		for (unsigned r = 0; r < 2; r++)
			for (unsigned v = 0; v < 2; v++) {
				struct pc_bench *b = calloc(1, sizeof(*b));
				unsigned row = set_runs[r];

				if (!b)
					continue;
				b->name = rtb_name("%s/SET/P%d/keys:random/appendfsync:%s",
						   servers[v].prefix, runs[row].depth, modes[m].tag);
				b->flags = PC_BENCH_MANUAL_TIME;
				b->arg = (intptr_t)row;
				b->arg2 = servers[v].kind | ROW_RANDOM | modes[m].flags;
				b->label = "append-only files on a disk (PC_BENCH_DIR or /var/tmp)";
				b->setup = kv_setup;
				b->run = kv_run;
				b->teardown = kv_teardown;
				pc_bench_register(b);
			}
}

/* ---- scaling ---------------------------------------------------------------- */

static bool wanted(unsigned n, unsigned most)
{
	/* Every count up to 8, then powers of two, and the largest. */
	return n <= 8 || !(n & (n - 1)) || n == most;
}

__attribute__((constructor)) static void register_scaling(void)
{
	static const char *const names[] = { "SET", "GET", "INCR", "MSET10" };
	unsigned usable = rtb_usable_cpus(), most = usable > 1 ? usable - 1 : 0;

	if (most > MAX_SCALE_SHARDS)
		most = MAX_SCALE_SHARDS;
	for (unsigned t = 0; t < 4; t++)
		for (unsigned n = 1; n <= most; n++) {
			struct pc_bench *b;

			if (!wanted(n, most) || !(b = calloc(1, sizeof(*b))))
				continue;
			b->name = rtb_name("KV/%s/P16/shards:%u", names[t], n);
			b->flags = PC_BENCH_MANUAL_TIME;
			b->arg = 4 + (intptr_t)t; /* the depth-16 runs */
			b->arg2 = SRV_KV | (intptr_t)n << 8;
			b->setup = kv_setup;
			b->run = kv_run;
			b->teardown = kv_teardown;
			pc_bench_register(b);
		}
}
