/* The engine and cross-shard calls: configuration errors, placement,
 * start/stop in every state (asleep, busy, from a signal, with the caller
 * as shard 0), call/reply and the call limit, broadcast all-or-nothing,
 * ring-full backpressure with nothing lost, inline payloads, external
 * submits, shared buffers going home, each shard's arena and slab pools,
 * live statistics, and timers and fds waking a sleeping shard. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/arena.h"
#include "percore/clock.h"
#include "percore/engine.h"
#include "percore/place.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "percore/shared_buf.h"
#include "percore/slab.h"
#include "rt_util.h"

static struct pc_engine *engine;

static struct pc_engine_cfg base_cfg(unsigned shards, enum pc_idle idle)
{
	struct pc_engine_cfg c;

	pc_engine_cfg_init(&c);
	c.shards = shards;
	c.oversubscribe = true;
	c.idle = idle;
	return c;
}

static void start(struct pc_engine_cfg *c)
{
	char err[200] = "";
	int rc = pc_engine_start(c, &engine, err, sizeof(err));

	if (rc)
		fprintf(stderr, "start: %s\n", err);
	assert_int_equal(rc, 0);
}

/* Wait (bounded) until cond() holds; a hang fails instead of blocking. */
static void wait_for(bool (*cond)(void), const char *what)
{
	uint64_t t0 = pc_now_ns();

	while (!cond()) {
		if (pc_now_ns() - t0 > 10000000000ull) {
			fprintf(stderr, "timed out waiting for %s\n", what);
			_exit(1);
		}
		usleep(1000);
	}
}

static bool stopping(void)
{
	return pc_engine_stopping(engine);
}

static void finish(void)
{
	wait_for(stopping, "the engine to stop");
	assert_int_equal(pc_engine_join(engine), 0);
	assert_int_equal(atomic_load(&rt_failures), 0);
}

/* ---- configuration and placement -------------------------------------- */

static void too_many_shards(struct pc_engine_cfg *c) { c->shards = PC_ENGINE_MAX_SHARDS + 1; }
static void odd_capacity(struct pc_engine_cfg *c) { c->ring_capacity = 100; }
static void tiny_capacity(struct pc_engine_cfg *c) { c->ring_capacity = 8; }
static void bad_idle(struct pc_engine_cfg *c) { c->idle = (enum pc_idle)7; }
static void bad_backend(struct pc_engine_cfg *c) { c->backend = (enum pc_backend)9; }
static void bad_policy(struct pc_engine_cfg *c) { c->placement = "bogus"; }
static void missing_cpu(struct pc_engine_cfg *c) { c->placement = "4000"; }

static void crowded(struct pc_engine_cfg *c)
{
	c->placement = "0";
	c->shards = 2;
	c->oversubscribe = false;
}

static void bad_configurations_are_refused(void **state)
{
	void (*edits[])(struct pc_engine_cfg *) = {
		too_many_shards, odd_capacity, tiny_capacity, bad_idle,
		bad_backend, bad_policy, missing_cpu, crowded,
	};
	struct pc_engine_cfg c;
	char err[200];
	(void)state;

	for (size_t i = 0; i < PC_ARRAY_LEN(edits); i++) {
		struct pc_engine *e = (struct pc_engine *)&c;

		c = base_cfg(1, PC_IDLE_SLEEP);
		edits[i](&c);
		err[0] = 0;
		assert_int_equal(pc_engine_start(&c, &e, err, sizeof(err)), -EINVAL);
		assert_null(e);
		assert_true(strlen(err) > 0); /* a reason, for the user */
	}
}

