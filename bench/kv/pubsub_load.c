/* SPDX-License-Identifier: MIT */
/* A publish/subscribe load for any Redis-protocol server (redis-benchmark
 * cannot subscribe): `subs` connections SUBSCRIBE to one channel, then
 * `pubs` connections each PUBLISH `msgs` messages of `size` bytes to it,
 * `depth` requests in flight per connection. Each message carries the
 * time it was sent; the subscribers, read by one epoll thread, take the
 * delivery latency of every 16th message. Prints one line:
 *
 *   publishes_per_s=... deliveries_per_s=... p50_us=... p99_us=... seconds=...
 *
 * With RATE (publishes per second, all publishers together; 0 or absent:
 * as fast as replies allow) the publishers are paced: message k of a
 * publisher is due at start + k * PUBS / RATE and carries that time, not
 * the time it left, so a message held back by a full window (DEPTH
 * unanswered) or a late wake-up counts its wait as latency. Latency then
 * compares servers at the same offered load, below what either carries,
 * where unpaced it measures the queue that builds in front of whatever
 * is slowest (this tool's reader, for a server faster than it).
 *
 * usage: kv_pubsub_load PORT SUBS PUBS MSGS DEPTH SIZE [RATE]
 * Exit 1 when a message is lost or the run passes 120 s. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHANNEL    "bench"
#define SAMPLE     16
#define LIMIT_NS   (120ull * 1000000000ull)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int dial(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		exit(2);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0) {
			perror("write");
			exit(2);
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Reads until `want` bytes came; returns them in buf (want <= cap). */
static void recv_exact(int fd, char *buf, size_t want)
{
	size_t got = 0;

	while (got < want) {
		ssize_t r = read(fd, buf + got, want - got);

		if (r <= 0) {
			perror("read");
			exit(2);
		}
		got += (size_t)r;
	}
}

struct run {
	int port, subs, pubs, msgs, depth, size;
	double rate;             /* publishes per second in all; 0: unpaced */
	size_t frame;            /* one delivered message's bytes */
	size_t stamp_at;         /* where its time stamp starts */
	uint64_t *lat;           /* sampled latencies, ns */
	size_t nlat, caplat;
	uint64_t delivered;
};

/* A publisher's requests: PUBLISH of a fixed size, the first 16 bytes of
 * the message a time stamp in hex. */
struct pub {
	int fd;
	size_t req;              /* one request's bytes */
	int hl;                  /* where its message starts */
	char *batch;             /* depth requests, stamps to fill */
};

static void pub_open(struct run *r, struct pub *p)
{
	char head[64];

	p->fd = dial(r->port);
	p->hl = snprintf(head, sizeof(head), "*3\r\n$7\r\nPUBLISH\r\n$%zu\r\n%s\r\n$%d\r\n",
			 strlen(CHANNEL), CHANNEL, r->size);
	p->req = (size_t)p->hl + (size_t)r->size + 2;
	p->batch = malloc(p->req * (size_t)r->depth);
	for (int i = 0; i < r->depth; i++) {
		char *q = p->batch + p->req * (size_t)i;

		memcpy(q, head, (size_t)p->hl);
		memset(q + p->hl, 'x', (size_t)r->size);
		memcpy(q + p->hl + r->size, "\r\n", 2);
	}
}

static void pub_stamp(struct pub *p, int i, uint64_t t)
{
	char s[17];

	snprintf(s, sizeof(s), "%016llx", (unsigned long long)t);
	memcpy(p->batch + p->req * (size_t)i + p->hl, s, 16);
}

/* Reads replies (":<count>\r\n" each): all of n, or with nowait only
 * those already there. Returns how many. */
