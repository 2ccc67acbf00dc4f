/* SPDX-License-Identifier: MIT */
/* The environment audit: what each fixture machine gives for each id, the
 * invariants every audit keeps (all ids, once, in order; a fix for every
 * warning), the real machine, a busy process being seen, and the parsing
 * helpers the checks stand on. */
#include "env/audit_impl.h"
#include "sys/rootfs.h"

#include <cjson/cJSON.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "env/envtest.h"

/* One expected finding: status, a piece of the value, and a piece of the
 * fix (NULL: not checked, "": must be empty). */
struct expect {
	const char *id;
	enum pc_audit_status status;
	const char *value;
	const char *fix;
};

#define OK PC_AUDIT_OK
#define WARN PC_AUDIT_WARN
#define UNKNOWN PC_AUDIT_UNKNOWN

static const struct expect desktop[] = {
	{ "vm.hypervisor", OK, "bare metal: no hypervisor flag in /proc/cpuinfo, DMI Micro-Star", "" },
	{ "cpu.model", OK, "12th Gen Intel(R) Core(TM) i3-1215U, 8 CPUs, hybrid: P-cores 0-3, E-cores 4-7", "" },
	{ "cpu.smt", WARN, "on: sibling threads", "percore tune --smt-off" },
	{ "cpu.governor", WARN, "powersave on 0-7 (intel_pstate)", "percore tune" },
	{ "cpu.turbo", WARN, "on (intel_pstate no_turbo=0)", "percore tune --turbo-off" },
	{ "cpu.idle_states", WARN,
	  "driver intel_idle (governor menu): POLL 0 us, C1 1 us, C6 170 us, C10 890 us (disabled); "
	  "waking from C6 takes 170 us", "--pm-qos" },
	{ "cpu.pm_qos", WARN, "not held: idle CPUs may enter states that take 170 us", "--pm-qos" },
	{ "mm.thp", WARN, "enabled=always defrag=madvise", "enabled=madvise" },
	{ "mm.swap", WARN, "1 device, 16.0 GiB, 0.0 GiB used; swappiness 60", "swappiness=1" },
	{ "kernel.aslr", WARN, "on (randomize_va_space=2)", "randomize_va_space=0" },
	{ "kernel.nmi_watchdog", WARN, "on (nmi_watchdog=1)", "nmi_watchdog=0" },
	{ "kernel.perf_event_paranoid", WARN, "4: perf counters are closed", "perf_event_paranoid=1" },
	{ "sched.isolated", WARN, "none", "isolcpus=" },
	{ "irq.irqbalance", WARN, "running (pid 731)", "systemctl stop irqbalance" },
	{ "cgroup.cpuset", OK, "no cpuset: every CPU (cgroup v2 /user.slice/user-1000.slice/session-2.scope)", "" },
	{ "cgroup.cpu_quota", OK, "none (cgroup v2", "" },
	{ "cgroup.memory_limit", OK, "none (cgroup v2", "" },
	{ "load.busy_processes", WARN, "load average 3.12 2.80 2.10 on 8 CPUs (over a quarter", "idle machine" },
	{ "storage.rotational", UNKNOWN, "no --path given", "" },
	{ "storage.scheduler", UNKNOWN, "no --path given", "" },
	{ "storage.nr_requests", UNKNOWN, "no --path given", "" },
	{ "storage.write_cache", UNKNOWN, "no --path given", "" },
	{ "storage.queues", UNKNOWN, "no --path given", "" },
	{ "storage.nvme_apst", UNKNOWN, "no nvme_core module", "" },
	{ "storage.pcie_aspm", UNKNOWN, "not exposed", "" },
	{ NULL },
};