static void off_shard_calls_say_so(void **state)
{
	char byte = 0;
	(void)state;

	assert_int_equal(pc_shard_id(), -1);
	assert_int_equal(pc_shard_count(), 0);
	assert_null(pc_shard_reactor());
	assert_null(pc_shard_engine());
	assert_int_equal(pc_shard_submit(0, (pc_msg_fn)free, NULL), -EPERM);
	assert_int_equal(pc_shard_submit_copy(0, (pc_msg_fn)free, &byte, 1), -EPERM);
	assert_int_equal(pc_shard_broadcast((pc_msg_fn)free, NULL), -EPERM);
	assert_int_equal(pc_shard_flush(), -EPERM);
	assert_int_equal(pc_shard_call_limit(), 0);
	assert_null(pc_shared_buf_new(10));
	pc_shared_buf_put(NULL);
}

static void idle_names_round_trip(void **state)
{
	enum pc_idle x;
	(void)state;

	for (int i = PC_IDLE_ADAPTIVE; i <= PC_IDLE_SLEEP; i++) {
		assert_int_equal(pc_idle_parse(pc_idle_name((enum pc_idle)i), &x), 0);
		assert_int_equal(x, i);
	}
	assert_int_equal(pc_idle_parse("busy", &x), -EINVAL);
	assert_int_equal(pc_idle_parse(NULL, &x), -EINVAL);
}

static _Atomic int seen_cpu[4];

static void record_cpu(void *arg)
{
	(void)arg;
	atomic_store(&seen_cpu[pc_shard_id()], sched_getcpu());
	if (pc_shard_id() == 0)
		pc_engine_stop(pc_shard_engine());
}

static void placement_pins_or_not(void **state)
{
	struct pc_engine_cfg c = base_cfg(1, PC_IDLE_SLEEP);
	cpu_set_t set;
	int cpu = -1;
	char list[16];
	(void)state;

	sched_getaffinity(0, sizeof(set), &set);
	for (int i = CPU_SETSIZE - 1; i >= 0 && cpu < 0; i--)
		if (CPU_ISSET(i, &set))
			cpu = i;
	snprintf(list, sizeof(list), "%d", cpu);
	c.placement = list;
	c.on_start = record_cpu;
	start(&c);
	assert_int_equal(pc_engine_shard_cpu(engine, 0), cpu);
	assert_int_equal(pc_engine_shard_cpu(engine, 1), -1);
	assert_true(pc_engine_placement(engine)->pinned);
	assert_int_equal(pc_engine_placement(engine)->n, 1);
	finish();
	assert_int_equal(atomic_load(&seen_cpu[0]), cpu);
	pc_engine_destroy(engine);

	c.placement = "off";
	start(&c);
	assert_int_equal(pc_engine_shard_cpu(engine, 0), -1);
	assert_false(pc_engine_placement(engine)->pinned);
	finish();
	pc_engine_destroy(engine);
}

/* ---- stopping --------------------------------------------------------- */

static bool all_asleep(void)
{
	for (unsigned i = 0; i < pc_engine_shards(engine); i++) {
		struct pc_shard_stats st;

		pc_engine_stats_read(engine, i, &st);
		if (!st.sleeps)
			return false;
	}
	return true;
}

static void stop_while_asleep(void **state)
{
	(void)state;
	for (int idle = PC_IDLE_ADAPTIVE; idle <= PC_IDLE_SLEEP; idle += 2) {
		struct pc_engine_cfg c = base_cfg(3, (enum pc_idle)idle);

		start(&c);
		wait_for(all_asleep, "every shard to sleep");
		pc_engine_stop(engine);
		pc_engine_stop(engine); /* twice is harmless */
		finish();
		assert_int_equal(RT_SUM(engine, msgs_in), 0);
		assert_true(RT_SUM(engine, idle_ns) > 0);
		pc_engine_destroy(engine);
	}
}

/* Every message sends two more to the next shard: the rings stay full and
 * every shard stays busy until told to stop. */
static void flood(void *arg)
{
	unsigned next = ((unsigned)pc_shard_id() + 1) % pc_shard_count();

	for (int i = 0; i < 2; i++)
		if (pc_shard_submit(next, flood, arg) && pc_shard_submit(pc_shard_id(), flood, arg))
			break;
}

