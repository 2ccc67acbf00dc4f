/* SPDX-License-Identifier: MIT */
/* percore env: the storage that holds --path DIR (its block device's queue
 * settings) and the power settings that slow fast storage whatever the
 * path (NVMe APST, PCIe ASPM). A device sleeping between I/Os pays its
 * wake-up on every 4 KiB random access, as a core in a deep idle state
 * does on every completion. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "env/audit_impl.h"
#include "percore/cpulist.h"
#include "sys/rootfs.h"

int sys_storage_queue_dir(const char *root, const char *path, char *out, size_t len,
			  dev_t *devno)
{
	struct stat st;
	char dev[64];

	if (stat(path, &st))
		return -errno;
	*devno = st.st_dev;
	snprintf(dev, sizeof(dev), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	if (!sys_rootfs_exists(root, dev))
		return -ENODEV;
	snprintf(out, len, "%s/partition", dev);
	snprintf(out, len, "%s%s/queue", dev, sys_rootfs_exists(root, out) ? "/.." : "");
	return 0;
}

/* The queue folder of the disk holding c->path; false (value written)
 * when there is no path or it is not on a block device. */
static bool queue_dir(struct pc_audit_ctx *c, char *out, size_t len, struct pc_audit_out *o)
{
	dev_t dev = 0;
	int rc;

	if (!c->path) {
		fprintf(o->value, "no --path given");
		return false;
	}
	rc = sys_storage_queue_dir(c->root, c->path, out, len, &dev);
	if (rc == -ENODEV)
		fprintf(o->value, "%s is not on a block device (%u:%u)", c->path, major(dev),
			minor(dev));
	else if (rc)
		fprintf(o->value, "cannot stat %s: %s", c->path, strerror(-rc));
	return rc == 0;
}

/* Read queue/<name> of c->path's disk into buf; false (value written)
 * when it cannot. */
static bool queue_read(struct pc_audit_ctx *c, const char *name, char *buf, size_t len,
		       char *q, size_t qlen, struct pc_audit_out *o)
{
	if (!queue_dir(c, q, qlen, o))
		return false;
	if (sys_rootfs_readf(buf, len, c->root, "%s/%s", q, name) < 0) {
		fprintf(o->value, "not exposed (%s/%s)", q, name);
		return false;
	}
	return true;
}

/* The [selected] word of a sysfs choice list, in place. */
static const char *selected(char *list)
{
	char *a = strchr(list, '['), *b = a ? strchr(a, ']') : NULL;

	if (!b)
		return list;
	*b = 0;
	return a + 1;
}

void sys_audit_storage_rotational(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char v[32], q[128];

	if (!queue_read(c, "rotational", v, sizeof(v), q, sizeof(q), o))
		return;
	if (!strcmp(v, "0")) {
		o->status = PC_AUDIT_OK;
		fprintf(o->value, "non-rotational (SSD or NVMe)");
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->value, "rotational: random I/O measures seek time, not the software");
	fprintf(o->fix, "put --path on an SSD or NVMe device for the File and Journal rows");
}

void sys_audit_storage_scheduler(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char v[256], q[128];
	const char *s;

	if (!queue_read(c, "scheduler", v, sizeof(v), q, sizeof(q), o))
		return;
	s = selected(v);
	fprintf(o->value, "%s", s);
	if (!strcmp(s, "none")) {
		o->status = PC_AUDIT_OK;
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->fix, "echo none | sudo tee %s/scheduler (fast devices need no reordering)", q);
}

void sys_audit_storage_nr_requests(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char v[32], q[128];
	long n;

	if (!queue_read(c, "nr_requests", v, sizeof(v), q, sizeof(q), o))
		return;
	n = strtol(v, NULL, 10);
	fprintf(o->value, "%ld requests", n);
	if (n >= 64) {
		o->status = PC_AUDIT_OK;
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->fix, "echo 256 | sudo tee %s/nr_requests (deeper than the queue depths measured)",
		q);
}

void sys_audit_storage_write_cache(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char v[64], q[128];

	if (!queue_read(c, "write_cache", v, sizeof(v), q, sizeof(q), o))
		return;
	if (strcmp(v, "write back")) {
		o->status = PC_AUDIT_OK;
		fprintf(o->value, "%s: fdatasync needs no cache flush", v);
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->value, "write back (volatile): every fdatasync waits for a cache flush");
	fprintf(o->fix, "keep it for durability; only a device with power-loss protection may "
			"take: echo 'write through' | sudo tee %s/write_cache", q);
}

void sys_audit_storage_nvme_apst(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	long long us;

	if (sys_rootfs_read_ll(c->root, "/sys/module/nvme_core/parameters/default_ps_max_latency_us",
			       &us)) {
		fprintf(o->value, "no nvme_core module: no NVMe devices to put to sleep");
		return;
	}
	if (us == 0) {
		o->status = PC_AUDIT_OK;
		fprintf(o->value, "off (default_ps_max_latency_us=0)");
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->value, "on: NVMe power states with exit latency up to %lld us", us);
	fprintf(o->fix, "boot with nvme_core.default_ps_max_latency_us=0");
}

