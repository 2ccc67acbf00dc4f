/* SPDX-License-Identifier: MIT */
/* The metrics endpoint over real loopback sockets: each path, each error
 * (400, 404, 405, 408, 414, 431, 503 over the connection bound), HEAD,
 * /health and /ready through every state, and a server started with
 * cfg.metrics whose exposition holds exactly the traffic sent. */
#include <errno.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "metrics_util.h"
#include "net/http.h"
#include "net_util.h"
#include "percore/reply.h"
#include "testmain.h"

static _Atomic int cur_state = PC_METRICS_READY;

static enum pc_metrics_state get_state(void *arg)
{
	(void)arg;
	return (enum pc_metrics_state)atomic_load(&cur_state);
}

/* Send req (len bytes), read the answer until the server closes (every
 * answer closes); the status code, or -1. resp gets the text. */
static int exchange(uint16_t port, const char *req, size_t len, char *resp, size_t size)
{
	int fd = tu_connect(port), status = -1;
	size_t got = 0;

	if (fd < 0)
		return -1;
	if (len && tu_send_all(fd, req, len)) {
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, TU_WAIT_MS) <= 0)
			break;
		n = recv(fd, resp + got, size - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == size - 1)
			break;
	}
	resp[got] = '\0';
	close(fd);
	sscanf(resp, "HTTP/1.1 %d", &status);
	return status;
}

static int get(uint16_t port, const char *req, char *resp, size_t size)
{
	return exchange(port, req, strlen(req), resp, size);
}

static char resp[1 << 16];

struct site {
	struct pc_metrics *m;
	struct pc_metrics_http *h;
	uint16_t port;
};

static void site_start(struct site *s, unsigned max_conns, uint32_t timeout_ms)
{
	struct pc_metrics_http_cfg cfg;
	char err[160];

	s->m = pc_metrics_create(2, 0);
	assert_non_null(s->m);
	pc_metrics_http_cfg_init(&cfg);
	cfg.max_conns = max_conns;
	cfg.timeout_ms = timeout_ms;
	cfg.state = get_state;
	assert_int_equal(pc_metrics_http_start(s->m, &cfg, &s->h, err, sizeof(err)), 0);
	s->port = pc_metrics_http_port(s->h);
	assert_int_not_equal(s->port, 0);
	atomic_store(&cur_state, PC_METRICS_READY);
}

static void site_stop(struct site *s)
{
	pc_metrics_http_stop(s->h);
	pc_metrics_destroy(s->m);
}

