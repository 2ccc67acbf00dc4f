/* SPDX-License-Identifier: MIT */
/* Sessions beside plain epoll echo servers, all driven by the same load
 * generator (percore/load.h) on its own core:
 *
 *   SessionEcho/{64,512,4096}          payload bytes/s, 16 connections x 16
 *   Peer/epoll_echo/{64,512,4096}      in flight, framed for all: the peers
 *   Peer/epoll_busy/{64,512,4096}      echo the frames' bytes unparsed, so
 *                                      every row carries the same bytes and
 *                                      the generator does the same work.
 *                                      The session's shard idles adaptively
 *                                      (it spins up to its budget first)
 *   Session/Create                     connect, accept, one round trip,
 *   Peer/epoll_echo/Create             close (a reset): per second
 *   Peer/epoll_busy/Create
 *   SessionEcho/64/metrics:scraped     SessionEcho/64 with the server's metrics
 *                                      endpoint on and a client scraping
 *                                      /metrics every second: what watching
 *                                      a server costs it (a variant pair)
 *   SessionEcho/N/frames:burst/        SessionEcho/N/idle:sleep with the
 *     idle:sleep (N 64, 512)           application taking frames in bursts
 *                                      (on_frames) as percore echo does: a
 *                                      variant pair, and beside epoll_echo
 *   SessionEcho/Latency/64/idle:P      one connection, one 64-byte message in
 *   Peer/epoll_echo/Latency/64         flight: round trip p50 and p99 (us)
 *   Peer/epoll_busy/Latency/64         as counters, the server idling
 *                                      under policy P; the generator spins
 *                                      so the rows differ by the server only
 *   SessionEcho/N/backend:uring        the io_uring backend (untagged rows:
 *   Peer/uring_echo/N                  epoll) and the plain io_uring server
 *   .../conns:64                       (uring_echo.c); each with 64
 *                                      connections too
 *   Session/Create/backend:uring       connection rate on io_uring, beside
 *   Peer/uring_echo/Create             the plain io_uring server's
 *   Session/IdleMemory/10000           (idle_bench.c) a percore echo process
 *                                      holding 10,000 idle sessions
 *   Session/PartialFrame/10000         (idle_bench.c) the same, each session
 *                                      holding half of a 1 KiB frame
 *
 * The sleeping rows (.../idle:sleep beside Peer/epoll_echo and
 * Peer/uring_echo) run in the full suite only (BENCH=full).
 *
 * The two peers are the same server (epoll_echo.c): epoll_echo sleeps in
 * epoll_wait(-1), the counterpart of idle:sleep; epoll_busy polls
 * epoll_wait(0) and never sleeps, the counterpart of idle:spin (and of
 * adaptive while work keeps arriving within its spin budget).
 *
 * With affinity on, the server (one shard, or the peer's thread) runs on
 * one physical core and the generator on another, as the placement picks
 * them; with it off, neither is pinned. Every byte echoed is checked; a
 * row with errors says so in its "errors" counter; a generator that
 * fails fails its repetition. Time is the generator's own (every
 * connection up to the last reply): server and engine start-up are not
 * in the figures. On a small machine the generator's one CPU saturates
 * first, so throughput says as much about it as about the server; every
 * row also records, over the generator's run, server_cpu_ns_per_req (the
 * CPU time of the threads that existed before it started: the server's,
 * and the metrics scraper on the scraped row, divided by the requests)
 * and client_util (the generator's CPU time over its timed part, from
 * its shard threads' CPU clocks read where that part starts and ends,
 * over the part's length: 0-1, start-up and connecting left out). */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <time.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "epoll_echo.h"
#include "task_cpu.h"
#include "uring_echo.h"
#include "percore/bench.h"
#include "percore/load.h"
#include "percore/place.h"
#include "percore/server.h"
#include "percore/topo.h"

#define CONNS 16
#define CONNS_MANY 64
#define DEPTH 16

/* Which server a row measures; latency rows keep it in arg2 (a session's
 * idle policy is >= 0). */
enum target {
	SESSION = 0, PEER_SLEEP = -1, PEER_BUSY = -2, PEER_URING = -3, SESSION_URING = -4,
	SESSION_BURSTS = -5 /* epoll, frames in bursts (on_frames) */
};

/* A client fetching /metrics every second, as Prometheus would. */
struct scraper {
	pthread_t thread;
	_Atomic bool stop;
	uint16_t port;
};

