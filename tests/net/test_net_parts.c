/* SPDX-License-Identifier: MIT */
/* The parts under the server: address parsing and formatting, listening
 * with SO_REUSEPORT, accepting and connecting; the ring buffer pool and
 * the arena under it; the per-address table against a model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "net/addrtab.h"
#include "net/bufarena.h"
#include "net/bufpool.h"
#include "net_util.h"

static void test_parse_format(void **state)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "127.0.0.1", "127.0.0.1:80" }, { "localhost", "127.0.0.1:80" },
		{ "::1", "[::1]:80" },           { "[::1]", "[::1]:80" },
		{ "", "[::]:80" },               { "*", "[::]:80" },
		{ NULL, "[::]:80" },             { "10.1.2.3", "10.1.2.3:80" },
		{ "fe80::1:2", "[fe80::1:2]:80" },
	};
	static const char *const bad[] = { "host.example", "1.2.3", "[::1", "::1]", "[]",
					   "1.2.3.4.5", "256.0.0.1", "[127.0.0.1]x" };
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[64];

	(void)state;
	for (size_t i = 0; i < PC_ARRAY_LEN(ok); i++) {
		assert_int_equal(pc_sockaddr_parse(ok[i].in, 80, &ss, &len), 0);
		assert_int_equal(pc_sockaddr_port((struct sockaddr *)&ss), 80);
		assert_int_equal(pc_sockaddr_format((struct sockaddr *)&ss, buf, sizeof(buf)), 0);
		assert_string_equal(buf, ok[i].out);
	}
	for (size_t i = 0; i < PC_ARRAY_LEN(bad); i++)
		assert_int_equal(pc_sockaddr_parse(bad[i], 80, &ss, &len), -EINVAL);
	pc_sockaddr_parse("127.0.0.1", 65535, &ss, &len);
	assert_int_equal(pc_sockaddr_format((struct sockaddr *)&ss, buf, 8), -ENOSPC);
	assert_int_equal(strlen(buf), 7);
	ss.ss_family = AF_UNIX;
	assert_int_equal(pc_sockaddr_format((struct sockaddr *)&ss, buf, sizeof(buf)), -EAFNOSUPPORT);
	assert_int_equal(pc_sockaddr_port((struct sockaddr *)&ss), 0);
}

static void test_listen_accept(void **state)
{
	struct sockaddr_storage ss, peer;
	socklen_t len, plen;
	int a, b, c, s;

	(void)state;
	pc_sockaddr_parse("127.0.0.1", 0, &ss, &len);
	assert_int_equal(pc_listen((struct sockaddr *)&ss, len, -1, 0), -EINVAL);
	assert_int_equal(pc_listen((struct sockaddr *)&ss, len, 0, 1u << 7), -EINVAL);
	/* On a free port PC_LISTEN_FIRST listens, and others may join it. */
	a = pc_listen((struct sockaddr *)&ss, len, 0, PC_LISTEN_REUSEPORT | PC_LISTEN_FIRST);
	assert_true(a >= 0);
	assert_int_equal(pc_socket_local(a, &ss, &len), 0);
	close(a);
	a = pc_listen((struct sockaddr *)&ss, len, 0, PC_LISTEN_REUSEPORT | PC_LISTEN_FIRST);
	assert_true(a >= 0);
	assert_int_equal(pc_socket_local(a, &ss, &len), 0);
	/* A second socket shares the port with SO_REUSEPORT, not without. */
	b = pc_listen((struct sockaddr *)&ss, len, 16, PC_LISTEN_REUSEPORT);
	assert_true(b >= 0);
	assert_int_equal(pc_listen((struct sockaddr *)&ss, len, 16, 0), -EADDRINUSE);
	/* PC_LISTEN_FIRST refuses to join sockets already listening there. */
	assert_int_equal(pc_listen((struct sockaddr *)&ss, len, 16,
				   PC_LISTEN_REUSEPORT | PC_LISTEN_FIRST), -EADDRINUSE);
	assert_int_equal(pc_accept(a, NULL, NULL), -EAGAIN);
	c = pc_connect_start((struct sockaddr *)&ss, len);
	assert_true(c >= 0);
	struct pollfd p = { .fd = c, .events = POLLOUT };
	assert_int_equal(poll(&p, 1, TU_WAIT_MS), 1);
	assert_int_equal(pc_connect_result(c), 0);
	/* The kernel put it on one of the two sockets. */
	s = -EAGAIN;
	for (int i = 0; i < 100 && s == -EAGAIN; i++) {
		s = pc_accept(a, &peer, &plen);
		if (s == -EAGAIN)
			s = pc_accept(b, &peer, &plen);
		if (s == -EAGAIN)
			tu_sleep_ms(5);
	}
	assert_true(s >= 0);
	assert_int_equal(peer.ss_family, AF_INET);
	assert_int_equal(pc_socket_reset_on_close(s), 0);
	close(s);
	close(c);
	close(a);
	close(b);
	/* Nobody listening: refused. */
	c = pc_connect_start((struct sockaddr *)&ss, len);
	assert_true(c >= 0 || c == -ECONNREFUSED);
	if (c >= 0) {
		assert_int_equal(poll(&p, 1, TU_WAIT_MS), 1);
		p.fd = c;
		poll(&p, 1, TU_WAIT_MS);
		assert_int_equal(pc_connect_result(c), -ECONNREFUSED);
		close(c);
	}
}