static void start_flood(void *arg)
{
	for (int i = 0; i < 8; i++)
		pc_shard_submit((unsigned)pc_shard_id(), flood, arg);
}

static bool busy_enough(void)
{
	return RT_SUM(engine, msgs_in) > 100000;
}

static void stop_while_busy(void **state)
{
	(void)state;
	for (int idle = PC_IDLE_ADAPTIVE; idle <= PC_IDLE_SLEEP; idle++) {
		struct pc_engine_cfg c = base_cfg(4, (enum pc_idle)idle);

		c.on_start = start_flood;
		start(&c);
		wait_for(busy_enough, "the flood to get going");
		pc_engine_stop(engine);
		finish();
		/* Every message staged either ran or is counted as left. */
		assert_int_equal(RT_SUM(engine, msgs_out),
				 RT_SUM(engine, msgs_in) + RT_SUM(engine, unrun_at_stop));
		assert_true(RT_SUM(engine, ring_full) > 0);
		pc_engine_destroy(engine);
	}
}

static void stop_from_a_signal(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);
	struct pc_engine *other;
	struct sigaction now;
	(void)state;

	start(&c);
	assert_int_equal(pc_engine_stop_on_signals(engine), 0);
	assert_int_equal(pc_engine_stop_on_signals(engine), 0);
	assert_int_equal(pc_engine_start(&c, &other, NULL, 0), 0);
	assert_int_equal(pc_engine_stop_on_signals(other), -EBUSY);
	pc_engine_stop(other);
	pc_engine_join(other);
	pc_engine_destroy(other);

	assert_int_equal(raise(SIGTERM), 0);
	finish();
	pc_engine_destroy(engine);
	/* The previous (default) handler is back. */
	assert_int_equal(sigaction(SIGTERM, NULL, &now), 0);
	assert_true(now.sa_handler == SIG_DFL);
}

static _Atomic int shard1_ran;

static void on_shard1(void *arg)
{
	(void)arg;
	RT_CHECK(pc_shard_id() == 1, "ran on %d", pc_shard_id());
	atomic_store(&shard1_ran, 1);
	pc_engine_stop(pc_shard_engine());
}

static void kick_shard1(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 0)
		RT_CHECK(pc_shard_submit(1, on_shard1, NULL) == 0, "submit failed");
}

static void caller_runs_shard0(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_ADAPTIVE);
	struct pc_engine *plain;
	(void)state;

	c.caller_is_shard0 = true;
	c.on_start = kick_shard1;
	start(&c);
	assert_int_equal(pc_shard_id(), -1);
	assert_int_equal(pc_engine_run(engine), 0);
	assert_int_equal(pc_engine_run(engine), -EINVAL);
	assert_int_equal(pc_shard_id(), -1);
	finish();
	assert_int_equal(atomic_load(&shard1_ran), 1);
	pc_engine_destroy(engine);

	c.caller_is_shard0 = false;
	c.on_start = NULL;
	start(&c);
	plain = engine;
	assert_int_equal(pc_engine_run(plain), -EINVAL);
	pc_engine_stop(plain);
	finish();
	pc_engine_destroy(plain);
}

/* ---- messages ---------------------------------------------------------- */

static intptr_t doubled(void *arg)
{
	return (intptr_t)arg * 2 + pc_shard_id();
}

static _Atomic int replies;
static int call_refused_after;

static void got_reply(void *ctx, intptr_t result)
{
	intptr_t arg = (intptr_t)ctx;
	unsigned to = (unsigned)(arg % 10);

	RT_CHECK(pc_shard_id() == 0, "reply ran on shard %d", pc_shard_id());
	RT_CHECK(result == arg * 2 + (intptr_t)to, "reply %ld for %ld", (long)result, (long)arg);
	if (atomic_fetch_add(&replies, 1) + 1 == call_refused_after + 2)
		pc_engine_stop(pc_shard_engine());
}