static const struct expect vm[] = {
	{ "vm.hypervisor", WARN, "virtual machine: hypervisor flag in /proc/cpuinfo, DMI not exposed",
	  "bare metal" },
	{ "cpu.model", OK, "Intel(R) Xeon(R) Processor, 2 CPUs", "" },
	{ "cpu.smt", UNKNOWN, "not exposed", "" },
	{ "cpu.governor", UNKNOWN, "not exposed (no cpufreq", "" },
	{ "cpu.turbo", UNKNOWN, "not exposed", "" },
	{ "cpu.idle_states", UNKNOWN, "not exposed", "" },
	{ "cpu.pm_qos", UNKNOWN, "not exposed (no process list", "" },
	{ "mm.thp", UNKNOWN, "not exposed", "" },
	{ "mm.swap", UNKNOWN, "not exposed", "" },
	{ "kernel.aslr", UNKNOWN, "not exposed", "" },
	{ "kernel.nmi_watchdog", UNKNOWN, "not exposed", "" },
	{ "kernel.perf_event_paranoid", UNKNOWN, "not exposed", "" },
	{ "sched.isolated", UNKNOWN, "not exposed", "" },
	{ "irq.irqbalance", UNKNOWN, "not exposed", "" },
	{ "cgroup.cpuset", UNKNOWN, "not exposed", "" },
	{ "cgroup.cpu_quota", UNKNOWN, "not exposed", "" },
	{ "cgroup.memory_limit", UNKNOWN, "not exposed", "" },
	{ "load.busy_processes", UNKNOWN, "not exposed", "" },
	{ "storage.rotational", UNKNOWN, "no --path given", "" },
	{ "storage.scheduler", UNKNOWN, "no --path given", "" },
	{ "storage.nr_requests", UNKNOWN, "no --path given", "" },
	{ "storage.write_cache", UNKNOWN, "no --path given", "" },
	{ "storage.queues", UNKNOWN, "no --path given", "" },
	{ "storage.nvme_apst", UNKNOWN, "no nvme_core module", "" },
	{ "storage.pcie_aspm", UNKNOWN, "not exposed", "" },
	{ NULL },
};

static const struct expect container_v1[] = {
	{ "vm.hypervisor", OK, "bare metal: no hypervisor flag in /proc/cpuinfo, DMI not exposed", "" },
	{ "cpu.model", OK, "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz, 4 CPUs", "" },
	{ "cpu.smt", OK, "off (smt/control)", "" },
	{ "cpu.governor", UNKNOWN, "not exposed (no cpufreq", "" },
	{ "cpu.turbo", UNKNOWN, "not exposed", "" },
	{ "cpu.idle_states", UNKNOWN, "not exposed", "" },
	{ "cpu.pm_qos", OK, "not held (idle states not exposed)", "" },
	{ "mm.thp", OK, "enabled=madvise defrag=madvise", "" },
	{ "mm.swap", OK, "no swap; swappiness 60", "" },
	{ "kernel.aslr", WARN, "on (randomize_va_space=2)", "percore tune" },
	{ "kernel.nmi_watchdog", OK, "off (nmi_watchdog=0)", "" },
	{ "kernel.perf_event_paranoid", OK, "2: users without CAP_PERFMON count user-space events only", "" },
	{ "sched.isolated", OK, "isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3; isolated CPUs 2-3", "" },
	{ "irq.irqbalance", OK, "not running", "" },
	{ "cgroup.cpuset", OK, "0-3: every online CPU (cgroup v1 /docker/3f2a9c1e7b6d)", "" },
	{ "cgroup.cpu_quota", WARN, "2.00 CPUs (200000 us per 100000 us, cgroup v1 /docker/3f2a9c1e7b6d)",
	  "at most 2 busy threads" },
	{ "cgroup.memory_limit", OK, "none (cgroup v1 /docker/3f2a9c1e7b6d)", "" },
	{ "load.busy_processes", OK,
	  "load average 0.91 0.75 0.60 on 4 CPUs; no process used over 2% of a CPU", "" },
	{ "storage.rotational", UNKNOWN, "no --path given", "" },
	{ "storage.scheduler", UNKNOWN, "no --path given", "" },
	{ "storage.nr_requests", UNKNOWN, "no --path given", "" },
	{ "storage.write_cache", UNKNOWN, "no --path given", "" },
	{ "storage.queues", UNKNOWN, "no --path given", "" },
	{ "storage.nvme_apst", UNKNOWN, "no nvme_core module", "" },
	{ "storage.pcie_aspm", UNKNOWN, "not exposed", "" },
	{ NULL },
};