static void test_bufpool(void **state)
{
	struct net_bufpool p;
	struct pc_ringbuf *r[8];

	(void)state;
	assert_int_equal(net_buf_class_size(0), 4096);
	assert_int_equal(net_buf_class_size(4097), 8192);
	assert_int_equal(net_buf_class_size(32u << 20), 32u << 20);
	assert_int_equal(net_buf_class_size((32u << 20) + 1), 0);
	assert_int_equal(net_bufpool_init(&p, 2, 1u << 20), 0);
	assert_null(net_buf_get(&p, (32u << 20) + 1));
	for (int i = 0; i < 4; i++) {
		r[i] = net_buf_get(&p, 5000);
		assert_non_null(r[i]);
		assert_int_equal(pc_ringbuf_capacity(r[i]), 8192);
		assert_int_equal(pc_ringbuf_write(r[i], "abc", 3), 0);
	}
	assert_int_equal(p.busy, 4);
	assert_int_equal(p.maps, 4);
	for (int i = 0; i < 4; i++)
		net_buf_put(&p, r[i]);
	/* Two kept (the bound per class), reset; two unmapped. */
	assert_int_equal(p.busy, 0);
	assert_int_equal(p.idle_bytes, 2 * 8192);
	assert_int_equal(net_bufpool_validate(&p, NULL, 0), 0);
	r[0] = net_buf_get(&p, 8000);
	assert_int_equal(pc_ringbuf_used(r[0]), 0);
	assert_int_equal(p.maps, 4); /* reused, not mapped again */
	/* Growing keeps the bytes, in order, across the wrap. */
	for (int i = 0; i < 10; i++) {
		uint8_t b[1000];
		memset(b, i, sizeof(b));
		assert_int_equal(pc_ringbuf_write(r[0], b, sizeof(b)), 0);
		assert_int_equal(pc_ringbuf_consume(r[0], i < 5 ? 1000 : 0), 0);
	}
	struct pc_ringbuf *g = net_buf_grow(&p, r[0], 100000);
	assert_non_null(g);
	assert_int_equal(pc_ringbuf_capacity(g), 131072);
	assert_int_equal(pc_ringbuf_used(g), 5000);
	for (int i = 0; i < 5; i++) {
		uint8_t b[1000];
		assert_int_equal(pc_ringbuf_read(g, b, sizeof(b)), 0);
		for (int k = 0; k < 1000; k++)
			assert_int_equal(b[k], 5 + i);
	}
	assert_int_equal(pc_ringbuf_write(g, "x", 1), 0);
	assert_null(net_buf_grow(&p, g, 0)); /* would not hold what it has */
	net_buf_put(&p, g);
	/* The byte bound: a 1 MiB ring does not fit beside what is kept. */
	r[1] = net_buf_get(&p, 1u << 20);
	net_buf_put(&p, r[1]);
	assert_true(p.idle_bytes <= 1u << 20);
	assert_int_equal(net_bufpool_validate(&p, NULL, 0), 0);
	net_bufpool_fini(&p);
	/* Keeping nothing works too. */
	assert_int_equal(net_bufpool_init(&p, 0, 0), 0);
	r[0] = net_buf_get(&p, 1);
	net_buf_put(&p, r[0]);
	assert_int_equal(p.idle_bytes, 0);
	net_bufpool_fini(&p);
}

