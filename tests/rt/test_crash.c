/* SPDX-License-Identifier: MIT */
/* The crash report: a child that faults or aborts prints the signal, the
 * faulting address, the shard and a backtrace naming the function that
 * crashed, then dies by that same signal (WIFSIGNALED, WTERMSIG). Also a
 * stack overflow (the report runs on the alternate stack) and a fault on
 * a shard of an engine, which installs the report itself.
 *
 * AddressSanitizer installs its own SIGSEGV handler, which the report
 * leaves alone; tests/rt/CMakeLists.txt runs this program with
 * ASAN_OPTIONS=handle_segv=0 so the report is what it tests there too.
 * Linked with -rdynamic so the frames carry this program's names. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "log_util.h"
#include "percore/crash.h"
#include "testmain.h"

/* The address read at run time: a constant one is a compile error with
 * optimisation (array bounds). */
static volatile uintptr_t fault_at = 16;

__attribute__((noinline)) void crash_test_segv(void)
{
	*(volatile int *)fault_at = 1;
}

/* Through a pointer the compiler cannot see is abort: after a call it
 * knows never returns it may place nothing, and the return address in
 * the backtrace would then fall into the next function. */
static volatile int after_abort;

__attribute__((noinline)) void crash_test_abort(void)
{
	void (*volatile stop)(void) = abort;

	stop();
	after_abort++; /* and not a tail call, so this frame stays */
}

/* Deeper than any stack: the limit is read at run time, so the compiler
 * sees a recursion that may end. */
static volatile int recurse_limit = INT32_MAX;

/* Each frame a little stack, and the call is not a tail call. */
__attribute__((noinline)) int crash_test_recurse(int depth)
{
	volatile char pad[256];

	pad[0] = (char)depth;
	if (depth >= recurse_limit)
		return 0;
	return crash_test_recurse(depth + 1) + pad[0];
}

static void recurse(void)
{
	crash_test_recurse(0);
}

static void segv_on_shard(void *arg)
{
	(void)arg;
	crash_test_segv();
}

static void on_engine(void)
{
	struct pc_engine *e = log_engine(2, 0);

	if (e)
		pc_engine_submit(e, 1, segv_on_shard, NULL);
	sleep(30); /* the shard ends the process long before */
}

static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

/* Run body in a child whose stderr is a file, without a core dump;
 * returns its wait status and the file's text in *text. */
static int run_child(void (*body)(bool install), bool install, char **text)
{
	char path[128];
	int status, fd;
	pid_t pid;

	log_tmp_path(path, sizeof(path), "crash");
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit none = { 0, 0 };

		/* A program's start: cmocka's own handlers for these signals
		 * (which turn a crash into a failed test) go. */
		for (unsigned i = 0; i < PC_ARRAY_LEN(fatal); i++)
			signal(fatal[i], SIG_DFL);
		setrlimit(RLIMIT_CORE, &none);
		dup2(fd, 2);
		body(install);
		_exit(0);
	}
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*text = log_slurp(path);
	unlink(path);
	return status;
}

static void body_segv(bool install)
{
	if (install && pc_crash_install())
		_exit(3);
	crash_test_segv();
}

static void body_abort(bool install)
{
	if (install && pc_crash_install())
		_exit(3);
	crash_test_abort();
}

static void body_overflow(bool install)
{
	if (install && pc_crash_install())
		_exit(3);
	recurse();
}

static void body_engine(bool install)
{
	(void)install;
	on_engine();
}

static void segfault_reported_and_fatal(void **state)
{
	char *text;
	int status = run_child(body_segv, true, &text);
	(void)state;

	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	assert_non_null(strstr(text, "percore: fatal signal SIGSEGV (11) at address 0x10, "
				     "not a shard, pid "));
	assert_non_null(strstr(text, "\nbacktrace:\n"));
	assert_non_null(strstr(text, "crash_test_segv"));
	free(text);
}

static void abort_reported_and_fatal(void **state)
{
	char *text;
	int status = run_child(body_abort, true, &text);
	(void)state;

	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	assert_non_null(strstr(text, "percore: fatal signal SIGABRT (6), not a shard"));
	assert_non_null(strstr(text, "crash_test_abort"));
	free(text);
}

static void stack_overflow_reported(void **state)
{
	char *text;
	int status = run_child(body_overflow, true, &text);
	(void)state;

	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	assert_non_null(strstr(text, "percore: fatal signal SIGSEGV (11) at address 0x"));
	assert_non_null(strstr(text, "crash_test_recurse"));
	free(text);
}

static void shard_fault_names_the_shard(void **state)
{
	char *text;
	int status = run_child(body_engine, false, &text);
	(void)state;

	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	assert_non_null(strstr(text, "percore: fatal signal SIGSEGV (11) at address 0x10, shard 1,"));
	assert_non_null(strstr(text, "crash_test_segv"));
	free(text);
}

/* Without the report the signal is the same: the report changes what is
 * printed, never how the process ends. */
static void without_report_same_status(void **state)
{
	char *text;
	int status = run_child(body_segv, false, &text);
	(void)state;

	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
	assert_null(strstr(text, "percore: fatal signal"));
	free(text);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(segfault_reported_and_fatal),
		cmocka_unit_test(abort_reported_and_fatal),
		cmocka_unit_test(stack_overflow_reported),
		cmocka_unit_test(shard_fault_names_the_shard),
		cmocka_unit_test(without_report_same_status),
	};
	return pc_test_main(tests, argc, argv);
}
