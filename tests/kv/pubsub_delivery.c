/* SPDX-License-Identifier: MIT */
/* Exactly-once, in-order publish/subscribe delivery at full size, for any
 * Redis-protocol server: SUBS subscriber connections, each with channels
 * and patterns that overlap the others' (the plan pubsub_test.py uses),
 * and PUBS publisher connections each publishing MSGS messages "p:i" to
 * channel ch<i % 4>, 200 requests in flight. Every subscriber must get
 * each message once per subscription it matches, each publisher's in
 * publish order, and nothing else; each PUBLISH must count the
 * subscriptions it reached. One epoll thread reads every subscriber, so
 * 4 x 100,000 messages to 100 subscribers take seconds where Python
 * readers took many minutes.
 *
 * usage: kv_pubsub_delivery PORT PUBS MSGS SUBS [SECONDS]
 * Prints one line; exit 0 when every check passed, 1 when one failed
 * (the first failure printed), 2 for bad arguments. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHANNELS   4
#define MAX_SUBS   5        /* subscriptions of one subscriber, at most */
#define MAX_PUBS   16
#define BATCH      200
#define FIELDS     4        /* a pmessage's */
/* Deliveries published and not yet read, at most, before a publisher
 * waits: one reader thread is slower than the server, and a backlog past
 * the subscribers' output limit would close them (a few hundred KB each
 * here, under Redis's default 8 MB soft limit). */
#define LAG_MAX    500000

/* One subscription: an exact channel or a pattern, and the channels
 * (bit c: ch<c>) it matches. */
struct subscription {
	char name[8];
	bool pattern;
	unsigned chans;
	int next[MAX_PUBS];      /* each publisher's next message due */
};

struct subscriber {
	int fd;
	struct subscription s[MAX_SUBS];
	int n;
	uint64_t want, got;
	char *buf;
	size_t len, cap;
};

static int g_pubs, g_msgs, g_subs;
static struct subscriber *g_sub;
static _Atomic int g_failed;
static _Atomic uint64_t g_owed, g_read; /* deliveries published, read */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&g_failed, 1))
		return; /* the first failure is the one printed */
	va_start(ap, fmt);
	fputs("pubsub delivery: FAIL ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("pubsub delivery: connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* One RESP2 array of bulk strings and integers at buf[0..len): its
 * fields (an integer's digits as its text). Returns the bytes it took,
 * 0 when incomplete, -1 when it is not such an array. */
struct fields {
	int n;
	const char *p[FIELDS];
	size_t l[FIELDS];
};

static const char *line_end(const char *p, const char *end)
{
	for (; p + 1 < end; p++)
		if (p[0] == '\r' && p[1] == '\n')
			return p;
	return NULL;
}

static long parse_array(const char *buf, size_t len, struct fields *f)
{
	const char *p = buf, *end = buf + len, *e;
	long n;

	if (!len)
		return 0;
	if (*p != '*')
		return -1;
	if (!(e = line_end(p, end)))
		return 0;
	n = strtol(p + 1, NULL, 10);
	if (n < 1 || n > FIELDS)
		return -1;
	p = e + 2;
	f->n = (int)n;
	for (int i = 0; i < n; i++) {
		if (p >= end || !(e = line_end(p, end)))
			return 0;
		if (*p == ':') {
			f->p[i] = p + 1;
			f->l[i] = (size_t)(e - p - 1);
			p = e + 2;
			continue;
		}
		if (*p != '$')
			return -1;
		long bl = strtol(p + 1, NULL, 10);

		if (bl < 0)
			return -1;
		p = e + 2;
		if (end - p < bl + 2)
			return 0;
		f->p[i] = p;
		f->l[i] = (size_t)bl;
		p += bl + 2;
	}
	return p - buf;
}

static bool field_is(const struct fields *f, int i, const char *s)
{
	return f->l[i] == strlen(s) && !memcmp(f->p[i], s, f->l[i]);
}

/* Subscriber k's channels and patterns, as pubsub_test.py's sub_plan(). */
static void plan(struct subscriber *s, int k)
{
	static const struct { int every; const char *pat; unsigned chans; } pats[] = {
		{ 3, "ch[01]", 0x3 }, { 5, "*", 0xf }, { 7, "ch?", 0xf },
	};

	s->n = 0;
	snprintf(s->s[s->n].name, sizeof(s->s[0].name), "ch%d", k % CHANNELS);
	s->s[s->n++].chans = 1u << (k % CHANNELS);
	if (k % 2 == 0) {
		snprintf(s->s[s->n].name, sizeof(s->s[0].name), "ch%d", (k + 1) % CHANNELS);
		s->s[s->n++].chans = 1u << ((k + 1) % CHANNELS);
	}
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		if (k % pats[i].every)
			continue;
		snprintf(s->s[s->n].name, sizeof(s->s[0].name), "%s", pats[i].pat);
		s->s[s->n].pattern = true;
		s->s[s->n++].chans = pats[i].chans;
	}
}

/* The first message number from i on that a subscription on chans gets,
 * or g_msgs when none. */
static int due_from(unsigned chans, int i)
{
	for (; i < g_msgs; i++)
		if (chans & (1u << (i % CHANNELS)))
			return i;
	return g_msgs;
}

/* Reads until the next complete array: its fields (valid until the next
 * read), or false when the connection failed. Blocking: for the
 * confirmations before the load starts. */
static bool read_one(struct subscriber *s, struct fields *f, size_t *took)
{
	for (;;) {
		long n = parse_array(s->buf, s->len, f);

		if (n > 0) {
			*took = (size_t)n;
			return true;
		}
		if (n < 0 || s->len == s->cap)
			return false;
		ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len);

		if (r <= 0)
			return false;
		s->len += (size_t)r;
	}
}

