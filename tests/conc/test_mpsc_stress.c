/* SPDX-License-Identifier: MIT */
/* pc_mpsc with 2 and 4 producers and one consumer (more threads than this
 * machine's cores is fine): each producer sends sequence-numbered items
 * with a check word; the consumer, popping singly and in bursts, checks
 * that each producer's items arrive exactly once and in the order sent,
 * intact. PC_STRESS_ITEMS overrides the total item count; producers stop
 * early when the run's time limit passes (conc/stress.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "percore/mpsc.h"
#include "conc/stress.h"

#define MAX_PRODUCERS 8

struct item {
	uint32_t producer;
	uint32_t pad;
	uint64_t seq;
	uint64_t check;
};

PC_MPSC_TYPED(itemq, struct item)

struct run {
	struct itemq *q;
	unsigned producers;
	uint64_t per_producer;     /* asked for */
	_Atomic uint64_t total;    /* to receive: less what producers cut short */
	uint64_t sent[MAX_PRODUCERS]; /* each producer's own, read after join */
	struct stress_clock clock;
	/* consumer only, read after join */
	uint64_t next[MAX_PRODUCERS];
	uint64_t bad;
};

struct producer_arg {
	struct run *run;
	uint32_t id;
};

static uint64_t check_word(uint32_t producer, uint64_t seq)
{
	return (seq * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)producer << 56);
}

static void *producer(void *arg)
{
	struct producer_arg *pa = arg;
	struct run *run = pa->run;
	struct pc_backoff spins = {0};

	uint64_t seq = 0;

	for (unsigned turn = 0; seq < run->per_producer; turn++) {
		struct item it = {.producer = pa->id, .seq = seq,
				  .check = check_word(pa->id, seq)};

		if (itemq_push(run->q, &it) == 0)
			seq++;
		else
			pc_backoff_wait(&spins);
		if (turn % 256 == 255 && stress_clock_expired(&run->clock))
			break;
	}
	run->sent[pa->id] = seq;
	atomic_fetch_sub_explicit(&run->total, run->per_producer - seq, memory_order_relaxed);
	return NULL;
}

static void take(struct run *run, const struct item *it)
{
	if (it->producer >= run->producers || it->seq != run->next[it->producer] ||
	    it->check != check_word(it->producer, it->seq)) {
		run->bad++;
		return;
	}
	run->next[it->producer]++;
}

static void consume(struct run *run)
{
	uint64_t seen = 0, rnd = 99;
	struct item batch[32];
	struct pc_backoff spins = {0};

	while (seen < atomic_load_explicit(&run->total, memory_order_relaxed)) {
		unsigned got;

		if (stress_rand(&rnd) % 2)
			got = itemq_pop(run->q, batch) == 0;
		else
			got = itemq_pop_burst(run->q, batch, (unsigned)(stress_rand(&rnd) % 32) + 1);
		for (unsigned i = 0; i < got; i++)
			take(run, &batch[i]);
		seen += got;
		if (!got)
			pc_backoff_wait(&spins);
	}
}

static void run_producers(unsigned producers, size_t cap, uint64_t total)
{
	struct run run = {.q = itemq_create(cap), .producers = producers,
			  .per_producer = total / producers};
	struct producer_arg args[MAX_PRODUCERS];
	pthread_t t[MAX_PRODUCERS];
	uint64_t sent = 0;

	assert_non_null(run.q);
	atomic_init(&run.total, run.per_producer * producers);
	stress_clock_start(&run.clock);
	print_message("mpsc %uP1C: %" PRIu64 " items through %zu slots\n", producers,
		      run.per_producer * producers, cap);
	for (unsigned i = 0; i < producers; i++) {
		args[i] = (struct producer_arg){.run = &run, .id = i};
		assert_int_equal(pthread_create(&t[i], NULL, producer, &args[i]), 0);
	}
	consume(&run);
	for (unsigned i = 0; i < producers; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(run.bad, 0);
	for (unsigned i = 0; i < producers; i++) {
		assert_int_equal(run.next[i], run.sent[i]);
		sent += run.sent[i];
	}
	if (sent < run.per_producer * producers)
		print_message("time limit: %" PRIu64 " items sent\n", sent);
	assert_true(sent >= stress_min_moved(run.per_producer * producers));
	assert_int_equal(itemq_size(run.q), 0);
	assert_int_equal(itemq_validate(run.q, NULL, 0), 0);
	itemq_destroy(run.q);
}

static void two_producers(void **state)
{
	(void)state;
	run_producers(2, 256, stress_items(3000000, 500000));
}

static void four_producers(void **state)
{
	(void)state;
	run_producers(4, 64, stress_items(3000000, 500000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_producers),
		cmocka_unit_test(four_producers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
