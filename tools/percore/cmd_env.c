/* SPDX-License-Identifier: MIT */
/* percore env: audit what makes measurements on this machine noisy. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/audit.h"
#include "subcommand.h"

static void help(void)
{
	printf("usage: percore env [--json] [--root DIR] [--path DIR]\n\n"
	       "Check what makes measurements on this machine noisy or slow: VM, CPU\n"
	       "model, SMT, frequency governor, turbo, idle states, PM QoS, THP, swap,\n"
	       "ASLR, NMI watchdog, perf access, CPU isolation, irqbalance, cgroup\n"
	       "limits, busy processes, NVMe APST and PCIe ASPM, and with --path the\n"
	       "storage holding DIR (rotational, scheduler, nr_requests, write cache).\n"
	       "Each line: status (ok, warn, unknown), id,\n"
	       "the value seen, and under each warning the fix. Needs no privileges.\n\n"
	       "  --json       print a JSON array of {id, status, value, fix}\n"
	       "  --root DIR   read DIR/proc and DIR/sys instead of this machine's\n"
	       "  --path DIR   audit the block device that holds DIR\n"
	       "  -h, --help   this help\n\n"
	       "Exit status: 0 audited (warnings included), 1 failure, 2 usage error.\n");
}

static int print_json(const struct pc_audit *a)
{
	cJSON *j = pc_audit_to_json(a);
	char *text = j ? cJSON_Print(j) : NULL;

	cJSON_Delete(j);
	if (!text) {
		fprintf(stderr, "percore env: out of memory\n");
		return PC_EXIT_FAIL;
	}
	puts(text);
	free(text);
	return PC_EXIT_OK;
}

static int env_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "root", required_argument, NULL, 'r' },
		{ "path", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *root = NULL;
	struct pc_audit_opts ao = { 0 };
	struct pc_audit *a;
	bool json = false;
	int c, rc;

	if (pc_cmd_wants_help(argc, argv)) {
		help();
		return PC_EXIT_OK;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'r')
			root = optarg;
		else if (c == 'p')
			ao.path = optarg;
		else if (c == ':')
			return pc_cmd_usage_error("env", "%s needs a value", argv[optind - 1]);
		else
			return pc_cmd_usage_error("env", "unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		return pc_cmd_usage_error("env", "unexpected argument '%s'", argv[optind]);
	if (root && !*root)
		return pc_cmd_usage_error("env", "--root needs a folder");
	rc = pc_audit_collect_opts(root, &ao, &a);
	if (rc) {
		fprintf(stderr, "percore env: audit failed: %s\n", strerror(-rc));
		return PC_EXIT_FAIL;
	}
	if (json) {
		rc = print_json(a);
	} else {
		if (root)
			printf("machine under %s\n", root);
		pc_audit_print(a, stdout, 0);
		rc = PC_EXIT_OK;
	}
	pc_audit_free(a);
	return rc;
}

static const struct pc_cmd env_cmd = {
	.name = "env",
	.summary = "audit what makes measurements on this machine noisy",
	.order = 20,
	.main = env_main,
};
PC_CMD_REGISTER(env_cmd);
