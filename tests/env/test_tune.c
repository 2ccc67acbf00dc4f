/* SPDX-License-Identifier: MIT */
/* tune and reset on copies of the fixture trees: a round trip restores
 * every file byte for byte; settings a machine does not expose are
 * reported not applicable; a failing step does not stop the others; a dry
 * run writes nothing; the state file is merged, and refused when it is not
 * ours. The real machine is only ever asked for a dry run. */
#include "env/tune_impl.h"
#include "percore/audit.h"

#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/sysmacros.h>

#include "env/envtest.h"
#include "testmain.h"

#define STATE_REL "var/tmp/percore-tune.state"

static bool dry_run_proven;   /* the fake-tree dry run wrote nothing */

static size_t count_steps(const struct pc_tune_report *r, const char *setting,
			  enum pc_tune_result res)
{
	size_t n = 0;

	for (size_t i = 0; i < pc_tune_report_count(r); i++) {
		const struct pc_tune_step *s = pc_tune_report_step(r, i);

		n += !strcmp(s->setting, setting) && s->result == res;
	}
	return n;
}

static const struct pc_tune_step *find_step(const struct pc_tune_report *r, const char *setting)
{
	for (size_t i = 0; i < pc_tune_report_count(r); i++)
		if (!strcmp(pc_tune_report_step(r, i)->setting, setting))
			return pc_tune_report_step(r, i);
	return NULL;
}

static bool state_exists(const char *root)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, STATE_REL);
	return stat(path, &st) == 0;
}

static enum pc_audit_status audit_status(const char *root, const char *id)
{
	struct pc_audit *a = NULL;
	enum pc_audit_status s;

	assert_int_equal(pc_audit_collect(root, &a), 0);
	s = pc_audit_find(a, id)->status;
	pc_audit_free(a);
	return s;
}

static void expect_step(const struct pc_tune_step *s, const char *setting, enum pc_tune_result res,
			const char *old, const char *new)
{
	assert_non_null(s);
	if (strcmp(s->setting, setting) || s->result != res || strcmp(s->old_value, old) ||
	    strcmp(s->new_value, new))
		fail_msg("step %s %s: %s %s -> %s (%s); want %s %s %s -> %s", s->setting, s->path,
			 pc_tune_result_name(s->result), s->old_value, s->new_value, s->reason, setting,
			 pc_tune_result_name(res), old, new);
}

static void desktop_round_trip(void **state)
{
	struct pc_tune_opts o = { .turbo_off = true, .smt_off = true };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("desktop"), *thp;
	(void)state;

	assert_non_null(t);
	o.root = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(pc_tune_report_count(r), 13);
	assert_int_equal(count_steps(r, "cpu.governor", PC_TUNE_APPLIED), 8);
	for (int i = 0; i < 8; i++) {
		expect_step(pc_tune_report_step(r, (size_t)i), "cpu.governor", PC_TUNE_APPLIED,
			    "powersave", "performance");
		assert_int_equal(pc_tune_report_step(r, (size_t)i)->cpu, i);
	}
	expect_step(pc_tune_report_step(r, 8), "cpu.turbo", PC_TUNE_APPLIED, "0", "1");
	expect_step(pc_tune_report_step(r, 9), "mm.thp", PC_TUNE_APPLIED, "always", "madvise");
	expect_step(pc_tune_report_step(r, 10), "kernel.aslr", PC_TUNE_APPLIED, "2", "0");
	expect_step(pc_tune_report_step(r, 11), "kernel.nmi_watchdog", PC_TUNE_APPLIED, "1", "0");
	expect_step(pc_tune_report_step(r, 12), "cpu.smt", PC_TUNE_APPLIED, "on", "off");
	pc_tune_report_free(r);
	assert_true(state_exists(t));

	/* the tree now reads like a tuned kernel */
	thp = envtest_slurp(t, "sys/kernel/mm/transparent_hugepage/enabled");
	assert_string_equal(thp, "always [madvise] never\n");
	free(thp);
	assert_int_equal(audit_status(t, "cpu.governor"), PC_AUDIT_OK);
	assert_int_equal(audit_status(t, "cpu.turbo"), PC_AUDIT_OK);
	assert_int_equal(audit_status(t, "mm.thp"), PC_AUDIT_OK);
	assert_int_equal(audit_status(t, "kernel.aslr"), PC_AUDIT_OK);
	assert_int_equal(audit_status(t, "kernel.nmi_watchdog"), PC_AUDIT_OK);
	assert_int_equal(audit_status(t, "cpu.smt"), PC_AUDIT_OK);

	/* reset: newest first, every value back, the state file gone */
	assert_int_equal(pc_tune_reset(&o, &r), 0);
	assert_int_equal(pc_tune_report_count(r), 13);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_APPLIED), 13);
	expect_step(pc_tune_report_step(r, 0), "cpu.smt", PC_TUNE_APPLIED, "off", "on");
	expect_step(pc_tune_report_step(r, 12), "cpu.governor", PC_TUNE_APPLIED, "performance", "powersave");
	pc_tune_report_free(r);
	assert_false(state_exists(t));
	assert_int_equal(envtest_tree_diff(envtest_fixture("desktop"), t, "var"), 0);
	/* nothing left to reset */
	assert_int_equal(pc_tune_reset(&o, &r), -ENOENT);
	assert_null(r);
	envtest_rmtree(t);
}

