/* SPDX-License-Identifier: MIT */
/* percore net: one HTTP/1.x request of the metrics endpoint, parsed with
 * the Debian-packaged http-parser (libhttp-parser), and its answer. No
 * sockets here: the endpoint thread (metrics_http.c) feeds bytes in, and
 * the fuzz target (tests/net/fuzz_http.c) does the same with anything. */
#ifndef PERCORE_NET_HTTP_H
#define PERCORE_NET_HTTP_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>

#include "percore/metrics.h"

/* The request line and headers together may take this much; past it the
 * answer is 431. */
#define NET_HTTP_MAX_HEAD 8192
#define NET_HTTP_MAX_URL 1024

struct net_http_req {
	http_parser p;
	size_t fed;                   /* bytes given to the parser */
	char url[NET_HTTP_MAX_URL + 1];
	size_t url_len;
	bool url_long;                /* over NET_HTTP_MAX_URL: 414 */
	bool head_done;               /* request line and headers complete */
};

void net_http_req_init(struct net_http_req *r);

/* Feed the bytes of buf past r->fed (buf holds everything received so
 * far, len bytes). Returns 0 while more is needed, or the status code the
 * request gets without looking at its path: 400 malformed, 414 URL too
 * long, 431 head over NET_HTTP_MAX_HEAD, 405 not GET or HEAD; or 200
 * once the head is complete and the path decides (net_http_answer). */
int net_http_feed(struct net_http_req *r, const char *buf, size_t len);

/* What the endpoint serves: the registry and the server's state. */
struct net_http_site {
	struct pc_metrics *m;
	enum pc_metrics_state (*state)(void *arg);
	void *arg;
};

/* The whole response to a request whose feed returned `status`: status
 * line, headers (Connection: close) and body, in a malloc'ed buffer of
 * *len bytes (no body for HEAD). NULL when out of memory. */
char *net_http_answer(const struct net_http_site *site, const struct net_http_req *r,
		      int status, size_t *len);

#endif