static const struct expect container_v2[] = {
	{ "vm.hypervisor", WARN, "hypervisor flag in /proc/cpuinfo, DMI QEMU Standard PC (Q35 + ICH9, 2009)",
	  "pinned vCPUs" },
	{ "cpu.model", OK, "AMD EPYC 7763 64-Core Processor, 8 CPUs", "" },
	{ "cpu.smt", OK, "not supported: one thread per core", "" },
	{ "cpu.governor", UNKNOWN, "not exposed (no cpufreq", "" },
	{ "cpu.turbo", UNKNOWN, "not exposed", "" },
	{ "cpu.idle_states", OK, "driver none: no idle states, an idle CPU halts", "" },
	{ "cpu.pm_qos", OK, "/dev/cpu_dma_latency held by pid 40 (latencyd)", "" },
	{ "mm.thp", OK, "enabled=never defrag=madvise", "" },
	{ "mm.swap", OK, "no swap", "" },
	{ "kernel.aslr", OK, "off (randomize_va_space=0)", "" },
	{ "kernel.nmi_watchdog", OK, "off", "" },
	{ "kernel.perf_event_paranoid", OK, "2:", "" },
	{ "sched.isolated", WARN, "none", "nohz_full=LIST" },
	{ "irq.irqbalance", OK, "not running", "" },
	{ "cgroup.cpuset", OK, "2-3: 2 of 8 online CPUs (cgroup v2 /app.slice/bench.scope)", "" },
	{ "cgroup.cpu_quota", WARN, "1.50 CPUs (150000 us per 100000 us, cgroup v2 /app.slice/bench.scope)",
	  "at most 1 busy thread" },
	{ "cgroup.memory_limit", OK, "2.00 GiB (cgroup v2 /app.slice/bench.scope)", "" },
	{ "load.busy_processes", OK, "load average 0.05 0.10 0.08 on 8 CPUs", "" },
	{ "storage.rotational", UNKNOWN, "no --path given", "" },
	{ "storage.scheduler", UNKNOWN, "no --path given", "" },
	{ "storage.nr_requests", UNKNOWN, "no --path given", "" },
	{ "storage.write_cache", UNKNOWN, "no --path given", "" },
	{ "storage.queues", UNKNOWN, "no --path given", "" },
	{ "storage.nvme_apst", UNKNOWN, "no nvme_core module", "" },
	{ "storage.pcie_aspm", UNKNOWN, "not exposed", "" },
	{ NULL },
};

/* What holds for every audit of every machine. */
static void check_invariants(const struct pc_audit *a)
{
	size_t n = 0;

	while (pc_audit_ids[n])
		n++;
	assert_int_equal(pc_audit_count(a), n);
	for (size_t i = 0; i < n; i++) {
		const struct pc_audit_item *it = pc_audit_item(a, i);

		assert_non_null(it);
		assert_string_equal(it->id, pc_audit_ids[i]);
		assert_ptr_equal(pc_audit_find(a, it->id), it);
		assert_true(it->status == OK || it->status == WARN || it->status == UNKNOWN);
		assert_non_null(it->value);
		assert_true(strlen(it->value) > 0);
		assert_null(strchr(it->value, '\n'));
		/* a warning always says how to fix it; ok needs no fix */
		if (it->status == WARN)
			assert_true(strlen(it->fix) > 0);
		if (it->status == OK)
			assert_string_equal(it->fix, "");
	}
	assert_null(pc_audit_item(a, n));
	assert_null(pc_audit_find(a, "no.such.id"));
	assert_int_equal(pc_audit_count_status(a, OK) + pc_audit_count_status(a, WARN) +
			 pc_audit_count_status(a, UNKNOWN), n);
}