static void test_paths(void **state)
{
	struct site s;

	(void)state;
	site_start(&s, 0, 0);
	pc_metric_add(pc_metrics_counter(s.m, "hits_total", "x", NULL, 0), 1, 3);
	assert_int_equal(get(s.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", resp, sizeof(resp)),
			 200);
	assert_non_null(strstr(resp, "Content-Type: text/plain; version=0.0.4"));
	assert_non_null(strstr(resp, "Connection: close\r\n"));
	char *body = strstr(resp, "\r\n\r\n");
	assert_non_null(body);
	assert_true(mu_value(body + 4, "percore_hits_total{shard=\"1\"}") == 3);
	/* Content-Length is the body's length. */
	size_t clen = 0;
	assert_int_equal(sscanf(strstr(resp, "Content-Length:"), "Content-Length: %zu", &clen), 1);
	assert_int_equal(clen, strlen(body + 4));
	assert_int_equal(get(s.port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n", resp, sizeof(resp)), 200);
	assert_int_equal(get(s.port, "HEAD /metrics HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 200);
	assert_null(strstr(resp, "percore_"));
	assert_int_equal(get(s.port, "GET /health HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 200);
	assert_int_equal(get(s.port, "GET /nope HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 404);
	assert_int_equal(get(s.port, "GET /metricsx HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 404);
	assert_int_equal(get(s.port, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", resp,
			     sizeof(resp)), 405);
	assert_non_null(strstr(resp, "Allow: GET, HEAD\r\n"));
	assert_int_equal(get(s.port, "DELETE /ready HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 405);
	site_stop(&s);
}

static void test_bad_requests(void **state)
{
	static char big[NET_HTTP_MAX_HEAD + 1];
	char url[2100];
	struct site s;

	(void)state;
	site_start(&s, 0, 0);
	assert_int_equal(get(s.port, "HELLO\r\n\r\n", resp, sizeof(resp)), 400);
	assert_int_equal(get(s.port, "GET /metrics HTTP/9.x\r\n\r\n", resp, sizeof(resp)), 400);
	assert_int_equal(get(s.port, "GET /metrics HTTP/1.1\r\nBad Header\r\n\r\n", resp,
			     sizeof(resp)), 400);
	/* A head one byte over the limit, never finished: 431 as soon as the
	 * limit is passed (all of it read, so the close resets nothing). */
	int n = snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nX-Pad: ");
	memset(big + n, 'a', sizeof(big) - (size_t)n);
	assert_int_equal(exchange(s.port, big, sizeof(big), resp, sizeof(resp)), 431);
	/* A URL over 1 KiB. */
	n = snprintf(url, sizeof(url), "GET /");
	memset(url + n, 'u', 1500);
	snprintf(url + n + 1500, sizeof(url) - (size_t)n - 1500, " HTTP/1.1\r\n\r\n");
	assert_int_equal(get(s.port, url, resp, sizeof(resp)), 414);
	/* Nothing whole before the peer leaves: no answer, endpoint fine. */
	int fd = tu_connect(s.port);
	assert_true(fd >= 0);
	assert_int_equal(tu_send_all(fd, "GET /met", 8), 0);
	close(fd);
	assert_int_equal(get(s.port, "GET /health HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 200);
	site_stop(&s);
}

static void test_timeout_and_bound(void **state)
{
	struct site s;
	int idle[2];

	(void)state;
	site_start(&s, 2, 300 * TU_SLOW);
	/* A request that never finishes gets 408 at its deadline. */
	uint64_t t0 = pc_now_ns();
	assert_int_equal(get(s.port, "GET /metrics HTTP/1.1\r\n", resp, sizeof(resp)), 408);
	assert_true(pc_elapsed(pc_now_ns(), t0) >= 250000000ull * TU_SLOW);
	/* Two connections take both slots (accepted in order); a third is
	 * refused with 503 at once. */
	idle[0] = tu_connect(s.port);
	idle[1] = tu_connect(s.port);
	assert_int_equal(get(s.port, "GET /health HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 503);
	close(idle[0]);
	close(idle[1]);
	/* Slots come back once their peers leave (or time out). */
	int status = 0;
	for (int k = 0; k < 50 && status != 200; k++) {
		status = get(s.port, "GET /health HTTP/1.1\r\n\r\n", resp, sizeof(resp));
		if (status != 200)
			tu_sleep_ms(20);
	}
	assert_int_equal(status, 200);
	site_stop(&s);
}

static void test_states(void **state)
{
	static const struct {
		enum pc_metrics_state st;
		int health, ready;
		const char *body;
	} want[] = {
		{ PC_METRICS_STARTING, 200, 503, "starting" },
		{ PC_METRICS_READY, 200, 200, "ready" },
		{ PC_METRICS_DRAINING, 200, 503, "draining" },
		{ PC_METRICS_STOPPED, 503, 503, "stopped" },
	};
	struct site s;

	(void)state;
	site_start(&s, 0, 0);
	for (size_t i = 0; i < PC_ARRAY_LEN(want); i++) {
		atomic_store(&cur_state, want[i].st);
		assert_int_equal(get(s.port, "GET /health HTTP/1.1\r\n\r\n", resp, sizeof(resp)),
				 want[i].health);
		assert_int_equal(get(s.port, "GET /ready HTTP/1.1\r\n\r\n", resp, sizeof(resp)),
				 want[i].ready);
		assert_non_null(strstr(resp, want[i].body));
	}
	site_stop(&s);
}

static void test_start_errors(void **state)
{
	struct pc_metrics *m = pc_metrics_create(1, 0);
	struct pc_metrics_http_cfg cfg;
	struct pc_metrics_http *h, *h2;
	char err[160];

	(void)state;
	pc_metrics_http_cfg_init(&cfg);
	cfg.host = "metrics.example";
	assert_int_equal(pc_metrics_http_start(m, &cfg, &h, err, sizeof(err)), -EINVAL);
	assert_null(h);
	assert_non_null(strstr(err, "metrics.example"));
	cfg.host = "::1";
	if (pc_metrics_http_start(m, &cfg, &h, err, sizeof(err)) == 0) /* no IPv6: fine */
		pc_metrics_http_stop(h);
	cfg.host = NULL;
	assert_int_equal(pc_metrics_http_start(m, &cfg, &h, err, sizeof(err)), 0);
	cfg.port = pc_metrics_http_port(h);
	assert_int_equal(pc_metrics_http_start(m, &cfg, &h2, err, sizeof(err)), -EADDRINUSE);
	assert_non_null(strstr(err, "cannot listen"));
	pc_metrics_http_stop(h);
	pc_metrics_http_stop(NULL);
	pc_metrics_destroy(m);
}

/* A server with cfg.metrics: its exposition holds what was sent. */
static void test_server_metrics(void **state)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	char name[96];
	const int frames = 40;

	(void)state;
	tu_cfg(&cfg, 2);
	cfg.metrics = true;
	srv = tu_start(&cfg);
	uint16_t port = pc_server_metrics_port(srv);
	assert_int_not_equal(port, 0);
	assert_non_null(pc_server_metrics(srv));
	assert_int_equal(get(port, "GET /ready HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 200);
	int fd = tu_connect(pc_server_port(srv));
	assert_true(fd >= 0);
	for (int i = 0; i < frames; i++) {
		struct pc_frame f;
		uint8_t *body = NULL;

		assert_int_equal(tu_send_frame(fd, 7, 0, "abcd", 4), 0);
		assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
		free(body);
	}
	assert_int_equal(get(port, "GET /metrics HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 200);
	const char *t = strstr(resp, "\r\n\r\n") + 4;
	double accepted = 0, in = 0, lat = 0, bytes = 0;
	for (unsigned i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "percore_sessions_accepted_total{shard=\"%u\"}", i);
		accepted += mu_value(t, name);
		snprintf(name, sizeof(name), "percore_frames_received_total{shard=\"%u\"}", i);
		in += mu_value(t, name);
		snprintf(name, sizeof(name), "percore_request_duration_seconds_count{shard=\"%u\"}", i);
		lat += mu_value(t, name);
		snprintf(name, sizeof(name), "percore_received_bytes_total{shard=\"%u\"}", i);
		bytes += mu_value(t, name);
	}
	assert_true(accepted == 1);
	assert_true(in == frames);
	assert_true(lat == frames);
	assert_true(bytes == frames * (PC_FRAME_HEADER_LEN + 4));
	assert_true(mu_value(t, "percore_reactor_turns_total{shard=\"0\"}") > 0);
	assert_true(mu_value(t, "percore_sessions_closed_total{shard=\"0\",reason=\"peer\"}") >= 0);
	close(fd);
	assert_int_equal(pc_server_shutdown(srv, 5000), 0);
	assert_int_equal(get(port, "GET /ready HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 503);
	pc_server_wait(srv);
	pc_server_destroy(srv);
}

/* Replies written at once (pc_session_send) and in request order
 * (pc_reply_reserve, pc_reply_fill), some after the frame was left
 * unread once and offered again: each frame is counted once each way. */
enum { KIND_SEND = 1, KIND_SEQ = 2, KIND_UNREAD = 3 };
static bool unread_done[PC_REPLY_MAX_PENDING];

static void mixed_replies(struct pc_session *s, const struct pc_frame *f, void *user)
{
	uint32_t ticket, n;

	(void)user;
	memcpy(&n, f->body, sizeof(n));
	if (f->msg_id == KIND_UNREAD && !unread_done[n]) {
		unread_done[n] = true;
		assert_int_equal(pc_session_unread_frame(s), 0);
		pc_session_resume_read(s); /* offered again from a task */
		return;
	}
	if (f->msg_id == KIND_SEND) {
		assert_int_equal(pc_session_send(s, f->msg_id, f->body, f->len), 0);
		return;
	}
	assert_int_equal(pc_reply_reserve(s, &ticket), 0);
	assert_int_equal(pc_reply_fill(s, ticket, f->msg_id, 0, f->body, f->len), 0);
}

static double series_sum(const char *text, const char *metric, unsigned shards)
{
	char name[96];
	double sum = 0;

	for (unsigned i = 0; i < shards; i++) {
		snprintf(name, sizeof(name), "%s{shard=\"%u\"}", metric, i);
		sum += mu_value(text, name);
	}
	return sum;
}

static void test_frame_counters(void **state)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	const uint32_t each = 50;

	(void)state;
	tu_cfg(&cfg, 2);
	cfg.metrics = true;
	cfg.on_frame = mixed_replies;
	srv = TU_SERVE(&cfg);
	int fd = TU_CLIENT(srv);
	for (uint32_t n = 0; n < 3 * each; n++)
		assert_int_equal(tu_send_frame(fd, KIND_SEND + n % 3, 0, &n, sizeof(n)), 0);
	for (uint32_t n = 0; n < 3 * each; n++) {
		struct pc_frame f;
		uint8_t *body = NULL;
		uint32_t got;

		assert_int_equal(tu_recv_frame(fd, &f, &body), 0);
		memcpy(&got, body, sizeof(got));
		free(body);
		assert_int_equal(got, n);
		assert_int_equal(f.msg_id, KIND_SEND + n % 3);
	}
	uint16_t port = pc_server_metrics_port(srv);
	assert_int_equal(get(port, "GET /metrics HTTP/1.1\r\n\r\n", resp, sizeof(resp)), 200);
	const char *t = strstr(resp, "\r\n\r\n") + 4;
	assert_true(series_sum(t, "percore_frames_received_total", 2) == 3 * each);
	assert_true(series_sum(t, "percore_frames_sent_total", 2) == 3 * each);
	close(fd);
	tu_stop(srv);
}

/* A registry made before the start: what the application counted before
 * pc_server_start() is on /metrics, with the server's own families. */
static void test_registry_before_start(void **state)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	char err[160];
	struct pc_metrics *m = pc_metrics_create(2, 0);

	(void)state;
	assert_non_null(m);
	struct pc_metric *early = pc_metrics_counter(m, "app_early_total", "Counted before the start.",
						     err, sizeof(err));
	assert_non_null(early);
	pc_metric_add(early, 0, 5);
	pc_metric_add(early, 1, 2);
	tu_cfg(&cfg, 2);
	cfg.metrics = true;
	cfg.metrics_registry = m;
	srv = TU_SERVE(&cfg);
	assert_ptr_equal(pc_server_metrics(srv), m);
	pc_metric_add(early, 1, 1);
	assert_int_equal(get(pc_server_metrics_port(srv), "GET /metrics HTTP/1.1\r\n\r\n", resp,
			     sizeof(resp)), 200);
	const char *t = strstr(resp, "\r\n\r\n") + 4;
	assert_true(mu_value(t, "percore_app_early_total{shard=\"0\"}") == 5);
	assert_true(mu_value(t, "percore_app_early_total{shard=\"1\"}") == 3);
	assert_true(mu_lines(t, "percore_frames_received_total{") == 2);
	tu_stop(srv);
	pc_metrics_destroy(m); /* the application's, not the server's */

	/* Fewer shards than the server runs: refused, and still ours. */
	m = pc_metrics_create(1, 0);
	assert_non_null(m);
	cfg.metrics_registry = m;
	assert_int_equal(pc_server_start(&cfg, &srv, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "metrics_registry"));
	pc_metrics_destroy(m);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_timeout_and_bound),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_start_errors),
		cmocka_unit_test(test_server_metrics),
		cmocka_unit_test(test_frame_counters),
		cmocka_unit_test(test_registry_before_start),
	};

	return pc_test_main(tests, argc, argv);
}
