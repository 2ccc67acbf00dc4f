/* SPDX-License-Identifier: MIT */
/* percore tune and percore reset: options, privilege, report output. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "subcommand.h"
#include "tune_cli.h"

static void help(bool reset)
{
	if (reset) {
		printf("usage: percore reset [--state FILE] [--root DIR] [--dry-run] [--json]\n\n"
		       "Put back every value `percore tune` changed, newest first, as saved in\n"
		       "its state file, then remove the file (kept when a value could not be\n"
		       "restored, so reset can run again). Needs root on a real machine.\n"
		       "Without a state file there is nothing to reset: it says so (with --json\n"
		       "\"nothing_to_reset\": true) and exits 0.\n\n");
	} else {
		printf("usage: percore tune [--turbo-off] [--smt-off] [--path DIR] [--state FILE]\n"
		       "                    [--root DIR] [--dry-run] [--json]\n\n"
		       "Apply a measurement profile: the performance governor on every CPU,\n"
		       "THP enabled=madvise, ASLR off, the NMI watchdog off; turbo and SMT only\n"
		       "when asked. Every value it changes is first saved to the state file\n"
		       "(JSON); `percore reset` restores them. Each step says: applied, already\n"
		       "set, not applicable (not exposed here, as cpufreq in most VMs), not\n"
		       "requested, or failed (with the reason); a failed step does not stop\n"
		       "the others. Needs root on a real machine: without it, prints what it\n"
		       "would change and exits 1.\n\n"
		       "  --turbo-off  also turn turbo off (intel_pstate no_turbo, cpufreq boost)\n"
		       "  --smt-off    also turn SMT off (takes the sibling CPUs offline)\n"
		       "  --path DIR   also the storage settings `percore env --path DIR` checks:\n"
		       "               the I/O scheduler of the disk holding DIR (none) and its\n"
		       "               nr_requests (256 when below 64), PCIe ASPM (performance)\n"
		       "               and NVMe APST (off, for every controller present)\n");
	}
	printf("  --state FILE where the previous values are kept\n"
	       "               (default %s, under DIR with --root)\n"
	       "  --root DIR   act on a fake tree DIR/proc, DIR/sys instead of this machine\n"
	       "  --dry-run    show what would change; write nothing\n"
	       "  --json       print the report as JSON\n"
	       "  -h, --help   this help\n\n"
	       "Exit status: 0 every step done or not needed, 1 a step failed or root is\n"
	       "needed, 2 usage error.\n", PC_TUNE_STATE_DEFAULT);
}

int pc_tune_cli_parse(int argc, char **argv, bool reset, struct pc_tune_cli *c)
{
	static const struct option opts[] = {
		{ "turbo-off", no_argument, NULL, 't' },
		{ "smt-off", no_argument, NULL, 's' },
		{ "path", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 'f' },
		{ "root", required_argument, NULL, 'r' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *cmd = reset ? "reset" : "tune";
	int ch;

	memset(c, 0, sizeof(*c));
	if (pc_cmd_wants_help(argc, argv)) {
		help(reset);
		return PC_EXIT_OK;
	}
	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (reset && (ch == 't' || ch == 's' || ch == 'p'))
			return pc_cmd_usage_error(cmd, "%s belongs to percore tune", argv[optind - 1]);
		switch (ch) {
		case 't': c->opts.turbo_off = true; break;
		case 's': c->opts.smt_off = true; break;
		case 'p': c->opts.path = optarg; break;
		case 'f': c->opts.state_path = optarg; break;
		case 'r': c->opts.root = optarg; break;
		case 'n': c->opts.dry_run = true; break;
		case 'j': c->json = true; break;
		case ':':
			return pc_cmd_usage_error(cmd, "%s needs a value", argv[optind - 1]);
		default:
			return pc_cmd_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return pc_cmd_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if ((c->opts.root && !*c->opts.root) || (c->opts.state_path && !*c->opts.state_path) ||
	    (c->opts.path && !*c->opts.path))
		return pc_cmd_usage_error(cmd, "--root, --state and --path need a non-empty path");
	return -1;
}

static int print_report(const struct pc_tune_report *r, bool json)
{
	cJSON *j;
	char *text;

	if (!json) {
		pc_tune_report_print(r, stdout);
		return 0;
	}
	j = pc_tune_report_to_json(r);
	text = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	if (!text)
		return -ENOMEM;
	puts(text);
	free(text);
	return 0;
}

static void explain_error(const char *cmd, int rc, const char *state)
{
	if (rc == -EINVAL)
		fprintf(stderr, "percore %s: %s is not a state file this user may use for this root "
				"(another user's, writable by others, another --root, or damaged); "
				"nothing was changed\n", cmd, state);
	else
		fprintf(stderr, "percore %s: %s (state file %s); nothing was changed\n", cmd,
			strerror(-rc), state);
}

/* reset without a state file: tune changed nothing (or reset already put
 * it back), so there is nothing to do, which is success. */
static int nothing_to_reset(const struct pc_tune_cli *c, const char *state)
{
	cJSON *j = NULL;
	char *text = NULL;

	if (!c->json) {
		printf("nothing to reset: no state file at %s\n", state);
		return PC_EXIT_OK;
	}
	if ((j = cJSON_CreateObject()) && cJSON_AddStringToObject(j, "state", state) &&
	    cJSON_AddBoolToObject(j, "dry_run", c->opts.dry_run) &&
	    cJSON_AddBoolToObject(j, "nothing_to_reset", true) &&
	    cJSON_AddBoolToObject(j, "state_removed", false) && cJSON_AddArrayToObject(j, "steps"))
		text = cJSON_Print(j);
	cJSON_Delete(j);
	if (!text) {
		fprintf(stderr, "percore reset: out of memory\n");
		return PC_EXIT_FAIL;
	}
	puts(text);
	free(text);
	return PC_EXIT_OK;
}

int pc_tune_cli_run(struct pc_tune_cli *c, bool reset)
{
	const char *cmd = reset ? "reset" : "tune";
	bool unprivileged = pc_tune_needs_privilege(c->opts.root) && !c->opts.dry_run;
	struct pc_tune_report *r;
	char state[4096] = "?";
	int rc, status;

	/* Without root on the real machine: show the plan, change nothing. */
	if (unprivileged)
		c->opts.dry_run = true;
	pc_tune_state_path(&c->opts, state, sizeof(state));
	rc = reset ? pc_tune_reset(&c->opts, &r) : pc_tune_apply(&c->opts, &r);
	if (reset && rc == -ENOENT)
		return nothing_to_reset(c, state);
	if (rc) {
		explain_error(cmd, rc, state);
		return PC_EXIT_FAIL;
	}
	status = pc_tune_report_count_result(r, PC_TUNE_FAILED) ? PC_EXIT_FAIL : PC_EXIT_OK;
	if (print_report(r, c->json)) {
		fprintf(stderr, "percore %s: out of memory\n", cmd);
		status = PC_EXIT_FAIL;
	}
	if (unprivileged) {
		fprintf(stderr, "percore %s: these settings belong to the kernel and only root may "
				"change them: nothing was changed. Run it as root (sudo percore %s), "
				"or use --dry-run to only look.\n", cmd, cmd);
		status = PC_EXIT_FAIL;
	}
	pc_tune_report_free(r);
	return status;
}