static void check_fixture(const char *name, const struct expect *want)
{
	struct pc_audit *a = NULL;
	int checked = 0;

	assert_int_equal(pc_audit_collect(envtest_fixture(name), &a), 0);
	check_invariants(a);
	for (const struct expect *e = want; e->id; e++, checked++) {
		const struct pc_audit_item *it = pc_audit_find(a, e->id);

		assert_non_null(it);
		if (it->status != e->status || !strstr(it->value, e->value) ||
		    (e->fix && (e->fix[0] ? !strstr(it->fix, e->fix) : it->fix[0] != '\0')))
			fail_msg("%s %s: got %s \"%s\" fix \"%s\"; want %s \"%s\" fix \"%s\"", name, e->id,
				 pc_audit_status_name(it->status), it->value, it->fix,
				 pc_audit_status_name(e->status), e->value, e->fix ? e->fix : "(any)");
	}
	/* every id has an expectation: a new check needs one here too */
	assert_int_equal(checked, pc_audit_count(a));
	pc_audit_free(a);
}

static void desktop_fixture(void **state)
{
	(void)state;
	check_fixture("desktop", desktop);
}

static void vm_fixture(void **state)
{
	(void)state;
	check_fixture("vm", vm);
}

static void container_v1_fixture(void **state)
{
	(void)state;
	check_fixture("container-v1", container_v1);
}

static void container_v2_fixture(void **state)
{
	(void)state;
	check_fixture("container-v2", container_v2);
}

/* Write root/dir/name for the storage test. */
static void put(const char *root, const char *dir, const char *name, const char *text)
{
	char rel[300];

	snprintf(rel, sizeof(rel), "%s/%s", dir, name);
	assert_int_equal(envtest_write(root, rel, text), 0);
}

/* The disk's hardware queues and the PCI function behind it: fast, an
 * NVMe controller with a queue and an interrupt per CPU; slow, a virtio
 * disk with one queue interrupting CPU 1 only (its configuration vector
 * on CPU 0 does not count). */
static void put_queues(const char *root, const char *queue, bool slow)
{
	static const struct {
		const char *irq, *actions, *cpus;
	} fast_irq[] = { { "40", "nvme0q0, nvme0q1", "0" }, { "41", "nvme0q2", "1" } },
	  slow_irq[] = { { "35", "virtio1-config", "0" }, { "36", "virtio1-req.0", "1" } };
	const char *fn = slow ? "sys/devices/pci0/0000:00:02.0" : "sys/devices/pci0/0000:01:00.0";
	const char *dev = slow ? "sys/devices/pci0/0000:00:02.0/virtio1"
			       : "sys/devices/pci0/0000:01:00.0/nvme/nvme0";
	char disk[128], dir[160], cmd[700];

	snprintf(disk, sizeof(disk), "%.*s", (int)(strlen(queue) - strlen("/queue")), queue);
	put(root, "sys/devices/system/cpu", "online", "0-1\n");
	for (unsigned q = 0; q < (slow ? 1u : 2u); q++) {
		snprintf(dir, sizeof(dir), "%s/mq/%u", disk, q);
		put(root, dir, "cpu_list", slow ? "0, 1\n" : q ? "1\n" : "0\n");
	}
	for (unsigned i = 0; i < 2; i++) {
		const char *irq = slow ? slow_irq[i].irq : fast_irq[i].irq;

		snprintf(dir, sizeof(dir), "%s/msi_irqs", fn);
		put(root, dir, irq, "msix\n");
		snprintf(dir, sizeof(dir), "sys/kernel/irq/%s", irq);
		put(root, dir, "actions", slow ? slow_irq[i].actions : fast_irq[i].actions);
		snprintf(dir, sizeof(dir), "proc/irq/%s", irq);
		put(root, dir, "effective_affinity_list", slow ? slow_irq[i].cpus : fast_irq[i].cpus);
	}
	put(root, dev, "uevent", "\n");
	snprintf(cmd, sizeof(cmd), "ln -sfn '%s/%s' '%s/%s/device'", root, dev, root, disk);
	assert_int_equal(system(cmd), 0);
}

