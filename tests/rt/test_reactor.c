/* SPDX-License-Identifier: MIT */
/* The reactor on one backend (argv[1]: epoll or uring): fd readiness,
 * level-triggered re-reporting, modify and delete (also from callbacks and
 * with fd numbers reused), deferred task order, wake-ups, wait timeouts,
 * timers bounding the wait, and every bad argument. io_uring is skipped (exit 77) with the
 * reason when the kernel refuses to set it up. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/clock.h"
#include "percore/reactor.h"
#include "rt/reactor_impl.h"

static enum pc_backend backend;

struct hits {
	int count;
	unsigned last;
	int fd;
};

static void on_io(struct pc_reactor *r, int fd, unsigned ev, void *arg)
{
	struct hits *h = arg;
	(void)r;
	h->count++;
	h->last = ev;
	h->fd = fd;
}

static int setup(void **state)
{
	struct pc_reactor *r;

	if (pc_reactor_create(&r, backend, PC_REACTOR_NO_FALLBACK))
		return -1;
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	pc_reactor_destroy(*state);
	return 0;
}

static void make_pipe(int p[2])
{
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
}

static void readable_is_level_triggered(void **state)
{
	struct pc_reactor *r = *state;
	struct hits h = { 0 };
	int p[2];
	char c;

	assert_int_equal(pc_reactor_backend(r), backend);
	make_pipe(p);
	assert_int_equal(pc_reactor_add(r, p[0], PC_EV_IN, on_io, &h), 0);
	assert_int_equal(pc_reactor_nfds(r), 1);
	assert_int_equal(pc_reactor_poll(r, 0), 0);
	assert_int_equal(h.count, 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(pc_reactor_poll(r, -1), 1);
	assert_int_equal(h.count, 1);
	assert_int_equal(h.fd, p[0]);
	assert_true(h.last & PC_EV_IN);
	/* Not read: reported again, turn after turn. */
	assert_int_equal(pc_reactor_poll(r, 1000000000), 1);
	assert_int_equal(pc_reactor_poll(r, 1000000000), 1);
	assert_int_equal(h.count, 3);
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(pc_reactor_poll(r, 0), 0);
	assert_int_equal(pc_reactor_poll(r, 0), 0);
	assert_int_equal(h.count, 3);
	assert_int_equal(pc_reactor_del(r, p[0]), 0);
	assert_int_equal(pc_reactor_nfds(r), 0);
	close(p[0]);
	close(p[1]);
}

static void writable_and_modify(void **state)
{
	struct pc_reactor *r = *state;
	struct hits h = { 0 };
	int p[2];

	make_pipe(p);
	assert_int_equal(pc_reactor_add(r, p[1], PC_EV_OUT, on_io, &h), 0);
	assert_int_equal(pc_reactor_poll(r, -1), 1);
	assert_true(h.last & PC_EV_OUT);
	/* Switch to read interest on the write end: never readable. */
	assert_int_equal(pc_reactor_mod(r, p[1], PC_EV_IN), 0);
	h.count = 0;
	assert_int_equal(pc_reactor_poll(r, 0), 0);
	assert_int_equal(pc_reactor_poll(r, 0), 0);
	assert_int_equal(h.count, 0);
	assert_int_equal(pc_reactor_mod(r, p[1], PC_EV_IN | PC_EV_OUT), 0);
	assert_int_equal(pc_reactor_poll(r, -1), 1);
	assert_int_equal(h.count, 1);
	assert_int_equal(pc_reactor_del(r, p[1]), 0);
	close(p[0]);
	close(p[1]);
}

static void hangup_is_reported(void **state)
{
	struct pc_reactor *r = *state;
	struct hits h = { 0 };
	int p[2];

	make_pipe(p);
	assert_int_equal(pc_reactor_add(r, p[0], PC_EV_IN, on_io, &h), 0);
	close(p[1]);
	assert_int_equal(pc_reactor_poll(r, -1), 1);
	assert_true(h.last & PC_EV_HUP);
	assert_int_equal(pc_reactor_del(r, p[0]), 0);
	close(p[0]);
}

/* Two ready fds; the first callback to run deletes the other (and, in the
 * second round, reuses its number for a new pipe). The other's event was
 * already collected in this turn and must not reach anyone. */
struct pair {
	struct pc_reactor *r;
	int fds[2];
	int hits[2];
	int reuse;
	int newp[2];
	struct hits fresh;
};

