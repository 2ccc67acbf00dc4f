/* SPDX-License-Identifier: MIT */
/* percore net: the metrics endpoint's thread. One thread, not a shard, in
 * a poll() loop over its listener, its connections and an eventfd that
 * stops it. Each connection gets one answer and is closed; a connection
 * over the bound gets 503, one that has not been answered by its deadline
 * 408 (or is cut while its answer is still going out). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/http.h"
#include "net/net.h"
#include "percore/clock.h"
#include "percore/listener.h"

#define HTTP_DEFAULT_CONNS 16
#define HTTP_DEFAULT_TIMEOUT_MS 5000

struct http_conn {
	int fd;                       /* -1: slot free */
	uint64_t deadline_ns;
	char in[NET_HTTP_MAX_HEAD + 1];
	size_t inlen;
	struct net_http_req req;
	char *out;                    /* the answer, once decided */
	size_t outlen, outpos;
};

struct pc_metrics_http {
	struct net_http_site site;
	struct pc_metrics_http_cfg cfg;
	int lfd, stopfd;
	uint16_t port;
	pthread_t thread;
	struct http_conn *conns;      /* cfg.max_conns slots */
	struct pollfd *pfds;          /* 2 + max_conns */
};

void pc_metrics_http_cfg_init(struct pc_metrics_http_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_conns = HTTP_DEFAULT_CONNS;
	cfg->timeout_ms = HTTP_DEFAULT_TIMEOUT_MS;
}

static void conn_close(struct http_conn *c)
{
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
}

/* Decide the answer; from now on the connection only writes. */
static void conn_answer(struct pc_metrics_http *h, struct http_conn *c, int status)
{
	c->out = net_http_answer(&h->site, &c->req, status, &c->outlen);
	c->outpos = 0;
	if (!c->out)
		conn_close(c);
}

static void conn_write(struct http_conn *c)
{
	while (c->outpos < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outpos, c->outlen - c->outpos,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			break;
		c->outpos += (size_t)n;
	}
	/* All written (or the peer is gone): the answer ends the exchange.
	 * Bytes the peer sent past the head are read away first: closing
	 * with them unread would reset the connection, and the peer could
	 * lose the answer. */
	shutdown(c->fd, SHUT_WR);
	while (recv(c->fd, c->in, sizeof(c->in), MSG_DONTWAIT) > 0)
		;
	conn_close(c);
}

static void conn_read(struct pc_metrics_http *h, struct http_conn *c)
{
	ssize_t n = recv(c->fd, c->in + c->inlen, NET_HTTP_MAX_HEAD + 1 - c->inlen, MSG_DONTWAIT);
	int status;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c); /* gone before asking anything whole */
		return;
	}
	c->inlen += (size_t)n;
	status = net_http_feed(&c->req, c->in, c->inlen);
	if (!status && c->inlen > NET_HTTP_MAX_HEAD)
		status = 431;
	if (status) {
		conn_answer(h, c, status);
		if (c->fd >= 0)
			conn_write(c);
	}
}

