/* SPDX-License-Identifier: MIT */
/* percore net: parsing one request of the metrics endpoint and writing its
 * answer. http-parser does the HTTP grammar; this file decides what a
 * request gets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/http.h"

static int on_url(http_parser *p, const char *at, size_t len)
{
	struct net_http_req *r = p->data;

	if (r->url_len + len > NET_HTTP_MAX_URL) {
		r->url_long = true;
		return 0;
	}
	memcpy(r->url + r->url_len, at, len);
	r->url_len += len;
	r->url[r->url_len] = '\0';
	return 0;
}

/* Stop at the end of the head: a GET has no body we want, and whatever
 * follows (a pipelined request) is not read. */
static int on_headers_complete(http_parser *p)
{
	struct net_http_req *r = p->data;

	r->head_done = true;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings settings = {
	.on_url = on_url,
	.on_headers_complete = on_headers_complete,
};

void net_http_req_init(struct net_http_req *r)
{
	memset(r, 0, sizeof(*r));
	http_parser_init(&r->p, HTTP_REQUEST);
	r->p.data = r;
}

int net_http_feed(struct net_http_req *r, const char *buf, size_t len)
{
	size_t n;

	if (len > r->fed && !r->head_done) {
		n = http_parser_execute(&r->p, &settings, buf + r->fed, len - r->fed);
		r->fed += n;
		if (HTTP_PARSER_ERRNO(&r->p) != HPE_OK && HTTP_PARSER_ERRNO(&r->p) != HPE_PAUSED)
			return 400;
	}
	if (!r->head_done)
		return r->fed > NET_HTTP_MAX_HEAD ? 431 : 0;
	if (r->fed > NET_HTTP_MAX_HEAD)
		return 431;
	if (r->url_long)
		return 414;
	if (r->p.method != HTTP_GET && r->p.method != HTTP_HEAD)
		return 405;
	return 200;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

/* The path without its query string equals want. */
static bool path_is(const struct net_http_req *r, const char *want)
{
	size_t n = strcspn(r->url, "?");

	return n == strlen(want) && !memcmp(r->url, want, n);
}

/* The exposition in body; its status. */
static int metrics_body(struct pc_metrics *m, FILE *body)
{
	return pc_metrics_write(m, body) ? 500 : 200;
}

static const char *state_body(enum pc_metrics_state st)
{
	static const char *const names[] = { "starting\n", "ready\n", "draining\n", "stopped\n" };

	return (unsigned)st < PC_ARRAY_LEN(names) ? names[st] : "unknown\n";
}

/* Status and body for a request that parsed (status 200 from feed). */
static int route(const struct net_http_site *site, const struct net_http_req *r, FILE *body,
		 const char **type)
{
	enum pc_metrics_state st = site->state ? site->state(site->arg) : PC_METRICS_READY;

	if (path_is(r, "/metrics")) {
		*type = "text/plain; version=0.0.4; charset=utf-8";
		return metrics_body(site->m, body);
	}
	if (path_is(r, "/health")) {
		fputs(st == PC_METRICS_STOPPED ? "stopped\n" : "ok\n", body);
		return st == PC_METRICS_STOPPED ? 503 : 200;
	}
	if (path_is(r, "/ready")) {
		fputs(state_body(st), body);
		return st == PC_METRICS_READY ? 200 : 503;
	}
	fputs("not found: try /metrics, /health or /ready\n", body);
	return 404;
}

char *net_http_answer(const struct net_http_site *site, const struct net_http_req *r, int status,
		      size_t *len)
{
	const char *type = "text/plain; charset=utf-8";
	char *text = NULL, *out = NULL;
	size_t tlen = 0;
	FILE *body = open_memstream(&text, &tlen);
	bool head = r && r->head_done && r->p.method == HTTP_HEAD;
	int n;

	if (!body)
		return NULL;
	if (status == 200)
		status = route(site, r, body, &type);
	else
		fprintf(body, "%d %s\n", status, reason(status));
	if (fclose(body)) {
		free(text);
		return NULL;
	}
	n = asprintf(&out,
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "%sConnection: close\r\n\r\n%s",
		     status, reason(status), type, tlen,
		     status == 405 ? "Allow: GET, HEAD\r\n" : "", head ? "" : text);
	free(text);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return out;
}