static void on_pair(struct pc_reactor *r, int fd, unsigned ev, void *arg)
{
	struct pair *pr = arg;
	int me = fd == pr->fds[0] ? 0 : 1;
	int other = pr->fds[1 - me];
	(void)ev;

	pr->hits[me]++;
	if (pr->hits[0] + pr->hits[1] > 1)
		return;
	assert_int_equal(pc_reactor_del(r, other), 0);
	if (pr->reuse) {
		close(other);
		make_pipe(pr->newp);
		/* The lowest free number is the one just closed. */
		assert_int_equal(pr->newp[0], other);
		assert_int_equal(pc_reactor_add(r, pr->newp[0], PC_EV_IN, on_io, &pr->fresh), 0);
	}
}

static void delete_from_callback(void **state)
{
	for (int reuse = 0; reuse < 2; reuse++) {
		struct pc_reactor *r = *state;
		struct pair pr = { .r = r, .reuse = reuse };
		int a[2], b[2];

		make_pipe(a);
		make_pipe(b);
		pr.fds[0] = a[0];
		pr.fds[1] = b[0];
		assert_int_equal(write(a[1], "x", 1), 1);
		assert_int_equal(write(b[1], "x", 1), 1);
		assert_int_equal(pc_reactor_add(r, a[0], PC_EV_IN, on_pair, &pr), 0);
		assert_int_equal(pc_reactor_add(r, b[0], PC_EV_IN, on_pair, &pr), 0);
		/* Both are ready before the wait, so one wait collects both. */
		assert_int_equal(pc_reactor_poll(r, -1), 1);
		assert_int_equal(pr.hits[0] + pr.hits[1], 1);
		assert_int_equal(pr.fresh.count, 0);
		assert_int_equal(pc_reactor_nfds(r), 2 - (unsigned)!reuse);
		int survivor = pr.hits[0] ? a[0] : b[0];
		assert_int_equal(pc_reactor_del(r, survivor), 0);
		if (reuse) {
			assert_int_equal(pc_reactor_poll(r, 0), 0);
			assert_int_equal(pr.fresh.count, 0);
			assert_int_equal(write(pr.newp[1], "y", 1), 1);
			assert_int_equal(pc_reactor_poll(r, -1), 1);
			assert_int_equal(pr.fresh.count, 1);
			assert_int_equal(pc_reactor_del(r, pr.newp[0]), 0);
			close(pr.newp[0]);
			close(pr.newp[1]);
			close(survivor);
		} else {
			close(a[0]);
			close(b[0]);
		}
		close(a[1]);
		close(b[1]);
		assert_int_equal(pc_reactor_nfds(r), 0);
	}
}

/* More ready fds than one epoll batch and than the io_uring submission
 * queue: each reported once. */
static void many_ready_fds(void **state)
{
	enum { N = 300 }; /* more than the io_uring submission queue holds */
	struct pc_reactor *r = *state;
	static int p[N][2];
	static struct hits h[N];
	int total = 0;

	for (int i = 0; i < N; i++) {
		make_pipe(p[i]);
		h[i] = (struct hits){ 0 };
		assert_int_equal(write(p[i][1], "z", 1), 1);
		assert_int_equal(pc_reactor_add(r, p[i][0], PC_EV_IN, on_io, &h[i]), 0);
	}
	for (int turn = 0; turn < 20 && total < N; turn++) {
		int n = pc_reactor_poll(r, 100000000);
		assert_true(n >= 0);
		total += n;
		for (int i = 0; i < N; i++)
			if (h[i].count) {
				char c;
				if (read(p[i][0], &c, 1) == 1)
					assert_int_equal(h[i].count, 1);
			}
	}
	for (int i = 0; i < N; i++) {
		assert_int_equal(h[i].count, 1);
		assert_int_equal(pc_reactor_del(r, p[i][0]), 0);
		close(p[i][0]);
		close(p[i][1]);
	}
	assert_int_equal(total, N);
}

static int order[16], norder;

static void task_record(void *arg)
{
	order[norder++] = (int)(intptr_t)arg;
}

static struct pc_reactor *chain_r;
static void task_chain(void *arg)
{
	order[norder++] = (int)(intptr_t)arg;
	assert_int_equal(pc_reactor_defer(chain_r, task_record, (void *)(intptr_t)99), 0);
}