/* Steps this machine cannot take are listed as not applicable, in the
 * report and its text, never dropped. */
static void not_applicable_steps_are_listed(void **state)
{
	struct pc_tune_opts o = { .turbo_off = true, .smt_off = true };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("container-v1"), *text = NULL;
	size_t len = 0;
	FILE *f;
	(void)state;

	assert_non_null(t);
	o.root = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(pc_tune_report_count(r), 6);
	assert_int_equal(count_steps(r, "cpu.governor", PC_TUNE_NOT_APPLICABLE), 1);
	assert_non_null(strstr(find_step(r, "cpu.governor")->reason, "no cpufreq"));
	assert_int_equal(count_steps(r, "cpu.turbo", PC_TUNE_NOT_APPLICABLE), 1);
	expect_step(find_step(r, "cpu.smt"), "cpu.smt", PC_TUNE_ALREADY, "off", "off");
	expect_step(find_step(r, "mm.thp"), "mm.thp", PC_TUNE_ALREADY, "madvise", "madvise");
	expect_step(find_step(r, "kernel.aslr"), "kernel.aslr", PC_TUNE_APPLIED, "2", "0");
	expect_step(find_step(r, "kernel.nmi_watchdog"), "kernel.nmi_watchdog", PC_TUNE_ALREADY, "0", "0");
	f = open_memstream(&text, &len);
	pc_tune_report_print(r, f);
	fclose(f);
	assert_non_null(strstr(text, "cpu.governor         not applicable  not exposed: no cpufreq"));
	assert_non_null(strstr(text, "cpu.turbo            not applicable"));
	assert_non_null(strstr(text, "percore reset restores them"));
	free(text);
	pc_tune_report_free(r);
	assert_int_equal(pc_tune_reset(&o, &r), 0);
	assert_int_equal(pc_tune_report_count(r), 1);
	pc_tune_report_free(r);
	assert_int_equal(envtest_tree_diff(envtest_fixture("container-v1"), t, "var"), 0);
	envtest_rmtree(t);

	/* a VM that exposes nothing: every step not applicable, nothing saved */
	t = envtest_copy_fixture("vm");
	o.root = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(pc_tune_report_count(r), 6);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_NOT_APPLICABLE), 6);
	pc_tune_report_free(r);
	assert_false(state_exists(t));
	assert_int_equal(envtest_tree_diff(envtest_fixture("vm"), t, NULL), 0);
	envtest_rmtree(t);
}

/* A CPU without SMT: the step says so in words ("not supported"), not in
 * the kernel's smt/control token. */
static void smt_not_supported_in_words(void **state)
{
	struct pc_tune_opts o = { .smt_off = true, .dry_run = true };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("container-v2"), *text = NULL;
	size_t len = 0;
	FILE *f;
	(void)state;

	assert_non_null(t);
	o.root = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_non_null(find_step(r, "cpu.smt"));
	assert_int_equal(find_step(r, "cpu.smt")->result, PC_TUNE_NOT_APPLICABLE);
	assert_string_equal(find_step(r, "cpu.smt")->reason, "SMT control is not supported here");
	f = open_memstream(&text, &len);
	pc_tune_report_print(r, f);
	fclose(f);
	assert_non_null(strstr(text, "SMT control is not supported here"));
	assert_null(strstr(text, "notsupported"));
	free(text);
	pc_tune_report_free(r);
	envtest_rmtree(t);
}