static void consume(struct subscriber *s, size_t n)
{
	memmove(s->buf, s->buf + n, s->len - n);
	s->len -= n;
}

static void subscribe(struct subscriber *s, int port, int k)
{
	char req[256];
	int at = 0;

	plan(s, k);
	s->fd = dial(port);
	s->cap = 1 << 16;
	s->buf = malloc(s->cap);
	for (int i = 0; i < s->n; i++)
		at += snprintf(req + at, sizeof(req) - (size_t)at, "*2\r\n$%d\r\n%s\r\n$%zu\r\n%s\r\n",
			       s->s[i].pattern ? 10 : 9, s->s[i].pattern ? "PSUBSCRIBE" : "SUBSCRIBE",
			       strlen(s->s[i].name), s->s[i].name);
	if (!s->buf || !write_all(s->fd, req, (size_t)at)) {
		fail("subscriber %d: could not subscribe", k);
		exit(1);
	}
	for (int i = 0; i < s->n; i++) {
		struct fields f;
		size_t took;

		if (!read_one(s, &f, &took) || f.n != 3 ||
		    !field_is(&f, 0, s->s[i].pattern ? "psubscribe" : "subscribe")) {
			fail("subscriber %d: no confirmation of %s", k, s->s[i].name);
			exit(1);
		}
		consume(s, took);
		for (int p = 0; p < g_pubs; p++)
			s->s[i].next[p] = due_from(s->s[i].chans, 0);
		for (int m = 0; m < g_msgs; m++)
			if (s->s[i].chans & (1u << (m % CHANNELS)))
				s->want += (uint64_t)g_pubs;
	}
}

/* A message's body "p:i": publisher p's message i. */
static bool body(const char *b, size_t len, int *p, int *i)
{
	const char *end = b + len;
	int v[2] = { 0, 0 }, n = 0;

	for (; b < end && n < 2; b++) {
		if (*b == ':' && n == 0) {
			n = 1;
			continue;
		}
		if (*b < '0' || *b > '9' || v[n] > 100000000)
			return false;
		v[n] = v[n] * 10 + (*b - '0');
	}
	*p = v[0];
	*i = v[1];
	return n == 1 && b == end && *p < g_pubs && *i < g_msgs;
}

