/* SPDX-License-Identifier: MIT */
/* percore: tune the machine for quiet measurement, and reset it.
 *
 * Both run in two phases: plan every step first (read the current value,
 * decide already set / not applicable / to change), then write. tune saves
 * the values it will change between the two phases, so a failure halfway
 * still leaves a state file that reset can use. */
#include "env/tune_impl.h"
#include "env/audit_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CPU_DIR       "/sys/devices/system/cpu"
#define GOVERNOR_FMT  CPU_DIR "/cpu%d/cpufreq/scaling_governor"
#define NO_TURBO      CPU_DIR "/intel_pstate/no_turbo"
#define BOOST         CPU_DIR "/cpufreq/boost"
#define SMT_CONTROL   CPU_DIR "/smt/control"
#define THP_ENABLED   "/sys/kernel/mm/transparent_hugepage/enabled"
#define ASLR          "/proc/sys/kernel/randomize_va_space"
#define NMI_WATCHDOG  "/proc/sys/kernel/nmi_watchdog"
#define ASPM_POLICY   "/sys/module/pcie_aspm/parameters/policy"
#define APST_DEFAULT  "/sys/module/nvme_core/parameters/default_ps_max_latency_us"
/* A controller's latency tolerance: 0 turns its APST off now (the module
 * parameter only reaches controllers probed after it changed). */
#define APST_CTRL_FMT "/sys/class/nvme/nvme%d/power/pm_qos_latency_tolerance_us"
#define NVME_CTRL_MAX 64
/* A block queue's setting: the disk's, or a partition's parent's. */
#define QUEUE_FMT     "/sys/dev/block/%u:%u/queue/%s"
#define PART_QUEUE_FMT "/sys/dev/block/%u:%u/../queue/%s"
#define NR_REQUESTS_LOW 64  /* below this, the audit warns */

/* Every file tune may write, by setting; the governor is per CPU. */
static const struct {
	const char *id;
	const char *path;
} files[] = {
	{ "cpu.turbo", NO_TURBO },
	{ "cpu.turbo", BOOST },
	{ "cpu.smt", SMT_CONTROL },
	{ "mm.thp", THP_ENABLED },
	{ "kernel.aslr", ASLR },
	{ "kernel.nmi_watchdog", NMI_WATCHDOG },
	{ "storage.pcie_aspm", ASPM_POLICY },
	{ "storage.nvme_apst", APST_DEFAULT },
};

static const char governor_id[] = "cpu.governor";

/* A block queue file tune writes: QUEUE_FMT or PART_QUEUE_FMT of name. */
static bool is_queue_file(const char *path, const char *name)
{
	char again[256];
	unsigned maj, min;

	if (sscanf(path, "/sys/dev/block/%u:%u/", &maj, &min) != 2)
		return false;
	snprintf(again, sizeof(again), QUEUE_FMT, maj, min, name);
	if (!strcmp(again, path))
		return true;
	snprintf(again, sizeof(again), PART_QUEUE_FMT, maj, min, name);
	return !strcmp(again, path);
}

static bool is_apst_ctrl_file(const char *path)
{
	char again[256];
	int n;

	if (sscanf(path, "/sys/class/nvme/nvme%d/", &n) != 1 || n < 0 || n >= NVME_CTRL_MAX)
		return false;
	snprintf(again, sizeof(again), APST_CTRL_FMT, n);
	return !strcmp(again, path);
}

static const char *storage_setting_for(const char *setting, const char *path)
{
	static const char *const queue_ids[][2] = {
		{ "storage.scheduler", "scheduler" },
		{ "storage.nr_requests", "nr_requests" },
	};

	for (size_t i = 0; i < sizeof(queue_ids) / sizeof(queue_ids[0]); i++)
		if (!strcmp(setting, queue_ids[i][0]) && is_queue_file(path, queue_ids[i][1]))
			return queue_ids[i][0];
	if (!strcmp(setting, "storage.nvme_apst") && is_apst_ctrl_file(path))
		return "storage.nvme_apst";
	return NULL;
}