/* Without --turbo-off / --smt-off those stay as they are, and say so. */
static void optional_steps_wait_to_be_asked(void **state)
{
	struct pc_tune_opts o = { 0 };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("desktop"), *v;
	(void)state;

	o.root = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(count_steps(r, "cpu.turbo", PC_TUNE_NOT_REQUESTED), 1);
	assert_int_equal(count_steps(r, "cpu.smt", PC_TUNE_NOT_REQUESTED), 1);
	pc_tune_report_free(r);
	v = envtest_slurp(t, "sys/devices/system/cpu/intel_pstate/no_turbo");
	assert_string_equal(v, "0\n");
	free(v);
	v = envtest_slurp(t, "sys/devices/system/cpu/smt/control");
	assert_string_equal(v, "on\n");
	free(v);

	/* a second tune adds turbo and keeps the first saved governors */
	o.turbo_off = true;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(count_steps(r, "cpu.governor", PC_TUNE_ALREADY), 8);
	assert_int_equal(count_steps(r, "cpu.turbo", PC_TUNE_APPLIED), 1);
	pc_tune_report_free(r);
	{
		struct pc_tune_state st;
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s", t, STATE_REL);
		assert_int_equal(sys_tune_state_load(path, &st), 0);
		assert_int_equal(st.n, 12);
		assert_string_equal(st.c[0].old_value, "powersave");
		assert_string_equal(st.c[11].setting, "cpu.turbo");
		sys_tune_state_free(&st);
	}
	assert_int_equal(pc_tune_reset(&o, &r), 0);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_APPLIED), 12);
	pc_tune_report_free(r);
	assert_int_equal(envtest_tree_diff(envtest_fixture("desktop"), t, "var"), 0);
	envtest_rmtree(t);
}

static void dry_run_writes_nothing(void **state)
{
	struct pc_tune_opts o = { .turbo_off = true, .smt_off = true, .dry_run = true };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("desktop");
	cJSON *j;
	(void)state;

	o.root = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_WOULD_APPLY), 13);
	j = pc_tune_report_to_json(r);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "dry_run")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "state_saved")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), 13);
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), 0),
						"result")->valuestring, "would apply");
	cJSON_Delete(j);
	pc_tune_report_free(r);
	assert_false(state_exists(t));
	assert_int_equal(envtest_tree_diff(envtest_fixture("desktop"), t, NULL), 0);
	envtest_rmtree(t);
	dry_run_proven = true;
}

/* One step fails (the kernel refuses the write; a file that makes no
 * sense; a choice the kernel lacks) and the rest still happen. */
static void failed_step_does_not_stop_the_rest(void **state)
{
	struct pc_tune_opts o = { 0 };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("desktop"), path[1024];
	(void)state;

	o.root = t;
	snprintf(path, sizeof(path), "%s/proc/sys/kernel/nmi_watchdog", t);
	unlink(path);
	if (geteuid() == 0) {
		/* root writes any plain file; a read-only sysctl refuses even root */
		assert_int_equal(symlink("/proc/sys/kernel/ngroups_max", path), 0);
	} else {
		assert_int_equal(envtest_write(t, "proc/sys/kernel/nmi_watchdog", "1\n"), 0);
		assert_int_equal(chmod(path, 0444), 0);
	}
	assert_int_equal(envtest_write(t, "sys/devices/system/cpu/cpu5/cpufreq/scaling_governor",
				       "power save mode\n"), 0);
	assert_int_equal(envtest_write(t, "sys/kernel/mm/transparent_hugepage/enabled",
				       "[always] never\n"), 0);
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_FAILED), 2);
	assert_int_equal(find_step(r, "kernel.nmi_watchdog")->result, PC_TUNE_FAILED);
	assert_non_null(strstr(find_step(r, "kernel.nmi_watchdog")->reason, "Permission denied"));
	assert_int_equal(pc_tune_report_step(r, 5)->result, PC_TUNE_FAILED);
	assert_non_null(strstr(pc_tune_report_step(r, 5)->reason, "cannot make sense"));
	assert_int_equal(find_step(r, "mm.thp")->result, PC_TUNE_NOT_APPLICABLE);
	assert_non_null(strstr(find_step(r, "mm.thp")->reason, "offers no madvise"));
	assert_int_equal(count_steps(r, "cpu.governor", PC_TUNE_APPLIED), 7);
	assert_int_equal(find_step(r, "kernel.aslr")->result, PC_TUNE_APPLIED);
	pc_tune_report_free(r);
	/* reset restores what changed; the refused value never moved */
	assert_int_equal(pc_tune_reset(&o, &r), 0);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_FAILED), 0);
	assert_int_equal(count_steps(r, "kernel.nmi_watchdog", PC_TUNE_ALREADY), 1);
	pc_tune_report_free(r);
	assert_false(state_exists(t));
	envtest_rmtree(t);
}