/* The disk of a fake sysfs, set up fast (tuned right) or slow (every
 * warning). */
static void put_disk(const char *root, const char *queue, bool slow)
{
	put_queues(root, queue, slow);
	put(root, queue, "rotational", slow ? "1\n" : "0\n");
	put(root, queue, "scheduler", slow ? "none [mq-deadline] kyber\n" : "[none] mq-deadline\n");
	put(root, queue, "nr_requests", slow ? "32\n" : "256\n");
	put(root, queue, "write_cache", slow ? "write back\n" : "write through\n");
	put(root, "sys/module/nvme_core/parameters", "default_ps_max_latency_us",
	    slow ? "100000\n" : "0\n");
	put(root, "sys/module/pcie_aspm/parameters", "policy",
	    slow ? "[default] performance powersave\n" : "default [performance] powersave\n");
}

static void check_storage(const char *root, bool slow)
{
	static const struct {
		const char *id, *fix;
	} want[] = {
		{ "storage.rotational", "SSD or NVMe" },
		{ "storage.scheduler", "echo none" },
		{ "storage.nr_requests", "echo 256" },
		{ "storage.write_cache", "write through" },
		{ "storage.queues", "put file-heavy shards on CPU 1," },
		{ "storage.nvme_apst", "default_ps_max_latency_us=0" },
		{ "storage.pcie_aspm", "performance" },
	};
	struct pc_audit_opts o = { .sample_ms = 1, .path = root };
	struct pc_audit *a = NULL;

	assert_int_equal(pc_audit_collect_opts(root, &o, &a), 0);
	check_invariants(a);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct pc_audit_item *it = pc_audit_find(a, want[i].id);

		if (it->status != (slow ? WARN : OK) || (slow && !strstr(it->fix, want[i].fix)))
			fail_msg("%s disk, %s: got %s \"%s\" fix \"%s\"", slow ? "slow" : "fast",
				 want[i].id, pc_audit_status_name(it->status), it->value, it->fix);
	}
	pc_audit_free(a);
}

/* The storage checks on a fake sysfs for the device that holds a real
 * folder (the fake root itself): a whole disk tuned right, then a slow
 * one reached as a partition (sysfs links MAJ:MIN to the partition's
 * folder, whose parent holds the disk's queue). */
static void storage_of_path(void **state)
{
	char root[] = "/tmp/pc-audit-storage-XXXXXX", dev[64], queue[96], cmd[600];
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(root));
	assert_int_equal(stat(root, &st), 0);
	snprintf(dev, sizeof(dev), "sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	snprintf(queue, sizeof(queue), "%s/queue", dev);
	put_disk(root, queue, false);
	check_storage(root, false);
	put(root, "sys/devices/disk/part1", "partition", "1\n");
	put_disk(root, "sys/devices/disk/queue", true);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s' && ln -s '%s/sys/devices/disk/part1' '%s/%s'",
		 root, dev, root, root, dev);
	assert_int_equal(system(cmd), 0);
	check_storage(root, true);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/* A folder that does not exist is a machine that exposes nothing. */
static void empty_root_is_all_unknown(void **state)
{
	struct pc_audit *a = NULL;
	(void)state;

	assert_int_equal(pc_audit_collect("/nonexistent/percore/root", &a), 0);
	check_invariants(a);
	assert_int_equal(pc_audit_count_status(a, UNKNOWN), pc_audit_count(a));
	pc_audit_free(a);
	assert_int_equal(pc_audit_collect(NULL, NULL), -EINVAL);
	pc_audit_free(NULL);
}