static void make_calls(void *arg)
{
	int n = 0, rc;
	(void)arg;

	if (pc_shard_id() != 0)
		return;
	/* Calls to shard 1 until the limit; nothing is published before this
	 * handler returns (the batch is larger), so no reply can come back
	 * early and the count is exact. */
	while ((rc = pc_shard_call(1, doubled, (void *)(intptr_t)(n * 10 + 1), got_reply,
				   (void *)(intptr_t)(n * 10 + 1))) == 0)
		n++;
	RT_CHECK(rc == -EAGAIN, "call refused with %d", rc);
	RT_CHECK((unsigned)n == pc_shard_call_limit(), "%d calls accepted, limit %u", n,
		 pc_shard_call_limit());
	call_refused_after = n;
	/* A call to oneself, and one to shard 2. */
	RT_CHECK(pc_shard_call(0, doubled, (void *)(intptr_t)700, got_reply, (void *)(intptr_t)700) == 0,
		 "self call refused");
	RT_CHECK(pc_shard_call(2, doubled, (void *)(intptr_t)42, got_reply, (void *)(intptr_t)42) == 0,
		 "call to 2 refused");
	RT_CHECK(pc_shard_call(1, NULL, NULL, got_reply, NULL) == -EINVAL, "NULL fn accepted");
	RT_CHECK(pc_shard_call(1, doubled, NULL, NULL, NULL) == -EINVAL, "NULL reply accepted");
	RT_CHECK(pc_shard_call(3, doubled, NULL, got_reply, NULL) == -EINVAL, "shard 3 accepted");
}

static void call_and_reply(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 64;
	c.publish_batch = 1000;
	c.on_start = make_calls;
	start(&c);
	finish();
	assert_int_equal(call_refused_after, 16); /* a quarter of 64 */
	assert_int_equal(atomic_load(&replies), call_refused_after + 2);
	pc_engine_destroy(engine);
}

static _Atomic unsigned bcast_hits[4], bcast_total;
static uint64_t fill_sent, fill_seen, fill_target = 5000;

static void bcast(void *arg)
{
	RT_CHECK(arg == (void *)&bcast_hits, "broadcast argument lost");
	atomic_fetch_add(&bcast_hits[pc_shard_id()], 1);
	if (atomic_fetch_add(&bcast_total, 1) + 1 == 3)
		pc_engine_stop(pc_shard_engine());
}

/* On shard 0, once shard 2 has everything: ring (0, 2) is empty again. */
static void broadcast_now(void *arg)
{
	(void)arg;
	RT_CHECK(pc_shard_broadcast(bcast, &bcast_hits) == 0, "broadcast refused");
}

static void filler(void *arg)
{
	uint64_t seq = (uint64_t)(uintptr_t)arg;

	RT_CHECK(seq == fill_seen, "filler %llu arrived, expected %llu", (unsigned long long)seq,
		 (unsigned long long)fill_seen);
	fill_seen = seq + 1;
	if (fill_seen == fill_target)
		RT_CHECK(pc_shard_submit(0, broadcast_now, NULL) == 0, "submit to 0");
}

/* Shard 0 keeps ring (0, 2) full: submits until refused, then again on
 * the next turn, until fill_target have gone. The first time it also
 * tries a broadcast while the ring is full: refused, nobody gets it. */
static void fill_ring(void *arg)
{
	int rc = 0;
	unsigned accepted = 0;
	static int round;
	(void)arg;

	while (fill_sent < fill_target &&
	       (rc = pc_shard_submit(2, filler, (void *)(uintptr_t)fill_sent)) == 0) {
		fill_sent++;
		accepted++;
	}
	if (round++ == 0) {
		/* Capacity 64 minus the 16 kept for replies; nothing was
		 * published yet, so nothing drained. */
		RT_CHECK(accepted == 48, "%u accepted into an empty ring of 64", accepted);
		RT_CHECK(rc == -EAGAIN, "full ring said %d", rc);
		RT_CHECK(pc_shard_broadcast(bcast, &bcast_hits) == -EAGAIN, "broadcast into a full ring");
	}
	if (fill_sent < fill_target)
		pc_reactor_defer(pc_shard_reactor(), fill_ring, NULL);
}