struct nb {
	struct pc_server *srv;
	struct scraper *scraper;      /* metrics rows only */
	struct epoll_echo *peer;
	struct uring_echo *upeer;
	uint16_t port;
	int server_cpu, load_cpu;    /* -1: not pinned */
	char load_place[16];
};

/* Two CPUs on different physical cores, as the placement picks them for
 * two shards; found once (the topology is loaded from hwloc). */
static int pick_cpus(int *a, int *b)
{
	static int cpus[2] = { -2, -2 };
	struct pc_topo *t = NULL;
	struct pc_placement *p = NULL;
	char err[200];

	if (cpus[0] == -2) {
		cpus[0] = cpus[1] = -1;
		if (!pc_topo_load(NULL, &t, err, sizeof(err)) &&
		    !pc_place(t, 2, PC_PLACE_AUTO, NULL, 0, &p, err, sizeof(err))) {
			cpus[0] = p->shards[0].cpu;
			cpus[1] = p->shards[1].cpu;
		}
		if (cpus[0] < 0)
			fprintf(stderr, "net benchmarks: no two cores to pin to: %s\n", err);
		pc_placement_free(p);
		pc_topo_free(t);
	}
	*a = cpus[0];
	*b = cpus[1];
	return cpus[0] >= 0 ? 0 : -ENOTSUP;
}

static struct nb *nb_new(struct pc_bench_state *st)
{
	struct nb *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->server_cpu = n->load_cpu = -1;
	if (st->affinity && pick_cpus(&n->server_cpu, &n->load_cpu)) {
		free(n);
		return NULL;
	}
	if (n->load_cpu >= 0)
		snprintf(n->load_place, sizeof(n->load_place), "%d", n->load_cpu);
	else
		snprintf(n->load_place, sizeof(n->load_place), "off");
	return n;
}

static void echo_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)user;
	pc_session_send_flags(s, f->msg_id, f->flags, f->body, f->len);
}

/* percore echo's handler: a burst answered by its own bytes. */
static size_t echo_frames(struct pc_session *s, const struct pc_frame *f, size_t n, void *user)
{
	(void)user;
	pc_session_send_frames(s, f, n);
	return n;
}

/* One GET /metrics, read to its end; errors only end it early (the row
 * measures the server's echo, not this client). */
static void scrape_once(uint16_t port)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[16384];

	if (fd < 0)
		return;
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)sizeof(req) - 1)
		while (recv(fd, buf, sizeof(buf), 0) > 0)
			;
	close(fd);
}

static void *scraper_main(void *arg)
{
	struct scraper *s = arg;
	struct timespec tick = { .tv_nsec = 10000000 };

	while (!atomic_load(&s->stop)) {
		scrape_once(s->port);
		for (int k = 0; k < 100 && !atomic_load(&s->stop); k++)
			nanosleep(&tick, NULL);
	}
	return NULL;
}

static int scraper_start(struct nb *n)
{
	n->scraper = calloc(1, sizeof(*n->scraper));
	if (!n->scraper)
		return -ENOMEM;
	n->scraper->port = pc_server_metrics_port(n->srv);
	if (pthread_create(&n->scraper->thread, NULL, scraper_main, n->scraper)) {
		free(n->scraper);
		n->scraper = NULL;
		return -EAGAIN;
	}
	return 0;
}

static void scraper_stop(struct nb *n)
{
	if (!n->scraper)
		return;
	atomic_store(&n->scraper->stop, true);
	pthread_join(n->scraper->thread, NULL);
	free(n->scraper);
	n->scraper = NULL;
}

static void target_teardown_srv(struct nb *n)
{
	scraper_stop(n);
	if (n->srv) {
		pc_server_stop(n->srv);
		pc_server_wait(n->srv);
		pc_server_destroy(n->srv);
	}
	if (n->peer)
		epoll_echo_stop(n->peer);
	if (n->upeer)
		uring_echo_stop(n->upeer);
}

static void target_teardown(struct pc_bench_state *st)
{
	struct nb *n = st->ctx;

	target_teardown_srv(n);
	free(n);
}

/* One shard of percore's server, or a plain peer, on the server CPU;
 * metrics: the server's endpoint on and scraped every second. */
