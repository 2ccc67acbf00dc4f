/* SPDX-License-Identifier: MIT */
/* pc_slab on one thread: options, random alloc/free against a model (no
 * two live objects overlap, contents survive, alignment holds), the bound,
 * chunk growth, remote frees and draining, and that a double free or a use
 * after free is caught: by the validator, and in ASan builds by ASan itself
 * in a child process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/numa.h"
#include "percore/slab.h"
#include "testmain.h"
#include "validate_check.h"

static struct pc_slab *slab(size_t size, size_t align, size_t max, size_t chunk)
{
	struct pc_slab_opts o = {.size = size, .align = align, .max_objects = max,
				 .chunk_bytes = chunk, .node = -1};
	struct pc_slab *s = pc_slab_create(&o);

	assert_non_null(s);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	return s;
}

static void rejects_bad_options(void **state)
{
	struct pc_slab_opts o = {.size = 64, .node = -1};

	(void)state;
	assert_null(pc_slab_create(NULL));
	o.size = 0;
	assert_null(pc_slab_create(&o));
	o.size = 64;
	o.align = 24;
	assert_null(pc_slab_create(&o));
	o.align = 8192;
	assert_null(pc_slab_create(&o));
	o.align = 4096;
	o.node = -2;
	assert_null(pc_slab_create(&o));
	o.node = -1;
	struct pc_slab *s = pc_slab_create(&o);
	assert_non_null(s);
	void *p = pc_slab_alloc(s);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % 4096, 0);
	pc_slab_free(s, p);
	pc_slab_destroy(s);
	pc_slab_destroy(NULL);
	assert_int_equal(pc_slab_validate(NULL, NULL, 0), -EINVAL);
}

static void sizes_and_strides(void **state)
{
	static const size_t cases[][4] = {
		/* size, align, usable size, stride */
		{1, 0, 8, 16}, {1, 8, 8, 8}, {24, 0, 24, 32}, {64, 0, 64, 64},
		{100, 64, 100, 128}, {1024, 0, 1024, 1024}, {20, 4, 20, 24},
	};
	struct pc_slab_stats st;

	(void)state;
	for (size_t i = 0; i < PC_ARRAY_LEN(cases); i++) {
		struct pc_slab *s = slab(cases[i][0], cases[i][1], 0, 0);
		void *p = pc_slab_alloc(s), *q = pc_slab_alloc(s);

		pc_slab_stats(s, &st);
		assert_int_equal(st.size, cases[i][2]);
		assert_int_equal(st.stride, cases[i][3]);
		assert_int_equal((uintptr_t)q - (uintptr_t)p, cases[i][3]);
		memset(p, 0xab, cases[i][0]);
		pc_slab_free(s, p);
		pc_slab_free(s, q);
		pc_slab_free(s, NULL);
		assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
		pc_slab_destroy(s);
	}
}

/* Random allocs and frees against a model: each live object carries its
 * own id in every byte, which must still be there when it is freed. */
static void random_pattern_matches_model(void **state)
{
	enum { SLOTS = 600, STEPS = 40000, SIZE = 40 };
	struct pc_slab *s = slab(SIZE, 8, 0, 4096); /* small chunks: many */
	unsigned char *live[SLOTS] = {0};
	size_t nlive = 0, rnd = 12345;
	struct pc_slab_stats st;

	(void)state;
	for (unsigned step = 0; step < STEPS; step++) {
		size_t i;

		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		i = (rnd >> 33) % SLOTS;
		if (!live[i]) {
			live[i] = pc_slab_alloc(s);
			assert_non_null(live[i]);
			assert_int_equal((uintptr_t)live[i] % 8, 0);
			memset(live[i], (int)(i & 0xff), SIZE);
			nlive++;
		} else {
			for (unsigned b = 0; b < SIZE; b++)
				assert_int_equal(live[i][b], i & 0xff);
			pc_slab_free(s, live[i]);
			live[i] = NULL;
			nlive--;
		}
		if (step % 4000 == 0) {
			assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
			pc_slab_stats(s, &st);
			assert_int_equal(st.live, nlive);
			assert_int_equal(st.live + st.free + st.remote, st.carved);
			assert_true(st.carved <= SLOTS);
		}
	}
	for (size_t i = 0; i < SLOTS; i++)
		pc_slab_free(s, live[i]);
	pc_slab_stats(s, &st);
	assert_int_equal(st.live, 0);
	assert_int_equal(st.free, st.carved);
	assert_true(st.chunks > 1);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	pc_slab_destroy(s);
}

