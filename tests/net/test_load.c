/* SPDX-License-Identifier: MIT */
/* The load generator against the server: the byte-exact echo soak (64
 * connections, random sizes from 1 byte to 64 KiB, every byte verified,
 * none lost), raw and connect modes, idle sessions and the server's
 * memory figure, and that the generator does notice corruption, silence
 * and a closed port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net_util.h"
#include "percore/load.h"

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 10) : def;
}

static void load_cfg(struct pc_load_cfg *l, struct pc_server *srv)
{
	pc_load_cfg_init(l);
	l->port = pc_server_port(srv);
	l->engine.placement = "off";
	l->engine.idle = PC_IDLE_SLEEP;
}

/* A server from c, and a load configuration aimed at it. */
static struct pc_server *serve(struct pc_server_cfg *c, struct pc_load_cfg *l)
{
	struct pc_server *srv = TU_SERVE(c);

	load_cfg(l, srv);
	return srv;
}

static void run_ok(const struct pc_load_cfg *l, struct pc_load_result *r)
{
	char err[200];
	int rc = pc_load_run(l, r, err, sizeof(err));

	if (rc)
		fprintf(stderr, "load: %s\n", err);
	assert_int_equal(rc, 0);
	if (r->errors)
		fprintf(stderr, "load errors: %s\n", r->first_error);
}

static void test_soak(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct pc_load_cfg l;
	struct pc_load_result r;

	(void)state;
	tu_cfg(&c, 2);
	srv = serve(&c, &l);
	l.conns = 64;
	l.depth = 4;
	l.size_min = 1;
	l.size_max = 64 << 10;
	l.engine.shards = 2;
	l.engine.oversubscribe = true;
	l.seed = env_u64("PC_SOAK_SEED", 42);
	l.duration_ns = env_u64("PC_SOAK_MS", 2500) * 1000000;
	run_ok(&l, &r);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.lost, 0);
	assert_true(r.messages >= 64); /* every connection got through */
	assert_int_equal(pc_hist_count(r.latency), r.messages);
	/* Every byte the server took in went back out. */
	assert_true(TU_WAIT_STAT(srv, closed, 64));
	struct pc_server_stats st = tu_stats(srv);
	assert_int_equal(st.frames_in, r.messages);
	assert_int_equal(st.bytes_in, st.bytes_out);
	assert_int_equal(st.bytes_in, r.bytes + PC_FRAME_HEADER_LEN * r.messages);
	assert_int_equal(st.buffer_bytes, 0);
	fprintf(stderr, "soak: %llu messages, %.1f MB each way in %.2f s\n",
		(unsigned long long)r.messages, (double)r.bytes / 1e6, (double)r.elapsed_ns / 1e9);
	pc_load_result_fini(&r);
	tu_stop(srv);
}

/* The generator's CPU over its timed part: some, and no more than its one
 * shard could spend in that time (1 ms for the clocks' different reads). */
static void assert_cpu_timed(const struct pc_load_result *r)
{
	assert_true(r->cpu_ns > 0);
	assert_true(r->cpu_ns <= r->elapsed_ns + 1000000);
}

/* A count instead of a time: exactly that many round trips. */
static void test_count_raw(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct pc_load_cfg l;
	struct pc_load_result r;

	(void)state;
	tu_cfg(&c, 1);
	c.raw = true;
	srv = serve(&c, &l);
	l.raw = true;
	l.conns = 5;
	l.depth = 16;
	l.size_min = 100;
	l.size_max = 9000;
	l.messages = 3001;
	run_ok(&l, &r);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.messages, 3001);
	assert_true(r.elapsed_ns > 0);
	assert_cpu_timed(&r);
	assert_true(TU_WAIT_STAT(srv, closed, 5));
	assert_int_equal(tu_stats(srv).bytes_in, r.bytes);
	pc_load_result_fini(&r);
	tu_stop(srv);
}