static int target_setup_m(struct pc_bench_state *st, enum target t, enum pc_idle idle,
			  bool metrics)
{
	struct nb *n = nb_new(st);
	struct pc_server_cfg c;
	char place[16], err[200];
	int rc;

	if (!n)
		return st->affinity ? -ENOTSUP : -ENOMEM;
	if (t == PEER_URING) {
		rc = uring_echo_start(&n->upeer, &n->port, n->server_cpu);
		if (rc)
			fprintf(stderr, "%s: %s\n", st->bench->name, strerror(-rc));
	} else if (t != SESSION && t != SESSION_URING && t != SESSION_BURSTS) {
		rc = epoll_echo_start(&n->peer, &n->port, n->server_cpu, t == PEER_BUSY);
	} else {
		pc_server_cfg_init(&c);
		snprintf(place, sizeof(place), "%d", n->server_cpu);
		c.host = "127.0.0.1";
		c.engine.shards = 1;
		c.engine.placement = n->server_cpu >= 0 ? place : "off";
		c.engine.idle = idle;
		if (t == SESSION_BURSTS)
			c.on_frames = echo_frames;
		else
			c.on_frame = echo_frame;
		c.engine.backend = t == SESSION_URING ? PC_BACKEND_URING : PC_BACKEND_EPOLL;
		c.metrics = metrics;
		rc = pc_server_start(&c, &n->srv, err, sizeof(err));
		if (rc)
			fprintf(stderr, "%s: %s\n", st->bench->name, err);
		else
			n->port = pc_server_port(n->srv);
		/* A row named for io_uring must not measure the fallback. */
		if (!rc && pc_engine_backend(pc_server_engine(n->srv)) != c.engine.backend) {
			fprintf(stderr, "%s: io_uring unavailable\n", st->bench->name);
			target_teardown_srv(n);
			rc = -ENOTSUP;
		}
		if (!rc && metrics && (rc = scraper_start(n)))
			target_teardown_srv(n);
	}
	if (rc) {
		free(n);
		return rc;
	}
	st->ctx = n;
	return 0;
}

static int target_setup(struct pc_bench_state *st, enum target t, enum pc_idle idle)
{
	return target_setup_m(st, t, idle, false);
}

struct load_job {
	const struct pc_load_cfg *cfg;
	struct pc_load_result *res;
	char err[200];
	int rc;
};

static void *load_thread(void *arg)
{
	struct load_job *j = arg;

	j->rc = pc_load_run(j->cfg, j->res, j->err, sizeof(j->err));
	return NULL;
}

/* The harness runs run() on a thread pinned to one CPU, and an engine may
 * only place its shards inside its starter's mask: start the generator
 * from a thread with the process's whole mask. */
static int load_run_unpinned(const struct pc_load_cfg *cfg, struct pc_load_result *res,
			     char *err, size_t len)
{
	struct load_job j = { .cfg = cfg, .res = res, .rc = -ENOMEM };
	pthread_attr_t attr;
	pthread_t t;
	cpu_set_t all;

	pthread_attr_init(&attr);
	if (!sched_getaffinity(getpid(), sizeof(all), &all))
		pthread_attr_setaffinity_np(&attr, sizeof(all), &all);
	if (pthread_create(&t, &attr, load_thread, &j)) {
		pthread_attr_destroy(&attr);
		memset(res, 0, sizeof(*res));
		snprintf(err, len, "cannot start a thread");
		return -EAGAIN;
	}
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
	snprintf(err, len, "%s", j.err);
	return j.rc;
}

/* How busy the generator was over its timed part: its shards' CPU time
 * over that part's length times the shards, 0-1. */
static double client_util(const struct pc_load_cfg *l, const struct pc_load_result *r)
{
	double shards = l->engine.shards ? l->engine.shards : 1;

	return r->elapsed_ns ? (double)r->cpu_ns / ((double)r->elapsed_ns * shards) : 0;
}