static void write_state(const char *t, const char *text, mode_t mode)
{
	char path[1024];

	assert_int_equal(envtest_write(t, STATE_REL, text), 0);
	snprintf(path, sizeof(path), "%s/%s", t, STATE_REL);
	assert_int_equal(chmod(path, mode), 0);
}

/* reset as root writes what the state file says: it must be ours, and
 * name only files tune writes, with plain words as values. */
static void state_file_is_checked(void **state)
{
	struct pc_tune_opts o = { 0 };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("desktop"), good[2048], other[2048], link[1024];
	const char *fmt = "{\"format\":\"percore-tune-state\",\"version\":1,\"root\":\"%s\","
			  "\"changes\":[{\"setting\":\"%s\",\"path\":\"%s\",\"old\":\"%s\",\"new\":\"0\"}]}";
	char real[512];
	(void)state;

	o.root = t;
	assert_non_null(realpath(t, real));
	snprintf(good, sizeof(good), fmt, real, "kernel.aslr", "/proc/sys/kernel/randomize_va_space", "1");
	snprintf(other, sizeof(other), fmt, real, "kernel.aslr", "/etc/passwd", "1");
	write_state(t, other, 0600);
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	snprintf(other, sizeof(other), fmt, real, "kernel.aslr", "/proc/sys/kernel/randomize_va_space",
		 "1; rm -rf");
	write_state(t, other, 0600);
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	snprintf(other, sizeof(other), fmt, real, "cpu.governor", "/proc/sys/kernel/randomize_va_space", "1");
	write_state(t, other, 0600);
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	snprintf(other, sizeof(other), fmt, "/somewhere/else", "kernel.aslr",
		 "/proc/sys/kernel/randomize_va_space", "1");
	write_state(t, other, 0600);
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	/* tune will not merge into it either, and changes nothing */
	assert_int_equal(pc_tune_apply(&o, &r), -EINVAL);
	assert_null(r);
	write_state(t, "{\"format\":\"percore-tune-state\",\"version\":2}", 0600);
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	write_state(t, "not json", 0600);
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	write_state(t, good, 0666);
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	/* a link is not followed */
	snprintf(link, sizeof(link), "%s/var/tmp/elsewhere.state", t);
	write_state(t, good, 0600);
	assert_int_equal(envtest_write(t, "var/tmp/elsewhere.state", good), 0);
	chmod(link, 0600);
	snprintf(other, sizeof(other), "%s/var/tmp/link.state", t);
	assert_int_equal(symlink(link, other), 0);
	o.state_path = other;
	assert_int_equal(pc_tune_reset(&o, &r), -EINVAL);
	o.state_path = NULL;
	assert_int_equal(envtest_tree_diff(envtest_fixture("desktop"), t, "var"), 0);

	/* the well-formed one is used: ASLR goes to 1 and the file goes away */
	assert_int_equal(pc_tune_reset(&o, &r), 0);
	expect_step(pc_tune_report_step(r, 0), "kernel.aslr", PC_TUNE_APPLIED, "2", "1");
	pc_tune_report_free(r);
	assert_false(state_exists(t));
	envtest_rmtree(t);
}

/* The storage settings of a disk that wants them all, written into a
 * tree at the device number of the real folder `of`. */
