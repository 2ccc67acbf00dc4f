/* SPDX-License-Identifier: MIT */
/* Fuzz the parsers of the environment code that read text someone else
 * wrote: the tune state file (reset, run as root, obeys it), /proc/PID/stat
 * lines, kernel choice lists, and /proc/self/cgroup with mountinfo (split
 * at a line "--"), read through a scratch root. None may crash, leak or
 * accept a state entry outside the files tune writes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "percore/cgroup.h"
#include "env/audit_impl.h"
#include "env/tune_impl.h"

static char root[64];

static void put(const char *rel, const char *text, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		abort();
	fwrite(text, 1, len, f);
	fclose(f);
}

static void remove_root(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
}

static void make_root(void)
{
	char cmd[160];

	snprintf(root, sizeof(root), "/tmp/pc_fuzz_env_XXXXXX");
	if (!mkdtemp(root))
		abort();
	atexit(remove_root);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/proc/self %s/sys/fs/cgroup/cpu %s/sys/fs/cgroup/a/b",
		 root, root, root);
	if (system(cmd) != 0)
		abort();
	put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n", 18);
	put("sys/fs/cgroup/a/cpu.max", "50000 100000\n", 13);
	put("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "20000\n", 6);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), word[64], *sep;
	struct pc_tune_state st;
	struct pc_proc_sample ps;
	struct pc_cgroup cg;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (sys_tune_state_parse(text, &st) == 0) {
		for (size_t i = 0; i < st.n; i++) {
			int cpu;

			if (!sys_tune_setting_for(st.c[i].setting, st.c[i].path, &cpu) ||
			    !sys_tune_value_ok(st.c[i].old_value) || !sys_tune_value_ok(st.c[i].new_value))
				abort();
		}
		sys_tune_state_free(&st);
	}
	sys_proc_parse_stat(text, &ps);
	sys_str_selected(text, word, sizeof(word));
	sys_str_has_word(text, "madvise", " []");

	if (!root[0])
		make_root();
	sep = strstr(text, "\n--\n");
	put("proc/self/cgroup", text, sep ? (size_t)(sep - text) + 1 : strlen(text));
	if (sep)
		put("proc/self/mountinfo", sep + 4, strlen(sep + 4));
	else
		put("proc/self/mountinfo", "", 0);
	if (pc_cgroup_read(root, &cg) || cg.version < 0 || cg.version > 2 ||
	    (cg.has_cpu_quota && cg.quota_cpus <= 0))
		abort();
	free(text);
	return 0;
}