static void start_fill(void *arg)
{
	if (pc_shard_id() == 0)
		fill_ring(arg);
}

static void backpressure_and_broadcast(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_ADAPTIVE);
	(void)state;

	c.ring_capacity = 64;
	c.publish_batch = 1000;
	c.on_start = start_fill;
	start(&c);
	finish();
	/* Every one arrived, once, in order, despite the refusals. */
	assert_int_equal(fill_seen, fill_target);
	assert_true(RT_SUM(engine, ring_full) >= 2);
	/* The refused broadcast reached nobody, the later one everybody. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(atomic_load(&bcast_hits[i]), 1);
	pc_engine_destroy(engine);
}

static _Atomic int copies_ok;

static void check_copy(void *data)
{
	unsigned char *b = data;

	RT_CHECK(((uintptr_t)data & 7) == 0, "payload misaligned");
	for (int i = 0; i < PC_MSG_INLINE; i++)
		RT_CHECK(b[i] == (unsigned char)(i * 7 + 1), "payload byte %d wrong", i);
	atomic_fetch_add(&copies_ok, 1);
	pc_engine_stop(pc_shard_engine());
}

static void empty_copy(void *data)
{
	(void)data;
	atomic_fetch_add(&copies_ok, 1);
}

static void send_copies(void *arg)
{
	unsigned char b[PC_MSG_INLINE + 1];
	(void)arg;

	if (pc_shard_id() != 0)
		return;
	for (int i = 0; i <= PC_MSG_INLINE; i++)
		b[i] = (unsigned char)(i * 7 + 1);
	RT_CHECK(pc_shard_submit_copy(1, check_copy, b, PC_MSG_INLINE + 1) == -EMSGSIZE, "49 bytes taken");
	RT_CHECK(pc_shard_submit_copy(1, check_copy, NULL, 4) == -EINVAL, "NULL data taken");
	RT_CHECK(pc_shard_submit_copy(1, NULL, b, 4) == -EINVAL, "NULL fn taken");
	RT_CHECK(pc_shard_submit_copy(9, check_copy, b, 4) == -EINVAL, "shard 9 taken");
	RT_CHECK(pc_shard_submit(1, NULL, NULL) == -EINVAL, "NULL fn taken");
	RT_CHECK(pc_shard_broadcast(NULL, NULL) == -EINVAL, "NULL broadcast taken");
	RT_CHECK(pc_shard_submit_copy(1, empty_copy, NULL, 0) == 0, "empty copy refused");
	RT_CHECK(pc_shard_submit_copy(1, check_copy, b, PC_MSG_INLINE) == 0, "48 bytes refused");
	/* Published at once instead of at the end of the turn. */
	RT_CHECK(pc_shard_flush() == 1, "one ring to publish");
	RT_CHECK(pc_shard_flush() == 0, "nothing left to publish");
}

static void inline_payloads(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);
	(void)state;

	c.on_start = send_copies;
	start(&c);
	finish();
	assert_int_equal(atomic_load(&copies_ok), 2);
	pc_engine_destroy(engine);
}

static _Atomic int ext_ran[3];
static _Atomic int hold;
static int ext_expect;

static void ext_job(void *arg)
{
	unsigned to = (unsigned)(uintptr_t)arg;

	RT_CHECK((unsigned)pc_shard_id() == to, "external job for %u ran on %d", to, pc_shard_id());
	atomic_fetch_add(&ext_ran[to], 1);
}

static void hold_shard(void *arg)
{
	(void)arg;
	while (atomic_load(&hold))
		sched_yield();
}

static bool ext_all_ran(void)
{
	return atomic_load(&ext_ran[0]) == 1 && atomic_load(&ext_ran[1]) == 1 &&
	       atomic_load(&ext_ran[2]) == ext_expect;
}

