/* SPDX-License-Identifier: MIT */
/* percore tune and percore reset share their options and their output. */
#ifndef PERCORE_TOOL_TUNE_CLI_H
#define PERCORE_TOOL_TUNE_CLI_H

#include <stdbool.h>

#include "percore/tune.h"

struct pc_tune_cli {
	struct pc_tune_opts opts;
	bool json;
};

/* Parse the options of `percore tune` (reset false) or `percore reset`.
 * Returns -1 to go on, or the exit status to return (help shown, or a
 * usage error reported). */
int pc_tune_cli_parse(int argc, char **argv, bool reset, struct pc_tune_cli *c);

/* Run tune or reset as parsed, print the report, and return the exit
 * status: 0 when no step failed, 1 otherwise (and when this machine needs
 * root we do not have: the plan is shown and nothing is written). */
int pc_tune_cli_run(struct pc_tune_cli *c, bool reset);

#endif
