/* SPDX-License-Identifier: MIT */
/* Where io_uring is refused (here by a seccomp filter, as a container
 * runtime or kernel.io_uring_disabled would), asking for it falls back to
 * epoll with one line on stderr per process, the strict form reports the
 * error, and an engine asked for io_uring runs on epoll. Runs in a child
 * process: the filter cannot be removed once installed. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "percore/engine.h"
#include "percore/reactor.h"
#include "testmain.h"

/* io_uring_setup fails with EPERM; every other call is allowed. */
static int refuse_io_uring(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) ? -errno : 0;
}

/* The child's checks; its exit status says which failed (0: none). */
static int child(const char *errfile)
{
	struct pc_reactor *r;
	struct pc_engine_cfg c;
	struct pc_engine *e;
	int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || dup2(fd, 2) < 0)
		return 10;
	if (refuse_io_uring())
		return 77;
	if (pc_reactor_create(&r, PC_BACKEND_URING, PC_REACTOR_NO_FALLBACK) != -EPERM)
		return 11;
	for (int i = 0; i < 2; i++) {
		if (pc_reactor_create(&r, PC_BACKEND_URING, 0))
			return 12;
		if (pc_reactor_backend(r) != PC_BACKEND_EPOLL)
			return 13;
		pc_reactor_destroy(r);
	}
	pc_engine_cfg_init(&c);
	c.shards = 2;
	c.backend = PC_BACKEND_URING;
	if (pc_engine_start(&c, &e, NULL, 0))
		return 14;
	if (pc_engine_backend(e) != PC_BACKEND_EPOLL)
		return 15;
	pc_engine_destroy(e);
	return 0;
}

static void falls_back_to_epoll_once(void **state)
{
	char path[] = "/tmp/pc_uring_fallback_XXXXXX", text[1024] = "";
	int fd = mkstemp(path), status, lines = 0;
	pid_t pid;
	ssize_t n;
	(void)state;

	assert_true(fd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(path));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	unlink(path);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		PC_SKIP("no seccomp filter could be installed here: nothing to check");
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(n > 0);
	for (char *p = text; (p = strstr(p, "io_uring unavailable")); p++)
		lines++;
	/* Once per process, however many reactors fell back. */
	assert_int_equal(lines, 1);
	assert_non_null(strstr(text, "using epoll"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(falls_back_to_epoll_once),
	};
	return pc_test_main(tests, argc, argv);
}
