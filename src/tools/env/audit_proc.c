/* SPDX-License-Identifier: MIT */
/* percore: audit checks that walk the process list: who holds the PM QoS
 * device, whether irqbalance runs, and which processes are busy now. */
#include "env/audit_impl.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "percore/clock.h"
#include "sys/rootfs.h"

#define PM_QOS_DEV "/dev/cpu_dma_latency"
#define BUSY_LIST_PCT 2.0    /* listed among the busiest above this */
#define BUSY_WARN_PCT 10.0   /* a process this busy disturbs a measurement */
#define BUSY_MAX 5

typedef void (*pid_fn)(struct pc_audit_ctx *c, int pid, void *arg);

/* Call fn for every numeric entry of root/proc. Returns how many, or
 * -errno when /proc cannot be listed. */
static int for_each_pid(struct pc_audit_ctx *c, pid_fn fn, void *arg)
{
	char path[PC_ROOTFS_PATH_MAX];
	struct dirent *e;
	int n = 0;
	DIR *d;

	if (sys_rootfs_path(path, sizeof(path), c->root, "/proc"))
		return -ENAMETOOLONG;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || *end || pid > 0x7fffffff)
			continue;
		fn(c, (int)pid, arg);
		n++;
	}
	closedir(d);
	return n;
}

static void read_comm(struct pc_audit_ctx *c, int pid, char *buf, size_t len)
{
	if (sys_rootfs_readf(buf, len, c->root, "/proc/%d/comm", pid) < 0)
		snprintf(buf, len, "?");
}

struct qos_scan {
	int unreadable;
	FILE *holders;    /* "pid N (comm)" list */
	int nholders;
};

static void qos_pid(struct pc_audit_ctx *c, int pid, void *arg)
{
	struct qos_scan *q = arg;
	char path[PC_ROOTFS_PATH_MAX], link[256];
	struct dirent *e;
	DIR *d;

	if (sys_rootfs_path(path, sizeof(path), c->root, "/proc/%d/fd", pid))
		return;
	d = opendir(path);
	if (!d) {
		/* gone already (ENOENT) is not a blind spot; EACCES is */
		q->unreadable += errno == EACCES || errno == EPERM;
		return;
	}
	while ((e = readdir(d))) {
		char fd[PC_ROOTFS_PATH_MAX + 300];
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(fd, sizeof(fd), "%s/%s", path, e->d_name);
		n = readlink(fd, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (!strcmp(link, PM_QOS_DEV)) {
			char comm[64];

			read_comm(c, pid, comm, sizeof(comm));
			fprintf(q->holders, "%spid %d (%s)", q->nholders ? ", " : "", pid, comm);
			q->nholders++;
			break;
		}
	}
	closedir(d);
}

void sys_audit_cpu_pm_qos(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	struct qos_scan q = { 0 };
	char *holders = NULL;
	size_t hlen = 0;
	int n;

	q.holders = open_memstream(&holders, &hlen);
	if (!q.holders)
		return;
	n = for_each_pid(c, qos_pid, &q);
	fclose(q.holders);
	if (n <= 0) {
		fprintf(o->value, "not exposed (no process list under /proc)");
	} else if (q.nholders) {
		o->status = PC_AUDIT_OK;
		fprintf(o->value, "%s held by %s: idle CPUs stay out of deep states", PM_QOS_DEV, holders);
	} else if (q.unreadable) {
		fprintf(o->value, "not held by any process we can see; the descriptors of %d "
				  "processes are unreadable", q.unreadable);
		fprintf(o->fix, "run percore env as root to see every process");
	} else if (c->deep_idle_us > PC_AUDIT_DEEP_IDLE_US) {
		o->status = PC_AUDIT_WARN;
		fprintf(o->value, "not held: idle CPUs may enter states that take %d us to leave",
			c->deep_idle_us);
		fprintf(o->fix, "percore bench --pm-qos (holds a request of 0 while it runs)");
	} else {
		o->status = PC_AUDIT_OK;
		fprintf(o->value, "not held%s", c->deep_idle_us >= 0 ? " (no deep idle states to avoid)"
								    : " (idle states not exposed)");
	}
	free(holders);
}

struct find_comm {
	const char *name;
	int pid;
};

static void comm_pid(struct pc_audit_ctx *c, int pid, void *arg)
{
	struct find_comm *f = arg;
	char comm[64];

	read_comm(c, pid, comm, sizeof(comm));
	if (!f->pid && !strcmp(comm, f->name))
		f->pid = pid;
}

void sys_audit_irq_irqbalance(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	struct find_comm f = { .name = "irqbalance" };

	if (for_each_pid(c, comm_pid, &f) <= 0) {
		fprintf(o->value, "not exposed (no process list under /proc)");
		return;
	}
	o->status = f.pid ? PC_AUDIT_WARN : PC_AUDIT_OK;
	if (!f.pid) {
		fprintf(o->value, "not running");
		return;
	}
	fprintf(o->value, "running (pid %d): it moves interrupts between CPUs while you measure", f.pid);
	fprintf(o->fix, "systemctl stop irqbalance, and steer interrupts away from the benchmark's "
			"CPUs (/proc/irq/*/smp_affinity_list)");
}

int sys_proc_parse_stat(const char *text, struct pc_proc_sample *s)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	unsigned long long utime, stime;
	char *end;
	long pid;

	if (!open || !close || close < open)
		return -EPROTO;
	pid = strtol(text, &end, 10);
	if (end == text || pid <= 0)
		return -EPROTO;
	/* after "(comm) ": state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime stime */
	if (sscanf(close + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		   &utime, &stime) != 2)
		return -EPROTO;
	s->pid = (int)pid;
	s->ticks = utime + stime;
	snprintf(s->comm, sizeof(s->comm), "%.*s", (int)(close - open - 1), open + 1);
	return 0;
}