static void bound_is_reached_and_released(void **state)
{
	struct pc_slab *s = slab(256, 0, 10, 1024); /* 3 per chunk: 4 chunks */
	void *p[11];
	struct pc_slab_stats st;

	(void)state;
	for (int i = 0; i < 10; i++)
		assert_non_null(p[i] = pc_slab_alloc(s));
	assert_null(pc_slab_alloc(s));
	assert_null(pc_slab_alloc(s));
	pc_slab_stats(s, &st);
	assert_int_equal(st.reserved, 10);
	assert_int_equal(st.live, 10);
	assert_int_equal(st.max_objects, 10);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	pc_slab_free(s, p[3]);
	assert_ptr_equal(pc_slab_alloc(s), p[3]); /* the freed one comes back */
	assert_null(pc_slab_alloc(s));
	/* a remote free makes room at the bound too */
	pc_slab_free_remote(s, p[7]);
	assert_ptr_equal(pc_slab_alloc(s), p[7]);
	for (int i = 0; i < 10; i++)
		pc_slab_free(s, p[i]);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	pc_slab_destroy(s);
}

static void remote_frees_wait_until_drained(void **state)
{
	struct pc_slab *s = slab(64, 0, 0, 0);
	void *p[5];
	struct pc_slab_stats st;

	(void)state;
	for (int i = 0; i < 5; i++)
		p[i] = pc_slab_alloc(s);
	pc_slab_free_remote(s, p[0]);
	pc_slab_free_remote(s, p[1]);
	pc_slab_free_remote(s, NULL);
	pc_slab_free(s, p[2]);
	pc_slab_stats(s, &st);
	assert_int_equal(st.remote, 2);
	assert_int_equal(st.free, 1);
	assert_int_equal(st.live, 2);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	assert_int_equal(pc_slab_drain(s), 2);
	assert_int_equal(pc_slab_drain(s), 0);
	pc_slab_stats(s, &st);
	assert_int_equal(st.remote, 0);
	assert_int_equal(st.free, 3);
	assert_int_equal(st.live, 2);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	/* alloc drains by itself once the owner's list is empty */
	for (int i = 0; i < 3; i++)
		assert_non_null(pc_slab_alloc(s));
	pc_slab_free_remote(s, p[3]);
	assert_ptr_equal(pc_slab_alloc(s), p[3]);
	pc_slab_stats(s, &st);
	assert_int_equal(st.carved, 5); /* nothing new carved */
	pc_slab_destroy(s);
}

/* Chunks come from the asked node (node 0, which every machine has). */
static void objects_come_from_the_asked_node(void **state)
{
	struct pc_slab_opts o = {.size = 256, .node = 0};
	struct pc_slab *s = pc_slab_create(&o);
	char *p;
	int node;

	(void)state;
	assert_non_null(s);
	p = pc_slab_alloc(s);
	assert_non_null(p);
	p[0] = 1; /* touch: the page exists only now */
	node = pc_numa_node_of(p);
	if (node != -ENOSYS)
		assert_int_equal(node, 0);
	pc_slab_free(s, p);
	pc_slab_destroy(s);
}

/* A stack holding one object twice, as a double free leaves it, fails
 * validation. The second free is let through ASan by opening the object
 * first. */
static void validator_finds_double_free(void **state)
{
	struct pc_slab *s = slab(48, 0, 0, 0);
	void *p = pc_slab_alloc(s), *q = pc_slab_alloc(s);

	(void)state;
	pc_slab_free(s, p);
	pc_slab_free(s, q);
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	PC_ASAN_UNPOISON(p, 48);
	pc_slab_free(s, p);
	PC_EXPECT_BROKEN(pc_slab_validate(s, PC_WHY), "is free twice");
	pc_slab_destroy(s);
}

/* Freeing one object again and again (each time let through ASan) would
 * push more objects than exist: the extra frees are refused and counted,
 * never written past the stack. */
