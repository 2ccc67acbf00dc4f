/* SPDX-License-Identifier: MIT */
/* A forwarding key-value server on the public API, under load that fills
 * every ring: nothing may be lost and every session answered in order.
 *
 * Each shard owns the keys that hash to it. A session's shard answers its
 * own keys at once and forwards the others: GETs with pc_shard_call_q
 * (the reply comes back here and fills the session's reply slot), SETs
 * with pc_shard_send (the owner fills the slot from there with
 * pc_reply_fill_to). Rings of 16 and a small call_limit make forwarding
 * fail often for a moment: the handler then gives its reply slot back,
 * leaves the frame unread, pauses the session and resumes it when an
 * answer comes back or the pressure ends.
 *
 * Clients write deep pipelines (64 requests at once) and check that the
 * answers come back in request order with the values their own model
 * predicts; half of them shut their side after their last pipeline, with
 * forwarded answers still on the way. Run with 2 and with 8 shards (more
 * than the CPUs here).
 *
 * Then read backpressure alone: a paused session is not read, still
 * writes, resumes with every buffered frame, and times out as idle. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "net_util.h"
#include "percore/engine.h"
#include "percore/outbox.h"
#include "percore/reactor.h"
#include "percore/reply.h"
#include "percore/session.h"
#include "percore/shard.h"

enum { OP_SET = 1, OP_GET = 2 };

struct kv_req {
	uint32_t reqno, pad;
	uint64_t key, value;
};

struct kv_ans {
	uint32_t reqno, op;
	uint64_t key, value;
};

/* ---- the server: one table per shard, touched by that shard only ------- */

#define MAX_SHARDS 8
#define TABLE 4096

struct table {
	uint64_t key[TABLE], val[TABLE];
	bool used[TABLE];
	struct pc_session *held[256]; /* sessions paused by forwarding */
	unsigned nheld;
} __attribute__((aligned(128)));

static struct table tables[MAX_SHARDS];

static unsigned owner_of(uint64_t key)
{
	return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 40) % pc_shard_count();
}

static uint64_t *slot_of(uint64_t key)
{
	struct table *t = &tables[pc_shard_id()];
	uint32_t i = (uint32_t)(key * 0x2545f4914f6cdd1dull >> 52) % TABLE;

	while (t->used[i] && t->key[i] != key)
		i = (i + 1) % TABLE;
	if (!t->used[i]) {
		t->used[i] = true;
		t->key[i] = key;
		t->val[i] = 0;
	}
	return &t->val[i];
}

/* Run the request on the owner (here): the answer's value. */
static uint64_t apply(uint32_t op, uint64_t key, uint64_t value)
{
	uint64_t *v = slot_of(key);

	if (op == OP_SET)
		*v = value;
	return *v;
}

struct fwd {
	uint64_t sid;
	uint32_t ticket, op, reqno;
	uint64_t key, value;
};

static void answer_to(uint64_t sid, const struct fwd *w, uint64_t value)
{
	struct kv_ans a = { w->reqno, w->op, w->key, value };

	pc_reply_fill_to(sid, w->ticket, w->op, 0, &a, sizeof(a));
}

static void resume_held(void)
{
	struct table *t = &tables[pc_shard_id()];

	while (t->nheld)
		pc_session_resume_read(t->held[--t->nheld]);
}

/* SET on the owner: apply and fill the session's slot from here. */
static void set_at_owner(void *arg)
{
	struct fwd *w = arg;

	answer_to(w->sid, w, apply(w->op, w->key, w->value));
	free(w);
}

/* GET on the owner: the answer rides back as the call's result. */
static intptr_t get_at_owner(void *arg)
{
	struct fwd *w = arg;

	w->value = apply(w->op, w->key, 0);
	return 0;
}

static void got_answer(void *ctx, intptr_t result)
{
	struct fwd *w = ctx;

	if (result == 0)
		answer_to(w->sid, w, w->value);
	free(w);
	resume_held(); /* a call slot came free */
}