static void addr_of(uint32_t v, uint8_t key[NET_ADDR_LEN])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(v) };

	assert_int_equal(net_addr_key((struct sockaddr *)&a, key), 0);
}

static void test_addrtab_model(void **state)
{
	enum { ADDRS = 3000, STEPS = 60000, LIMIT = 4 };
	static uint32_t model[ADDRS];
	struct net_addrtab *t = net_addrtab_create();
	uint64_t seed = 7;
	uint8_t key[NET_ADDR_LEN];

	(void)state;
	assert_non_null(t);
	for (int i = 0; i < STEPS; i++) {
		seed = seed * 6364136223846793005ull + 1;
		uint32_t a = (uint32_t)(seed >> 33) % ADDRS;
		addr_of(0x0a000000u + a, key);
		if ((seed >> 20) % 3 != 0) {
			int rc = net_addrtab_acquire(t, key, LIMIT);
			assert_int_equal(rc, model[a] < LIMIT ? 0 : -EBUSY);
			model[a] += rc == 0;
		} else if (model[a]) {
			net_addrtab_release(t, key);
			model[a]--;
		}
		assert_int_equal(net_addrtab_count(t, key), model[a]);
		if (i % 5000 == 0)
			assert_int_equal(net_addrtab_validate(t, NULL, 0), 0);
	}
	size_t live = 0;
	for (uint32_t a = 0; a < ADDRS; a++) {
		live += model[a] != 0;
		addr_of(0x0a000000u + a, key);
		assert_int_equal(net_addrtab_count(t, key), model[a]);
	}
	assert_int_equal(net_addrtab_size(t), live);
	assert_true(net_addrtab_bytes(t) > 0);
	/* Releasing everything empties it; the entries are gone, not hidden. */
	for (uint32_t a = 0; a < ADDRS; a++) {
		addr_of(0x0a000000u + a, key);
		while (model[a]--)
			net_addrtab_release(t, key);
	}
	assert_int_equal(net_addrtab_size(t), 0);
	assert_int_equal(net_addrtab_validate(t, NULL, 0), 0);
	/* IPv6 and IPv4 keys are distinct addresses. */
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	inet_pton(AF_INET6, "::1", &a6.sin6_addr);
	assert_int_equal(net_addr_key((struct sockaddr *)&a6, key), 0);
	assert_int_equal(net_addrtab_acquire(t, key, 1), 0);
	assert_int_equal(net_addrtab_acquire(t, key, 1), -EBUSY);
	addr_of(1, key);
	assert_int_equal(net_addrtab_acquire(t, key, 1), 0);
	struct sockaddr sa = { .sa_family = AF_UNIX };
	assert_int_equal(net_addr_key(&sa, key), -EAFNOSUPPORT);
	net_addrtab_destroy(t);
}

/* Live blocks of the arena test: each filled with its own byte. */
struct arena_blk {
	uint8_t *p;
	size_t bytes;
	uint8_t mark;
};

static void arena_check(const struct net_arena *a)
{
	char err[200] = "";

	if (net_arena_validate(a, err, sizeof(err)))
		fail_msg("arena: %s", err);
}

/* Random blocks of every size class a ring uses, held and freed in random
 * order: no two live blocks overlap (each keeps its own bytes), blocks are
 * page-aligned, the invariants hold after every fiftieth step, and once
 * everything is back one chunk is left, whole again. */