const char *sys_tune_setting_for(const char *setting, const char *path, int *cpu)
{
	char again[256];
	int n;

	if (!strcmp(setting, governor_id) && sscanf(path, CPU_DIR "/cpu%d/", &n) == 1 &&
	    n >= 0 && n < CPU_SETSIZE) {
		snprintf(again, sizeof(again), GOVERNOR_FMT, n);
		if (!strcmp(again, path)) {
			*cpu = n;
			return governor_id;
		}
	}
	*cpu = -1;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!strcmp(files[i].id, setting) && !strcmp(files[i].path, path))
			return files[i].id;
	return storage_setting_for(setting, path);
}

bool pc_tune_needs_privilege(const char *root)
{
	return sys_rootfs_is_real(root) && geteuid() != 0;
}

int pc_tune_state_path(const struct pc_tune_opts *o, char *buf, size_t len)
{
	if (o->state_path) {
		if ((size_t)snprintf(buf, len, "%s", o->state_path) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	return sys_rootfs_path(buf, len, o->root, "%s", PC_TUNE_STATE_DEFAULT);
}

static void set_reason(struct pc_tune_step *s, enum pc_tune_result res, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_reason(struct pc_tune_step *s, enum pc_tune_result res, const char *fmt, ...)
{
	va_list ap;

	s->result = res;
	va_start(ap, fmt);
	vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
	va_end(ap);
}

/* Read the step's file into old_value (the selected word of a choice
 * list). raw, when given, gets the whole text. Returns false with the step
 * marked not applicable (file missing) or failed (unreadable). */
static bool read_current(const char *root, struct pc_tune_step *s, char *raw, size_t rawlen)
{
	char text[512];
	ssize_t n = sys_rootfs_read(root, s->path, text, sizeof(text));

	if (n == -ENOENT || n == -ENOTDIR) {
		set_reason(s, PC_TUNE_NOT_APPLICABLE, "not exposed: no %s", s->path);
		return false;
	}
	if (n < 0) {
		set_reason(s, PC_TUNE_FAILED, "cannot read %s: %s", s->path, strerror((int)-n));
		return false;
	}
	if (sys_str_selected(text, s->old_value, sizeof(s->old_value)) ||
	    !sys_tune_value_ok(s->old_value)) {
		s->old_value[0] = '\0';
		set_reason(s, PC_TUNE_FAILED, "cannot make sense of %s: \"%.60s\"", s->path, text);
		return false;
	}
	if (raw)
		snprintf(raw, rawlen, "%s", text);
	return true;
}

/* Planning marks a step that needs a write as PC_TUNE_WOULD_APPLY. */
static void want(struct pc_tune_step *s, const char *value)
{
	snprintf(s->new_value, sizeof(s->new_value), "%s", value);
	s->result = strcmp(s->old_value, value) ? PC_TUNE_WOULD_APPLY : PC_TUNE_ALREADY;
}

/* A single file that should hold value. Returns -ENOMEM or 0. */
static int plan_file(struct pc_tune_report *r, const char *root, const char *id,
		     const char *path, const char *value)
{
	struct pc_tune_step *s = sys_tune_report_add(r, id, -1, path);
	char raw[512];

	if (!s)
		return -ENOMEM;
	if (!read_current(root, s, raw, sizeof(raw)))
		return 0;
	/* a choice list that lacks the value: this kernel cannot do it */
	if (strchr(raw, '[') && !sys_str_has_word(raw, value, " []"))
		set_reason(s, PC_TUNE_NOT_APPLICABLE, "this kernel offers no %s (%s)", value, raw);
	else
		want(s, value);
	return 0;
}

static int plan_governor(struct pc_tune_report *r, const char *root)
{
	struct pc_tune_step *s;
	char path[256], avail[512];
	cpu_set_t cpus;
	int found = 0;

	sys_rootfs_cpus(root, &cpus);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &cpus))
			continue;
		snprintf(path, sizeof(path), GOVERNOR_FMT, cpu);
		if (!sys_rootfs_exists(root, path))
			continue;
		found++;
		s = sys_tune_report_add(r, governor_id, cpu, path);
		if (!s)
			return -ENOMEM;
		if (!read_current(root, s, NULL, 0))
			continue;
		if (sys_rootfs_readf(avail, sizeof(avail), root,
				     CPU_DIR "/cpu%d/cpufreq/scaling_available_governors", cpu) >= 0 &&
		    !sys_str_has_word(avail, "performance", " "))
			set_reason(s, PC_TUNE_NOT_APPLICABLE, "the cpufreq driver offers only: %s", avail);
		else
			want(s, "performance");
	}
	if (found)
		return 0;
	s = sys_tune_report_add(r, governor_id, -1, CPU_DIR "/cpuN/cpufreq/scaling_governor");
	if (!s)
		return -ENOMEM;
	set_reason(s, PC_TUNE_NOT_APPLICABLE,
		   "not exposed: no cpufreq (the hypervisor or firmware sets the clock)");
	return 0;
}