static void deferred_tasks_run_in_order(void **state)
{
	struct pc_reactor *r = *state;

	norder = 0;
	chain_r = r;
	assert_false(pc_reactor_has_tasks(r));
	for (int i = 0; i < 5; i++)
		assert_int_equal(pc_reactor_defer(r, task_record, (void *)(intptr_t)i), 0);
	assert_int_equal(pc_reactor_defer(r, task_chain, (void *)(intptr_t)5), 0);
	assert_true(pc_reactor_has_tasks(r));
	/* Tasks queued: an infinite wait must not block. */
	assert_int_equal(pc_reactor_poll(r, -1), 6);
	assert_int_equal(norder, 6);
	for (int i = 0; i < 6; i++)
		assert_int_equal(order[i], i);
	/* The task deferred by a task waits for the next turn. */
	assert_true(pc_reactor_has_tasks(r));
	assert_int_equal(pc_reactor_poll(r, -1), 1);
	assert_int_equal(order[6], 99);
	assert_false(pc_reactor_has_tasks(r));
	assert_int_equal(pc_reactor_defer(r, NULL, NULL), -EINVAL);
}

/* End-of-turn tasks run after the turn's deferred tasks, those queued
 * by a deferred task included; one an end task queues waits for the
 * next turn's end; queued, they keep a wait from blocking. */
static void end_chain(void *arg)
{
	order[norder++] = (int)(intptr_t)arg;
	assert_int_equal(pc_reactor_defer_end(chain_r, task_record, (void *)(intptr_t)77), 0);
}

static void task_then_end(void *arg)
{
	order[norder++] = (int)(intptr_t)arg;
	assert_int_equal(pc_reactor_defer_end(chain_r, end_chain, (void *)(intptr_t)50), 0);
}

static void end_tasks_close_the_turn(void **state)
{
	struct pc_reactor *r = *state;

	norder = 0;
	chain_r = r;
	assert_int_equal(pc_reactor_defer_end(r, task_record, (void *)(intptr_t)40), 0);
	assert_true(pc_reactor_has_tasks(r));
	assert_int_equal(pc_reactor_defer(r, task_record, (void *)(intptr_t)1), 0);
	assert_int_equal(pc_reactor_defer(r, task_then_end, (void *)(intptr_t)2), 0);
	/* Queued: an infinite wait must not block. */
	assert_int_equal(pc_reactor_poll(r, -1), 4);
	assert_int_equal(norder, 4);
	assert_int_equal(order[0], 1);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 40);
	assert_int_equal(order[3], 50);
	assert_true(pc_reactor_has_tasks(r));
	assert_int_equal(pc_reactor_poll(r, -1), 1);
	assert_int_equal(order[4], 77);
	assert_false(pc_reactor_has_tasks(r));
	assert_int_equal(pc_reactor_defer_end(r, NULL, NULL), -EINVAL);
}

/* The task queue grows past its first block while wrapped around, and
 * keeps its order. */
static int seq[1000], nseq;

static void task_seq(void *arg)
{
	seq[nseq++] = (int)(intptr_t)arg;
}

static void task_queue_grows_while_wrapped(void **state)
{
	struct pc_reactor *r = *state;
	int next = 0;

	nseq = 0;
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 100; i++, next++)
			assert_int_equal(pc_reactor_defer(r, task_seq, (void *)(intptr_t)next), 0);
		/* Leave the head in the middle of the ring now and then. */
		if (round % 3 == 0)
			assert_true(pc_reactor_poll(r, 0) > 0);
	}
	while (pc_reactor_has_tasks(r))
		assert_true(pc_reactor_poll(r, 0) > 0);
	assert_int_equal(nseq, 1000);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(seq[i], i);
}

static void *waker(void *arg)
{
	usleep(20000);
	pc_reactor_wake(arg);
	return NULL;
}

static void wake_interrupts_wait(void **state)
{
	struct pc_reactor *r = *state;
	pthread_t t;

	/* Woken before the wait: the wait returns at once, counting nothing. */
	pc_reactor_wake(r);
	pc_reactor_wake(r);
	assert_int_equal(pc_reactor_poll(r, -1), 0);
	assert_int_equal(pthread_create(&t, NULL, waker, r), 0);
	assert_int_equal(pc_reactor_poll(r, -1), 0);
	pthread_join(t, NULL);
	/* The counter was drained: the next wait times out. */
	uint64_t t0 = pc_now_ns();
	assert_int_equal(pc_reactor_poll(r, 5000000), 0);
	assert_true(pc_now_ns() - t0 >= 5000000);
}

/* A wake-up count at its limit (epoll never reads it back) still wakes:
 * a write to a saturated eventfd fails and would wake no one. */
