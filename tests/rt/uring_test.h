/* SPDX-License-Identifier: MIT */
/* What the io_uring reactor tests share: a reactor whose completion path
 * has what the test needs (the test skips, visibly, where the kernel
 * lacks it), a readiness callback none of them acts on, and a bounded
 * poll loop. */
#ifndef PERCORE_TESTS_RT_URING_TEST_H
#define PERCORE_TESTS_RT_URING_TEST_H

#include <string.h>

#include "percore/reactor.h"
#include "testmain.h"

enum uring_need { URING_NEED_RECV, URING_NEED_ACCEPT };

static inline struct pc_reactor *uring_reactor(enum uring_need need)
{
	struct pc_reactor *r;
	struct pc_reactor_io_stats st;
	int rc = pc_reactor_create(&r, PC_BACKEND_URING, PC_REACTOR_NO_FALLBACK);

	if (rc)
		PC_SKIP("io_uring cannot be set up here: %s", strerror(-rc));
	pc_reactor_io_stats(r, &st);
	if (need == URING_NEED_ACCEPT ? !st.accept : !st.completion) {
		pc_reactor_destroy(r);
		PC_SKIP("this kernel's io_uring has no %s",
			need == URING_NEED_ACCEPT ? "multishot accept" : "completion receive");
	}
	return r;
}

static inline void uring_ignore_io(struct pc_reactor *r, int fd, unsigned ev, void *arg)
{
	(void)r;
	(void)fd;
	(void)ev;
	(void)arg;
}

/* Poll until cond holds or 500 turns of up to 10 ms have passed. */
#define POLL_UNTIL(r, cond)                                                      \
	do {                                                                     \
		for (int t_ = 0; t_ < 500 && !(cond); t_++)                      \
			assert_true(pc_reactor_poll((r), 10000000) >= 0);         \
	} while (0)

#endif
