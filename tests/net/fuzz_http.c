/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the metrics endpoint's request path. Any bytes, fed in
 * chunks the input chooses, must give the same status as the same bytes
 * fed at once; the status is one the endpoint knows; the answer is a
 * well-formed HTTP/1.1 response whose Content-Length is its body's (none
 * for HEAD), and nothing reads outside its buffers (ASan).
 *
 * Input: [chunk seed byte][request bytes...]. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "net/http.h"

static struct pc_metrics *metrics;

static enum pc_metrics_state state_of(void *arg)
{
	return (enum pc_metrics_state)((uintptr_t)arg & 3);
}

/* Feed data in chunks of 1 + (seed-driven) bytes, as a socket might; the
 * status once the endpoint would answer (it stops reading then). */
static int feed_chunked(struct net_http_req *r, const char *data, size_t len, uint8_t seed)
{
	size_t have = 0;
	int status = 0;

	while (have < len && !status) {
		size_t step = 1 + (seed = (uint8_t)(seed * 37 + 11)) % 97;

		have = have + step < len ? have + step : len;
		status = net_http_feed(r, data, have);
	}
	return status;
}

static void check_answer(const struct net_http_req *r, int status, uintptr_t st)
{
	struct net_http_site site = { .m = metrics, .state = state_of, .arg = (void *)st };
	size_t len = 0, clen = 0;
	char *out = net_http_answer(&site, r, status, &len);
	int code = 0;

	CHECK(out != NULL);
	CHECK(len == strlen(out));
	CHECK(sscanf(out, "HTTP/1.1 %d ", &code) == 1);
	CHECK(status == 200 ? (code == 200 || code == 404 || code == 503) : code == status);
	const char *cl = strstr(out, "\r\nContent-Length: ");
	const char *body = strstr(out, "\r\n\r\n");
	CHECK(cl && body && cl < body);
	CHECK(sscanf(cl, "\r\nContent-Length: %zu", &clen) == 1);
	if (r->head_done && r->p.method == HTTP_HEAD)
		CHECK(strlen(body + 4) == 0);
	else
		CHECK(strlen(body + 4) == clen);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_http_req a, b;
	int sa, sb;

	if (!metrics) {
		metrics = pc_metrics_create(2, 0);
		CHECK(metrics != NULL);
		pc_metric_add(pc_metrics_counter(metrics, "fuzz_total", "x", NULL, 0), 1, 1);
	}
	if (size < 1)
		return 0;
	const char *req = (const char *)data + 1;
	size_t len = size - 1 > NET_HTTP_MAX_HEAD + 1 ? NET_HTTP_MAX_HEAD + 1 : size - 1;

	net_http_req_init(&a);
	net_http_req_init(&b);
	sa = feed_chunked(&a, req, len, data[0]);
	sb = net_http_feed(&b, req, len);
	CHECK(sa == sb);
	CHECK(sa == 0 || sa == 200 || sa == 400 || sa == 405 || sa == 414 || sa == 431);
	if (sa)
		check_answer(&a, sa, data[0]);
	return 0;
}