/* A message to subscriber k: the one due for its subscription and
 * publisher, or the failure. */
static void delivered(struct subscriber *s, int k, const struct fields *f)
{
	bool pm = f->n == 4 && field_is(f, 0, "pmessage");
	struct subscription *sub = NULL;
	int p, i;

	if (!pm && !(f->n == 3 && field_is(f, 0, "message"))) {
		fail("subscriber %d: %.*s where a message was due", k, (int)f->l[0], f->p[0]);
		return;
	}
	for (int j = 0; j < s->n; j++)
		if (s->s[j].pattern == pm && f->l[1] == strlen(s->s[j].name) &&
		    !memcmp(f->p[1], s->s[j].name, f->l[1]))
			sub = &s->s[j];
	if (!sub || !body(f->p[pm ? 3 : 2], f->l[pm ? 3 : 2], &p, &i)) {
		fail("subscriber %d: a message for %.*s it never subscribed to", k, (int)f->l[1],
		     f->p[1]);
		return;
	}
	if (i != sub->next[p]) {
		fail("subscriber %d, %s: message %d of publisher %d where %d was due", k, sub->name,
		     i, p, sub->next[p]);
		return;
	}
	sub->next[p] = due_from(sub->chans, i + 1);
	s->got++;
	atomic_fetch_add_explicit(&g_read, 1, memory_order_relaxed);
}

/* Takes every complete message from the subscriber's buffer. */
static bool drain(struct subscriber *s, int k)
{
	struct fields f;
	long n;
	size_t at = 0;

	while ((n = parse_array(s->buf + at, s->len - at, &f)) > 0 && !g_failed) {
		if (s->got == s->want) {
			fail("subscriber %d: more messages than its subscriptions match", k);
			return false;
		}
		delivered(s, k, &f);
		at += (size_t)n;
	}
	if (n < 0) {
		fail("subscriber %d: a reply that is no array of bulk strings", k);
		return false;
	}
	consume(s, at);
	return !g_failed;
}

/* How many subscriptions a message to ch<c> reaches. */
static long receivers(int c)
{
	long n = 0;

	for (int k = 0; k < g_subs; k++)
		for (int j = 0; j < g_sub[k].n; j++)
			n += (g_sub[k].s[j].chans >> c) & 1;
	return n;
}

struct publisher {
	pthread_t t;
	int port, p;
};

static void *publish(void *arg)
{
	struct publisher *pb = arg;
	int fd = dial(pb->port);
	long reach[CHANNELS];
	char *req = malloc(BATCH * 64), in[4096];
	size_t held = 0;

	for (int c = 0; c < CHANNELS; c++)
		reach[c] = receivers(c);
	for (int start = 0; req && start < g_msgs && !g_failed; start += BATCH) {
		int end = start + BATCH < g_msgs ? start + BATCH : g_msgs, at = 0;

		while (!g_failed && atomic_load(&g_owed) - atomic_load(&g_read) > LAG_MAX)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		for (int i = start; i < end; i++) {
			atomic_fetch_add(&g_owed, (uint64_t)reach[i % CHANNELS]);
			char body[32];
			int bl = snprintf(body, sizeof(body), "%d:%d", pb->p, i);

			at += snprintf(req + at, 64, "*3\r\n$7\r\nPUBLISH\r\n$3\r\nch%d\r\n$%d\r\n%s\r\n",
				       i % CHANNELS, bl, body);
		}
		if (!write_all(fd, req, (size_t)at)) {
			fail("publisher %d: write failed", pb->p);
			break;
		}
		for (int i = start; i < end && !g_failed;) {
			char *e = memchr(in, '\n', held);

			if (!e) {
				ssize_t r = read(fd, in + held, sizeof(in) - held);

				if (r <= 0) {
					fail("publisher %d: the connection closed", pb->p);
					break;
				}
				held += (size_t)r;
				continue;
			}
			if (in[0] != ':' || strtol(in + 1, NULL, 10) != reach[i % CHANNELS])
				fail("publisher %d message %d: PUBLISH said %.*s, %ld subscriptions match",
				     pb->p, i, (int)(e - in - 1), in, reach[i % CHANNELS]);
			held -= (size_t)(e + 1 - in);
			memmove(in, e + 1, held);
			i++;
		}
	}
	free(req);
	close(fd);
	return NULL;
}

