/* SPDX-License-Identifier: MIT */
/* percore reset: undo what percore tune changed. */
#include "subcommand.h"
#include "tune_cli.h"

static int reset_main(int argc, char **argv)
{
	struct pc_tune_cli c;
	int rc = pc_tune_cli_parse(argc, argv, true, &c);

	return rc >= 0 ? rc : pc_tune_cli_run(&c, true);
}

static const struct pc_cmd reset_cmd = {
	.name = "reset",
	.summary = "put back the settings percore tune changed",
	.order = 22,
	.main = reset_main,
};
PC_CMD_REGISTER(reset_cmd);