static void on_pressure(unsigned to, bool high, void *arg)
{
	(void)to;
	(void)arg;
	if (!high)
		resume_held();
}

/* This frame cannot go on now: read it again once something gives. */
static void hold(struct pc_session *s, uint32_t ticket)
{
	struct table *t = &tables[pc_shard_id()];

	pc_reply_unreserve(s, ticket);
	if (t->nheld == 256 || pc_session_unread_frame(s)) {
		pc_session_close(s); /* cannot happen with this test's clients */
		return;
	}
	pc_session_set_data(s, t);
	t->held[t->nheld++] = s;
}

static void kv_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	struct kv_req r;
	struct fwd *w;
	uint32_t ticket;
	unsigned to;
	int rc;

	(void)user;
	if (f->len != sizeof(r) || (f->msg_id != OP_SET && f->msg_id != OP_GET)) {
		pc_session_close(s);
		return;
	}
	memcpy(&r, f->body, sizeof(r));
	if (pc_reply_reserve(s, &ticket)) {
		pc_session_close(s);
		return;
	}
	to = owner_of(r.key);
	if (to == (unsigned)pc_shard_id()) {
		struct kv_ans a = { r.reqno, f->msg_id, r.key, apply(f->msg_id, r.key, r.value) };

		pc_reply_fill(s, ticket, f->msg_id, 0, &a, sizeof(a));
		return;
	}
	w = malloc(sizeof(*w));
	if (!w) {
		pc_session_close(s);
		return;
	}
	*w = (struct fwd){ pc_session_id(s), ticket, f->msg_id, r.reqno, r.key, r.value };
	if (f->msg_id == OP_SET)
		rc = pc_shard_send(to, set_at_owner, w);
	else
		rc = pc_shard_call_q(to, get_at_owner, w, got_answer, w, NULL);
	if (rc) {
		free(w);
		hold(s, ticket);
	}
}

/* A held session that closes leaves the list. */
static void kv_close(struct pc_session *s, enum pc_close_reason why, void *user)
{
	struct table *t = pc_session_data(s);

	(void)why;
	(void)user;
	for (unsigned i = 0; t && i < t->nheld; i++)
		if (t->held[i] == s)
			t->held[i] = t->held[--t->nheld];
}

static void kv_shard_start(unsigned shard, void *user)
{
	(void)user;
	memset(&tables[shard], 0, sizeof(tables[shard]));
	pc_shard_on_pressure(on_pressure, NULL);
}

/* ---- the clients ------------------------------------------------------------ */

#define KEYS 61

struct client {
	uint16_t port;
	unsigned id, rounds, depth;
	bool half_close;
	uint64_t answered;
	int failed;
	char why[160];
};

static void client_fail(struct client *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed++)
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	uint64_t model[KEYS] = { 0 }, expect[64];
	uint32_t reqno = 0, next_answer = 0;
	uint8_t batch[64 * (PC_FRAME_HEADER_LEN + sizeof(struct kv_req))];
	uint64_t x = 0x243f6a8885a308d3ull * (c->id + 1);
	int fd = tu_connect(c->port);

	if (fd < 0) {
		client_fail(c, "connect");
		return NULL;
	}
	for (unsigned round = 0; round < c->rounds && !c->failed; round++) {
		size_t off = 0;

		/* A pipeline of `depth` requests in one write. */
		for (unsigned i = 0; i < c->depth; i++) {
			struct kv_req r;
			unsigned k;
			uint32_t op;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			k = (unsigned)(x % KEYS);
			op = (x >> 32) % 3 ? OP_GET : OP_SET;
			r = (struct kv_req){ reqno++, 0, (uint64_t)c->id << 32 | k, x >> 8 };
			if (op == OP_SET)
				model[k] = r.value;
			expect[i] = model[k];
			pc_frame_header_encode(batch + off, op, 0, sizeof(r));
			memcpy(batch + off + PC_FRAME_HEADER_LEN, &r, sizeof(r));
			off += PC_FRAME_HEADER_LEN + sizeof(r);
		}
		if (tu_send_all(fd, batch, off)) {
			client_fail(c, "send");
			break;
		}
		/* The last round: done sending (EOF) while forwarded answers are
		 * still on their way; they must all come before the close. */
		if (round + 1 == c->rounds && c->half_close)
			shutdown(fd, SHUT_WR);
		for (unsigned i = 0; i < c->depth; i++) {
			struct pc_frame f;
			uint8_t *body = NULL;
			struct kv_ans a = { 0 };

			if (tu_recv_frame(fd, &f, &body)) {
				client_fail(c, "answer %u of round %u missing", i, round);
				break;
			}
			memcpy(&a, body, f.len < sizeof(a) ? f.len : sizeof(a));
			free(body);
			if (f.len != sizeof(a) || a.reqno != next_answer)
				client_fail(c, "answer for request %u, expected %u", a.reqno,
					    next_answer);
			else if (a.value != expect[i])
				client_fail(c, "request %u: value %llx, expected %llx", a.reqno,
					    (unsigned long long)a.value,
					    (unsigned long long)expect[i]);
			next_answer++;
			c->answered++;
		}
	}
	close(fd);
	return NULL;
}

