/* SPDX-License-Identifier: MIT */
/* pc_arena: alignment of every power of two, growth into chained and
 * oversized blocks, mark/rewind (including bad marks), reset, the spare
 * block, and ASan catching reads of rewound memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/arena.h"
#include "percore/numa.h"
#include "testmain.h"

static struct pc_arena *arena(size_t block)
{
	struct pc_arena *a = pc_arena_create(block, -1);

	assert_non_null(a);
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	return a;
}

static void every_power_of_two_alignment(void **state)
{
	struct pc_arena *a = arena(4096);

	(void)state;
	for (size_t align = 1; align <= ((size_t)1 << 16); align <<= 1) {
		for (size_t size = 0; size < 40; size += 13) {
			char *p = pc_arena_alloc(a, size, align);

			assert_non_null(p);
			assert_int_equal((uintptr_t)p % align, 0);
			memset(p, 0x5a, size);
		}
		char *odd = pc_arena_alloc(a, 1, 1); /* misalign the bump */
		assert_non_null(odd);
		*odd = 1;
	}
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	assert_null(pc_arena_alloc(a, 8, 0));
	assert_null(pc_arena_alloc(a, 8, 3));
	assert_null(pc_arena_alloc(a, 8, 48));
	assert_null(pc_arena_alloc(a, SIZE_MAX - 8, 16));
	assert_null(pc_arena_alloc(a, 8, (size_t)1 << 63));
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	pc_arena_destroy(a);
	pc_arena_destroy(NULL);
	assert_int_equal(pc_arena_validate(NULL, NULL, 0), -EINVAL);
}

static void allocations_do_not_overlap(void **state)
{
	enum { N = 3000 };
	struct pc_arena *a = arena(4096);
	unsigned char *p[N];
	size_t sz[N];

	(void)state;
	for (size_t i = 0; i < N; i++) {
		sz[i] = (i * 37) % 200;
		p[i] = pc_arena_alloc(a, sz[i], (size_t)1 << (i % 7));
		assert_non_null(p[i]);
		memset(p[i], (int)(i & 0xff), sz[i]);
	}
	for (size_t i = 0; i < N; i++)
		for (size_t b = 0; b < sz[i]; b++)
			assert_int_equal(p[i][b], i & 0xff);
	pc_arena_destroy(a);
}

static void grows_into_chained_and_oversized_blocks(void **state)
{
	struct pc_arena *a = arena(4096);
	struct pc_arena_stats st;
	char *big;

	(void)state;
	pc_arena_stats(a, &st);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.bytes, 4096);
	assert_int_equal(st.used, 0);
	for (int i = 0; i < 100; i++)
		assert_non_null(pc_arena_alloc(a, 100, 8));
	pc_arena_stats(a, &st);
	assert_true(st.blocks >= 3);
	big = pc_arena_alloc(a, 100000, 64); /* larger than a block */
	assert_non_null(big);
	memset(big, 1, 100000);
	pc_arena_stats(a, &st);
	assert_true(st.bytes >= 100000 + 3 * 4096);
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	pc_arena_destroy(a);
}

static void rewind_releases_what_came_after(void **state)
{
	struct pc_arena *a = arena(4096);
	struct pc_arena_stats st;
	struct pc_arena_mark start, m;
	char *p, *q;

	(void)state;
	start = pc_arena_mark(a);
	p = pc_arena_alloc(a, 64, 16);
	m = pc_arena_mark(a);
	q = pc_arena_alloc(a, 64, 16);
	for (int i = 0; i < 200; i++)
		assert_non_null(pc_arena_alloc(a, 100, 8));
	pc_arena_stats(a, &st);
	assert_true(st.blocks > 2);
	assert_int_equal(pc_arena_rewind(a, m), 0);
	pc_arena_stats(a, &st);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.spare_bytes, 4096); /* one block kept */
	assert_int_equal(st.used, 64);
	assert_ptr_equal(pc_arena_alloc(a, 64, 16), q); /* same room again */
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	/* growing again uses the spare first */
	for (int i = 0; i < 60; i++)
		assert_non_null(pc_arena_alloc(a, 100, 8));
	pc_arena_stats(a, &st);
	assert_int_equal(st.blocks, 2);
	assert_int_equal(st.spare_bytes, 0);
	assert_int_equal(pc_arena_rewind(a, start), 0);
	assert_ptr_equal(pc_arena_alloc(a, 64, 16), p);
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	pc_arena_destroy(a);
}