static void external_submit(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_SLEEP);
	int n = 0, rc;
	(void)state;

	c.ring_capacity = 64;
	start(&c);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(pc_engine_submit(engine, i, ext_job, (void *)(uintptr_t)i), 0);
	assert_int_equal(pc_engine_submit(engine, 3, ext_job, NULL), -EINVAL);
	assert_int_equal(pc_engine_submit(engine, 0, NULL, NULL), -EINVAL);
	/* Hold shard 2 inside a message, then fill its external ring. */
	atomic_store(&hold, 1);
	assert_int_equal(pc_engine_submit(engine, 2, hold_shard, NULL), 0);
	while ((rc = pc_engine_submit(engine, 2, ext_job, (void *)(uintptr_t)2)) == 0)
		n++;
	assert_int_equal(rc, -EAGAIN);
	/* The holder's slot is not free until its batch is done (nor the
	 * earlier job's, when both were taken in one batch). */
	assert_true(n == 63 || n == 62);
	ext_expect = 1 + n;
	assert_int_equal(pc_engine_submit(engine, 2, ext_job, (void *)(uintptr_t)2), -EAGAIN);
	atomic_store(&hold, 0);
	wait_for(ext_all_ran, "every external job to run");
	pc_engine_stop(engine);
	assert_int_equal(pc_engine_submit(engine, 0, ext_job, NULL), -ESHUTDOWN);
	finish();
	pc_engine_destroy(engine);
}

/* ---- shared buffers ---------------------------------------------------- */

enum { NBUF = 200 };
static _Atomic unsigned bufs_read;

static void read_buf(void *arg)
{
	struct pc_shared_buf *b = arg;
	const unsigned char *d = pc_shared_buf_data(b);

	RT_CHECK(pc_shared_buf_len(b) == 1000, "length %zu", pc_shared_buf_len(b));
	for (size_t i = 0; i < 1000; i++)
		if (d[i] != (unsigned char)i) {
			rt_fail("byte %zu wrong", i);
			break;
		}
	pc_shared_buf_put(b);
	if (atomic_fetch_add(&bufs_read, 1) + 1 == NBUF * 2)
		pc_engine_stop(pc_shard_engine());
}

static struct pc_shared_buf *kept;

static void share_bufs(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	for (int i = 0; i < NBUF; i++) {
		struct pc_shared_buf *b = pc_shared_buf_new(1000);
		unsigned char *d = (unsigned char *)pc_shared_buf_data(b);

		for (size_t k = 0; k < 1000; k++)
			d[k] = (unsigned char)k;
		pc_shared_buf_get(b);
		RT_CHECK(pc_shared_buf_refs(b) == 2, "refs %u", pc_shared_buf_refs(b));
		/* The creator's reference goes to shard 2; shard 1 gets a
		 * new one. */
		RT_CHECK(pc_shard_submit(1, read_buf, b) == 0, "submit to 1");
		RT_CHECK(pc_shard_submit(2, read_buf, b) == 0, "submit to 2");
	}
	kept = pc_shared_buf_new(0);
	RT_CHECK(kept && pc_shared_buf_len(kept) == 0, "empty buffer");
	RT_CHECK(pc_shared_buf_new(SIZE_MAX) == NULL, "huge buffer");
}

static void shared_buffers_go_home(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_ADAPTIVE);
	struct pc_shard_stats st;
	(void)state;

	c.ring_capacity = 1024;
	c.on_start = share_bufs;
	start(&c);
	finish();
	assert_int_equal(atomic_load(&bufs_read), NBUF * 2);
	/* Shard 0 received nothing but buffers coming home, in batches. It
	 * may have stopped before the last batch came: then it freed those
	 * at stop, still without running anything else. */
	pc_engine_stats_read(engine, 0, &st);
	assert_true(st.msgs_in <= NBUF);
	assert_int_equal(RT_SUM(engine, unrun_at_stop), 0);
	/* Off any shard, the last reference frees directly. LeakSanitizer
	 * checks every buffer was freed once. */
	pc_shared_buf_put(kept);
	pc_engine_destroy(engine);
}