static void test_connect_mode(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct pc_load_cfg l;
	struct pc_load_result r;

	(void)state;
	tu_cfg(&c, 2);
	srv = serve(&c, &l);
	l.mode = PC_LOAD_CONNECT;
	l.conns = 4;
	l.messages = 400;
	run_ok(&l, &r);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.connects, 400);
	assert_int_equal(r.messages, 400);
	assert_cpu_timed(&r);
	assert_true(TU_WAIT_STAT(srv, closed, 400));
	assert_int_equal(tu_stats(srv).accepted, 400);
	pc_load_result_fini(&r);
	tu_stop(srv);
}

static void test_idle(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct pc_load_cfg l;
	struct pc_load_result r;

	(void)state;
	tu_cfg(&c, 2);
	srv = serve(&c, &l);
	l.mode = PC_LOAD_IDLE;
	l.idle = 500;
	run_ok(&l, &r);
	assert_int_equal(r.errors, 0);
	assert_int_equal(r.idle_open, 500);
	assert_true(r.server_rss_before > 0);
	/* The server's own count: a slab object and an id slot each, no
	 * buffer at all. */
	assert_true(r.acct_per_session > 100 && r.acct_per_session < 1024);
	/* Only the ring holding the statistics request being answered. */
	assert_true(r.server_buffer_bytes_after <= PC_SERVER_RX_BUFFER);
	fprintf(stderr, "idle: %.0f bytes per session (RSS), %.0f accounted\n", r.rss_per_session,
		r.acct_per_session);
	pc_load_result_fini(&r);
	/* A raw server cannot answer statistics frames. */
	tu_stop(srv);
	tu_cfg(&c, 1);
	c.raw = true;
	srv = serve(&c, &l);
	l.mode = PC_LOAD_IDLE;
	l.idle = 3;
	l.drain_ns = 200000000;
	char err[200];
	/* Its echo of the request is not a statistics reply; the wait for
	 * one ends with the socket timeout or a failed parse. */
	assert_int_equal(pc_load_run(&l, &r, err, sizeof(err)), -EPROTO);
	pc_load_result_fini(&r);
	tu_stop(srv);
}

/* The generator must notice a wrong byte. */
static void corrupt_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	static _Thread_local unsigned n;
	uint8_t body[256];

	(void)user;
	memcpy(body, f->body, f->len);
	if (++n % 50 == 0)
		body[f->len / 2] ^= 1;
	pc_session_send_flags(s, f->msg_id, f->flags, body, f->len);
}

/* And silence (a server that never answers). */
static void swallow_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)s;
	(void)f;
	(void)user;
}

static void test_detects_errors(void **state)
{
	struct pc_server_cfg c;
	struct pc_server *srv;
	struct pc_load_cfg l;
	struct pc_load_result r;
	char err[200];

	(void)state;
	tu_cfg(&c, 1);
	c.on_frame = corrupt_frame;
	srv = serve(&c, &l);
	l.conns = 3;
	l.size_min = l.size_max = 200;
	l.messages = 600;
	run_ok(&l, &r);
	assert_true(r.verify_errors >= 1);
	assert_true(r.errors >= r.verify_errors);
	assert_non_null(strstr(r.first_error, "differs"));
	pc_load_result_fini(&r);
	tu_stop(srv);

	tu_cfg(&c, 1);
	c.on_frame = swallow_frame;
	srv = serve(&c, &l);
	l.conns = 2;
	l.depth = 3;
	l.messages = 10;
	l.drain_ns = 300000000;
	run_ok(&l, &r);
	assert_int_equal(r.messages, 0);
	assert_int_equal(r.lost, 6);
	pc_load_result_fini(&r);
	uint16_t port = pc_server_port(srv);
	tu_stop(srv);

	/* Nobody listening any more. */
	l.port = port;
	assert_int_equal(pc_load_run(&l, &r, err, sizeof(err)), -ECONNREFUSED);
	pc_load_result_fini(&r);
	l.messages = 0;
	assert_int_equal(pc_load_run(&l, &r, err, sizeof(err)), -EINVAL);
	pc_load_result_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
		cmocka_unit_test(test_count_raw),
		cmocka_unit_test(test_connect_mode),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_detects_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