static void json_and_text_carry_every_item(void **state)
{
	struct pc_audit *a = NULL;
	char *text = NULL;
	size_t len = 0;
	cJSON *j, *e;
	size_t i = 0;
	FILE *f;
	(void)state;

	assert_int_equal(pc_audit_collect(envtest_fixture("desktop"), &a), 0);
	j = pc_audit_to_json(a);
	assert_true(cJSON_IsArray(j));
	assert_int_equal(cJSON_GetArraySize(j), pc_audit_count(a));
	cJSON_ArrayForEach(e, j) {
		const struct pc_audit_item *it = pc_audit_item(a, i++);

		assert_string_equal(cJSON_GetObjectItem(e, "id")->valuestring, it->id);
		assert_string_equal(cJSON_GetObjectItem(e, "status")->valuestring,
				    pc_audit_status_name(it->status));
		assert_string_equal(cJSON_GetObjectItem(e, "value")->valuestring, it->value);
		assert_string_equal(cJSON_GetObjectItem(e, "fix")->valuestring, it->fix);
		assert_int_equal(cJSON_GetArraySize(e), 4);
	}
	cJSON_Delete(j);

	f = open_memstream(&text, &len);
	pc_audit_print(a, f, 0);
	fclose(f);
	for (i = 0; pc_audit_ids[i]; i++)
		assert_non_null(strstr(text, pc_audit_ids[i]));
	assert_non_null(strstr(text, "25 checks: 5 ok, 13 warn, 7 unknown"));
	free(text);

	/* warnings only: no ok line is printed */
	f = open_memstream(&text, &len);
	pc_audit_print(a, f, PC_AUDIT_PRINT_WARN_ONLY);
	fclose(f);
	assert_null(strstr(text, "cpu.model"));
	assert_non_null(strstr(text, "cpu.governor"));
	assert_non_null(strstr(text, "fix: percore tune"));
	free(text);
	pc_audit_free(a);
}

/* The real machine: whatever it exposes, every id has a status. */
static void real_machine(void **state)
{
	struct pc_audit *a = NULL;
	(void)state;

	assert_int_equal(pc_audit_collect(NULL, &a), 0);
	check_invariants(a);
	pc_audit_print(a, stdout, 0);
	pc_audit_free(a);
	assert_int_equal(pc_audit_collect("/", &a), 0);
	check_invariants(a);
	pc_audit_free(a);
}

/* A process spinning while the audit samples shows up among the busiest. */
static void busy_process_is_seen(void **state)
{
	struct pc_audit_opts opts = { .sample_ms = 300 };
	bool seen = false;
	pid_t child;
	(void)state;

	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		volatile unsigned long spin = 0;

		prctl(PR_SET_NAME, "pc-busy-child");
		for (;;)
			spin++;
	}
	/* a loaded machine may starve the child for a while: try a few times */
	for (int attempt = 0; attempt < 5 && !seen; attempt++) {
		struct pc_audit *a = NULL;
		const struct pc_audit_item *it;

		assert_int_equal(pc_audit_collect_opts(NULL, &opts, &a), 0);
		it = pc_audit_find(a, "load.busy_processes");
		seen = strstr(it->value, "(pc-busy-child)") != NULL;
		if (seen)
			assert_int_equal(it->status, WARN);
		else
			printf("attempt %d: %s\n", attempt, it->value);
		pc_audit_free(a);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_true(seen);
}

static void parses_proc_stat(void **state)
{
	struct pc_proc_sample s;
	(void)state;

	assert_int_equal(sys_proc_parse_stat("57 (bench worker) R 1 1 1 34816 1 4194304 310 0 0 0 "
					     "5512 20 0 0 20 0 4", &s), 0);
	assert_int_equal(s.pid, 57);
	assert_int_equal(s.ticks, 5532);
	assert_string_equal(s.comm, "bench worker");
	/* a name may itself hold ") (": the last ')' ends it */
	assert_int_equal(sys_proc_parse_stat("9 (a) (b) S 1 1 1 0 -1 0 0 0 0 0 7 3 0", &s), 0);
	assert_string_equal(s.comm, "a) (b");
	assert_int_equal(s.ticks, 10);
	assert_int_equal(sys_proc_parse_stat("", &s), -EPROTO);
	assert_int_equal(sys_proc_parse_stat("12 (x) S 1 2", &s), -EPROTO);
	assert_int_equal(sys_proc_parse_stat("x (y) S 1 1 1 0 -1 0 0 0 0 0 7 3 0", &s), -EPROTO);
	assert_int_equal(sys_proc_parse_stat("5 no parens", &s), -EPROTO);
}