/* ---- each shard's own memory ----------------------------------------- */

static _Atomic int mem_ok;

static void use_shard_memory(void *arg)
{
	struct pc_slab *p100 = pc_shard_slab(100), *p128 = pc_shard_slab(128), *p4k;
	struct pc_slab_stats st;
	struct pc_arena *a = pc_shard_arena();
	void *o;
	(void)arg;

	RT_CHECK(a != NULL, "no arena");
	struct pc_arena_mark m = pc_arena_mark(a);
	char *x = pc_arena_alloc(a, 1000, 64);
	RT_CHECK(x && ((uintptr_t)x & 63) == 0, "arena alloc");
	memset(x, 1, 1000);
	RT_CHECK(pc_arena_rewind(a, m) == 0, "rewind");
	/* One pool per power-of-two class, the same for every size in it. */
	RT_CHECK(p100 && p100 == p128, "class of 100 is the class of 128");
	pc_slab_stats(p100, &st);
	RT_CHECK(st.size == 128, "class size %zu", st.size);
	p4k = pc_shard_slab(PC_SHARD_SLAB_MAX);
	RT_CHECK(p4k && p4k != p100, "4096 class");
	RT_CHECK(pc_shard_slab(0) == NULL, "size 0");
	RT_CHECK(pc_shard_slab(PC_SHARD_SLAB_MAX + 1) == NULL, "over the largest class");
	o = pc_slab_alloc(p100);
	RT_CHECK(o && ((uintptr_t)o & 63) == 0, "slab alloc");
	pc_slab_free(p100, o);
	RT_CHECK(pc_slab_validate(p100) == 0, "pool valid");
	/* Another shard's pools are its own. */
	if (pc_shard_id() == 0)
		RT_CHECK(pc_shard_submit(1, use_shard_memory, p100) == 0, "to shard 1");
	else
		RT_CHECK(p100 != arg, "shard 1 got shard 0's pool");
	if (atomic_fetch_add(&mem_ok, 1) + 1 == 2)
		pc_engine_stop(pc_shard_engine());
}

static void shard_memory(void **state)
{
	struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);
	(void)state;

	assert_null(pc_shard_arena());
	assert_null(pc_shard_slab(64));
	start(&c);
	assert_int_equal(pc_engine_submit(engine, 0, use_shard_memory, NULL), 0);
	finish();
	assert_int_equal(atomic_load(&mem_ok), 2);
	pc_engine_destroy(engine);
}

/* ---- live statistics, timers and fds ------------------------------------ */

static _Atomic int stats_ok;

static void stats_done(const struct pc_shard_stats *st, unsigned n, void *arg)
{
	RT_CHECK(arg == &stats_ok, "argument lost");
	RT_CHECK(pc_shard_id() == 1, "done ran on %d", pc_shard_id());
	RT_CHECK(n == 3, "%u stats", n);
	for (unsigned i = 0; i < n; i++) {
		RT_CHECK(st[i].shard == i, "stats %u say shard %u", i, st[i].shard);
		RT_CHECK(st[i].turns > 0, "shard %u never turned", i);
	}
	atomic_store(&stats_ok, 1);
	pc_engine_stop(pc_shard_engine());
}

static void ask_stats(void *arg)
{
	(void)arg;
	RT_CHECK(pc_engine_stats(NULL, NULL) == -EINVAL, "NULL callback taken");
	RT_CHECK(pc_engine_stats(stats_done, &stats_ok) == 0, "stats refused");
}

static void live_statistics(void **state)
{
	struct pc_engine_cfg c = base_cfg(3, PC_IDLE_SLEEP);
	(void)state;

	assert_int_equal(pc_engine_stats(stats_done, NULL), -EPERM);
	start(&c);
	usleep(10000);
	assert_int_equal(pc_engine_submit(engine, 1, ask_stats, NULL), 0);
	finish();
	assert_int_equal(atomic_load(&stats_ok), 1);
	struct pc_shard_stats st;
	assert_int_equal(pc_engine_stats_read(engine, 3, &st), -EINVAL);
	assert_int_equal(pc_engine_stats_read(engine, 1, &st), 0);
	assert_int_equal(st.shard, 1);
	assert_true(st.busy_ns > 0 && st.idle_ns > 0 && st.sleeps > 0);
	pc_engine_destroy(engine);
}

