/* SPDX-License-Identifier: MIT */
/* Concurrency (also under ThreadSanitizer):
 * - the per-address table hammered by threads: never more sessions
 *   counted for an address than the limit, nothing left at the end;
 * - pc_session_send_to across shards: clients on both shards forward
 *   numbered frames to each other through the server; every frame accepted
 *   arrives exactly once, in the order its sender sent it, and the refused
 *   ones (mesh ring full) are reported back to their sender.
 * PC_NET_STRESS scales the second (frames per client). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include <cmocka.h>

#include "net/addrtab.h"
#include "net_util.h"

/* ---- the address table ---------------------------------------------------- */

enum { T_THREADS = 4, T_ADDRS = 8, T_LIMIT = 3 };

struct tab_ctx {
	struct net_addrtab *t;
	_Atomic int held[T_ADDRS];   /* sessions each address holds now */
	_Atomic int over;            /* times a count exceeded the limit */
	unsigned iters;
};

static void *tab_worker(void *arg)
{
	struct tab_ctx *c = arg;
	uint8_t keys[T_ADDRS][NET_ADDR_LEN];
	int mine[T_ADDRS] = { 0 };
	uint64_t seed = (uint64_t)(uintptr_t)&mine;

	for (int a = 0; a < T_ADDRS; a++) {
		struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)a) };
		net_addr_key((struct sockaddr *)&in, keys[a]);
	}
	for (unsigned i = 0; i < c->iters; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int a = (int)((seed >> 33) % T_ADDRS);
		if ((seed >> 40) & 1) {
			if (net_addrtab_acquire(c->t, keys[a], T_LIMIT) == 0) {
				if (atomic_fetch_add(&c->held[a], 1) + 1 > T_LIMIT)
					atomic_fetch_add(&c->over, 1);
				mine[a]++;
			}
		} else if (mine[a]) {
			atomic_fetch_sub(&c->held[a], 1); /* before the table forgets it */
			net_addrtab_release(c->t, keys[a]);
			mine[a]--;
		}
	}
	for (int a = 0; a < T_ADDRS; a++)
		while (mine[a]--) {
			atomic_fetch_sub(&c->held[a], 1);
			net_addrtab_release(c->t, keys[a]);
		}
	return NULL;
}

static void test_addrtab_threads(void **state)
{
	static struct tab_ctx c;
	pthread_t th[T_THREADS];

	(void)state;
	c.t = net_addrtab_create();
	assert_non_null(c.t);
#ifdef PC_TSAN
	c.iters = 20000;
#else
	c.iters = 300000;
#endif
	for (int i = 0; i < T_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, tab_worker, &c), 0);
	for (int i = 0; i < T_THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&c.over), 0);
	assert_int_equal(net_addrtab_size(c.t), 0);
	assert_int_equal(net_addrtab_validate(c.t, NULL, 0), 0);
	net_addrtab_destroy(c.t);
}

/* ---- send_to across shards ----------------------------------------------- */

enum { MSG_WHOAMI = 1, MSG_FORWARD = 2, MSG_DELIVERED = 3, MSG_REFUSED = 4 };
enum { CLIENTS = 6 };

struct note {                 /* the body of FORWARD, DELIVERED, REFUSED */
	uint64_t to;
	uint32_t from;            /* sender's index */
	uint32_t seq;             /* sender's count, per target */
};

static void forward_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	struct note n;
	uint64_t id = pc_session_id(s);

	(void)user;
	if (f->msg_id == MSG_WHOAMI) {
		pc_session_send(s, MSG_WHOAMI, &id, sizeof(id));
		return;
	}
	if (f->msg_id != MSG_FORWARD || f->len != sizeof(n))
		return;
	memcpy(&n, f->body, sizeof(n));
	/* A full ring refuses (-EAGAIN): tell the sender, drop nothing silently. */
	if (pc_session_send_to(n.to, MSG_DELIVERED, 0, &n, sizeof(n)))
		pc_session_send(s, MSG_REFUSED, &n, sizeof(n));
}

struct client {
	int fd;
	unsigned index;
	uint64_t id;
	struct stress *st;
	uint32_t next_seq[CLIENTS];   /* sender side, per target */
	uint32_t last_seen[CLIENTS];  /* receiver side, per sender */
};

struct stress {
	struct client c[CLIENTS];
	unsigned frames;              /* per client */
	_Atomic uint64_t sent, delivered, refused;
	_Atomic int disorder, broken;
};