/* Turbo and SMT change only when asked, but a setting this machine does
 * not expose is reported not applicable either way. */
static int plan_turbo(struct pc_tune_report *r, const struct pc_tune_opts *o)
{
	bool no_turbo = sys_rootfs_exists(o->root, NO_TURBO), boost = sys_rootfs_exists(o->root, BOOST);
	struct pc_tune_step *s;

	if (o->turbo_off && (no_turbo || boost))
		return no_turbo ? plan_file(r, o->root, "cpu.turbo", NO_TURBO, "1")
				: plan_file(r, o->root, "cpu.turbo", BOOST, "0");
	s = sys_tune_report_add(r, "cpu.turbo", -1, boost && !no_turbo ? BOOST : NO_TURBO);
	if (!s)
		return -ENOMEM;
	if (!no_turbo && !boost)
		set_reason(s, PC_TUNE_NOT_APPLICABLE, "not exposed: no intel_pstate/no_turbo or cpufreq/boost");
	else
		set_reason(s, PC_TUNE_NOT_REQUESTED, "left as it is (--turbo-off turns it off)");
	return 0;
}

/* The kernel's smt/control words, in words a reader expects. */
static const char *smt_control_text(const char *control)
{
	if (!strcmp(control, "notsupported"))
		return "not supported";
	if (!strcmp(control, "notimplemented"))
		return "not implemented";
	return control;
}

static int plan_smt(struct pc_tune_report *r, const struct pc_tune_opts *o)
{
	struct pc_tune_step *s = sys_tune_report_add(r, "cpu.smt", -1, SMT_CONTROL);

	if (!s)
		return -ENOMEM;
	if (!read_current(o->root, s, NULL, 0))
		return 0;
	if (strcmp(s->old_value, "on") && strcmp(s->old_value, "off") &&
	    strcmp(s->old_value, "forceoff"))
		set_reason(s, PC_TUNE_NOT_APPLICABLE, "SMT control is %s here",
			   smt_control_text(s->old_value));
	else if (!o->smt_off)
		set_reason(s, PC_TUNE_NOT_REQUESTED, "left %s (--smt-off turns it off)", s->old_value);
	else   /* forceoff is off until reboot: nothing to do */
		want(s, strcmp(s->old_value, "forceoff") ? "off" : "forceoff");
	return 0;
}

/* nr_requests is raised only when below what the audit asks for: a
 * deeper queue is the device's own choice, and fine. */
static int plan_nr_requests(struct pc_tune_report *r, const char *root, const char *path)
{
	struct pc_tune_step *s = sys_tune_report_add(r, "storage.nr_requests", -1, path);

	if (!s)
		return -ENOMEM;
	if (!read_current(root, s, NULL, 0))
		return 0;
	if (strtol(s->old_value, NULL, 10) >= NR_REQUESTS_LOW)
		want(s, s->old_value);
	else
		want(s, "256");
	return 0;
}