static void overfull_stack_is_refused(void **state)
{
	struct pc_slab *s = slab(64, 0, 4, 0);
	struct pc_slab_stats st;
	void *p = pc_slab_alloc(s);

	(void)state;
	for (int i = 0; i < 10; i++) {
		PC_ASAN_UNPOISON(p, 64);
		pc_slab_free(s, p);
	}
	pc_slab_stats(s, &st);
	assert_int_equal(st.free, 4);
	assert_int_equal(st.bad_frees, 6);
	PC_EXPECT_BROKEN(pc_slab_validate(s, PC_WHY), "6 frees were refused");
	pc_slab_destroy(s);
}

static void validator_finds_stranger(void **state)
{
	struct pc_slab *s = slab(64, 0, 0, 0);
	void *p = pc_slab_alloc(s);
	_Alignas(16) char outside[64];

	(void)state;
	pc_slab_free(s, outside);
	PC_EXPECT_BROKEN(pc_slab_validate(s, PC_WHY), "is not an object of this pool");
	PC_ASAN_UNPOISON(outside, sizeof(outside));
	s->_nfree--; /* take the stranger back off the stack */
	assert_int_equal(pc_slab_validate(s, NULL, 0), 0);
	pc_slab_free(s, (char *)p + 8); /* not on an object boundary */
	PC_EXPECT_BROKEN(pc_slab_validate(s, PC_WHY), "is not an object of this pool");
	pc_slab_destroy(s);
}

#ifdef PC_ASAN
/* Run fn in a child with stderr captured; return what it printed and set
 * *status. */
static char *run_child(void (*fn)(void), int *status)
{
	static char out[16384];
	int fds[2];
	ssize_t n;
	size_t len = 0;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		fn();
		_exit(0); /* not caught: the parent fails the test */
	}
	close(fds[1]);
	while (len < sizeof(out) - 1 && (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, status, 0), pid);
	return out;
}

/* The misuses below run in the child: a pool and one object from it. */
static struct pc_slab *child_pool(size_t size, size_t align, void **p)
{
	struct pc_slab_opts o = {.size = size, .align = align, .node = -1};
	struct pc_slab *s = pc_slab_create(&o);

	*p = s ? pc_slab_alloc(s) : NULL;
	if (!*p)
		_exit(3);
	return s;
}

static void double_free_local(void)
{
	void *p;
	struct pc_slab *s = child_pool(64, 0, &p);

	pc_slab_free(s, p);
	pc_slab_free(s, p);
}

static void double_free_remote(void)
{
	void *p;
	struct pc_slab *s = child_pool(64, 0, &p);

	pc_slab_free(s, p);
	pc_slab_free_remote(s, p);
}

static void use_after_free(void)
{
	void *p;
	struct pc_slab *s = child_pool(64, 0, &p);

	pc_slab_free(s, p);
	((volatile char *)p)[40] = 1;
}

static void overrun_into_padding(void)
{
	void *p;

	child_pool(40, 64, &p);
	((volatile char *)p)[44] = 1; /* within the 64-byte stride, past the 40-byte object */
}

static void expect_asan_report(void (*fn)(void), const char *what)
{
	int status;
	char *out = run_child(fn, &status);

	assert_true(WIFEXITED(status) || WIFSIGNALED(status));
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!strstr(out, "AddressSanitizer") || !strstr(out, what))
		print_error("child said:\n%s\n", out);
	assert_non_null(strstr(out, "AddressSanitizer"));
	assert_non_null(strstr(out, what));
}

static void asan_reports_misuse(void **state)
{
	(void)state;
	expect_asan_report(double_free_local, "use-after-poison");
	expect_asan_report(double_free_remote, "use-after-poison");
	expect_asan_report(use_after_free, "use-after-poison");
	expect_asan_report(overrun_into_padding, "use-after-poison");
}
#else
static void asan_reports_misuse(void **state)
{
	(void)state;
	/* the validator test covers the rest */
	PC_SKIP("only an AddressSanitizer build can check this");
}
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rejects_bad_options),
		cmocka_unit_test(sizes_and_strides),
		cmocka_unit_test(random_pattern_matches_model),
		cmocka_unit_test(bound_is_reached_and_released),
		cmocka_unit_test(remote_frees_wait_until_drained),
		cmocka_unit_test(objects_come_from_the_asked_node),
		cmocka_unit_test(validator_finds_double_free),
		cmocka_unit_test(overfull_stack_is_refused),
		cmocka_unit_test(validator_finds_stranger),
		cmocka_unit_test(asan_reports_misuse),
	};
	return pc_test_main(tests, argc, argv);
}
