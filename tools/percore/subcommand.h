/* SPDX-License-Identifier: MIT */
/* percore command: subcommand registration and shared helpers.
 *
 * Each subcommand lives in its own cmd_<name>.c and registers itself with
 * PC_CMD_REGISTER, so adding one touches no other file. Exit status: 0
 * success, 1 failure, 2 usage error (one-line reason on stderr). */
#ifndef PERCORE_TOOL_CMD_H
#define PERCORE_TOOL_CMD_H

#include <stdio.h>

enum { PC_EXIT_OK = 0, PC_EXIT_FAIL = 1, PC_EXIT_USAGE = 2 };

struct pc_cmd {
	const char *name;
	const char *summary;    /* one line for `percore --help` */
	int order;              /* position in the help list */
	/* argv[0] is the subcommand's name; getopt-ready. */
	int (*main)(int argc, char **argv);
};

void pc_cmd_register(const struct pc_cmd *c);

#define PC_CMD_REGISTER(c)                                                    \
	__attribute__((constructor)) static void pc_cmd_reg_self(void)         \
	{                                                                     \
		pc_cmd_register(&(c));                                        \
	}

/* Print "percore CMD: reason" to stderr and return PC_EXIT_USAGE. */
int pc_cmd_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Print "percore CMD: reason" for a command the library refused to run
 * (rc its -errno, reason its message) and, where an option lifts that
 * refusal, the option: -E2BIG (more shards than CPUs) --oversubscribe,
 * -EADDRINUSE (a port another server listens on) --reuseport-join.
 * Returns PC_EXIT_FAIL. */
int pc_cmd_refused(const char *cmd, int rc, const char *reason);

/* True when any argument is -h or --help. */
int pc_cmd_wants_help(int argc, char **argv);

#endif