static void put_slow_storage(const char *t, const char *of)
{
	struct stat st;
	char sched[128], nr[128];

	assert_int_equal(stat(of, &st), 0);
	snprintf(sched, sizeof(sched), "sys/dev/block/%u:%u/queue/scheduler", major(st.st_dev),
		 minor(st.st_dev));
	snprintf(nr, sizeof(nr), "sys/dev/block/%u:%u/queue/nr_requests", major(st.st_dev),
		 minor(st.st_dev));
	assert_int_equal(envtest_write(t, sched, "none [mq-deadline] kyber\n"), 0);
	assert_int_equal(envtest_write(t, nr, "32\n"), 0);
	assert_int_equal(envtest_write(t, "sys/module/pcie_aspm/parameters/policy",
				       "[default] performance powersave\n"), 0);
	assert_int_equal(envtest_write(t, "sys/module/nvme_core/parameters/default_ps_max_latency_us",
				       "100000\n"), 0);
	assert_int_equal(envtest_write(t, "sys/class/nvme/nvme0/power/pm_qos_latency_tolerance_us",
				       "100000\n"), 0);
}

static enum pc_audit_status storage_status(const char *root, const char *id)
{
	struct pc_audit_opts ao = { .sample_ms = 1, .path = root };
	struct pc_audit *a = NULL;
	enum pc_audit_status s;

	assert_int_equal(pc_audit_collect_opts(root, &ao, &a), 0);
	s = pc_audit_find(a, id)->status;
	pc_audit_free(a);
	return s;
}

/* --path: the disk's scheduler and queue size, ASPM and APST are tuned
 * until `percore env --path` finds nothing to fix, and reset puts every
 * byte back. Without --path none of them is touched. */
static void storage_round_trip(void **state)
{
	struct pc_tune_opts o = { 0 };
	struct pc_tune_report *r = NULL;
	char *t = envtest_copy_fixture("desktop"), *ref = envtest_copy_fixture("desktop");
	static const char *const ids[] = { "storage.scheduler", "storage.nr_requests",
					   "storage.pcie_aspm", "storage.nvme_apst" };
	(void)state;

	assert_non_null(t);
	assert_non_null(ref);
	put_slow_storage(t, t);
	put_slow_storage(ref, t);
	o.root = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_null(find_step(r, "storage.scheduler"));
	pc_tune_report_free(r);
	assert_int_equal(pc_tune_reset(&o, &r), 0);
	pc_tune_report_free(r);

	o.path = t;
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	expect_step(find_step(r, "storage.scheduler"), "storage.scheduler", PC_TUNE_APPLIED,
		    "mq-deadline", "none");
	expect_step(find_step(r, "storage.nr_requests"), "storage.nr_requests", PC_TUNE_APPLIED,
		    "32", "256");
	expect_step(find_step(r, "storage.pcie_aspm"), "storage.pcie_aspm", PC_TUNE_APPLIED,
		    "default", "performance");
	assert_int_equal(count_steps(r, "storage.nvme_apst", PC_TUNE_APPLIED), 2);
	pc_tune_report_free(r);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		assert_int_equal(storage_status(t, ids[i]), PC_AUDIT_OK);

	/* a second tune finds everything set, and a deep queue is left alone */
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		assert_int_equal(find_step(r, ids[i])->result, PC_TUNE_ALREADY);
	pc_tune_report_free(r);

	assert_int_equal(pc_tune_reset(&o, &r), 0);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_FAILED), 0);
	assert_int_equal(count_steps(r, "storage.nvme_apst", PC_TUNE_APPLIED), 2);
	pc_tune_report_free(r);
	assert_int_equal(envtest_tree_diff(ref, t, "var"), 0);

	/* a folder on no block device of the tree: said, nothing else lost */
	o.path = "/proc";
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(find_step(r, "storage.scheduler")->result, PC_TUNE_NOT_APPLICABLE);
	assert_non_null(strstr(find_step(r, "storage.scheduler")->reason, "block device"));
	pc_tune_report_free(r);
	envtest_rmtree(t);
	envtest_rmtree(ref);
}

