/* SPDX-License-Identifier: MIT */
/* percore rt: the crash report (percore/crash.h).
 *
 * The handler uses only write(2), backtrace_symbols_fd(), sigaction(2)
 * and raise(3), and formats numbers itself: no stdio, no malloc. One
 * exception is backtrace(), whose first call may load the unwinder (with
 * malloc); pc_crash_install() makes that first call, so the handler's
 * never is. The signal stays blocked while the handler runs, so a second
 * fault inside it kills the process with the same signal, as if there
 * were no handler. */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/crash.h"
#include "rt/log_impl.h"
#include "rt/rt.h"

#define CRASH_STACK (64u * 1024)
#define CRASH_FRAMES 64

static const struct {
	int sig;
	const char *name;
} fatal[] = {
	{ SIGSEGV, "SIGSEGV" }, { SIGBUS, "SIGBUS" }, { SIGFPE, "SIGFPE" },
	{ SIGILL, "SIGILL" },   { SIGABRT, "SIGABRT" },
};

/* The stack this thread was given here (freed at rt_crash_thread_end). */
static __thread void *crash_stack;

struct line {
	char text[256];
	size_t len;
};

static void add(struct line *l, const char *s)
{
	while (*s && l->len < sizeof(l->text))
		l->text[l->len++] = *s++;
}

static void add_num(struct line *l, uint64_t v, unsigned base)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n && l->len < sizeof(l->text))
		l->text[l->len++] = digits[--n];
}

static const char *sig_name(int sig)
{
	for (unsigned i = 0; i < PC_ARRAY_LEN(fatal); i++)
		if (fatal[i].sig == sig)
			return fatal[i].name;
	return "signal";
}

static void report(int sig, const siginfo_t *si)
{
	struct line l = { .len = 0 };
	void *frames[CRASH_FRAMES];
	int n;

	add(&l, "percore: fatal signal ");
	add(&l, sig_name(sig));
	add(&l, " (");
	add_num(&l, (uint64_t)sig, 10);
	add(&l, ")");
	/* si_code > 0: raised by the kernel for a fault, si_addr is where. */
	if (si && si->si_code > 0 && sig != SIGABRT) {
		add(&l, " at address 0x");
		add_num(&l, (uintptr_t)si->si_addr, 16);
	}
	add(&l, rt_self ? ", shard " : ", not a shard");
	if (rt_self)
		add_num(&l, rt_self->id, 10);
	add(&l, ", pid ");
	add_num(&l, (uint64_t)getpid(), 10);
	add(&l, "\nbacktrace:\n");
	rt_log_write_all(2, l.text, l.len); /* write(2) only */
	n = backtrace(frames, CRASH_FRAMES);
	backtrace_symbols_fd(frames, n, 2);
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int saved = errno;

	(void)uc;
	report(sig, si);
	/* The default action, once more: pending until this handler
	 * returns (the signal is blocked here), then it ends the process as
	 * the signal would have. A fault would also recur on return. */
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
	errno = saved;
}

void rt_crash_thread_stack(void)
{
	stack_t cur, ss = { .ss_size = CRASH_STACK };

	if (sigaltstack(NULL, &cur) || !(cur.ss_flags & SS_DISABLE))
		return; /* the thread has one (a sanitizer's, the program's) */
	ss.ss_sp = malloc(CRASH_STACK);
	if (!ss.ss_sp)
		return;
	if (sigaltstack(&ss, NULL)) {
		free(ss.ss_sp);
		return;
	}
	crash_stack = ss.ss_sp;
}

void rt_crash_thread_end(void)
{
	stack_t off = { .ss_flags = SS_DISABLE };

	if (!crash_stack)
		return;
	sigaltstack(&off, NULL);
	free(crash_stack);
	crash_stack = NULL;
}

int pc_crash_install(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct sigaction sa = { .sa_sigaction = on_fatal,
				.sa_flags = SA_SIGINFO | SA_ONSTACK };
	void *warm[2];
	int rc = 0;

	rt_crash_thread_stack();
	pthread_mutex_lock(&lock);
	backtrace(warm, 2); /* loads the unwinder now, not in the handler */
	sigemptyset(&sa.sa_mask);
	for (unsigned i = 0; i < PC_ARRAY_LEN(fatal) && !rc; i++) {
		struct sigaction cur;

		if (sigaction(fatal[i].sig, NULL, &cur))
			rc = -errno;
		else if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL &&
			 sigaction(fatal[i].sig, &sa, NULL))
			rc = -errno;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}
