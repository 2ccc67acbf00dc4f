/* SPDX-License-Identifier: MIT */
/* percore: the crash report.
 *
 * On SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT the process writes to
 * stderr, with async-signal-safe calls only:
 *   percore: fatal signal SIGSEGV (11) at address 0x10, shard 2, pid 1234
 *   backtrace:
 *   ./server(handler+0x1d)[0x55d0c0a01234]
 *   ...
 * then restores the signal's default action and raises it again, so the
 * exit status and any core dump are what they would have been. The
 * handler runs on an alternate signal stack, so a stack overflow is
 * reported too; each shard thread of an engine has one, and
 * pc_crash_install() gives one to the calling thread. Other threads
 * overflowing their stack die without a report.
 *
 * A signal whose action is not the default when it is installed (the
 * program's own handler, or a sanitizer's) is left alone. Frames name
 * functions the dynamic symbol table holds: link programs with -rdynamic
 * to see their own. */
#ifndef PERCORE_CRASH_H
#define PERCORE_CRASH_H

#include "percore/defs.h"

PC_BEGIN_DECLS

/* Install the crash report for the fatal signals that still have their
 * default action, and an alternate signal stack for the calling thread
 * when it has none. pc_engine_start() calls it unless its configuration
 * says no_crash_report. Calling it again only adds the stack. Returns 0,
 * or sigaction's or the stack allocation's -errno. Any thread. */
PC_API int pc_crash_install(void);

PC_END_DECLS

#endif