struct sample_set {
	struct pc_proc_sample *s;
	int n, cap;
	bool oom;
};

static void sample_pid(struct pc_audit_ctx *c, int pid, void *arg)
{
	struct sample_set *set = arg;
	char text[1024];

	if (set->n == set->cap) {
		int cap = set->cap ? set->cap * 2 : 256;
		struct pc_proc_sample *s = realloc(set->s, (size_t)cap * sizeof(*s));

		if (!s) {
			set->oom = true;
			return;
		}
		set->s = s;
		set->cap = cap;
	}
	if (sys_rootfs_readf(text, sizeof(text), c->root, "/proc/%d/stat", pid) > 0 &&
	    sys_proc_parse_stat(text, &set->s[set->n]) == 0)
		set->n++;
}

static int by_pid(const void *a, const void *b)
{
	const struct pc_proc_sample *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int sys_proc_busy_between(const struct pc_proc_sample *a, int na,
			  const struct pc_proc_sample *b, int nb,
			  double elapsed_s, long ticks_per_s, double min_pct,
			  int skip_pid, struct pc_proc_busy *busy, int max)
{
	int nbusy = 0;

	if (elapsed_s <= 0 || ticks_per_s <= 0 || max <= 0)
		return 0;
	for (int j = 0; j < nb; j++) {
		const struct pc_proc_sample *x = bsearch(&b[j], a, (size_t)na, sizeof(*a), by_pid);
		struct pc_proc_busy cand;

		/* new since the first sample, or a reused pid: no interval */
		if (!x || b[j].pid == skip_pid || b[j].ticks < x->ticks || strcmp(x->comm, b[j].comm))
			continue;
		cand.pid = b[j].pid;
		cand.pct = 100.0 * (double)pc_elapsed(b[j].ticks, x->ticks) / ((double)ticks_per_s * elapsed_s);
		snprintf(cand.comm, sizeof(cand.comm), "%s", b[j].comm);
		if (cand.pct < min_pct)
			continue;
		if (nbusy < max)
			busy[nbusy++] = cand;
		else if (cand.pct > busy[max - 1].pct)
			busy[max - 1] = cand;
		else
			continue;
		/* keep the list busiest first */
		for (int k = nbusy - 1; k > 0 && busy[k - 1].pct < busy[k].pct; k--) {
			struct pc_proc_busy t = busy[k];

			busy[k] = busy[k - 1];
			busy[k - 1] = t;
		}
	}
	return nbusy;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void sys_audit_load_busy(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	struct sample_set s0 = { 0 }, s1 = { 0 };
	struct pc_proc_busy busy[BUSY_MAX];
	char load[128];
	double l1 = 0, l5 = 0, l15 = 0, elapsed;
	uint64_t t0;
	int nbusy = 0, n;
	bool have_load;

	have_load = sys_rootfs_read(c->root, "/proc/loadavg", load, sizeof(load)) > 0 &&
		    sscanf(load, "%lf %lf %lf", &l1, &l5, &l15) == 3;
	t0 = pc_now_ns();
	n = for_each_pid(c, sample_pid, &s0);
	if (n > 0) {
		sleep_ms(c->sample_ms);
		for_each_pid(c, sample_pid, &s1);
		elapsed = (double)pc_elapsed(pc_now_ns(), t0) / 1e9;
		qsort(s0.s, (size_t)s0.n, sizeof(*s0.s), by_pid);
		nbusy = sys_proc_busy_between(s0.s, s0.n, s1.s, s1.n, elapsed, sysconf(_SC_CLK_TCK),
					      BUSY_LIST_PCT,
					      sys_rootfs_is_real(c->root) ? (int)getpid() : -1, busy,
					      BUSY_MAX);
	}
	free(s0.s);
	free(s1.s);
	if (!have_load && n <= 0) {
		fprintf(o->value, "not exposed (no /proc/loadavg or process list)");
		return;
	}
	o->status = PC_AUDIT_OK;
	if (have_load) {
		fprintf(o->value, "load average %.2f %.2f %.2f", l1, l5, l15);
		if (c->ncpus)
			fprintf(o->value, " on %d CPUs", c->ncpus);
		/* a quiet machine has next to nothing runnable */
		if (c->ncpus && l1 > 0.25 * c->ncpus) {
			o->status = PC_AUDIT_WARN;
			fprintf(o->value, " (over a quarter of the CPUs busy)");
		}
	}
	if (n > 0 && nbusy == 0)
		fprintf(o->value, "%sno process used over %.0f%% of a CPU in %u ms", have_load ? "; " : "",
			BUSY_LIST_PCT, c->sample_ms);
	for (int i = 0; i < nbusy; i++) {
		fprintf(o->value, "%s pid %d (%s) %.0f%%", i ? "," : have_load ? "; busiest:" : "busiest:",
			busy[i].pid, busy[i].comm, busy[i].pct);
		if (busy[i].pct >= BUSY_WARN_PCT)
			o->status = PC_AUDIT_WARN;
	}
	if (o->status == PC_AUDIT_WARN)
		fprintf(o->fix, "measure on an idle machine: wait for the busy processes to finish, "
				"or stop them");
}