/* The disk holding o->path (its I/O scheduler and queue size), PCIe
 * ASPM, and NVMe APST (the default for new controllers and each present
 * controller's own), when --path is given: the settings `percore env
 * --path` checks that can be changed and changed back at run time. */
static int plan_storage(struct pc_tune_report *r, const struct pc_tune_opts *o)
{
	char q[128], path[256];
	struct pc_tune_step *s;
	dev_t dev;
	int rc;

	if (!o->path)
		return 0;
	rc = sys_storage_queue_dir(o->root, o->path, q, sizeof(q), &dev);
	if (rc) {
		s = sys_tune_report_add(r, "storage.scheduler", -1, "/sys/dev/block");
		if (!s)
			return -ENOMEM;
		set_reason(s, PC_TUNE_NOT_APPLICABLE, "%s: %s", o->path,
			   rc == -ENODEV ? "not on a block device" : strerror(-rc));
	} else {
		snprintf(path, sizeof(path), "%s/scheduler", q);
		if ((rc = plan_file(r, o->root, "storage.scheduler", path, "none")))
			return rc;
		snprintf(path, sizeof(path), "%s/nr_requests", q);
		if ((rc = plan_nr_requests(r, o->root, path)))
			return rc;
	}
	if ((rc = plan_file(r, o->root, "storage.pcie_aspm", ASPM_POLICY, "performance")) ||
	    (rc = plan_file(r, o->root, "storage.nvme_apst", APST_DEFAULT, "0")))
		return rc;
	for (int n = 0; n < NVME_CTRL_MAX && !rc; n++) {
		snprintf(path, sizeof(path), APST_CTRL_FMT, n);
		if (sys_rootfs_exists(o->root, path))
			rc = plan_file(r, o->root, "storage.nvme_apst", path, "0");
	}
	return rc;
}

/* Plan every step, in the order they are applied. SMT goes last: turning
 * it off takes CPUs offline, and reset (newest first) brings them back
 * before restoring their governors. */
static int plan(struct pc_tune_report *r, const struct pc_tune_opts *o)
{
	int rc;

	if ((rc = plan_governor(r, o->root)) || (rc = plan_turbo(r, o)) ||
	    (rc = plan_file(r, o->root, "mm.thp", THP_ENABLED, "madvise")) ||
	    (rc = plan_file(r, o->root, "kernel.aslr", ASLR, "0")) ||
	    (rc = plan_file(r, o->root, "kernel.nmi_watchdog", NMI_WATCHDOG, "0")) ||
	    (rc = plan_storage(r, o)))
		return rc;
	return plan_smt(r, o);
}

/* The root a state file records: "/" or the fake tree's real path, so a
 * relative --root and an absolute one match. */
static void canonical_root(const char *root, char *buf, size_t len)
{
	char real[PATH_MAX];

	if (sys_rootfs_is_real(root))
		snprintf(buf, len, "/");
	else
		snprintf(buf, len, "%s", realpath(root, real) ? real : root);
}

/* Merge the steps about to change into the state file and save it. A path
 * already there keeps its first saved value: that is the one to go back to. */
static int save_state(struct pc_tune_report *r, const struct pc_tune_opts *o)
{
	struct pc_tune_state st;
	char root[PC_ROOTFS_PATH_MAX];
	int rc;

	canonical_root(o->root, root, sizeof(root));
	rc = sys_tune_state_load(r->state_path, &st);
	if (rc == -ENOENT) {
		snprintf(st.root, sizeof(st.root), "%s", root);
		rc = 0;
	} else if (rc)
		return rc;
	else if (strcmp(st.root, root))
		rc = -EINVAL;
	for (size_t i = 0; !rc && i < r->n; i++) {
		struct pc_tune_step *s = &r->step[i];
		struct pc_tune_change c = { .setting = s->setting, .cpu = s->cpu };

		if (s->result != PC_TUNE_WOULD_APPLY || sys_tune_state_find(&st, s->path))
			continue;
		snprintf(c.path, sizeof(c.path), "%s", s->path);
		snprintf(c.old_value, sizeof(c.old_value), "%s", s->old_value);
		snprintf(c.new_value, sizeof(c.new_value), "%s", s->new_value);
		rc = sys_tune_state_add(&st, &c);
	}
	if (!rc)
		rc = sys_tune_state_save(r->state_path, &st);
	sys_tune_state_free(&st);
	return rc;
}