struct timed {
	struct pc_timer t;
	uint64_t armed_ns;
	uint64_t fired_ns;
};
static struct timed timed;

static void timer_fired(struct pc_wheel *w, struct pc_timer *t)
{
	struct timed *x = (struct timed *)((char *)t - offsetof(struct timed, t));
	(void)w;

	x->fired_ns = pc_now_ns();
	pc_engine_stop(pc_shard_engine());
}

static void arm_timer(void *arg)
{
	(void)arg;
	if (pc_shard_id() != 0)
		return;
	pc_timer_init(&timed.t, timer_fired);
	timed.armed_ns = pc_now_ns();
	pc_reactor_timer_after(pc_shard_reactor(), &timed.t, 5000000);
}

struct piped {
	int p[2];
	_Atomic int got;
};
static struct piped piped;

static void pipe_ready(struct pc_reactor *r, int fd, unsigned ev, void *arg)
{
	char c;
	(void)arg;

	RT_CHECK(ev & PC_EV_IN, "events %x", ev);
	RT_CHECK(read(fd, &c, 1) == 1 && c == 'k', "pipe byte");
	pc_reactor_del(r, fd);
	atomic_store(&piped.got, 1);
	pc_engine_stop(pc_shard_engine());
}

static void watch_pipe(void *arg)
{
	(void)arg;
	if (pc_shard_id() == 1)
		RT_CHECK(pc_reactor_add(pc_shard_reactor(), piped.p[0], PC_EV_IN, pipe_ready, NULL) == 0,
			 "add pipe");
}

static bool shard1_asleep(void)
{
	struct pc_shard_stats st;

	pc_engine_stats_read(engine, 1, &st);
	return st.sleeps > 0;
}

static void timers_and_fds_wake_sleepers(void **state)
{
	(void)state;
	for (int b = PC_BACKEND_EPOLL; b <= PC_BACKEND_URING; b++) {
		struct pc_engine_cfg c = base_cfg(2, PC_IDLE_SLEEP);

		c.backend = (enum pc_backend)b;
		c.on_start = arm_timer;
		timed.fired_ns = 0;
		start(&c);
		finish();
		assert_true(timed.fired_ns >= timed.armed_ns + 5000000);
		pc_engine_destroy(engine);

		c.on_start = watch_pipe;
		assert_int_equal(pipe2(piped.p, O_NONBLOCK | O_CLOEXEC), 0);
		atomic_store(&piped.got, 0);
		start(&c);
		wait_for(shard1_asleep, "shard 1 to sleep");
		assert_int_equal(write(piped.p[1], "k", 1), 1);
		finish();
		assert_int_equal(atomic_load(&piped.got), 1);
		close(piped.p[0]);
		close(piped.p[1]);
		pc_engine_destroy(engine);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_configurations_are_refused),
		cmocka_unit_test(off_shard_calls_say_so),
		cmocka_unit_test(idle_names_round_trip),
		cmocka_unit_test(placement_pins_or_not),
		cmocka_unit_test(stop_while_asleep),
		cmocka_unit_test(stop_while_busy),
		cmocka_unit_test(stop_from_a_signal),
		cmocka_unit_test(caller_runs_shard0),
		cmocka_unit_test(call_and_reply),
		cmocka_unit_test(backpressure_and_broadcast),
		cmocka_unit_test(inline_payloads),
		cmocka_unit_test(external_submit),
		cmocka_unit_test(shared_buffers_go_home),
		cmocka_unit_test(shard_memory),
		cmocka_unit_test(live_statistics),
		cmocka_unit_test(timers_and_fds_wake_sleepers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