static void bad_marks_change_nothing(void **state)
{
	struct pc_arena *a = arena(4096), *b = arena(4096);
	struct pc_arena_stats before, after;
	struct pc_arena_mark ahead, foreign = pc_arena_mark(b);

	(void)state;
	assert_non_null(pc_arena_alloc(a, 100, 8));
	ahead = pc_arena_mark(a);
	assert_int_equal(pc_arena_rewind(a, pc_arena_mark(a)), 0);
	ahead._cur += 8; /* a point not reached yet */
	pc_arena_stats(a, &before);
	assert_int_equal(pc_arena_rewind(a, ahead), -EINVAL);
	assert_int_equal(pc_arena_rewind(a, foreign), -EINVAL);
	assert_int_equal(pc_arena_rewind(a, (struct pc_arena_mark){0}), -EINVAL);
	pc_arena_stats(a, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	pc_arena_destroy(a);
	pc_arena_destroy(b);
}

static void reset_keeps_first_block(void **state)
{
	struct pc_arena *a = arena(0);
	struct pc_arena_stats st;
	char *first = pc_arena_alloc(a, 10, 1);

	(void)state;
	for (int i = 0; i < 1000; i++)
		assert_non_null(pc_arena_alloc(a, 1000, 8));
	pc_arena_reset(a);
	pc_arena_stats(a, &st);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.bytes, 64 << 10);
	assert_int_equal(st.used, 0);
	assert_int_equal(st.spare_bytes, 64 << 10);
	assert_ptr_equal(pc_arena_alloc(a, 10, 1), first);
	assert_int_equal(pc_arena_validate(a, NULL, 0), 0);
	pc_arena_destroy(a);
	assert_null(pc_arena_create((size_t)1 << 50, -1));
}

/* Blocks come from the asked node (node 0, which every machine has). */
static void blocks_come_from_the_asked_node(void **state)
{
	struct pc_arena *a = pc_arena_create(4096, 0);
	char *p;
	int node;

	(void)state;
	assert_non_null(a);
	p = pc_arena_alloc(a, 64, 64);
	assert_non_null(p);
	p[0] = 1;
	node = pc_numa_node_of(p);
	if (node != -ENOSYS)
		assert_int_equal(node, 0);
	pc_arena_destroy(a);
	assert_null(pc_arena_create(4096, -2));
}

#ifdef PC_ASAN
static void read_after_rewind(void)
{
	struct pc_arena *a = pc_arena_create(4096, -1);
	struct pc_arena_mark m = pc_arena_mark(a);
	volatile char *p = pc_arena_alloc(a, 32, 8);

	p[0] = 1;
	pc_arena_rewind(a, m);
	p[1] = p[0]; /* the read is the report */
}

static void asan_reports_use_after_rewind(void **state)
{
	int fds[2], status;
	char out[8192];
	ssize_t n;
	size_t len = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		read_after_rewind();
		_exit(0);
	}
	close(fds[1]);
	while (len < sizeof(out) - 1 && (n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!strstr(out, "use-after-poison"))
		print_error("child said:\n%s\n", out);
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_non_null(strstr(out, "use-after-poison"));
}
#else
static void asan_reports_use_after_rewind(void **state)
{
	(void)state;
	PC_SKIP("only an AddressSanitizer build can check this");
}
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_power_of_two_alignment),
		cmocka_unit_test(allocations_do_not_overlap),
		cmocka_unit_test(grows_into_chained_and_oversized_blocks),
		cmocka_unit_test(rewind_releases_what_came_after),
		cmocka_unit_test(bad_marks_change_nothing),
		cmocka_unit_test(reset_keeps_first_block),
		cmocka_unit_test(blocks_come_from_the_asked_node),
		cmocka_unit_test(asan_reports_use_after_rewind),
	};
	return pc_test_main(tests, argc, argv);
}