static void saturated_wake_count_still_wakes(void **state)
{
	struct pc_reactor *r = *state;
	uint64_t most = UINT64_MAX - 1, t0;
	pthread_t t;

	assert_int_equal(write(r->wake_fd, &most, sizeof(most)), (ssize_t)sizeof(most));
	assert_int_equal(pc_reactor_poll(r, -1), 0); /* that write's own wake-up */
	assert_int_equal(pthread_create(&t, NULL, waker, r), 0);
	t0 = pc_now_ns();
	assert_int_equal(pc_reactor_poll(r, 5000000000), 0);
	pthread_join(t, NULL);
	assert_true(pc_now_ns() - t0 < 4000000000ull);
}

struct tick {
	struct pc_timer t;
	struct pc_reactor *r;
	int id, fired, repeat, early;
	uint64_t due_ns, fired_ns;
};
static int fire_order[8], nfired;

static void on_tick(struct pc_wheel *w, struct pc_timer *t)
{
	struct tick *k = (struct tick *)((char *)t - offsetof(struct tick, t));
	(void)w;

	k->fired++;
	k->fired_ns = pc_now_ns();
	if (k->fired_ns < k->due_ns)
		k->early++;
	fire_order[nfired++] = k->id;
	if (k->fired < k->repeat) {
		k->due_ns = pc_now_ns() + 2000000;
		pc_reactor_timer_after(k->r, &k->t, 2000000);
	}
}

static void arm(struct tick *k, struct pc_reactor *r, int id, uint64_t delay_ns)
{
	*k = (struct tick){ .r = r, .id = id, .repeat = 1 };
	pc_timer_init(&k->t, on_tick);
	k->due_ns = pc_now_ns() + delay_ns;
	pc_reactor_timer_after(r, &k->t, delay_ns);
}

/* Timers bound the wait, fire in time order and never early; cancelled
 * ones never fire; a callback may reschedule itself. */
static void timers_drive_the_wait(void **state)
{
	struct pc_reactor *r = *state;
	struct pc_wheel *w = pc_reactor_wheel(r);
	struct tick a, b, c, d;

	nfired = 0;
	arm(&c, r, 3, 9000000);
	arm(&a, r, 1, 3000000);
	arm(&b, r, 2, 6000000);
	arm(&d, r, 4, 4000000);
	assert_true(pc_wheel_cancel(w, &d.t));
	assert_int_equal(pc_wheel_count(w), 3);
	/* A wait shorter than any timer times out with nothing fired, when
	 * it ended before the first was due (a busy or emulated machine may
	 * return later; timers fire only inside a poll, so a clock read
	 * after it bounds the poll's end). */
	int late = pc_reactor_poll(r, 1000);
	assert_true(late >= 0);
	if (pc_now_ns() < a.due_ns) {
		assert_int_equal(late, 0);
		assert_int_equal(nfired, 0);
	}
	/* Infinite waits end at each timer in turn. */
	while (nfired < 3)
		assert_true(pc_reactor_poll(r, -1) >= 0);
	assert_int_equal(fire_order[0], 1);
	assert_int_equal(fire_order[1], 2);
	assert_int_equal(fire_order[2], 3);
	assert_int_equal(a.early + b.early + c.early, 0);
	assert_int_equal(d.fired, 0);
	assert_int_equal(pc_wheel_count(w), 0);
	assert_int_equal(pc_wheel_validate(w, NULL, 0), 0);

	/* Periodic: three firings, each at least 2 ms after the last. */
	nfired = 0;
	arm(&a, r, 5, 1000000);
	a.repeat = 3;
	while (a.fired < 3)
		assert_true(pc_reactor_poll(r, -1) >= 0);
	assert_int_equal(a.early, 0);
	assert_int_equal(pc_wheel_count(w), 0);
	/* With a queued task, a due timer still fires in the same turn. */
	arm(&b, r, 6, 0);
	assert_int_equal(pc_reactor_defer(r, task_seq, (void *)0), 0);
	nseq = 0;
	usleep(1000);
	assert_int_equal(pc_reactor_poll(r, -1), 2);
	assert_int_equal(b.fired, 1);
}

/* Interest 0: a readable fd stays registered but runs no callback, until
 * reading is wanted again (a session whose reading is paused). */
