/* SPDX-License-Identifier: MIT */
/* percore report and compare: the command-line options they share. */
#include <errno.h>
#include <stdlib.h>

#include "subcommand.h"
#include "options.h"

int pc_parse_level(const char *s, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || !(v <= max))
		return -EINVAL;
	*out = v;
	return 0;
}

int pc_stat_option(const char *cmd, int opt, char **argv, double *alpha, double *max_cv)
{
	switch (opt) {
	case 'a':
		if (pc_parse_level(optarg, 0.5, alpha) < 0)
			return pc_cmd_usage_error(cmd, "--alpha wants a number in (0, 0.5], got '%s'",
						  optarg);
		return 0;
	case 'c':
		if (pc_parse_level(optarg, 100, max_cv) < 0)
			return pc_cmd_usage_error(cmd, "--max-cv wants a positive number, got '%s'",
						  optarg);
		return 0;
	case ':':
		return pc_cmd_usage_error(cmd, "%s needs a value", argv[optind - 1]);
	case '?':
		return pc_cmd_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
	default:
		return -1;
	}
}