/* Write a planned step and check the file now shows the value. */
static void apply_step(const char *root, struct pc_tune_step *s)
{
	char text[512], now[64];
	int rc = sys_rootfs_write_attr(root, s->path, s->new_value);

	if (rc) {
		set_reason(s, PC_TUNE_FAILED, "%s%s", strerror(-rc),
			   rc == -EACCES || rc == -EPERM ? " (needs root, or the firmware forbids it)"
			   : rc == -EROFS		 ? " (read-only file system)"
							 : "");
		return;
	}
	if (sys_rootfs_read(root, s->path, text, sizeof(text)) < 0 ||
	    sys_str_selected(text, now, sizeof(now)) || strcmp(now, s->new_value)) {
		set_reason(s, PC_TUNE_FAILED, "written, but %s still shows \"%.60s\"", s->path, text);
		return;
	}
	s->result = PC_TUNE_APPLIED;
}

static int start_report(const struct pc_tune_opts *o, bool reset, struct pc_tune_report **r)
{
	*r = sys_tune_report_new(reset, o->dry_run);
	if (!*r)
		return -ENOMEM;
	if (pc_tune_state_path(o, (*r)->state_path, sizeof((*r)->state_path))) {
		pc_tune_report_free(*r);
		*r = NULL;
		return -EINVAL;
	}
	return 0;
}

int pc_tune_apply(const struct pc_tune_opts *o, struct pc_tune_report **out)
{
	struct pc_tune_report *r;
	int rc;

	if (!out || !o)
		return -EINVAL;
	*out = NULL;
	if ((rc = start_report(o, false, &r)))
		return rc;
	rc = plan(r, o);
	if (!rc && !o->dry_run && pc_tune_report_count_result(r, PC_TUNE_WOULD_APPLY)) {
		rc = save_state(r, o);
		r->state_written = rc == 0;
	}
	if (rc) {
		pc_tune_report_free(r);
		return rc;
	}
	for (size_t i = 0; !o->dry_run && i < r->n; i++)
		if (r->step[i].result == PC_TUNE_WOULD_APPLY)
			apply_step(o->root, &r->step[i]);
	*out = r;
	return 0;
}

int pc_tune_reset(const struct pc_tune_opts *o, struct pc_tune_report **out)
{
	struct pc_tune_report *r;
	struct pc_tune_state st;
	char root[PC_ROOTFS_PATH_MAX];
	int rc;

	if (!out || !o)
		return -EINVAL;
	*out = NULL;
	if ((rc = start_report(o, true, &r)))
		return rc;
	rc = sys_tune_state_load(r->state_path, &st);
	canonical_root(o->root, root, sizeof(root));
	if (!rc && strcmp(st.root, root))
		rc = -EINVAL;
	/* newest change first: the exact reverse of tune */
	for (size_t i = st.n; !rc && i-- > 0;) {
		const struct pc_tune_change *c = &st.c[i];
		struct pc_tune_step *s = sys_tune_report_add(r, c->setting, c->cpu, c->path);

		if (!s) {
			rc = -ENOMEM;
			break;
		}
		if (!read_current(o->root, s, NULL, 0))
			continue;
		want(s, c->old_value);
		if (!o->dry_run && s->result == PC_TUNE_WOULD_APPLY)
			apply_step(o->root, s);
	}
	sys_tune_state_free(&st);
	if (rc) {
		pc_tune_report_free(r);
		return rc;
	}
	if (!o->dry_run && !pc_tune_report_count_result(r, PC_TUNE_FAILED))
		r->state_written = unlink(r->state_path) == 0;
	*out = r;
	return 0;
}