/* A free slot for fd, or refuse it with 503 when every slot is taken. */
static void accept_one(struct pc_metrics_http *h)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
				   "Connection: close\r\n\r\n";
	int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	for (unsigned i = 0; i < h->cfg.max_conns; i++) {
		struct http_conn *c = &h->conns[i];

		if (c->fd >= 0)
			continue;
		c->fd = fd;
		c->inlen = 0;
		c->deadline_ns = pc_now_ns() + (uint64_t)h->cfg.timeout_ms * 1000000;
		net_http_req_init(&c->req);
		return;
	}
	(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/* Milliseconds until the nearest deadline (-1: none); connections past
 * theirs get 408, or are cut if their answer is already going out. */
static int expire(struct pc_metrics_http *h)
{
	uint64_t now = pc_now_ns(), next = UINT64_MAX;

	for (unsigned i = 0; i < h->cfg.max_conns; i++) {
		struct http_conn *c = &h->conns[i];

		if (c->fd < 0)
			continue;
		if (now >= c->deadline_ns) {
			if (c->out) {
				conn_close(c);
				continue;
			}
			conn_answer(h, c, 408);
			if (c->fd >= 0)
				conn_write(c);
			continue;
		}
		if (c->deadline_ns < next)
			next = c->deadline_ns;
	}
	return next == UINT64_MAX ? -1 : (int)((next - now) / 1000000 + 1);
}

static void *http_main(void *arg)
{
	struct pc_metrics_http *h = arg;
	unsigned n = h->cfg.max_conns;

	for (;;) {
		int timeout = expire(h);

		h->pfds[0] = (struct pollfd){ .fd = h->stopfd, .events = POLLIN };
		h->pfds[1] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
		for (unsigned i = 0; i < n; i++) {
			struct http_conn *c = &h->conns[i];

			h->pfds[2 + i] = (struct pollfd){ .fd = c->fd,
							  .events = c->out ? POLLOUT : POLLIN };
		}
		if (poll(h->pfds, 2 + n, timeout) < 0 && errno != EINTR)
			break;
		if (h->pfds[0].revents)
			break;
		for (unsigned i = 0; i < n; i++) {
			struct http_conn *c = &h->conns[i];

			if (c->fd < 0 || !h->pfds[2 + i].revents)
				continue;
			if (c->out)
				conn_write(c);
			else
				conn_read(h, c);
		}
		if (h->pfds[1].revents & POLLIN)
			accept_one(h);
	}
	return NULL;
}

static void http_free(struct pc_metrics_http *h)
{
	for (unsigned i = 0; h->conns && i < h->cfg.max_conns; i++)
		if (h->conns[i].fd >= 0)
			conn_close(&h->conns[i]);
	if (h->lfd >= 0)
		close(h->lfd);
	if (h->stopfd >= 0)
		close(h->stopfd);
	free(h->conns);
	free(h->pfds);
	free(h);
}

static int http_listen(struct pc_metrics_http *h, const char *host, char *err, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t alen;
	int rc;

	if (pc_sockaddr_parse(host ? host : "127.0.0.1", h->cfg.port, &ss, &alen)) {
		if (err && len)
			snprintf(err, len, "metrics host \"%s\" is not a numeric IPv4 or IPv6 address",
				 host);
		return -EINVAL;
	}
	h->lfd = pc_listen((struct sockaddr *)&ss, alen, 64, 0);
	if (h->lfd < 0) {
		rc = h->lfd;
		if (err && len)
			snprintf(err, len, "metrics endpoint cannot listen on port %u: %s",
				 h->cfg.port, strerror(-rc));
		return rc;
	}
	if ((rc = pc_socket_local(h->lfd, &ss, &alen)))
		return rc;
	h->port = pc_sockaddr_port((struct sockaddr *)&ss);
	return 0;
}

int pc_metrics_http_start(struct pc_metrics *m, const struct pc_metrics_http_cfg *cfg,
			  struct pc_metrics_http **out, char *err, size_t errlen)
{
	struct pc_metrics_http *h = calloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->cfg = *cfg;
	h->cfg.host = NULL;
	if (!h->cfg.max_conns)
		h->cfg.max_conns = HTTP_DEFAULT_CONNS;
	if (!h->cfg.timeout_ms)
		h->cfg.timeout_ms = HTTP_DEFAULT_TIMEOUT_MS;
	h->site = (struct net_http_site){ .m = m, .state = cfg->state, .arg = cfg->state_arg };
	h->lfd = -1;
	h->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	h->conns = calloc(h->cfg.max_conns, sizeof(*h->conns));
	h->pfds = calloc(2 + h->cfg.max_conns, sizeof(*h->pfds));
	rc = h->stopfd < 0 ? -errno : !h->conns || !h->pfds ? -ENOMEM : 0;
	for (unsigned i = 0; h->conns && i < h->cfg.max_conns; i++)
		h->conns[i].fd = -1;
	if (!rc)
		rc = http_listen(h, cfg->host, err, errlen);
	if (!rc)
		rc = -pthread_create(&h->thread, NULL, http_main, h);
	if (rc) {
		http_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

uint16_t pc_metrics_http_port(const struct pc_metrics_http *h)
{
	return h->port;
}

void pc_metrics_http_stop(struct pc_metrics_http *h)
{
	if (!h)
		return;
	(void)!eventfd_write(h->stopfd, 1);
	pthread_join(h->thread, NULL);
	http_free(h);
}