static void run_kv(unsigned shards, unsigned nclients, unsigned rounds)
{
	struct pc_server_cfg cfg;
	struct client cl[16];
	pthread_t th[16];
	struct pc_server *srv;
	uint64_t queued = 0;

	tu_cfg(&cfg, shards);
	cfg.on_frame = kv_frame;
	cfg.on_close = kv_close;
	cfg.on_shard_start = kv_shard_start;
	cfg.engine.ring_capacity = 16;
	cfg.engine.call_limit = 8;
	cfg.engine.outbox_budget = 256;
	/* 7 destinations at most: a full budget puts one over the high mark,
	 * whose low crossing then resumes the sessions held for it. */
	cfg.engine.outbox_high = 32;
	cfg.engine.outbox_low = 8;
	srv = TU_SERVE(&cfg);
	for (unsigned i = 0; i < nclients; i++) {
		cl[i] = (struct client){ .port = pc_server_port(srv), .id = i, .rounds = rounds,
					 .depth = 64, .half_close = i % 2 };
		assert_int_equal(pthread_create(&th[i], NULL, client_main, &cl[i]), 0);
	}
	for (unsigned i = 0; i < nclients; i++) {
		pthread_join(th[i], NULL);
		if (cl[i].failed)
			fprintf(stderr, "client %u: %s\n", i, cl[i].why);
		assert_int_equal(cl[i].failed, 0);
		assert_int_equal(cl[i].answered, (uint64_t)rounds * 64);
	}
	assert_int_equal(tu_stats(srv).replies_discarded, 0);
	if (getenv("KV_VERBOSE"))
		fprintf(stderr, "%u shards: frames in %llu, read holds %llu\n", shards,
			(unsigned long long)tu_stats(srv).frames_in,
			(unsigned long long)tu_stats(srv).read_holds);
	pc_server_stop(srv);
	pc_server_wait(srv);
	for (unsigned i = 0; i < shards; i++) {
		struct pc_shard_stats st;

		pc_engine_stats_read(pc_server_engine(srv), i, &st);
		queued += st.outbox_queued;
	}
	if (getenv("KV_VERBOSE"))
		fprintf(stderr, "outbox queued %llu\n", (unsigned long long)queued);
	/* Rings of 16 under pipelines of 64: the outbox must have been used. */
	assert_true(queued > 0);
	pc_server_destroy(srv);
}

static void kv_two_shards(void **state)
{
	(void)state;
	run_kv(2, 6, 12 * 4 / TU_SLOW);
}

static void kv_eight_shards(void **state)
{
	(void)state;
	run_kv(8, 8, 12 * 4 / TU_SLOW);
}

/* ---- read backpressure alone ---------------------------------------------- */

/* Frame ids: 1 "pause me" (answered, then the session holds), 2 "resume
 * the held session", 3 plain echo, 4 "unread me once". */
static struct pc_session *paused_one;
static unsigned unread_seen;