static void *sender(void *arg)
{
	struct client *c = arg;
	struct stress *st = c->st;
	uint64_t seed = c->index + 1;

	for (unsigned i = 0; i < st->frames; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		unsigned t = (unsigned)((seed >> 33) % CLIENTS);
		struct note n = { .to = st->c[t].id, .from = c->index, .seq = ++c->next_seq[t] };
		if (tu_send_frame(c->fd, MSG_FORWARD, 0, &n, sizeof(n))) {
			atomic_store(&st->broken, 1);
			return NULL;
		}
		atomic_fetch_add(&st->sent, 1);
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct client *c = arg;
	struct stress *st = c->st;

	while (!atomic_load(&st->broken)) {
		struct pc_frame f = { 0 };
		uint8_t *b = NULL;
		struct note n;

		if (tu_recv_frame(c->fd, &f, &b))
			break; /* closed by the test at the end, or timed out */
		if (f.len != sizeof(n)) {
			atomic_store(&st->broken, 1);
			free(b);
			break;
		}
		memcpy(&n, b, sizeof(n));
		free(b);
		if (f.msg_id == MSG_REFUSED) {
			atomic_fetch_add(&st->refused, 1);
			continue;
		}
		/* Per sender, sequence numbers only go up: no duplicate and no
		 * reordering (refused ones leave gaps). */
		if (n.to != c->id || n.seq <= c->last_seen[n.from])
			atomic_fetch_add(&st->disorder, 1);
		c->last_seen[n.from] = n.seq;
		atomic_fetch_add(&st->delivered, 1);
	}
	return NULL;
}

static void test_send_to_stress(void **state)
{
	static struct stress st;
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	pthread_t snd[CLIENTS], rcv[CLIENTS];
	const char *env = getenv("PC_NET_STRESS");
	bool shards[2] = { false, false };

	(void)state;
#ifdef PC_TSAN
	st.frames = 15000;
#else
	st.frames = 200000;
#endif
	if (env && *env)
		st.frames = (unsigned)strtoul(env, NULL, 10);
	tu_cfg(&cfg, 2);
	cfg.on_frame = forward_frame;
	srv = tu_start(&cfg);
	assert_non_null(srv);
	/* Clients on both shards (the kernel spreads them by hash: connect
	 * more until both have some, keeping CLIENTS of them). */
	for (unsigned i = 0, tries = 0; i < CLIENTS && tries < 200; tries++) {
		int fd = tu_connect(pc_server_port(srv));
		struct pc_frame f = { 0 };
		uint8_t *b = NULL;

		assert_true(fd >= 0);
		assert_int_equal(tu_send_frame(fd, MSG_WHOAMI, 0, NULL, 0), 0);
		assert_int_equal(tu_recv_frame(fd, &f, &b), 0);
		uint64_t id;
		memcpy(&id, b, sizeof(id));
		free(b);
		unsigned sh = pc_session_id_shard(id);
		/* The last slot waits for a shard not seen yet. */
		if (i == CLIENTS - 1 && !(shards[0] && shards[1]) && shards[sh]) {
			close(fd);
			continue;
		}
		shards[sh] = true;
		st.c[i] = (struct client){ .fd = fd, .index = i, .id = id, .st = &st };
		i++;
	}
	assert_true(shards[0] && shards[1]);
	for (int i = 0; i < CLIENTS; i++) {
		assert_int_equal(pthread_create(&rcv[i], NULL, receiver, &st.c[i]), 0);
		assert_int_equal(pthread_create(&snd[i], NULL, sender, &st.c[i]), 0);
	}
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(snd[i], NULL);
	uint64_t end = pc_now_ns() + 4ull * TU_WAIT_MS * 1000000;
	while (atomic_load(&st.delivered) + atomic_load(&st.refused) < atomic_load(&st.sent) &&
	       pc_now_ns() < end && !atomic_load(&st.broken))
		tu_sleep_ms(5);
	/* Everything accounted for: end the receivers. */
	for (int i = 0; i < CLIENTS; i++)
		shutdown(st.c[i].fd, SHUT_RDWR);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(rcv[i], NULL);
	fprintf(stderr, "send_to: %llu sent, %llu delivered, %llu refused\n",
		(unsigned long long)st.sent, (unsigned long long)st.delivered,
		(unsigned long long)st.refused);
	assert_int_equal(atomic_load(&st.broken), 0);
	assert_int_equal(atomic_load(&st.sent), (uint64_t)CLIENTS * st.frames);
	assert_int_equal(atomic_load(&st.delivered) + atomic_load(&st.refused), atomic_load(&st.sent));
	assert_int_equal(atomic_load(&st.disorder), 0);
	assert_int_equal(tu_stats(srv).send_to_gone, 0);
	for (int i = 0; i < CLIENTS; i++)
		close(st.c[i].fd);
	tu_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addrtab_threads),
		cmocka_unit_test(test_send_to_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