static void test_arena_model(void **state)
{
	enum { LIVE = 64, STEPS = 3000 };
	struct arena_blk b[LIVE] = { { 0 } };
	struct net_arena a;
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	(void)state;
	net_arena_init(&a);
	assert_null(net_arena_alloc(&a, ((size_t)1 << NET_ARENA_CHUNK_SHIFT) + 1));
	for (int step = 0; step < STEPS; step++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		struct arena_blk *x = &b[(seed >> 33) % LIVE];
		if (x->p) {
			for (size_t k = 0; k < x->bytes; k += 997)
				assert_int_equal(x->p[k], x->mark);
			net_arena_free(&a, x->p, x->bytes);
			x->p = NULL;
		} else {
			/* 8 KiB .. 2 MiB, mostly small, sometimes a size between two
			 * classes (rounded up). */
			size_t bytes = (size_t)8192 << ((seed >> 20) % 9);
			if ((seed >> 40) & 1)
				bytes -= bytes / 4;
			x->p = net_arena_alloc(&a, bytes);
			assert_non_null(x->p);
			assert_int_equal((uintptr_t)x->p % 4096, 0);
			x->bytes = bytes;
			x->mark = (uint8_t)step;
			for (size_t k = 0; k < bytes; k += 997)
				x->p[k] = x->mark;
		}
		if (step % 50 == 0)
			arena_check(&a);
	}
	for (int i = 0; i < LIVE; i++)
		net_arena_free(&a, b[i].p, b[i].bytes);
	arena_check(&a);
	assert_int_equal(a.used_bytes, 0);
	assert_int_equal(net_arena_chunks(&a), 1);
	/* A block as large as a whole chunk fits; a second one needs a
	 * second mapping, given back once free. */
	size_t big = (size_t)1 << NET_ARENA_FLOOR_SHIFT;
	void *p = net_arena_alloc(&a, big), *q = net_arena_alloc(&a, big);
	assert_non_null(p);
	assert_non_null(q);
	memset(q, 1, 4096);
	net_arena_free(&a, q, big);
	net_arena_free(&a, p, big);
	arena_check(&a);
	assert_int_equal(net_arena_chunks(&a), 1);
	net_arena_fini(&a);
}

/* Many rings cost the pool no mapping each: 4,000 rings of 64 KiB come
 * from the arena's few chunks, each its own memory. */
static void test_bufpool_mappings(void **state)
{
	enum { RINGS = 4000 };
	struct pc_ringbuf **r = calloc(RINGS, sizeof(*r));
	struct net_bufpool p;

	(void)state;
	assert_non_null(r);
	assert_int_equal(net_bufpool_init(&p, 4, 1u << 20), 0);
	for (unsigned i = 0; i < RINGS; i++) {
		r[i] = net_buf_get(&p, 64u << 10);
		assert_non_null(r[i]);
		assert_false(pc_ringbuf_mirrored(r[i]));
		assert_int_equal(pc_ringbuf_write(r[i], &i, sizeof(i)), 0);
	}
	/* 4,000 x 128 KiB (ring and copy half) = 500 MiB: one 1 GiB chunk,
	 * or 8 of 64 MiB where the system refuses large reservations. */
	assert_true(net_arena_chunks(&p.arena) <= 8);
	for (unsigned i = 0; i < RINGS; i++) {
		unsigned v = ~0u;
		assert_int_equal(pc_ringbuf_read(r[i], &v, sizeof(v)), 0);
		assert_int_equal(v, i);
		net_buf_put(&p, r[i]);
	}
	assert_int_equal(net_bufpool_validate(&p, NULL, 0), 0);
	net_bufpool_fini(&p);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test(test_listen_accept),
		cmocka_unit_test(test_bufpool),
		cmocka_unit_test(test_arena_model),
		cmocka_unit_test(test_bufpool_mappings),
		cmocka_unit_test(test_addrtab_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