static void ranks_busy_processes(void **state)
{
	const struct pc_proc_sample a[] = {
		{ 1, 100, "init" }, { 5, 0, "idle" }, { 7, 50, "spin" }, { 9, 10, "old" },
		{ 11, 0, "mid" }, { 13, 0, "self" },
	};
	const struct pc_proc_sample b[] = {
		{ 1, 101, "init" },   /* 1 tick in 1 s at 100 Hz: 1% */
		{ 5, 0, "idle" },
		{ 7, 150, "spin" },   /* 100% */
		{ 9, 60, "new" },     /* pid reused: not an interval */
		{ 11, 30, "mid" },    /* 30% */
		{ 13, 90, "self" },   /* the caller: left out */
		{ 15, 99, "born" },   /* started between the samples */
	};
	struct pc_proc_busy busy[4];
	int n;
	(void)state;

	n = sys_proc_busy_between(a, 6, b, 7, 1.0, 100, 2.0, 13, busy, 4);
	assert_int_equal(n, 2);
	assert_int_equal(busy[0].pid, 7);
	assert_true(busy[0].pct > 99.9 && busy[0].pct < 100.1);
	assert_string_equal(busy[0].comm, "spin");
	assert_int_equal(busy[1].pid, 11);
	/* only the busiest one fits */
	n = sys_proc_busy_between(a, 6, b, 7, 1.0, 100, 0.5, 13, busy, 1);
	assert_int_equal(n, 1);
	assert_int_equal(busy[0].pid, 7);
	/* no time passed, or nothing asked: nothing to say */
	assert_int_equal(sys_proc_busy_between(a, 6, b, 7, 0, 100, 0, -1, busy, 4), 0);
	assert_int_equal(sys_proc_busy_between(a, 6, b, 7, 1.0, 100, 0, -1, busy, 0), 0);
}

static void reads_choice_lists(void **state)
{
	char w[32];
	(void)state;

	assert_int_equal(sys_str_selected("always [madvise] never", w, sizeof(w)), 0);
	assert_string_equal(w, "madvise");
	assert_int_equal(sys_str_selected("  performance \n", w, sizeof(w)), 0);
	assert_string_equal(w, "performance");
	assert_int_equal(sys_str_selected("always madvise never", w, sizeof(w)), -EPROTO);
	assert_int_equal(sys_str_selected("[never", w, sizeof(w)), -EPROTO);
	assert_int_equal(sys_str_selected("", w, sizeof(w)), -EPROTO);
	assert_int_equal(sys_str_selected("[abcdef]", w, 4), -EPROTO);
	assert_true(sys_str_has_word("[always] madvise never", "always", " []"));
	assert_false(sys_str_has_word("always madvise never", "advise", " "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(desktop_fixture),
		cmocka_unit_test(vm_fixture),
		cmocka_unit_test(container_v1_fixture),
		cmocka_unit_test(container_v2_fixture),
		cmocka_unit_test(empty_root_is_all_unknown),
		cmocka_unit_test(storage_of_path),
		cmocka_unit_test(json_and_text_carry_every_item),
		cmocka_unit_test(real_machine),
		cmocka_unit_test(busy_process_is_seen),
		cmocka_unit_test(parses_proc_stat),
		cmocka_unit_test(ranks_busy_processes),
		cmocka_unit_test(reads_choice_lists),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