static void interest_zero_holds_reading(void **state)
{
	struct pc_reactor *r = *state;
	struct hits h = { 0 };
	int p[2];

	make_pipe(p);
	assert_int_equal(pc_reactor_add(r, p[0], PC_EV_IN, on_io, &h), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(pc_reactor_mod(r, p[0], 0), 0);
	assert_int_equal(pc_reactor_nfds(r), 1);
	for (int i = 0; i < 3; i++)
		pc_reactor_poll(r, 5 * 1000000);
	assert_int_equal(h.count, 0);
	assert_int_equal(pc_reactor_mod(r, p[0], PC_EV_IN), 0);
	assert_true(pc_reactor_poll(r, 1000 * 1000000) >= 1);
	assert_int_equal(h.count, 1);
	assert_int_equal(h.last & PC_EV_IN, PC_EV_IN);
	assert_int_equal(pc_reactor_del(r, p[0]), 0);
	close(p[0]);
	close(p[1]);
}

static void bad_arguments(void **state)
{
	struct pc_reactor *r = *state, *x;
	struct hits h = { 0 };
	int p[2];

	make_pipe(p);
	assert_int_equal(pc_reactor_add(r, -1, PC_EV_IN, on_io, &h), -EINVAL);
	assert_int_equal(pc_reactor_add(r, p[0], 0, on_io, &h), -EINVAL);
	assert_int_equal(pc_reactor_add(r, p[0], PC_EV_ERR, on_io, &h), -EINVAL);
	assert_int_equal(pc_reactor_add(r, p[0], 0x100, on_io, &h), -EINVAL);
	assert_int_equal(pc_reactor_add(r, p[0], PC_EV_IN, NULL, &h), -EINVAL);
	assert_int_equal(pc_reactor_mod(r, p[0], PC_EV_IN), -ENOENT);
	assert_int_equal(pc_reactor_del(r, p[0]), -ENOENT);
	assert_int_equal(pc_reactor_del(r, 1 << 20), -ENOENT);
	assert_int_equal(pc_reactor_add(r, p[0], PC_EV_IN, on_io, &h), 0);
	assert_int_equal(pc_reactor_add(r, p[0], PC_EV_IN, on_io, &h), -EEXIST);
	assert_int_equal(pc_reactor_mod(r, p[0], PC_EV_ERR), -EINVAL);
	assert_int_equal(pc_reactor_mod(r, p[0], 0x100), -EINVAL);
	assert_int_equal(pc_reactor_nfds(r), 1);
	assert_int_equal(pc_reactor_del(r, p[0]), 0);
	assert_int_equal(pc_reactor_del(r, p[0]), -ENOENT);
	/* Nothing registered is left behind by the failures. */
	assert_int_equal(pc_reactor_nfds(r), 0);
	if (backend == PC_BACKEND_EPOLL) {
		/* epoll refuses what it cannot poll; the slot stays free. */
		int f = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		assert_true(f >= 0);
		assert_int_equal(pc_reactor_add(r, f, PC_EV_IN, on_io, &h), -EPERM);
		assert_int_equal(pc_reactor_nfds(r), 0);
		assert_int_equal(pc_reactor_del(r, f), -ENOENT);
		close(f);
	}
	assert_int_equal(pc_reactor_create(&x, (enum pc_backend)7, 0), -EINVAL);
	assert_null(x);
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	struct pc_reactor *probe;
	int rc;

	if (argc < 2 || (strcmp(argv[1], "epoll") && strcmp(argv[1], "uring"))) {
		fprintf(stderr, "usage: %s epoll|uring\n", argv[0]);
		return 2;
	}
	backend = strcmp(argv[1], "uring") ? PC_BACKEND_EPOLL : PC_BACKEND_URING;
	rc = pc_reactor_create(&probe, backend, PC_REACTOR_NO_FALLBACK);
	if (rc) {
		printf("SKIP: %s backend cannot be set up here: %s\n", argv[1], strerror(-rc));
		return 77;
	}
	pc_reactor_destroy(probe);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(readable_is_level_triggered, setup, teardown),
		cmocka_unit_test_setup_teardown(writable_and_modify, setup, teardown),
		cmocka_unit_test_setup_teardown(hangup_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(interest_zero_holds_reading, setup, teardown),
		cmocka_unit_test_setup_teardown(delete_from_callback, setup, teardown),
		cmocka_unit_test_setup_teardown(many_ready_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(deferred_tasks_run_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(end_tasks_close_the_turn, setup, teardown),
		cmocka_unit_test_setup_teardown(task_queue_grows_while_wrapped, setup, teardown),
		cmocka_unit_test_setup_teardown(wake_interrupts_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(saturated_wake_count_still_wakes, setup, teardown),
		cmocka_unit_test_setup_teardown(timers_drive_the_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_arguments, setup, teardown),
	};
	return cmocka_run_group_tests_name(argv[1], tests, NULL, NULL);
}
