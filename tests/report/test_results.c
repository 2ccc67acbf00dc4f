/* SPDX-License-Identifier: MIT */
/* Loading results files, pairing rows with their peers, and rendering: the
 * parts of percore report below the command line. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "bench_decide.h"
#include "compare.h"
#include "doc.h"
#include "report.h"
#include "results.h"

#define EPS 1e-9

/* A results file with this text; the caller unlinks it. */
static char *tmp_json(const char *text)
{
	char *path = strdup("/tmp/pc_test_results_XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static struct pc_results *load_text(const char *text, unsigned flags, char *err, size_t len)
{
	char *path = tmp_json(text);
	struct pc_results *r = pc_results_load(path, flags, err, len);

	unlink(path);
	free(path);
	return r;
}

#define ROW(name, t, unit) \
	"{\"name\":\"" name "\",\"run_type\":\"iteration\",\"real_time\":" #t \
	",\"cpu_time\":" #t ",\"time_unit\":\"" unit "\",\"items_per_second\":" \
	"1e6,\"threads\":2}"

static void rows_group_by_benchmark(void **state)
{
	char err[256];
	struct pc_results *r = load_text(
		"{\"benchmarks\":[" ROW("A/1", 2, "ms") "," ROW("B/1", 5, "ns") ","
		ROW("A/1", 4, "ms") "," ROW("A/1", 3, "ms") ","
		"{\"name\":\"A/1_cv\",\"run_type\":\"aggregate\",\"aggregate_name\":\"cv\","
		"\"real_time\":0.25,\"time_unit\":\"ms\"}]}", 0, err, sizeof(err));
	const struct pc_rbench *a;

	(void)state;
	assert_non_null(r);
	assert_int_equal(r->n, 2);
	a = pc_results_find(r, "A/1");
	assert_non_null(a);
	assert_int_equal(a->nsamples, 3);
	assert_int_equal(a->threads, 2);
	/* ms scaled to ns; the median of 2, 4, 3 ms */
	assert_float_equal(a->st.real_ns, 3e6, EPS);
	/* time per item from items/s, not per iteration */
	assert_float_equal(a->st.tpi_ns, 1e3, EPS);
	/* the cv aggregate is a fraction whatever the time unit */
	assert_float_equal(a->agg_cv, 0.25, EPS);
	assert_float_equal(a->st.cv, pc_results_find(r, "A/1")->st.stddev_ns / 3e6, EPS);
	assert_null(pc_results_find(r, "A/1_cv"));
	pc_results_free(r);
}

static void counters_and_failed_rows(void **state)
{
	char err[256];
	struct pc_results *r = load_text(
		"{\"benchmarks\":["
		"{\"name\":\"L\",\"real_time\":10,\"p50_us\":3,\"iterations\":7},"
		"{\"name\":\"L\",\"real_time\":12,\"p50_us\":5},"
		"{\"name\":\"L\",\"real_time\":11},"
		"{\"name\":\"L\",\"real_time\":99,\"error_occurred\":true,\"p50_us\":100},"
		"{\"name\":\"L\",\"real_time\":0}]}",
		0, err, sizeof(err));
	const struct pc_rbench *b;

	(void)state;
	assert_non_null(r);
	b = pc_results_find(r, "L");
	assert_int_equal(b->nsamples, 3); /* the failed rows bring nothing */
	/* and are counted: the error row and the time of 0 a failed helper left */
	assert_int_equal(b->nfailed, 2);
	assert_int_equal(b->ncounters, 1); /* iterations is not a counter */
	assert_string_equal(b->c[0].name, "p50_us");
	assert_true(isnan(b->c[0].v[2]));
	assert_float_equal(pc_rcounter_median(b, &b->c[0]), 4, EPS);
	/* no items/s: time per item is the time per iteration */
	assert_float_equal(b->st.tpi_ns, 11, EPS);
	pc_results_free(r);
}

static void aggregates_alone_are_enough(void **state)
{
	char err[256];
	struct pc_results *r = load_text(
		"{\"benchmarks\":["
		"{\"name\":\"G_median\",\"run_type\":\"aggregate\",\"aggregate_name\":\"median\","
		"\"real_time\":2,\"time_unit\":\"us\",\"items_per_second\":4e5},"
		"{\"name\":\"G_cv\",\"run_type\":\"aggregate\",\"aggregate_name\":\"cv\","
		"\"real_time\":0.08}]}", 0, err, sizeof(err));
	const struct pc_rbench *g;

	(void)state;
	assert_non_null(r);
	g = pc_results_find(r, "G"); /* run_name derived from the name */
	assert_non_null(g);
	assert_int_equal(g->st.n, 0);
	assert_float_equal(g->st.real_ns, 2000, EPS);
	assert_float_equal(g->st.tpi_ns, 2500, EPS);
	assert_float_equal(g->st.cv, 0.08, EPS);
	pc_results_free(r);
}

static void expect_error(const char *text, const char *needle)
{
	char err[256] = "";

	assert_null(load_text(text, 0, err, sizeof(err)));
	if (!strstr(err, needle))
		fail_msg("error '%s' does not say '%s'", err, needle);
}

static void bad_files_are_refused_with_a_reason(void **state)
{
	char err[256] = "";

	(void)state;
	assert_null(pc_results_load("/nonexistent/r.json", 0, err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/r.json"));
	expect_error("{\"benchmarks\": [\n{\"name\": }", ":2: malformed JSON");
	expect_error("[1, 2]", "no \"benchmarks\" array");
	expect_error("{\"context\": {}}", "no \"benchmarks\" array");
	expect_error("{\"benchmarks\": [42]}", "benchmarks[0] is not an object with a name");
	expect_error("{\"benchmarks\": [{\"real_time\": 1}]}", "not an object with a name");
	expect_error("{\"benchmarks\": [{\"name\": \"X\", \"real_time\": \"fast\"}]}",
		     "benchmarks[0] (X): real_time is not a number");
}

static void pm_qos_rows_are_tagged_and_duplicates_skipped(void **state)
{
	char err[256];
	char *main_path = tmp_json("{\"benchmarks\":[" ROW("N/affinity:on", 5, "ns") "]}");
	char *qos_path = tmp_json("{\"percore\":{\"options\":{\"pm_qos\":true}},"
				  "\"benchmarks\":[" ROW("N/affinity:on", 4, "ns") "]}");
	char *dup_path = tmp_json("{\"benchmarks\":[" ROW("N/affinity:on", 9, "ns") ","
				  ROW("M", 1, "ns") "]}");
	/* asked for, not held: measured without it, so not labelled */
	char *failed_path = tmp_json("{\"percore\":{\"options\":{\"pm_qos\":true},"
				     "\"pm_qos\":{\"requested\":true,\"held\":false}},"
				     "\"benchmarks\":[" ROW("F", 4, "ns") "]}");
	struct pc_results *r = pc_results_load(main_path, PC_RESULTS_TAG_PMQOS, err, sizeof(err));

	(void)state;
	assert_non_null(r);
	assert_int_equal(pc_results_append(r, qos_path, PC_RESULTS_TAG_PMQOS, err, sizeof(err)), 0);
	assert_int_equal(pc_results_append(r, dup_path, PC_RESULTS_TAG_PMQOS, err, sizeof(err)), 0);
	assert_int_equal(r->n, 3);
	assert_float_equal(pc_results_find(r, "N/affinity:on")->st.real_ns, 5, EPS);
	assert_float_equal(pc_results_find(r, "N/affinity:on/pm_qos:on")->st.real_ns, 4, EPS);
	assert_int_equal(pc_results_find(r, "M")->source, 2);
	assert_int_equal(pc_results_append(r, failed_path, PC_RESULTS_TAG_PMQOS, err, sizeof(err)), 0);
	assert_non_null(pc_results_find(r, "F"));
	assert_null(pc_results_find(r, "F/pm_qos:on"));
	/* a bad file leaves the set as it was */
	assert_int_equal(pc_results_append(r, "/nonexistent.json", 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(r->n, 4);
	unlink(main_path);
	unlink(qos_path);
	unlink(dup_path);
	unlink(failed_path);
	free(failed_path);
	free(main_path);
	free(qos_path);
	free(dup_path);
	pc_results_free(r);
}

/* ---- pairing ---------------------------------------------------------- */

static const char *const pair_names[] = {
	"SlabAlloc/64", "Peer/glibc/64", "Peer/jemalloc/64", "Peer/glibc/256",
	"SpscQueue/Concurrent/affinity:on", "SpscQueue/Concurrent/affinity:off",
	"Peer/ck_ring/Concurrent/affinity:on", "Peer/ck_ring/Concurrent/affinity:off",
	"SessionEcho/64", "Peer/epoll_echo/64", "CrossCore/Throughput/affinity:on",
	"Foo/Bar", "Peer/memcpy/4096", "Arch/PerCore/cores:1/affinity:on",
	"Noise/ArraySum/affinity:on", "Counter/Striped/threads:2", "Counter/Atomic/threads:2",
	"RingBuffer/Linearize/4096/mirrored", "RingBuffer/Linearize/4096/plain",
	"RingBuffer/WriteRead/4096/mirrored",
	/* tagged on one side only: paired all the same */
	"SessionEcho/512/affinity:on", "Peer/epoll_echo/512",
	"CrossCore/RTT/idle:spin", "CrossCore/OneWay/idle:spin", "Peer/core2core/RTT/affinity:on",
	"Peer/core2core/RTT/affinity:off", "Peer/spsc64/Concurrent/affinity:on",
	/* spin meets spin, sleep meets sleep; batched rows meet batched peers */
	"SessionEcho/Latency/64/idle:spin", "SessionEcho/Latency/64/idle:sleep",
	"SessionEcho/Latency/64", "Peer/epoll_busy/Latency/64", "Peer/epoll_echo/Latency/64",
	"SessionEcho/4096/idle:adaptive", "Peer/epoll_busy/4096", "Peer/epoll_echo/4096",
	"SpscQueue/Concurrent/batch:32/affinity:on", "FalseSharing/Padded",
	"FalseSharing/SameLine", "RingBuffer/WriteRead/4096/plain",
	/* the Redis-protocol server: a depth meets only its own depth */
	"KV/SET/P1", "KV/SET/P16", "KV/GET/P16", "KV/Memory/1M", "KV/INCR/P1/affinity:on",
	"Peer/redis/SET/P1", "Peer/redis/SET/P16", "Peer/redis/GET/P1", "Peer/redis/Memory/1M",
	"Peer/redis/INCR/P1",
	/* echo servers meet a peer of the same idle behaviour: untagged rows
	 * poll before they sleep (adaptive) and meet the busy-polling one */
	"Peer/epoll_busy/64", "Peer/epoll_busy/512", "SessionEcho/64/idle:sleep",
	"SessionEcho/64/backend:uring", "SessionEcho/64/backend:uring/idle:sleep",
	"Peer/uring_echo/64", "SessionEcho/64/conns:64/idle:sleep", "Peer/epoll_echo/64/conns:64",
	"Session/Create", "Session/Create/idle:sleep", "Session/Create/backend:uring/idle:sleep",
	"Peer/epoll_echo/Create", "Peer/epoll_busy/Create", "Peer/uring_echo/Create",
	/* one message a slot against 8-byte items; packing as a variant */
	"CrossCore/Throughput/mixed/affinity:on",
	/* a sleeping shard beside the spinning one: its wake-up cost */
	"CrossCore/RTT/idle:sleep",
	/* only the whole life of a timer counts */
	"TimingWheel/Expire", "Peer/libuv/Expire", "TimingWheel/1000", "Peer/libuv/1000",
	/* durable appends: RocksDB and fdatasync per record, same writers */
	"Journal/Append/128/writers:64", "Peer/rocksdb/Append/128/writers:64",
	"Peer/fdatasync/Append/128/writers:64", "Peer/rocksdb/Append/128/writers:1",
};
#define NPAIR (sizeof(pair_names) / sizeof(pair_names[0]))

static struct pc_results *pair_fixture(void)
{
	char text[16384] = "{\"benchmarks\":[", err[256];
	size_t l;

	for (size_t i = 0; i < NPAIR; i++) {
		l = strlen(text);
		snprintf(text + l, sizeof(text) - l, "%s{\"name\":\"%s\",\"real_time\":%zu}",
			 i ? "," : "", pair_names[i], i + 1);
	}
	strcat(text, "]}");
	return load_text(text, 0, err, sizeof(err));
}

static void assert_peers(const struct pc_results *r, const struct pc_pairing *pp,
			 const char *ours, const char *const *want, size_t nwant)
{
	long i = pc_results_index(r, ours);

	assert_true(i >= 0);
	assert_int_equal(pp->p[i].npeers, nwant);
	for (size_t k = 0; k < nwant; k++)
		assert_string_equal(r->b[pp->p[i].peers[k].idx].name, want[k]);
}

/* The kind of row i's k-th peer. */
static enum pc_pair_kind kind_of(const struct pc_results *r, const struct pc_pairing *pp,
				 const char *ours, size_t k)
{
	long i = pc_results_index(r, ours);

	assert_true(i >= 0 && k < pp->p[i].npeers);
	return pp->p[i].peers[k].kind;
}

static void rows_meet_their_peers(void **state)
{
	struct pc_results *r = pair_fixture();
	struct pc_pairing pp;
	static const char *const slab[] = { "Peer/glibc/64", "Peer/jemalloc/64" };
	static const char *const spsc_on[] = { "Peer/ck_ring/Concurrent/affinity:on" };
	static const char *const echo[] = { "Peer/epoll_busy/64" };
	static const char *const echo_sleep[] = { "Peer/epoll_echo/64" };
	static const char *const uring_sleep[] = { "Peer/epoll_echo/64", "Peer/uring_echo/64" };
	static const char *const echo_conns[] = { "Peer/epoll_echo/64/conns:64" };
	static const char *const create_busy[] = { "Peer/epoll_busy/Create" };
	static const char *const create_sleep[] = { "Peer/epoll_echo/Create" };
	static const char *const create_uring[] = { "Peer/epoll_echo/Create",
						    "Peer/uring_echo/Create" };
	static const char *const cross[] = { "CrossCore/Throughput/mixed/affinity:on" };
	static const char *const mixed[] = { "Peer/ck_ring/Concurrent/affinity:on",
						"Peer/spsc64/Concurrent/affinity:on" };
	static const char *const wake[] = { "CrossCore/RTT/idle:spin" };
	static const char *const journal[] = { "Peer/rocksdb/Append/128/writers:64",
					       "Peer/fdatasync/Append/128/writers:64" };
	static const char *const uv_expire[] = { "Peer/libuv/Expire" };
	static const char *const uv_rearm[] = { "Peer/libuv/1000" };
	static const char *const striped[] = { "Counter/Atomic/threads:2" };
	static const char *const linearize[] = { "RingBuffer/Linearize/4096/plain" };
	static const char *const memcpy_peer[] = { "Peer/memcpy/4096",
						   "RingBuffer/WriteRead/4096/plain" };
	static const char *const busy[] = { "Peer/epoll_busy/Latency/64" };
	static const char *const sleeper[] = { "Peer/epoll_echo/Latency/64" };
	static const char *const busy4096[] = { "Peer/epoll_busy/4096" };
	static const char *const batch[] = { "SpscQueue/Concurrent/affinity:on" };
	static const char *const same_line[] = { "FalseSharing/SameLine" };
	static const char *const echo512[] = { "Peer/epoll_busy/512" };
	static const char *const c2c[] = { "Peer/core2core/RTT/affinity:on",
					   "Peer/core2core/RTT/affinity:off" };
	static const char *const redis_set1[] = { "Peer/redis/SET/P1" };
	static const char *const redis_set16[] = { "Peer/redis/SET/P16" };
	static const char *const redis_mem[] = { "Peer/redis/Memory/1M" };
	static const char *const redis_incr1[] = { "Peer/redis/INCR/P1" };

	(void)state;
	assert_non_null(r);
	assert_int_equal(pc_pairing_build(r, &pp), 0);
	assert_peers(r, &pp, "SlabAlloc/64", slab, 2);
	/* pinned meets pinned, and a size meets only its own size */
	assert_peers(r, &pp, "SpscQueue/Concurrent/affinity:on", spsc_on, 1);
	/* SessionEcho/64 is not an allocator: no Peer/glibc/64 beside it */
	assert_peers(r, &pp, "SessionEcho/64", echo, 1);
	assert_peers(r, &pp, "CrossCore/Throughput/affinity:on", cross, 1);
	assert_int_equal(kind_of(r, &pp, "CrossCore/Throughput/affinity:on", 0), PC_PAIR_VARIANT);
	assert_peers(r, &pp, "CrossCore/Throughput/mixed/affinity:on", mixed, 2);
	assert_int_equal(kind_of(r, &pp, "CrossCore/Throughput/mixed/affinity:on", 0),
			 PC_PAIR_PEER);
	assert_int_equal(kind_of(r, &pp, "CrossCore/Throughput/mixed/affinity:on", 1),
			 PC_PAIR_VARIANT);
	/* sleeping with sleeping, polling with busy polling; io_uring counts */
	assert_peers(r, &pp, "SessionEcho/64/idle:sleep", echo_sleep, 1);
	assert_peers(r, &pp, "SessionEcho/64/backend:uring", echo, 1);
	assert_peers(r, &pp, "SessionEcho/64/backend:uring/idle:sleep", uring_sleep, 2);
	assert_int_equal(kind_of(r, &pp, "SessionEcho/64/backend:uring/idle:sleep", 1),
			 PC_PAIR_PEER);
	assert_peers(r, &pp, "SessionEcho/64/conns:64/idle:sleep", echo_conns, 1);
	assert_peers(r, &pp, "Session/Create", create_busy, 1);
	assert_peers(r, &pp, "Session/Create/idle:sleep", create_sleep, 1);
	assert_peers(r, &pp, "Session/Create/backend:uring/idle:sleep", create_uring, 2);
	assert_int_equal(kind_of(r, &pp, "Session/Create/backend:uring/idle:sleep", 1),
			 PC_PAIR_PEER);
	/* the wake-up cost is a finding of its own, never a loss to a limit */
	assert_peers(r, &pp, "CrossCore/RTT/idle:sleep", wake, 1);
	assert_int_equal(kind_of(r, &pp, "CrossCore/RTT/idle:sleep", 0), PC_PAIR_VARIANT);
	assert_non_null(pp.p[pc_results_index(r, "CrossCore/RTT/idle:sleep")].peers[0].finding);
	assert_peers(r, &pp, "Journal/Append/128/writers:64", journal, 2);
	assert_int_equal(kind_of(r, &pp, "Journal/Append/128/writers:64", 0), PC_PAIR_PEER);
	assert_peers(r, &pp, "TimingWheel/Expire", uv_expire, 1);
	assert_int_equal(kind_of(r, &pp, "TimingWheel/Expire", 0), PC_PAIR_PEER);
	assert_peers(r, &pp, "TimingWheel/1000", uv_rearm, 1);
	assert_int_equal(kind_of(r, &pp, "TimingWheel/1000", 0), PC_PAIR_REFERENCE);
	assert_peers(r, &pp, "Counter/Striped/threads:2", striped, 1);
	assert_peers(r, &pp, "RingBuffer/Linearize/4096/mirrored", linearize, 1);
	assert_peers(r, &pp, "RingBuffer/WriteRead/4096/mirrored", memcpy_peer, 2);
	assert_int_equal(kind_of(r, &pp, "RingBuffer/WriteRead/4096/mirrored", 1), PC_PAIR_VARIANT);
	assert_peers(r, &pp, "SessionEcho/Latency/64/idle:spin", busy, 1);
	assert_peers(r, &pp, "SessionEcho/Latency/64/idle:sleep", sleeper, 1);
	assert_peers(r, &pp, "SessionEcho/Latency/64", sleeper, 1);
	assert_peers(r, &pp, "SessionEcho/4096/idle:adaptive", busy4096, 1);
	/* no batched ck_ring row: only our per-item queue, as a variant */
	assert_peers(r, &pp, "SpscQueue/Concurrent/batch:32/affinity:on", batch, 1);
	assert_int_equal(kind_of(r, &pp, "SpscQueue/Concurrent/batch:32/affinity:on", 0),
			 PC_PAIR_VARIANT);
	assert_peers(r, &pp, "FalseSharing/Padded", same_line, 1);
	assert_int_equal(kind_of(r, &pp, "FalseSharing/Padded", 0), PC_PAIR_VARIANT);
	assert_int_equal(kind_of(r, &pp, "Counter/Striped/threads:2", 0), PC_PAIR_VARIANT);
	/* a bare cache-line bounce is a reference, not a physical limit */
	assert_int_equal(kind_of(r, &pp, "CrossCore/RTT/idle:spin", 0), PC_PAIR_REFERENCE);
	assert_peers(r, &pp, "SessionEcho/512/affinity:on", echo512, 1);
	assert_peers(r, &pp, "CrossCore/RTT/idle:spin", c2c, 2);
	assert_peers(r, &pp, "CrossCore/OneWay/idle:spin", c2c, 2);
	/* one way stands against half the round trip */
	assert_float_equal(pp.p[pc_results_index(r, "CrossCore/OneWay/idle:spin")].peers[0].scale,
			   0.5, EPS);
	assert_float_equal(pp.p[pc_results_index(r, "CrossCore/RTT/idle:spin")].peers[0].scale, 1,
			   EPS);
	assert_peers(r, &pp, "KV/SET/P1", redis_set1, 1);
	assert_peers(r, &pp, "KV/SET/P16", redis_set16, 1);
	assert_int_equal(kind_of(r, &pp, "KV/SET/P16", 0), PC_PAIR_PEER);
	assert_peers(r, &pp, "KV/Memory/1M", redis_mem, 1);
	assert_peers(r, &pp, "KV/INCR/P1/affinity:on", redis_incr1, 1);
	/* Peer/redis/GET/P1 is another depth: GET/P16 stands alone */
	assert_peers(r, &pp, "KV/GET/P16", NULL, 0);
	assert_int_equal(pp.p[pc_results_index(r, "KV/GET/P16")].sec, PC_SEC_INTEGRATION);
	assert_int_equal(pp.p[pc_results_index(r, "KV/SET/P1")].sec, PC_SEC_INTEGRATION);
	assert_false(pp.p[pc_results_index(r, "Peer/redis/GET/P1")].claimed);
	assert_true(pp.p[pc_results_index(r, "Peer/redis/Memory/1M")].claimed);
	assert_peers(r, &pp, "Foo/Bar", NULL, 0);
	assert_int_equal(pp.p[pc_results_index(r, "Foo/Bar")].sec, PC_SEC_MICRO);
	assert_int_equal(pp.p[pc_results_index(r, "SessionEcho/64")].sec, PC_SEC_INTEGRATION);
	assert_int_equal(pp.p[pc_results_index(r, "Arch/PerCore/cores:1/affinity:on")].sec,
			 PC_SEC_ARCH);
	assert_int_equal(pp.p[pc_results_index(r, "Noise/ArraySum/affinity:on")].sec, PC_SEC_NOISE);
	assert_int_equal(pp.p[pc_results_index(r, "Peer/memcpy/4096")].sec, PC_SEC_PEER);
	assert_false(pp.p[pc_results_index(r, "Peer/glibc/256")].claimed);
	assert_true(pp.p[pc_results_index(r, "Counter/Atomic/threads:2")].claimed);
	pc_pairing_free(&pp);
	pc_results_free(r);
}

/* ---- rendering -------------------------------------------------------- */

static char *render(const struct pc_doc *d, bool html)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(html ? pc_doc_write_html(d, "t", f) : pc_doc_write_md(d, f), 0);
	fclose(f);
	return text;
}

static void names_are_escaped(void **state)
{
	char err[256];
	struct pc_results *r = load_text("{\"benchmarks\":[{\"name\":\"X/<b>|&\","
					 "\"real_time\":1},{\"name\":\"X/<b>|&\",\"real_time\":2}]}",
					 0, err, sizeof(err));
	struct pc_report_opts o = { .alpha = 0.05 };
	struct pc_doc *d;
	char *html, *md;

	(void)state;
	assert_non_null(r);
	d = pc_report_build(r, &o, NULL);
	assert_non_null(d);
	html = render(d, true);
	md = render(d, false);
	assert_non_null(strstr(html, "X/&lt;b&gt;|&amp;"));
	assert_null(strstr(html, "<b>"));
	assert_null(strstr(html, "<script"));
	assert_non_null(strstr(md, "`X/<b>\\|&`"));
	free(html);
	free(md);
	pc_doc_free(d);
	pc_results_free(r);
}

#define FILE_ROW(p50, p99) \
	"{\"name\":\"File/RandRead/4096/qd:1\",\"run_type\":\"iteration\",\"real_time\":" \
	"200,\"time_unit\":\"us\",\"p50_us\":" #p50 ",\"p99_us\":" #p99 "}"

/* The storage section of a report made of a run without and one with PM
 * QoS: both p50 and p99 side by side with their ratio, the machine's idle
 * states and storage power, and what to expect from them. */
static char *storage_md(const char *idle_status, const char *idle_value, bool with_qos)
{
	char err[256], main_text[1024];
	struct pc_report_opts o = { .alpha = 0.05 };
	struct pc_results *r;
	struct pc_doc *d;
	char *qos_path = tmp_json("{\"percore\":{\"options\":{\"pm_qos\":true}},"
				  "\"benchmarks\":[" FILE_ROW(80, 300) "," FILE_ROW(80, 300) "]}");
	char *md;

	snprintf(main_text, sizeof(main_text),
		 "{\"percore\":{\"audit\":[{\"id\":\"cpu.idle_states\",\"status\":\"%s\","
		 "\"value\":\"%s\"},{\"id\":\"storage.pcie_aspm\",\"status\":\"warn\","
		 "\"value\":\"default\"}]},\"benchmarks\":[" FILE_ROW(100, 400) ","
		 FILE_ROW(100, 400) "]}", idle_status, idle_value);
	r = load_text(main_text, PC_RESULTS_TAG_PMQOS, err, sizeof(err));
	assert_non_null(r);
	if (with_qos)
		assert_int_equal(pc_results_append(r, qos_path, PC_RESULTS_TAG_PMQOS, err,
						   sizeof(err)), 0);
	d = pc_report_build(r, &o, NULL);
	assert_non_null(d);
	md = render(d, false);
	pc_doc_free(d);
	pc_results_free(r);
	unlink(qos_path);
	free(qos_path);
	return md;
}

static void storage_table_with_and_without_pm_qos(void **state)
{
	char *md = storage_md("ok", "driver none: no idle states, an idle CPU halts", true);
	const char *row;

	(void)state;
	row = strstr(md, "## Fast storage and idle states");
	assert_non_null(row);
	row = strstr(row, "| `File/RandRead/4096/qd:1` |");
	assert_non_null(row);
	/* p50 100 us -> 80 us, p99 400 us -> 300 us */
	assert_non_null(strstr(row, "| 100 \xc2\xb5s | 80.0 \xc2\xb5s | 0.80x | 400 \xc2\xb5s | "
				    "300 \xc2\xb5s | 0.75x |"));
	assert_non_null(strstr(md, "CPU idle states (`cpu.idle_states`): ok"));
	assert_non_null(strstr(md, "PCIe ASPM (`storage.pcie_aspm`): warn \xe2\x80\x94 default"));
	assert_non_null(strstr(md, "NVMe APST (`storage.nvme_apst`): not audited"));
	assert_non_null(strstr(md, "No difference expected here"));
	assert_non_null(strstr(md, "an idle CPU halts"));
	assert_null(strstr(md, "no `/pm_qos:on` rows"));
	free(md);

	/* deep idle states: a drop is expected; no PM QoS run: said so */
	md = storage_md("warn", "C6 133 us", false);
	assert_null(strstr(md, "No difference expected here"));
	assert_non_null(strstr(md, "Deep idle states are present (C6 133 us)"));
	assert_non_null(strstr(md, "no `/pm_qos:on` rows"));
	row = strstr(strstr(md, "## Fast storage and idle states"), "| `File/RandRead/4096/qd:1` |");
	assert_non_null(row);
	assert_non_null(strstr(row, "| 100 \xc2\xb5s | \xe2\x80\x94 | \xe2\x80\x94 | 400 \xc2\xb5s |"));
	free(md);
}

static void comparison_reads_the_same_either_way(void **state)
{
	char err[256];
	struct pc_results *a = load_text("{\"benchmarks\":[" ROW("C", 10, "ns") "," ROW("C", 11, "ns")
					 "," ROW("C", 12, "ns") "]}", 0, err, sizeof(err));
	struct pc_cmp cmp;

	(void)state;
	assert_non_null(a);
	assert_int_equal(pc_compare(a, a, 0.05, 0.05, &cmp), 0);
	assert_int_equal(cmp.n, 1);
	/* 3 vs 3 can never reach 0.05: inconclusive, not unchanged */
	assert_int_equal(cmp.rows[0].verdict, PC_VERDICT_INCONCLUSIVE);
	assert_float_equal(cmp.rows[0].change_pct, 0, EPS);
	pc_cmp_free(&cmp);
	assert_int_equal(pc_compare(a, a, 0.2, 0.05, &cmp), 0);
	assert_int_equal(cmp.rows[0].verdict, PC_VERDICT_UNCHANGED);
	assert_float_equal(cmp.rows[0].p_value, 1, EPS);
	pc_cmp_free(&cmp);
	pc_results_free(a);
}

/* Benjamini-Hochberg over the counted pairs: p_(i) * m / i, monotone,
 * and verdicts follow the adjusted p. Worked by hand for m = 4:
 * 0.01 * 4 = 0.04; 0.02 * 4 / 2 = 0.04; 0.03 * 4 / 3 = 0.04; 0.5. */
static void many_pairs_are_adjusted_together(void **state)
{
	const struct pc_decide d = { .alpha = 0.05, .ci_alpha = 0.05, .margin = 0.05 };
	struct pc_judgement j[5], *fam[5];
	const double p[5] = { 0.03, 0.5, 0.01, 0.02, NAN };
	const double want[4] = { 0.04, 0.5, 0.04, 0.04 };

	(void)state;
	for (size_t i = 0; i < 5; i++) {
		j[i] = (struct pc_judgement){ .speedup = 2, .lo = 1.5, .hi = 3, .p = p[i],
					      .p_adj = NAN, .dir = -1, .out = PC_OUT_FASTER,
					      .decided = true };
		fam[i] = &j[i];
	}
	j[4].out = PC_OUT_UNTESTED;
	assert_int_equal(pc_judge_adjust(fam, 5, &d), 0);
	for (size_t i = 0; i < 4; i++)
		assert_float_equal(j[i].p_adj, want[i], 1e-12);
	assert_int_equal(j[0].out, PC_OUT_FASTER);
	assert_int_equal(j[1].out, PC_OUT_SAME);
	assert_false(j[1].decided); /* the interval is far outside the margin */
	assert_true(isnan(j[4].p_adj)); /* untested: not in the family */
	assert_int_equal(j[4].out, PC_OUT_UNTESTED);
	/* a raw 0.03 that the adjustment lifts past alpha is no longer a win */
	j[0] = (struct pc_judgement){ .speedup = 2, .lo = 1.5, .hi = 3, .p = 0.03, .dir = -1 };
	j[1] = j[0];
	j[1].p = 0.9;
	assert_int_equal(pc_judge_adjust(fam, 2, &d), 0);
	assert_float_equal(j[0].p_adj, 0.06, 1e-12);
	assert_int_equal(j[0].out, PC_OUT_SAME);
}

/* Which undecided pairs more rounds could still decide. */
static void hopeless_pairs_stop_asking(void **state)
{
	struct pc_bench_decide d;
	/* 1.00x [0.59x, 1.48x] after 12 (99% interval): the 95% one would
	 * have to shrink to within 5%, and 60 repetitions shrink it by
	 * sqrt(12/60) only */
	struct pc_judgement wide = { .speedup = 1.0, .lo = 0.59, .hi = 1.48, .p = 1,
				     .out = PC_OUT_SAME, .n_ours = 12, .n_other = 12 };
	struct pc_judgement early = wide;
	/* 1.39x [0.99x, 1.89x]: a few more repetitions may well make it significant */
	struct pc_judgement near = { .speedup = 1.39, .lo = 0.99, .hi = 1.89, .p = 0.05,
				     .out = PC_OUT_SAME, .n_ours = 9, .n_other = 9 };
	/* 1.12x [0.95x, 1.32x] after 12 (99%): the report's 95% interval,
	 * 0.76x as wide on the log scale, clears 1x after about 15 a side */
	struct pc_judgement mid = { .speedup = 1.12, .lo = 0.95, .hi = 1.32, .p = 0.1,
				    .out = PC_OUT_SAME, .n_ours = 12, .n_other = 12 };
	struct pc_judgement open_ended = near;

	(void)state;
	pc_bench_decide_init(&d);
	assert_true(pc_bench_decide_futile(&wide, &d, 60));
	assert_false(pc_bench_decide_futile(&near, &d, 60));
	/* the same interval from five repetitions a side: one outlier can
	 * make it that wide, so not yet hopeless */
	early.n_ours = early.n_other = 5;
	assert_false(pc_bench_decide_futile(&early, &d, 60));
	early.n_other = PC_DECIDE_FUTILE_MIN_REPS;
	assert_false(pc_bench_decide_futile(&early, &d, 60));
	early.n_ours = PC_DECIDE_FUTILE_MIN_REPS;
	assert_true(pc_bench_decide_futile(&early, &d, 60));
	/* with room for 100000 repetitions nothing is hopeless */
	assert_false(pc_bench_decide_futile(&wide, &d, 100000));
	/* the reach decides: 20 a side would do, 13 would not, and a reach
	 * below what it has already counts as no more rounds */
	assert_false(pc_bench_decide_futile(&mid, &d, 20));
	assert_true(pc_bench_decide_futile(&mid, &d, 13));
	assert_true(pc_bench_decide_futile(&mid, &d, 3));
	/* no interval yet, or already decided: not for futility to say */
	open_ended.lo = 0;
	open_ended.hi = INFINITY;
	assert_false(pc_bench_decide_futile(&open_ended, &d, 60));
	wide.decided = true;
	assert_false(pc_bench_decide_futile(&wide, &d, 60));
}

/* The budget goes to the pairs cheapest to decide, whatever their order. */
static void budget_goes_to_the_cheapest_pairs(void **state)
{
	const double cost[] = { 50, 5, 0, 30, 20 };
	bool take[5] = { false };

	(void)state;
	assert_int_equal(pc_bench_decide_plan(cost, 5, 26, take), 3);
	assert_false(take[0]);
	assert_true(take[1]);
	assert_true(take[2]);
	assert_false(take[3]);
	assert_true(take[4]);
	memset(take, 0, sizeof(take));
	assert_int_equal(pc_bench_decide_plan(cost, 5, INFINITY, take), 5);
	memset(take, 0, sizeof(take));
	/* nothing affordable but what costs nothing */
	assert_int_equal(pc_bench_decide_plan(cost, 5, 1, take), 1);
	assert_true(take[2]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_group_by_benchmark),
		cmocka_unit_test(counters_and_failed_rows),
		cmocka_unit_test(aggregates_alone_are_enough),
		cmocka_unit_test(bad_files_are_refused_with_a_reason),
		cmocka_unit_test(pm_qos_rows_are_tagged_and_duplicates_skipped),
		cmocka_unit_test(rows_meet_their_peers),
		cmocka_unit_test(names_are_escaped),
		cmocka_unit_test(storage_table_with_and_without_pm_qos),
		cmocka_unit_test(comparison_reads_the_same_either_way),
		cmocka_unit_test(many_pairs_are_adjusted_together),
		cmocka_unit_test(hopeless_pairs_stop_asking),
		cmocka_unit_test(budget_goes_to_the_cheapest_pairs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
