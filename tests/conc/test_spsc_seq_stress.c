/* SPDX-License-Identifier: MIT */
/* pc_spsc in slot-sequence mode across two threads: the producer stages
 * sequence-numbered 64-byte messages in random batches and publishes each
 * batch; the consumer takes them in random batches (peeking now and then)
 * and releases, checking that every message arrives exactly once, in order,
 * with its whole payload (a slot read before its contents were visible, or
 * an old lap's word taken for a new one, shows as a bad payload or a bad
 * number). A second run passes one message at a time, the consumer polling
 * the very slot the producer writes next: the runtime's latency path.
 * PC_STRESS_ITEMS overrides how many messages move; a run stops sending
 * early when its time limit passes (conc/stress.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "percore/spsc_seq.h"
#include "conc/stress.h"

struct msg {
	uint64_t n;
	pc_spsc_seq_t seq;
	uint32_t check;
	uint64_t word[6]; /* each a function of n */
} __attribute__((aligned(64)));

PC_SPSC_SEQ_TYPED(msgq, struct msg, seq)

struct run {
	struct msgq q;
	uint64_t items;            /* asked for */
	_Atomic uint64_t total;    /* to receive: items, or what was sent in time */
	struct stress_clock clock;
	unsigned max_batch;  /* 1: one message at a time */
	/* written by the consumer, read after join */
	uint64_t received, bad_seq, bad_payload, first_bad;
};

static uint64_t word_of(uint64_t n, unsigned i)
{
	return n * 0x9e3779b97f4a7c15ull + i;
}

static void fill(struct msg *m, uint64_t n)
{
	m->n = n;
	m->check = (uint32_t)~n;
	for (unsigned i = 0; i < 6; i++)
		m->word[i] = word_of(n, i);
}

static void *producer(void *arg)
{
	struct run *run = arg;
	uint64_t next = 0, rnd = 0x1234567;
	struct pc_backoff spins = {0};

	for (unsigned turn = 0; next < run->items; turn++) {
		unsigned want = (unsigned)(stress_rand(&rnd) % run->max_batch) + 1, moved = 0;
		struct msg *m;

		if (want > run->items - next)
			want = (unsigned)(run->items - next);
		for (; moved < want && (m = msgq_stage(&run->q)); moved++)
			fill(m, next + moved);
		msgq_publish(&run->q);
		next += moved;
		if (moved == 0)
			pc_backoff_wait(&spins);
		if (turn % 256 == 255 && stress_clock_expired(&run->clock))
			break;
	}
	atomic_store_explicit(&run->total, next, memory_order_relaxed);
	return NULL;
}

static bool payload_ok(const struct msg *m, uint64_t n)
{
	if (m->check != (uint32_t)~n)
		return false;
	for (unsigned i = 0; i < 6; i++)
		if (m->word[i] != word_of(n, i))
			return false;
	return true;
}

/* The next message must be number `received`, its payload intact. */
static void check(struct run *run, const struct msg *m)
{
	uint64_t want = run->received++;
	bool in_order = m->n == want;

	if (in_order && payload_ok(m, want))
		return;
	if (run->bad_seq + run->bad_payload == 0)
		run->first_bad = want;
	if (in_order)
		run->bad_payload++;
	else
		run->bad_seq++;
}

static void *consumer(void *arg)
{
	struct run *run = arg;
	uint64_t rnd = 0x7654321;
	struct pc_backoff spins = {0};
	struct msg *m;

	while (run->received < atomic_load_explicit(&run->total, memory_order_relaxed)) {
		unsigned want = (unsigned)(stress_rand(&rnd) % 40) + 1, got = 0;

		/* peek must show what the next take hands out */
		if (stress_rand(&rnd) % 4 == 0 && (m = msgq_peek(&run->q)) &&
		    m->n != run->received && run->bad_seq++ == 0)
			run->first_bad = run->received;
		for (; got < want && (m = msgq_take(&run->q)); got++)
			check(run, m);
		msgq_release(&run->q);
		if (got == 0)
			pc_backoff_wait(&spins);
	}
	return NULL;
}

static void run_pair(size_t cap, uint64_t items, unsigned max_batch)
{
	/* aligned: the ring's blocks are cache-aligned */
	struct run *run = aligned_alloc(_Alignof(struct run), sizeof(*run));
	struct msg *buf = aligned_alloc(64, cap * sizeof(struct msg));
	pthread_t p, c;
	uint64_t sent;

	assert_non_null(run);
	assert_non_null(buf);
	memset(run, 0, sizeof(*run));
	assert_int_equal(msgq_init(&run->q, buf, cap), 0);
	run->items = items;
	atomic_init(&run->total, items);
	stress_clock_start(&run->clock);
	run->max_batch = max_batch;
	assert_int_equal(pthread_create(&c, NULL, consumer, run), 0);
	assert_int_equal(pthread_create(&p, NULL, producer, run), 0);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	if (run->bad_seq || run->bad_payload)
		print_error("first bad message: %" PRIu64 "\n", run->first_bad);
	assert_int_equal(run->bad_seq, 0);
	assert_int_equal(run->bad_payload, 0);
	sent = atomic_load(&run->total);
	if (sent < items)
		print_message("time limit: %" PRIu64 " of %" PRIu64 " messages sent\n", sent, items);
	assert_int_equal(run->received, sent);
	assert_true(sent >= stress_min_moved(items));
	assert_null(msgq_take(&run->q)); /* nothing beyond the last */
	assert_int_equal(msgq_size(&run->q), 0);
	assert_int_equal(msgq_validate(&run->q, NULL, 0), 0);
	free(buf);
	free(run);
}

/* 16 slots: a lap every 16 messages, so every slot's word is rewritten
 * hundreds of thousands of times (tens of thousands under TSan). */
static void batches_through_a_small_ring(void **state)
{
	uint64_t items = stress_items(2000000, 1000000);

	(void)state;
	print_message("spsc seq 1P1C: %" PRIu64 " messages through 16 slots, batches\n", items);
	run_pair(16, items, 40);
}

/* A ring larger than any batch: the sides drift apart. */
static void batches_through_a_large_ring(void **state)
{
	uint64_t items = stress_items(2000000, 1000000);

	(void)state;
	print_message("spsc seq 1P1C: %" PRIu64 " messages through 1024 slots, batches\n", items);
	run_pair(1024, items, 40);
}

/* One message per publish: the consumer mostly waits on the word of the
 * slot the producer is about to write. */
static void one_at_a_time(void **state)
{
	uint64_t items = stress_items(1000000, 400000);

	(void)state;
	print_message("spsc seq 1P1C: %" PRIu64 " messages through 64 slots, one by one\n", items);
	run_pair(64, items, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(batches_through_a_small_ring),
		cmocka_unit_test(batches_through_a_large_ring),
		cmocka_unit_test(one_at_a_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
