/* SPDX-License-Identifier: MIT */
/* percore tune: a measurement profile for this machine (see percore/tune.h). */
#include "subcommand.h"
#include "tune_cli.h"

static int tune_main(int argc, char **argv)
{
	struct pc_tune_cli c;
	int rc = pc_tune_cli_parse(argc, argv, false, &c);

	return rc >= 0 ? rc : pc_tune_cli_run(&c, false);
}

static const struct pc_cmd tune_cmd = {
	.name = "tune",
	.summary = "set the machine up for quiet measurement (root; undo with reset)",
	.order = 21,
	.main = tune_main,
};
PC_CMD_REGISTER(tune_cmd);
