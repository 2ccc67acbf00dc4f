/* SPDX-License-Identifier: MIT */
/* pc_spsc across two threads: a producer sends sequence-numbered 64-byte
 * messages with a random mix of push, burst, bulk and stage/publish; the
 * consumer receives them with a mix of pop, burst, bulk, take/release and
 * peek, and checks that every message arrives exactly once, in order, with
 * its whole payload intact (a torn or stale slot shows as a bad payload).
 * PC_STRESS_ITEMS overrides how many messages move; a run stops sending
 * early when its time limit passes (conc/stress.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "percore/spsc.h"
#include "conc/stress.h"

struct msg {
	uint64_t seq;
	uint64_t word[7]; /* each a function of seq */
};

PC_SPSC_TYPED(msgq, struct msg)

struct run {
	struct msgq *q;
	uint64_t items;            /* asked for */
	_Atomic uint64_t total;    /* to receive: items, or what was sent in time */
	struct stress_clock clock;
	/* written by the consumer, read after join */
	uint64_t received, bad_seq, bad_payload, first_bad;
};

static void fill(struct msg *m, uint64_t seq)
{
	m->seq = seq;
	for (unsigned i = 0; i < 7; i++)
		m->word[i] = seq * 0x9e3779b97f4a7c15ull + i;
}

static void *producer(void *arg)
{
	struct run *run = arg;
	struct msg batch[40];
	uint64_t next = 0, rnd = 0x1234567;
	struct pc_backoff spins = {0};

	for (unsigned turn = 0; next < run->items; turn++) {
		unsigned want = (unsigned)(stress_rand(&rnd) % 40) + 1, moved = 0;

		if (want > run->items - next)
			want = (unsigned)(run->items - next);
		switch (stress_rand(&rnd) % 4) {
		case 0:
			fill(batch, next);
			moved = msgq_push(run->q, batch) == 0;
			break;
		case 1:
			for (unsigned i = 0; i < want; i++)
				fill(&batch[i], next + i);
			moved = msgq_push_burst(run->q, batch, want);
			break;
		case 2:
			for (unsigned i = 0; i < want; i++)
				fill(&batch[i], next + i);
			moved = msgq_push_bulk(run->q, batch, want) == 0 ? want : 0;
			break;
		default:
			for (struct msg *m; moved < want && (m = msgq_stage(run->q)); moved++)
				fill(m, next + moved);
			msgq_publish(run->q);
			break;
		}
		next += moved;
		if (moved == 0)
			pc_backoff_wait(&spins);
		if (turn % 256 == 255 && stress_clock_expired(&run->clock))
			break;
	}
	atomic_store_explicit(&run->total, next, memory_order_relaxed);
	return NULL;
}

static void check(struct run *run, const struct msg *m)
{
	uint64_t want = run->received++;

	if (m->seq != want) {
		if (run->bad_seq++ == 0)
			run->first_bad = want;
		return;
	}
	for (unsigned i = 0; i < 7; i++) {
		if (m->word[i] != want * 0x9e3779b97f4a7c15ull + i) {
			if (run->bad_payload++ == 0)
				run->first_bad = want;
			return;
		}
	}
}

static void *consumer(void *arg)
{
	struct run *run = arg;
	struct msg batch[40], *m;
	uint64_t rnd = 0x7654321;
	struct pc_backoff spins = {0};

	while (run->received < atomic_load_explicit(&run->total, memory_order_relaxed)) {
		unsigned want = (unsigned)(stress_rand(&rnd) % 40) + 1, got = 0;

		switch (stress_rand(&rnd) % 5) {
		case 0:
			got = msgq_pop(run->q, batch) == 0;
			break;
		case 1:
			got = msgq_pop_burst(run->q, batch, want);
			break;
		case 2:
			got = msgq_pop_bulk(run->q, batch, want) == 0 ? want : 0;
			break;
		case 3:
			/* peek must show what the next take hands out */
			if ((m = msgq_peek(run->q)) && m->seq != run->received && run->bad_seq++ == 0)
				run->first_bad = run->received;
			/* fall through */
		default:
			for (; got < want && (m = msgq_take(run->q)); got++)
				check(run, m);
			msgq_release(run->q);
			if (got)
				continue;
			break;
		}
		for (unsigned i = 0; i < got; i++)
			check(run, &batch[i]);
		if (got == 0)
			pc_backoff_wait(&spins);
	}
	return NULL;
}

static void run_pair(size_t cap, uint64_t items)
{
	struct run run = {.q = msgq_create(cap), .items = items};
	pthread_t p, c;
	uint64_t sent;

	assert_non_null(run.q);
	atomic_init(&run.total, items);
	stress_clock_start(&run.clock);
	assert_int_equal(pthread_create(&c, NULL, consumer, &run), 0);
	assert_int_equal(pthread_create(&p, NULL, producer, &run), 0);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	if (run.bad_seq || run.bad_payload)
		print_error("first bad message: %" PRIu64 "\n", run.first_bad);
	assert_int_equal(run.bad_seq, 0);
	assert_int_equal(run.bad_payload, 0);
	sent = atomic_load(&run.total);
	if (sent < items)
		print_message("time limit: %" PRIu64 " of %" PRIu64 " messages sent\n", sent, items);
	assert_int_equal(run.received, sent);
	assert_true(sent >= stress_min_moved(items));
	assert_int_equal(pc_spsc_size(&run.q->ring), 0);
	assert_int_equal(msgq_validate(run.q, NULL, 0), 0);
	msgq_destroy(run.q);
}

/* A small ring wraps around once per 64 messages: thousands of laps even
 * under ThreadSanitizer. */
static void one_producer_one_consumer_small_ring(void **state)
{
	uint64_t items = stress_items(3000000, 1000000);

	(void)state;
	print_message("spsc 1P1C: %" PRIu64 " messages through 64 slots\n", items);
	run_pair(64, items);
}

/* A larger ring lets the sides drift apart, so the cached indices go stale
 * for longer. */
static void one_producer_one_consumer_large_ring(void **state)
{
	uint64_t items = stress_items(3000000, 1000000);

	(void)state;
	print_message("spsc 1P1C: %" PRIu64 " messages through 4096 slots\n", items);
	run_pair(4096, items);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_producer_one_consumer_small_ring),
		cmocka_unit_test(one_producer_one_consumer_large_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