/* Drive the target: iterations messages (or connect cycles) in all. */
static void drive(struct pc_bench_state *st, enum pc_load_mode mode, unsigned conns,
		  unsigned depth, enum pc_idle load_idle)
{
	struct nb *n = st->ctx;
	struct pc_load_cfg l;
	struct pc_load_result r;
	struct task_split cpu;
	double server_ns;
	char err[200];
	int rc;

	pc_load_cfg_init(&l);
	l.port = n->port;
	l.mode = mode;
	l.conns = conns;
	l.depth = depth;
	l.size_min = l.size_max = (uint32_t)st->bench->arg;
	/* Framed for the peer too: it echoes the bytes unparsed. Raw load
	 * there would compare a lighter workload (no headers on the wire, no
	 * frame decoding in the generator) with percore's. */
	l.raw = false;
	l.messages = st->iterations;
	l.engine.placement = n->load_place;
	l.engine.idle = load_idle;
	task_split_begin(&cpu);
	rc = load_run_unpinned(&l, &r, err, sizeof(err));
	server_ns = task_split_end(&cpu);
	if (rc) {
		fprintf(stderr, "%s: %s\n", st->bench->name, err);
		pc_bench_fail(st, err);
	} else {
		st->manual_ns = r.elapsed_ns ? r.elapsed_ns : 1;
		st->items = mode == PC_LOAD_CONNECT ? r.connects : r.messages;
		st->bytes = mode == PC_LOAD_CONNECT ? 0 : r.bytes;
		pc_bench_counter(st, "errors", (double)r.errors);
		if (r.errors)
			fprintf(stderr, "%s: %s\n", st->bench->name, r.first_error);
		if (st->items)
			pc_bench_counter(st, "server_cpu_ns_per_req", server_ns / (double)st->items);
		/* one CPU's worth per generator shard at most */
		pc_bench_counter(st, "client_util", client_util(&l, &r));
		if (depth == 1 && conns == 1) {
			pc_bench_counter(st, "p50_us", (double)pc_hist_percentile(r.latency, 50) / 1e3);
			pc_bench_counter(st, "p99_us", (double)pc_hist_percentile(r.latency, 99) / 1e3);
		}
	}
	pc_load_result_fini(&r);
}

/* ---- throughput ----------------------------------------------------------- */

static int session_setup(struct pc_bench_state *st)
{
	return target_setup(st, SESSION, PC_IDLE_ADAPTIVE);
}

static int scraped_setup(struct pc_bench_state *st)
{
	return target_setup_m(st, SESSION, PC_IDLE_ADAPTIVE, true);
}

/* Our shards sleeping when idle, as the peers that block do. */
static int session_sleep_setup(struct pc_bench_state *st)
{
	return target_setup(st, SESSION, PC_IDLE_SLEEP);
}

static int session_uring_sleep_setup(struct pc_bench_state *st)
{
	return target_setup(st, SESSION_URING, PC_IDLE_SLEEP);
}

static int peer_setup(struct pc_bench_state *st)
{
	return target_setup(st, PEER_SLEEP, PC_IDLE_ADAPTIVE);
}

static int busy_setup(struct pc_bench_state *st)
{
	return target_setup(st, PEER_BUSY, PC_IDLE_ADAPTIVE);
}

/* Sleeping: a polling shard's CPU is its wall time, whatever a frame
 * costs it. */
static int session_bursts_setup(struct pc_bench_state *st)
{
	return target_setup(st, SESSION_BURSTS, PC_IDLE_SLEEP);
}

static int session_uring_setup(struct pc_bench_state *st)
{
	return target_setup(st, SESSION_URING, PC_IDLE_ADAPTIVE);
}

static int uring_peer_setup(struct pc_bench_state *st)
{
	return target_setup(st, PEER_URING, PC_IDLE_ADAPTIVE);
}

static void echo_run(struct pc_bench_state *st)
{
	drive(st, PC_LOAD_ECHO, CONNS, DEPTH, PC_IDLE_ADAPTIVE);
}

static void echo_many_run(struct pc_bench_state *st)
{
	drive(st, PC_LOAD_ECHO, CONNS_MANY, DEPTH, PC_IDLE_ADAPTIVE);
}

#define NET_BENCH_FLAGS(var, title, setup_fn, run_fn, size, more)                \
	static const struct pc_bench var = {                                      \
		.name = title, .arg = size,                                        \
		.flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME |                \
			 PC_BENCH_UNPINNED_FULL | (more),                           \
		.setup = setup_fn, .run = run_fn, .teardown = target_teardown,     \
	};                                                                        \
	PC_BENCH_REGISTER(var)
#define NET_BENCH(var, title, setup_fn, run_fn, size) \
	NET_BENCH_FLAGS(var, title, setup_fn, run_fn, size, 0)
/* The sleeping servers and their peers run in the full suite only: the
 * default suite measures the engine's default idle policy (adaptive)
 * beside the busy-polling peer, and the wake-up's own cost stays in it
 * through the latency rows. */
#define NET_BENCH_SLEEPING(var, title, setup_fn, run_fn, size) \
	NET_BENCH_FLAGS(var, title, setup_fn, run_fn, size, PC_BENCH_FULL)