/* Reads every subscriber until each has all it should or the deadline
 * passed; then briefly more, for anything extra. */
static void read_all(double deadline)
{
	int ep = epoll_create1(0), left = 0;
	struct epoll_event ev[64];
	double quiet_until = 0;

	for (int k = 0; k < g_subs; k++) {
		struct epoll_event e = { .events = EPOLLIN, .data.u32 = (uint32_t)k };

		fcntl(g_sub[k].fd, F_SETFL, O_NONBLOCK);
		epoll_ctl(ep, EPOLL_CTL_ADD, g_sub[k].fd, &e);
		left += g_sub[k].got < g_sub[k].want;
	}
	while (!g_failed) {
		double now = now_s();

		if (!left && !quiet_until)
			quiet_until = now + 0.3;
		if (quiet_until && now >= quiet_until)
			break;
		if (now >= deadline) {
			for (int k = 0; k < g_subs; k++)
				if (g_sub[k].got < g_sub[k].want)
					fail("subscriber %d: %llu of %llu messages by the deadline", k,
					     (unsigned long long)g_sub[k].got,
					     (unsigned long long)g_sub[k].want);
			break;
		}
		int n = epoll_wait(ep, ev, 64, 50);

		for (int e = 0; e < n && !g_failed; e++) {
			int k = (int)ev[e].data.u32;
			struct subscriber *s = &g_sub[k];
			bool was_short = s->got < s->want;
			ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len);

			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				fail("subscriber %d: the connection closed after %llu messages", k,
				     (unsigned long long)s->got);
				break;
			}
			s->len += (size_t)r;
			if (drain(s, k) && was_short && s->got == s->want)
				left--;
		}
	}
	close(ep);
}

int main(int argc, char **argv)
{
	int port = argc > 4 ? atoi(argv[1]) : 0;
	double seconds = argc > 5 ? atof(argv[5]) : 300;
	struct publisher pubs[MAX_PUBS];
	uint64_t want = 0;

	if (argc < 5 || port <= 0 || (g_pubs = atoi(argv[2])) < 1 || g_pubs > MAX_PUBS ||
	    (g_msgs = atoi(argv[3])) < 1 || (g_subs = atoi(argv[4])) < 1 || seconds <= 0) {
		fprintf(stderr, "usage: kv_pubsub_delivery PORT PUBS MSGS SUBS [SECONDS]\n"
				"  PUBS 1-%d publishers of MSGS messages each, SUBS subscribers\n",
			MAX_PUBS);
		return 2;
	}
	g_sub = calloc((size_t)g_subs, sizeof(*g_sub));
	if (!g_sub)
		return 1;
	for (int k = 0; k < g_subs; k++) {
		subscribe(&g_sub[k], port, k);
		want += g_sub[k].want;
	}
	double t0 = now_s();

	for (int p = 0; p < g_pubs; p++) {
		pubs[p] = (struct publisher){ .port = port, .p = p };
		pthread_create(&pubs[p].t, NULL, publish, &pubs[p]);
	}
	read_all(t0 + seconds);
	for (int p = 0; p < g_pubs; p++)
		pthread_join(pubs[p].t, NULL);
	if (g_failed)
		return 1;
	printf("pubsub delivery: %llu messages from %d publishers to %d subscribers, each once "
	       "and in order, in %.1f s\n", (unsigned long long)want, g_pubs, g_subs, now_s() - t0);
	for (int k = 0; k < g_subs; k++) {
		close(g_sub[k].fd);
		free(g_sub[k].buf);
	}
	free(g_sub);
	return 0;
}