void sys_audit_storage_pcie_aspm(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char v[128];
	const char *s;

	if (sys_rootfs_read(c->root, "/sys/module/pcie_aspm/parameters/policy", v, sizeof(v)) < 0) {
		fprintf(o->value, "not exposed (no pcie_aspm policy)");
		return;
	}
	s = selected(v);
	fprintf(o->value, "%s", s);
	if (!strcmp(s, "performance")) {
		o->status = PC_AUDIT_OK;
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->fix, "echo performance | sudo tee /sys/module/pcie_aspm/parameters/policy "
			"(or boot with pcie_aspm=off)");
}

/* The CPUs that take the completion interrupts of the disk whose sysfs
 * folder is disk: the MSI vectors of the PCI function behind its device
 * link (a virtio function's, or an NVMe controller's a level further
 * up), less virtio's configuration vector, each at the CPUs its
 * effective affinity names. Returns how many vectors were read, or
 * -errno when the function has no vector list. */
static int irq_cpus(const char *root, const char *disk, cpu_set_t *cpus)
{
	char p[PC_ROOTFS_PATH_MAX], fn[PATH_MAX], vec[PATH_MAX + 16], text[256];
	struct dirent *d;
	DIR *dir = NULL;
	int n = 0;

	CPU_ZERO(cpus);
	sys_rootfs_path(p, sizeof(p), root, "%s/device", disk);
	if (!realpath(p, fn))
		return -errno;
	for (int up = 0; up < 3 && !dir; up++) {
		snprintf(vec, sizeof(vec), "%s/msi_irqs", fn);
		dir = opendir(vec);
		if (!dir && strrchr(fn, '/'))
			*strrchr(fn, '/') = 0;
	}
	if (!dir)
		return -ENOENT;
	while ((d = readdir(dir))) {
		cpu_set_t one;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		if (sys_rootfs_readf(text, sizeof(text), root, "/sys/kernel/irq/%s/actions",
				     d->d_name) > 0 && strstr(text, "config"))
			continue;
		if ((sys_rootfs_readf(text, sizeof(text), root, "/proc/irq/%s/effective_affinity_list",
				      d->d_name) > 0 ||
		     sys_rootfs_readf(text, sizeof(text), root, "/proc/irq/%s/smp_affinity_list",
				      d->d_name) > 0) &&
		    !pc_cpulist_parse(text, &one)) {
			CPU_OR(cpus, cpus, &one);
			n++;
		}
	}
	closedir(dir);
	return n;
}

/* Completion interrupts reach the CPUs of the disk's hardware queues; a
 * thread on another CPU is woken across CPUs for every completion, which
 * on a 2-CPU VM doubled a 4 KiB read's latency (docs/BENCHMARKS.md,
 * Files). */
void sys_audit_storage_queues(struct pc_audit_ctx *c, struct pc_audit_out *o)
{
	char q[128], disk[128], list[256];
	unsigned nq = 0;
	cpu_set_t cpus;
	int nirq;

	if (!queue_dir(c, q, sizeof(q), o))
		return;
	snprintf(disk, sizeof(disk), "%.*s", (int)(strlen(q) - strlen("/queue")), q);
	while (nq < 4096) {
		char mq[192];

		snprintf(mq, sizeof(mq), "%s/mq/%u", disk, nq);
		if (!sys_rootfs_exists(c->root, mq))
			break;
		nq++;
	}
	if (nq == 0) {
		fprintf(o->value, "not exposed (%s/mq)", disk);
		return;
	}
	nirq = irq_cpus(c->root, disk, &cpus);
	fprintf(o->value, "%u hardware queue%s for %d CPUs", nq, nq == 1 ? "" : "s", c->ncpus);
	if (nirq > 0 && pc_cpulist_format(&cpus, list, sizeof(list)) > 0) {
		fprintf(o->value, "; completions interrupt CPU %s", list);
		if (CPU_COUNT(&cpus) >= c->ncpus || c->ncpus == 0) {
			o->status = PC_AUDIT_OK;
			return;
		}
		o->status = PC_AUDIT_WARN;
		fprintf(o->fix, "a shard elsewhere is woken across CPUs for every completion: "
				"put file-heavy shards on CPU %s, or use a device with a queue per CPU",
			list);
		return;
	}
	fprintf(o->value, "; interrupts not exposed");
	if (c->ncpus == 0 || (int)nq >= c->ncpus) {
		o->status = PC_AUDIT_OK;
		return;
	}
	o->status = PC_AUDIT_WARN;
	fprintf(o->fix, "fewer queues than CPUs: shards on some CPUs are woken across CPUs for "
			"every completion; use a device with a queue per CPU");
}