NET_BENCH(session_64, "SessionEcho/64", session_setup, echo_run, 64)
NET_BENCH(scraped_64, "SessionEcho/64/metrics:scraped", scraped_setup, echo_run, 64)
NET_BENCH(session_512, "SessionEcho/512", session_setup, echo_run, 512)
NET_BENCH(session_4096, "SessionEcho/4096", session_setup, echo_run, 4096)
NET_BENCH_SLEEPING(peer_64, "Peer/epoll_echo/64", peer_setup, echo_run, 64)
NET_BENCH_SLEEPING(peer_512, "Peer/epoll_echo/512", peer_setup, echo_run, 512)
NET_BENCH_SLEEPING(peer_4096, "Peer/epoll_echo/4096", peer_setup, echo_run, 4096)
NET_BENCH(busy_64, "Peer/epoll_busy/64", busy_setup, echo_run, 64)
NET_BENCH(busy_512, "Peer/epoll_busy/512", busy_setup, echo_run, 512)
NET_BENCH(busy_4096, "Peer/epoll_busy/4096", busy_setup, echo_run, 4096)

/* The io_uring backend and the plain io_uring server, and every server
 * again with 64 connections. */
NET_BENCH(suring_64, "SessionEcho/64/backend:uring", session_uring_setup, echo_run, 64)
NET_BENCH(suring_512, "SessionEcho/512/backend:uring", session_uring_setup, echo_run, 512)
NET_BENCH(suring_4096, "SessionEcho/4096/backend:uring", session_uring_setup, echo_run, 4096)
NET_BENCH(s64_64, "SessionEcho/64/conns:64", session_setup, echo_many_run, 64)
NET_BENCH(s64_512, "SessionEcho/512/conns:64", session_setup, echo_many_run, 512)
NET_BENCH(s64_4096, "SessionEcho/4096/conns:64", session_setup, echo_many_run, 4096)
NET_BENCH(suring64_64, "SessionEcho/64/conns:64/backend:uring", session_uring_setup,
	  echo_many_run, 64)
NET_BENCH(suring64_512, "SessionEcho/512/conns:64/backend:uring", session_uring_setup,
	  echo_many_run, 512)
NET_BENCH(suring64_4096, "SessionEcho/4096/conns:64/backend:uring", session_uring_setup,
	  echo_many_run, 4096)
NET_BENCH_SLEEPING(upeer_64, "Peer/uring_echo/64", uring_peer_setup, echo_run, 64)
NET_BENCH_SLEEPING(upeer_512, "Peer/uring_echo/512", uring_peer_setup, echo_run, 512)
NET_BENCH_SLEEPING(upeer_4096, "Peer/uring_echo/4096", uring_peer_setup, echo_run, 4096)
NET_BENCH_SLEEPING(upeer64_64, "Peer/uring_echo/64/conns:64", uring_peer_setup, echo_many_run, 64)
NET_BENCH_SLEEPING(upeer64_512, "Peer/uring_echo/512/conns:64", uring_peer_setup, echo_many_run, 512)
NET_BENCH_SLEEPING(upeer64_4096, "Peer/uring_echo/4096/conns:64", uring_peer_setup, echo_many_run, 4096)
NET_BENCH_SLEEPING(epeer64_64, "Peer/epoll_echo/64/conns:64", peer_setup, echo_many_run, 64)
NET_BENCH_SLEEPING(epeer64_512, "Peer/epoll_echo/512/conns:64", peer_setup, echo_many_run, 512)
NET_BENCH_SLEEPING(epeer64_4096, "Peer/epoll_echo/4096/conns:64", peer_setup, echo_many_run, 4096)
NET_BENCH(bpeer64_64, "Peer/epoll_busy/64/conns:64", busy_setup, echo_many_run, 64)
NET_BENCH(bpeer64_512, "Peer/epoll_busy/512/conns:64", busy_setup, echo_many_run, 512)
NET_BENCH(bpeer64_4096, "Peer/epoll_busy/4096/conns:64", busy_setup, echo_many_run, 4096)

/* The rows above poll before they sleep (adaptive) and meet the
 * busy-polling peer; these sleep at once, as epoll_echo and uring_echo
 * do, and meet them. */
NET_BENCH_SLEEPING(bursts_64, "SessionEcho/64/frames:burst/idle:sleep", session_bursts_setup,
		   echo_run, 64)
NET_BENCH_SLEEPING(bursts_512, "SessionEcho/512/frames:burst/idle:sleep", session_bursts_setup,
		   echo_run, 512)