static int pub_replies(struct pub *p, int n, bool nowait)
{
	char buf[4096];
	int got = 0;

	while (got < n) {
		/* a reply is 4-12 bytes: never read past the n asked for */
		size_t cap = (size_t)(n - got) * 4 < sizeof(buf) ? (size_t)(n - got) * 4 : sizeof(buf);
		ssize_t k = recv(p->fd, buf, cap, nowait ? MSG_DONTWAIT : 0);

		if (k < 0 && nowait && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (k <= 0) {
			perror("read");
			exit(2);
		}
		for (ssize_t i = 0; i < k; i++)
			got += buf[i] == '\n';
	}
	return got;
}

/* As fast as replies allow: depth requests, then their replies. */
static void publish_unpaced(struct run *r, struct pub *p)
{
	for (int sent = 0; sent < r->msgs;) {
		int n = r->msgs - sent < r->depth ? r->msgs - sent : r->depth;

		for (int i = 0; i < n; i++)
			pub_stamp(p, i, now_ns());
		send_all(p->fd, p->batch, p->req * (size_t)n);
		pub_replies(p, n, false);
		sent += n;
	}
}

/* Paced: each message when due (stamped with when it was due), while
 * fewer than depth are unanswered. */
static void publish_paced(struct run *r, struct pub *p, uint64_t start)
{
	double gap = (double)r->pubs * 1e9 / r->rate;
	int sent = 0, inflight = 0;

	while (sent < r->msgs || inflight) {
		uint64_t due = start + (uint64_t)((double)sent * gap), now = now_ns();

		if (sent < r->msgs && inflight < r->depth && now >= due) {
			pub_stamp(p, 0, due);
			send_all(p->fd, p->batch, p->req);
			sent++;
			inflight++;
			continue;
		}
		inflight -= pub_replies(p, inflight, true);
		if (sent == r->msgs || inflight == r->depth) {
			/* nothing to send until a reply comes */
			struct pollfd pf = { .fd = p->fd, .events = POLLIN };

			if (inflight)
				poll(&pf, 1, -1);
		} else if (now < due) {
			struct timespec ts = { .tv_sec = (time_t)(due / 1000000000ull),
					       .tv_nsec = (long)(due % 1000000000ull) };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
	}
}

static void *publisher(void *arg)
{
	struct run *r = arg;
	struct pub p;

	pub_open(r, &p);
	if (r->rate > 0)
		publish_paced(r, &p, now_ns());
	else
		publish_unpaced(r, &p);
	free(p.batch);
	close(p.fd);
	return NULL;
}

struct sub {
	int fd;
	char *buf;
	size_t len;
};

static void take_frames(struct run *r, struct sub *s)
{
	size_t off = 0;

	while (s->len - off >= r->frame) {
		if (r->delivered % SAMPLE == 0 && r->nlat < r->caplat) {
			char t[17];

			memcpy(t, s->buf + off + r->stamp_at, 16);
			t[16] = '\0';
			r->lat[r->nlat++] = now_ns() - strtoull(t, NULL, 16);
		}
		r->delivered++;
		off += r->frame;
	}
	memmove(s->buf, s->buf + off, s->len - off);
	s->len -= off;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct run r = { 0 };
	struct sub *subs;
	pthread_t *pt;
	uint64_t want, t0;
	int ep;
	char sub_req[64], confirm[64];

	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: %s PORT SUBS PUBS MSGS DEPTH SIZE [RATE]\n", argv[0]);
		return 2;
	}
	r.port = atoi(argv[1]);
	r.subs = atoi(argv[2]);
	r.pubs = atoi(argv[3]);
	r.msgs = atoi(argv[4]);
	r.depth = atoi(argv[5]);
	r.size = atoi(argv[6]);
	r.rate = argc == 8 ? atof(argv[7]) : 0;
	if (r.rate < 0 || r.subs < 1 || r.pubs < 1 || r.msgs < 1 || r.depth < 1 || r.size < 16)
		return 2;
	r.frame = (size_t)snprintf(NULL, 0, "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%d\r\n",
				   strlen(CHANNEL), CHANNEL, r.size);
	r.stamp_at = r.frame;
	r.frame += (size_t)r.size + 2;
	want = (uint64_t)r.subs * (uint64_t)r.pubs * (uint64_t)r.msgs;
	r.caplat = want / SAMPLE + 1;
	r.lat = malloc(r.caplat * sizeof(*r.lat));
	subs = calloc((size_t)r.subs, sizeof(*subs));
	pt = calloc((size_t)r.pubs, sizeof(*pt));
	ep = epoll_create1(0);
	int sl = snprintf(sub_req, sizeof(sub_req), "*2\r\n$9\r\nSUBSCRIBE\r\n$%zu\r\n%s\r\n",
			  strlen(CHANNEL), CHANNEL);
	size_t cl = (size_t)snprintf(confirm, sizeof(confirm), "*3\r\n$9\r\nsubscribe\r\n$%zu\r\n%s\r\n:1\r\n",
				     strlen(CHANNEL), CHANNEL);
	for (int i = 0; i < r.subs; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &subs[i] };
		char got[64];

		subs[i].fd = dial(r.port);
		subs[i].buf = malloc(1 << 20);
		send_all(subs[i].fd, sub_req, (size_t)sl);
		recv_exact(subs[i].fd, got, cl);
		if (memcmp(got, confirm, cl)) {
			fprintf(stderr, "unexpected SUBSCRIBE reply\n");
			return 2;
		}
		epoll_ctl(ep, EPOLL_CTL_ADD, subs[i].fd, &ev);
	}
	t0 = now_ns();
	for (int i = 0; i < r.pubs; i++)
		pthread_create(&pt[i], NULL, publisher, &r);
	while (r.delivered < want && now_ns() - t0 < LIMIT_NS) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, 1000);

		for (int i = 0; i < n; i++) {
			struct sub *s = evs[i].data.ptr;
			ssize_t got = read(s->fd, s->buf + s->len, (1 << 20) - s->len);

			if (got <= 0) {
				fprintf(stderr, "subscriber closed\n");
				return 1;
			}
			s->len += (size_t)got;
			take_frames(&r, s);
		}
	}
	uint64_t ns = now_ns() - t0;

	for (int i = 0; i < r.pubs; i++)
		pthread_join(pt[i], NULL);
	qsort(r.lat, r.nlat, sizeof(*r.lat), cmp_u64);
	printf("publishes_per_s=%.0f deliveries_per_s=%.0f p50_us=%.1f p99_us=%.1f seconds=%.3f\n",
	       (double)r.pubs * r.msgs / ((double)ns / 1e9), (double)r.delivered / ((double)ns / 1e9),
	       r.nlat ? (double)r.lat[r.nlat / 2] / 1e3 : 0.0,
	       r.nlat ? (double)r.lat[r.nlat * 99 / 100] / 1e3 : 0.0, (double)ns / 1e9);
	for (int i = 0; i < r.subs; i++) {
		close(subs[i].fd);
		free(subs[i].buf);
	}
	close(ep);
	free(subs);
	free(pt);
	free(r.lat);
	return r.delivered == want ? 0 : 1;
}
