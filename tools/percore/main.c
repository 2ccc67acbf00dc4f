/* SPDX-License-Identifier: MIT */
/* percore: one binary, one subcommand per file. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "percore/clock.h"
#include "subcommand.h"

#define PC_MAX_CMDS 32

static const struct pc_cmd *cmds[PC_MAX_CMDS];
static int ncmds;

void pc_cmd_register(const struct pc_cmd *c)
{
	if (ncmds < PC_MAX_CMDS)
		cmds[ncmds++] = c;
}

int pc_cmd_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "percore %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see percore %s --help)\n", cmd);
	return PC_EXIT_USAGE;
}

int pc_cmd_refused(const char *cmd, int rc, const char *reason)
{
	const char *hint = rc == -E2BIG ? "; --oversubscribe runs several shards per CPU" :
			   rc == -EADDRINUSE ? "; --reuseport-join shares the port with a server "
					       "of the same user" : "";

	fprintf(stderr, "percore %s: %s%s\n", cmd, reason, hint);
	return PC_EXIT_FAIL;
}

int pc_cmd_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	}
	return 0;
}

static int by_order(const void *a, const void *b)
{
	const struct pc_cmd *x = *(const struct pc_cmd *const *)a;
	const struct pc_cmd *y = *(const struct pc_cmd *const *)b;

	return x->order != y->order ? x->order - y->order : strcmp(x->name, y->name);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: percore COMMAND [OPTIONS]\n\n"
		     "A shard-per-core server toolkit and the instruments that measure it.\n\n"
		     "commands:\n");
	for (int i = 0; i < ncmds; i++)
		fprintf(out, "  %-10s %s\n", cmds[i]->name, cmds[i]->summary);
	fprintf(out, "\n'percore COMMAND --help' or 'percore help COMMAND' describes a command.\n"
		     "Exit status: 0 success, 1 failure, 2 usage error.\n");
}

static const struct pc_cmd *find_cmd(const char *name)
{
	for (int i = 0; i < ncmds; i++)
		if (!strcmp(name, cmds[i]->name))
			return cmds[i];
	return NULL;
}

static int unknown_cmd(const char *name)
{
	fprintf(stderr, "percore: unknown command '%s' (see percore --help)\n", name);
	return PC_EXIT_USAGE;
}

/* `percore help CMD` is `percore CMD --help`: the command prints its own. */
static int help_main(int argc, char **argv)
{
	const struct pc_cmd *c;
	char *args[3];

	if (argc < 3) {
		usage(stdout);
		return PC_EXIT_OK;
	}
	if (!(c = find_cmd(argv[2])))
		return unknown_cmd(argv[2]);
	args[0] = argv[2];
	args[1] = (char *)"--help";
	args[2] = NULL;
	return c->main(2, args);
}

int main(int argc, char **argv)
{
	const struct pc_cmd *c;

	qsort(cmds, (size_t)ncmds, sizeof(cmds[0]), by_order);
	if (argc < 2) {
		usage(stderr);
		return PC_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return PC_EXIT_OK;
	}
	if (!strcmp(argv[1], "help"))
		return help_main(argc, argv);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("percore %s (%s)\n", pc_version(), pc_build_info());
		return PC_EXIT_OK;
	}
	if (!(c = find_cmd(argv[1])))
		return unknown_cmd(argv[1]);
	return c->main(argc - 1, argv + 1);
}