NET_BENCH_SLEEPING(ssleep_64, "SessionEcho/64/idle:sleep", session_sleep_setup, echo_run, 64)
NET_BENCH_SLEEPING(ssleep_512, "SessionEcho/512/idle:sleep", session_sleep_setup, echo_run, 512)
NET_BENCH_SLEEPING(ssleep_4096, "SessionEcho/4096/idle:sleep", session_sleep_setup, echo_run, 4096)
NET_BENCH_SLEEPING(ssleep64_64, "SessionEcho/64/conns:64/idle:sleep", session_sleep_setup,
	  echo_many_run, 64)
NET_BENCH_SLEEPING(ssleep64_512, "SessionEcho/512/conns:64/idle:sleep", session_sleep_setup,
	  echo_many_run, 512)
NET_BENCH_SLEEPING(ssleep64_4096, "SessionEcho/4096/conns:64/idle:sleep", session_sleep_setup,
	  echo_many_run, 4096)
NET_BENCH_SLEEPING(usleep_64, "SessionEcho/64/backend:uring/idle:sleep", session_uring_sleep_setup,
	  echo_run, 64)
NET_BENCH_SLEEPING(usleep_512, "SessionEcho/512/backend:uring/idle:sleep", session_uring_sleep_setup,
	  echo_run, 512)
NET_BENCH_SLEEPING(usleep_4096, "SessionEcho/4096/backend:uring/idle:sleep", session_uring_sleep_setup,
	  echo_run, 4096)
NET_BENCH_SLEEPING(usleep64_64, "SessionEcho/64/conns:64/backend:uring/idle:sleep",
	  session_uring_sleep_setup, echo_many_run, 64)
NET_BENCH_SLEEPING(usleep64_512, "SessionEcho/512/conns:64/backend:uring/idle:sleep",
	  session_uring_sleep_setup, echo_many_run, 512)
NET_BENCH_SLEEPING(usleep64_4096, "SessionEcho/4096/conns:64/backend:uring/idle:sleep",
	  session_uring_sleep_setup, echo_many_run, 4096)

/* ---- connection rate ------------------------------------------------------ */

static void create_run(struct pc_bench_state *st)
{
	drive(st, PC_LOAD_CONNECT, CONNS, 1, PC_IDLE_ADAPTIVE);
}

NET_BENCH(session_create, "Session/Create", session_setup, create_run, 64)
NET_BENCH_SLEEPING(peer_create, "Peer/epoll_echo/Create", peer_setup, create_run, 64)
NET_BENCH(busy_create, "Peer/epoll_busy/Create", busy_setup, create_run, 64)
NET_BENCH(session_uring_create, "Session/Create/backend:uring", session_uring_setup, create_run, 64)
NET_BENCH_SLEEPING(upeer_create, "Peer/uring_echo/Create", uring_peer_setup, create_run, 64)
NET_BENCH_SLEEPING(session_sleep_create, "Session/Create/idle:sleep", session_sleep_setup, create_run, 64)
NET_BENCH_SLEEPING(session_uring_sleep_create, "Session/Create/backend:uring/idle:sleep",
	  session_uring_sleep_setup, create_run, 64)

/* ---- latency -------------------------------------------------------------- */

static int latency_setup(struct pc_bench_state *st)
{
	intptr_t a = st->bench->arg2;

	return target_setup(st, a < 0 ? (enum target)a : SESSION, a < 0 ? PC_IDLE_SPIN : (enum pc_idle)a);
}

static void latency_run(struct pc_bench_state *st)
{
	drive(st, PC_LOAD_ECHO, 1, 1, PC_IDLE_SPIN);
}

#define LATENCY_BENCH(var, title, idle)                                           \
	static const struct pc_bench var = {                                      \
		.name = title, .arg = 64, .arg2 = idle,                            \
		.flags = PC_BENCH_AFFINITY | PC_BENCH_MANUAL_TIME |                \
			 PC_BENCH_UNPINNED_FULL,                                    \
		.setup = latency_setup, .run = latency_run,                        \
		.teardown = target_teardown,                                       \
	};                                                                        \
	PC_BENCH_REGISTER(var)

LATENCY_BENCH(lat_spin, "SessionEcho/Latency/64/idle:spin", PC_IDLE_SPIN)
LATENCY_BENCH(lat_adaptive, "SessionEcho/Latency/64/idle:adaptive", PC_IDLE_ADAPTIVE)
LATENCY_BENCH(lat_sleep, "SessionEcho/Latency/64/idle:sleep", PC_IDLE_SLEEP)
LATENCY_BENCH(lat_peer, "Peer/epoll_echo/Latency/64", PEER_SLEEP)
LATENCY_BENCH(lat_busy, "Peer/epoll_busy/Latency/64", PEER_BUSY)
