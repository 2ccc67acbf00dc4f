/* SPDX-License-Identifier: MIT */
/* A load of transactions for a Redis-protocol server, which
 * redis-benchmark cannot send (it repeats one command): each of --conns
 * connections writes MULTI, the --cmd command once per --key (then
 * --value, when given: SET key value), EXEC in
 * one write (as a client library's transaction pipeline does), reads the
 * four or more replies, and writes the next, for --seconds. With
 * --per-tx N each transaction names N keys, connection i the i-th N of
 * the list (wrapping round): keys contended by every connection, or
 * each connection's own. Prints transactions per second; exits 1 when
 * an EXEC answered anything but an array of the commands' replies (an
 * error, a null array).
 *
 * usage: kv_txn_load --port P [--conns 50] [--seconds 3] [--cmd INCR]
 *                    [--value V] [--per-tx N] --key K [--key K...] */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define MAX_KEYS 4096
#define MAX_PER_TX 16
#define BUF 65536

struct conn {
	int fd;
	char req[4096];       /* its transaction, written whole */
	size_t rlen;
	char in[BUF];
	size_t len;
	unsigned replies;     /* top-level replies of this transaction so far */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The length of the reply at p[0..len), 0 when it is not complete. */
static size_t reply_len(const char *p, size_t len)
{
	const char *eol = memchr(p, '\n', len);
	size_t head, total;
	long n;

	if (!eol)
		return 0;
	head = (size_t)(eol - p) + 1;
	n = strtol(p + 1, NULL, 10);
	if (p[0] == '$') {
		total = n < 0 ? head : head + (size_t)n + 2;
		return total <= len ? total : 0;
	}
	if (p[0] != '*' || n <= 0)
		return head;
	total = head;
	for (long i = 0; i < n; i++) {
		size_t e = reply_len(p + total, len - total);

		if (!e)
			return 0;
		total += e;
	}
	return total;
}

static int dial(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		exit(1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void append_bulk(char *req, size_t *len, const char *s)
{
	*len += (size_t)sprintf(req + *len, "$%zu\r\n%s\r\n", strlen(s), s);
}

static void send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0) {
			perror("write");
			exit(1);
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Connection c's transaction: MULTI, cmd on each of its keys (with
 * value after the key, unless NULL), EXEC. */
static void make_tx(struct conn *c, const char *cmd, const char *value, const char *const *keys,
		    unsigned n)
{
	c->rlen = (size_t)sprintf(c->req, "*1\r\n$5\r\nMULTI\r\n");
	for (unsigned k = 0; k < n; k++) {
		c->rlen += (size_t)sprintf(c->req + c->rlen, "*%d\r\n", value ? 3 : 2);
		append_bulk(c->req, &c->rlen, cmd);
		append_bulk(c->req, &c->rlen, keys[k]);
		if (value)
			append_bulk(c->req, &c->rlen, value);
	}
	c->rlen += (size_t)sprintf(c->req + c->rlen, "*1\r\n$4\r\nEXEC\r\n");
}

int main(int argc, char **argv)
{
	static struct conn conns[MAX_CONNS];
	struct pollfd pfd[MAX_CONNS];
	const char *keys[MAX_KEYS], *cmd = "INCR", *value = NULL;
	const char *mine[MAX_PER_TX];
	unsigned nconns = 50, nkeys = 0, per_tx = 0, want;
	double seconds = 3, start, end;
	uint16_t port = 0;
	uint64_t done = 0, bad = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--port"))
			port = (uint16_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--conns"))
			nconns = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--cmd"))
			cmd = argv[i + 1];
		else if (!strcmp(argv[i], "--value"))
			value = argv[i + 1];
		else if (!strcmp(argv[i], "--per-tx"))
			per_tx = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--key") && nkeys < MAX_KEYS)
			keys[nkeys++] = argv[i + 1];
	}
	if (!per_tx)
		per_tx = nkeys;
	if (!port || !nkeys || !nconns || nconns > MAX_CONNS || per_tx > nkeys ||
	    per_tx > MAX_PER_TX || (value && strlen(value) > 256)) {
		fprintf(stderr, "usage: kv_txn_load --port P [--conns 50] [--seconds 3] "
				"[--cmd INCR] [--value V] [--per-tx N] --key K [--key K...]\n");
		return 2;
	}
	want = per_tx + 2;
	for (unsigned i = 0; i < nconns; i++) {
		for (unsigned k = 0; k < per_tx; k++)
			mine[k] = keys[(i * per_tx + k) % nkeys];
		make_tx(&conns[i], cmd, value, mine, per_tx);
		conns[i].fd = dial(port);
		pfd[i] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		send_all(conns[i].fd, conns[i].req, conns[i].rlen);
	}
	start = now_s();
	end = start + seconds;
	while (now_s() < end) {
		if (poll(pfd, nconns, 100) < 0 && errno != EINTR)
			return 1;
		for (unsigned i = 0; i < nconns; i++) {
			struct conn *c = &conns[i];
			ssize_t n;
			size_t off = 0, e;

			if (!(pfd[i].revents & POLLIN))
				continue;
			n = read(c->fd, c->in + c->len, sizeof(c->in) - c->len);
			if (n <= 0) {
				fprintf(stderr, "connection %u closed\n", i);
				return 1;
			}
			c->len += (size_t)n;
			while ((e = reply_len(c->in + off, c->len - off))) {
				if (++c->replies == want) { /* EXEC's: an array of per_tx */
					bad += strtol(c->in + off + 1, NULL, 10) != (long)per_tx ||
					       c->in[off] != '*';
					c->replies = 0;
					done++;
					send_all(c->fd, c->req, c->rlen);
				}
				off += e;
			}
			memmove(c->in, c->in + off, c->len - off);
			c->len -= off;
		}
	}
	printf("%.0f transactions/s (%llu in %.2f s, %u connections, %u keys), %llu bad\n",
	       (double)done / (now_s() - start), (unsigned long long)done, now_s() - start, nconns,
	       nkeys, (unsigned long long)bad);
	return bad ? 1 : 0;
}