static void hold_frame(struct pc_session *s, const struct pc_frame *f, void *user)
{
	(void)user;
	switch (f->msg_id) {
	case 1:
		pc_session_send(s, 1, NULL, 0);
		pc_session_pause_read(s);
		assert_true(pc_session_read_paused(s));
		paused_one = s;
		break;
	case 2:
		if (paused_one)
			pc_session_resume_read(paused_one);
		paused_one = NULL;
		pc_session_send(s, 2, NULL, 0);
		break;
	case 4:
		/* The first offer is left unread; the second is answered. */
		if (unread_seen++ == 0) {
			assert_int_equal(pc_session_unread_frame(s), 0);
			paused_one = s;
			return;
		}
		pc_session_send(s, 4, f->body, f->len);
		break;
	default:
		pc_session_send(s, f->msg_id, f->body, f->len);
	}
}

static bool nothing_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 0;
}

static void paused_session_is_not_read_then_resumes(void **state)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	struct pc_frame f;
	int a, b;
	(void)state;

	tu_cfg(&cfg, 1);
	cfg.on_frame = hold_frame;
	srv = TU_SERVE(&cfg);
	a = TU_CLIENT(srv);
	b = TU_CLIENT(srv);
	assert_int_equal(tu_send_frame(a, 1, 0, NULL, 0), 0);
	assert_int_equal(tu_recv_frame(a, &f, NULL), 0); /* written while paused */
	assert_int_equal(f.msg_id, 1);
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(tu_send_frame(a, 3, 0, &i, sizeof(i)), 0);
	assert_true(nothing_within(a, 200 * TU_SLOW));
	assert_true(TU_WAIT_STAT(srv, read_holds, 1));
	/* b resumes a: the ten frames come back, in order. */
	assert_int_equal(tu_send_frame(b, 2, 0, NULL, 0), 0);
	assert_int_equal(tu_recv_frame(b, &f, NULL), 0);
	for (uint32_t i = 0; i < 10; i++) {
		uint8_t *body = NULL;

		assert_int_equal(tu_recv_frame(a, &f, &body), 0);
		assert_int_equal(f.msg_id, 3);
		assert_memory_equal(body, &i, sizeof(i));
		free(body);
	}
	/* Unread: the frame is held, offered again after resume, once. */
	assert_int_equal(tu_send_frame(a, 4, 0, "x", 1), 0);
	assert_int_equal(tu_send_frame(a, 3, 0, "y", 1), 0);
	assert_true(nothing_within(a, 200 * TU_SLOW));
	assert_int_equal(tu_send_frame(b, 2, 0, NULL, 0), 0);
	assert_int_equal(tu_recv_frame(b, &f, NULL), 0);
	assert_int_equal(tu_recv_frame(a, &f, NULL), 0);
	assert_int_equal(f.msg_id, 4);
	assert_int_equal(tu_recv_frame(a, &f, NULL), 0);
	assert_int_equal(f.msg_id, 3);
	assert_int_equal(unread_seen, 2);
	close(a);
	close(b);
	tu_stop(srv);
}

static void paused_session_times_out(void **state)
{
	struct pc_server_cfg cfg;
	struct pc_server *srv;
	struct pc_frame f;
	int a;
	(void)state;

	tu_cfg(&cfg, 1);
	cfg.on_frame = hold_frame;
	cfg.idle_timeout_ms = 100;
	srv = TU_SERVE(&cfg);
	a = TU_CLIENT(srv);
	paused_one = NULL;
	assert_int_equal(tu_send_frame(a, 1, 0, NULL, 0), 0);
	assert_int_equal(tu_recv_frame(a, &f, NULL), 0);
	assert_true(tu_closed(a));
	assert_true(TU_WAIT_STAT(srv, closed_reason[PC_CLOSE_IDLE], 1));
	paused_one = NULL;
	close(a);
	tu_stop(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(paused_session_is_not_read_then_resumes),
		cmocka_unit_test(paused_session_times_out),
		cmocka_unit_test(kv_two_shards),
		cmocka_unit_test(kv_eight_shards),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
