/* SPDX-License-Identifier: MIT */
/* Cross-shard messages: call/reply and the call limit, broadcast all or
 * nothing, ring-full backpressure with nothing lost and nothing out of
 * order, inline payloads and their limits, shared buffers going home to
 * their owner, and each shard's own arena and slab pools. */
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
#include "percore/reactor.h"
#include "percore/shard.h"
#include "percore/shared_buf.h"
#include "percore/slab.h"
#include "engine_util.h"

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
	struct pc_shard_stats before, after;
	(void)arg;

	pc_engine_stats_read(pc_shard_engine(), 0, &before);
	while (fill_sent < fill_target &&
	       (rc = pc_shard_submit(2, filler, (void *)(uintptr_t)fill_sent)) == 0) {
		fill_sent++;
		accepted++;
	}
	if (round++ == 0) {
		/* The first finds the ring empty and goes by the pair's
		 * mailbox; so may the next ones, while shard 2 takes each
		 * before the next is sent (a slow or emulated sender). Then
		 * capacity 64 minus the 16 kept for replies, PC_MSG_PACK to a
		 * slot (one function): nothing was published yet, so nothing
		 * drained. */
		uint64_t mails;

		pc_engine_stats_read(pc_shard_engine(), 0, &after);
		mails = after.mail_out - before.mail_out;
		RT_CHECK(mails >= 1 && accepted == mails + 48 * PC_MSG_PACK,
			 "%u accepted into an empty ring of 64, %llu of them by mail", accepted,
			 (unsigned long long)mails);
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
	RT_CHECK(pc_slab_validate(p100, NULL, 0) == 0, "pool valid");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(call_and_reply),
		cmocka_unit_test(backpressure_and_broadcast),
		cmocka_unit_test(inline_payloads),
		cmocka_unit_test(shared_buffers_go_home),
		cmocka_unit_test(shard_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
