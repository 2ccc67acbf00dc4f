/* SPDX-License-Identifier: MIT */
/* percore rt: SIGINT and SIGTERM stop the engine.
 *
 * The handler only loads an atomic pointer and calls pc_engine_stop(),
 * itself an atomic exchange and eventfd writes: all async-signal-safe. A
 * second signal while stopping restores the default action and raises it
 * again, so an engine that does not stop can still be interrupted. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>

#include "rt/rt.h"

static _Atomic(struct pc_engine *) sig_engine;
static struct sigaction old_int, old_term;

static void on_signal(int sig)
{
	struct pc_engine *e = atomic_load(&sig_engine);

	if (!e)
		return;
	if (pc_engine_stopping(e)) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	pc_engine_stop(e);
}

int pc_engine_stop_on_signals(struct pc_engine *e)
{
	struct pc_engine *none = NULL;
	struct sigaction sa = { .sa_handler = on_signal };

	if (!atomic_compare_exchange_strong(&sig_engine, &none, e))
		return none == e ? 0 : -EBUSY;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGINT, &sa, &old_int) || sigaction(SIGTERM, &sa, &old_term)) {
		int rc = -errno;

		sigaction(SIGINT, &old_int, NULL);
		atomic_store(&sig_engine, NULL);
		return rc;
	}
	e->signals = true;
	return 0;
}

void rt_signals_release(struct pc_engine *e)
{
	if (!e->signals)
		return;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	atomic_store(&sig_engine, NULL);
	e->signals = false;
}