static void options_and_paths(void **state)
{
	struct pc_tune_opts o = { .root = "/x/y" };
	struct pc_tune_report *r = NULL;
	char buf[256];
	int cpu = 99;
	(void)state;

	assert_int_equal(pc_tune_state_path(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/y/var/tmp/percore-tune.state");
	o.state_path = "/tmp/s.json";
	assert_int_equal(pc_tune_state_path(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp/s.json");
	o.root = NULL;
	o.state_path = NULL;
	assert_int_equal(pc_tune_state_path(&o, buf, sizeof(buf)), 0);
	assert_string_equal(buf, PC_TUNE_STATE_DEFAULT);
	assert_int_equal(pc_tune_state_path(&o, buf, 4), -ENAMETOOLONG);
	assert_false(pc_tune_needs_privilege(envtest_fixture("desktop")));
	assert_int_equal(pc_tune_needs_privilege(NULL), geteuid() != 0);
	assert_int_equal(pc_tune_needs_privilege("/"), geteuid() != 0);
	assert_int_equal(pc_tune_apply(NULL, &r), -EINVAL);
	assert_int_equal(pc_tune_reset(&o, NULL), -EINVAL);
	assert_string_equal(sys_tune_setting_for("cpu.governor",
		"/sys/devices/system/cpu/cpu12/cpufreq/scaling_governor", &cpu), "cpu.governor");
	assert_int_equal(cpu, 12);
	assert_null(sys_tune_setting_for("cpu.governor", "/sys/devices/system/cpu/cpu1/../../x", &cpu));
	assert_null(sys_tune_setting_for("cpu.governor",
		"/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor/x", &cpu));
	assert_string_equal(sys_tune_setting_for("mm.thp", "/sys/kernel/mm/transparent_hugepage/enabled",
						 &cpu), "mm.thp");
	assert_int_equal(cpu, -1);
	/* the storage files, as a state file may name them */
	assert_string_equal(sys_tune_setting_for("storage.scheduler",
		"/sys/dev/block/8:1/../queue/scheduler", &cpu), "storage.scheduler");
	assert_string_equal(sys_tune_setting_for("storage.nr_requests",
		"/sys/dev/block/259:0/queue/nr_requests", &cpu), "storage.nr_requests");
	assert_string_equal(sys_tune_setting_for("storage.nvme_apst",
		"/sys/class/nvme/nvme3/power/pm_qos_latency_tolerance_us", &cpu), "storage.nvme_apst");
	assert_string_equal(sys_tune_setting_for("storage.pcie_aspm",
		"/sys/module/pcie_aspm/parameters/policy", &cpu), "storage.pcie_aspm");
	assert_null(sys_tune_setting_for("storage.scheduler", "/sys/dev/block/8:1/queue/../../../../etc/x",
					 &cpu));
	assert_null(sys_tune_setting_for("storage.scheduler", "/sys/dev/block/8:1/queue/nr_requests",
					 &cpu));
	assert_null(sys_tune_setting_for("storage.nvme_apst", "/sys/class/nvme/nvme0/../../x", &cpu));
	assert_true(sys_tune_value_ok("performance") && sys_tune_value_ok("defer+madvise"));
	assert_false(sys_tune_value_ok("") || sys_tune_value_ok("a b") || sys_tune_value_ok("../x"));
	pc_tune_report_free(NULL);
}

/* The real machine: only ever a dry run, and only once the dry run has
 * been seen to write nothing on a fake tree. */
static void real_machine_dry_run(void **state)
{
	struct pc_tune_opts o = { .dry_run = true, .turbo_off = true, .smt_off = true };
	struct pc_tune_report *r = NULL;
	bool had_state = access(PC_TUNE_STATE_DEFAULT, F_OK) == 0;
	(void)state;

	if (!dry_run_proven)
		PC_SKIP("the dry run was not seen to write nothing on a fake tree");
	assert_int_equal(pc_tune_apply(&o, &r), 0);
	assert_int_equal(pc_tune_report_count_result(r, PC_TUNE_APPLIED), 0);
	assert_true(pc_tune_report_count(r) >= 6);
	pc_tune_report_print(r, stdout);
	pc_tune_report_free(r);
	assert_int_equal(access(PC_TUNE_STATE_DEFAULT, F_OK) == 0, had_state);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dry_run_writes_nothing),
		cmocka_unit_test(desktop_round_trip),
		cmocka_unit_test(not_applicable_steps_are_listed),
		cmocka_unit_test(smt_not_supported_in_words),
		cmocka_unit_test(optional_steps_wait_to_be_asked),
		cmocka_unit_test(failed_step_does_not_stop_the_rest),
		cmocka_unit_test(state_file_is_checked),
		cmocka_unit_test(storage_round_trip),
		cmocka_unit_test(options_and_paths),
		cmocka_unit_test(real_machine_dry_run),
	};
	return pc_test_main(tests, argc, argv);
}
