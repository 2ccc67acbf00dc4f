/* SPDX-License-Identifier: MIT */
/* percore: the limits a cgroup (v1 or v2) puts on this process.
 *
 * Three controllers matter to placement and to the audit: cpuset (which
 * CPUs), cpu (a CFS bandwidth quota) and memory (a hard limit). For each we
 * find where its hierarchy is mounted, which directory is this process's
 * cgroup, and read the limit at that directory and every ancestor up to the
 * mount root, keeping the tightest: a parent's quota throttles its children
 * whatever the children say. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "percore/cgroup.h"
#include "percore/cpulist.h"
#include "sys/rootfs.h"

enum { CTL_CPUSET, CTL_CPU, CTL_MEMORY, CTL_N };

static const char *const ctl_name[CTL_N] = { "cpuset", "cpu", "memory" };

/* v1 reports "no limit" as a page-rounded LONG_MAX; anything this large is
 * not a limit anyone set. */
#define PC_CG_MEM_UNLIMITED (1ULL << 62)

/* One line of /proc/self/cgroup: "id:controllers:path" (v2: "0::path"). */
struct cg_line {
	bool v2;
	char ctls[128];
	char path[256];
};

/* One cgroup or cgroup2 mount from /proc/self/mountinfo. */
struct cg_mount {
	bool v2;
	char point[512];   /* where it is mounted */
	char mroot[256];   /* which cgroup appears at the mount point */
	char opts[256];    /* super options: the v1 controller names */
};

struct cg_info {
	struct cg_line line[32];
	int nlines;
	struct cg_mount mount[32];
	int nmounts;
};

/* Where one controller's files for this process are. */
struct cg_where {
	int version;
	char base[PC_ROOTFS_PATH_MAX];   /* mount root, with the root prefix */
	char leaf[PC_ROOTFS_PATH_MAX];   /* this process's cgroup directory */
	const char *path;                /* the path /proc/self/cgroup gave */
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void parse_self(const char *root, struct cg_info *ci)
{
	char buf[8192];
	char *save = NULL;

	if (sys_rootfs_read(root, "/proc/self/cgroup", buf, sizeof(buf)) <= 0)
		return;
	for (char *l = strtok_r(buf, "\n", &save); l && ci->nlines < 32;
	     l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		struct cg_line *cl = &ci->line[ci->nlines];

		if (!c2 || c2[1] != '/')
			continue;   /* malformed line: ignore it, keep the rest */
		*c2 = '\0';
		snprintf(cl->ctls, sizeof(cl->ctls), "%s", c1 + 1);
		snprintf(cl->path, sizeof(cl->path), "%s", c2 + 1);
		cl->v2 = !strncmp(l, "0:", 2) && cl->ctls[0] == '\0';
		ci->nlines++;
	}
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Fields: id parent dev root point opts [optional...] - fstype source super */
static void parse_mount_line(char *l, struct cg_info *ci)
{
	char *f[6], *save = NULL, *dash, *fstype, *super;
	struct cg_mount *m = &ci->mount[ci->nmounts];

	dash = strstr(l, " - ");
	if (!dash)
		return;
	*dash = '\0';
	fstype = strtok_r(dash + 3, " ", &save);
	strtok_r(NULL, " ", &save);   /* source */
	super = strtok_r(NULL, " ", &save);
	if (!fstype || (strcmp(fstype, "cgroup") && strcmp(fstype, "cgroup2")))
		return;
	save = NULL;
	for (int i = 0; i < 6; i++)
		if (!(f[i] = strtok_r(i ? NULL : l, " ", &save)))
			return;
	unescape(f[3]);
	unescape(f[4]);
	m->v2 = !strcmp(fstype, "cgroup2");
	snprintf(m->mroot, sizeof(m->mroot), "%s", f[3]);
	snprintf(m->point, sizeof(m->point), "%s", f[4]);
	snprintf(m->opts, sizeof(m->opts), "%s", super ? super : "");
	ci->nmounts++;
}

static void parse_mounts(const char *root, struct cg_info *ci)
{
	char path[PC_ROOTFS_PATH_MAX], *l = NULL;
	size_t cap = 0;
	FILE *f;

	if (sys_rootfs_path(path, sizeof(path), root, "/proc/self/mountinfo"))
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (ci->nmounts < 32 && getline(&l, &cap, f) > 0) {
		l[strcspn(l, "\n")] = '\0';
		parse_mount_line(l, ci);
	}
	free(l);
	fclose(f);
}

/* The directory of cgroup path p inside a mount showing cgroup mroot at
 * base. Inside a container the path /proc/self/cgroup names may not exist
 * in the container's view of the mount (no cgroup namespace, or a private
 * mount of the container's own cgroup): the mount root is then the
 * process's cgroup as far as this view goes. */
static void resolve_leaf(struct cg_where *w, const char *mroot, const char *p)
{
	size_t rl = strlen(mroot);
	const char *rel = p;

	if (rl > 1 && !strncmp(p, mroot, rl) && (p[rl] == '/' || p[rl] == '\0'))
		rel = p + rl;
	if (!strcmp(rel, "/") || rel[0] == '\0' ||
	    (size_t)snprintf(w->leaf, sizeof(w->leaf), "%s%s", w->base, rel) >= sizeof(w->leaf) ||
	    !is_dir(w->leaf))
		snprintf(w->leaf, sizeof(w->leaf), "%s", w->base);
}

static bool locate_v1(const char *root, const struct cg_info *ci, int ctl,
		      const struct cg_line *cl, struct cg_where *w)
{
	const char *mroot = "/";
	bool found = false;

	for (int i = 0; i < ci->nmounts && !found; i++) {
		const struct cg_mount *m = &ci->mount[i];

		if (!m->v2 && sys_str_has_word(m->opts, ctl_name[ctl], ",") &&
		    !sys_rootfs_path(w->base, sizeof(w->base), root, "%s", m->point) &&
		    is_dir(w->base)) {
			mroot = m->mroot;
			found = true;
		}
	}
	/* No mountinfo (a fake tree): the usual places, named after the
	 * controllers the hierarchy carries ("cpu,cpuacct") or the one we want. */
	if (!found)
		found = (!sys_rootfs_path(w->base, sizeof(w->base), root, "/sys/fs/cgroup/%s", cl->ctls) &&
			 is_dir(w->base)) ||
			(!sys_rootfs_path(w->base, sizeof(w->base), root, "/sys/fs/cgroup/%s", ctl_name[ctl]) &&
			 is_dir(w->base));
	if (!found)
		return false;
	w->version = 1;
	w->path = cl->path;
	resolve_leaf(w, mroot, cl->path);
	return true;
}

static bool v2_has_controller(const char *base, int ctl)
{
	char list[512];

	if (sys_rootfs_readf(list, sizeof(list), NULL, "%s/cgroup.controllers", base) < 0)
		return false;
	return sys_str_has_word(list, ctl_name[ctl], " ");
}

static bool locate_v2(const char *root, const struct cg_info *ci, int ctl,
		      const struct cg_line *cl, struct cg_where *w)
{
	static const char *const guess[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	const char *mroot = "/";
	bool found = false;

	for (int i = 0; i < ci->nmounts && !found; i++) {
		const struct cg_mount *m = &ci->mount[i];

		if (m->v2 && !sys_rootfs_path(w->base, sizeof(w->base), root, "%s", m->point) &&
		    v2_has_controller(w->base, ctl)) {
			mroot = m->mroot;
			found = true;
		}
	}
	for (size_t i = 0; i < 2 && !found && ci->nmounts == 0; i++)
		found = !sys_rootfs_path(w->base, sizeof(w->base), root, "%s", guess[i]) &&
			v2_has_controller(w->base, ctl);
	if (!found)
		return false;
	w->version = 2;
	w->path = cl->path;
	resolve_leaf(w, mroot, cl->path);
	return true;
}

/* A controller bound to a v1 hierarchy is not available in v2, so v1 is
 * looked at first; hybrid systems mount an empty v2 tree beside v1. */
static bool locate(const char *root, const struct cg_info *ci, int ctl, struct cg_where *w)
{
	for (int i = 0; i < ci->nlines; i++)
		if (!ci->line[i].v2 && sys_str_has_word(ci->line[i].ctls, ctl_name[ctl], ","))
			return locate_v1(root, ci, ctl, &ci->line[i], w);
	for (int i = 0; i < ci->nlines; i++)
		if (ci->line[i].v2)
			return locate_v2(root, ci, ctl, &ci->line[i], w);
	return false;
}

typedef void (*level_fn)(const char *dir, int version, struct pc_cgroup *cg, void *acc);

/* Call fn for the leaf and each ancestor up to and including the base. */
static void walk_up(const struct cg_where *w, level_fn fn, struct pc_cgroup *cg, void *acc)
{
	char dir[PC_ROOTFS_PATH_MAX];
	size_t bl = strlen(w->base);

	snprintf(dir, sizeof(dir), "%s", w->leaf);
	for (;;) {
		char *slash;

		fn(dir, w->version, cg, acc);
		if (strlen(dir) <= bl)
			break;
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < bl)
			break;
		*slash = '\0';
	}
}

struct cpuset_acc {
	bool found;
	cpu_set_t set;
};

static void cpuset_level(const char *dir, int version, struct pc_cgroup *cg, void *arg)
{
	struct cpuset_acc *a = arg;
	char text[4096];
	cpu_set_t s;
	ssize_t n;

	(void)cg;
	if (version == 2)
		n = sys_rootfs_readf(text, sizeof(text), NULL, "%s/cpuset.cpus.effective", dir);
	else if ((n = sys_rootfs_readf(text, sizeof(text), NULL, "%s/cpuset.effective_cpus", dir)) < 0)
		n = sys_rootfs_readf(text, sizeof(text), NULL, "%s/cpuset.cpus", dir);
	/* An empty set means "inherit" in v2 and an unconfigured cpuset in
	 * v1; neither restricts anything. */
	if (n <= 0 || pc_cpulist_parse(text, &s) || CPU_COUNT(&s) == 0)
		return;
	if (a->found)
		CPU_AND(&a->set, &a->set, &s);
	else
		a->set = s;
	a->found = true;
}

static void set_quota(struct pc_cgroup *cg, long long quota, long long period)
{
	double cpus;

	if (quota <= 0 || period <= 0)
		return;
	cpus = (double)quota / (double)period;
	if (cg->has_cpu_quota && cpus >= cg->quota_cpus)
		return;
	cg->has_cpu_quota = true;
	cg->quota_us = quota;
	cg->period_us = period;
	cg->quota_cpus = cpus;
}

static void cpu_level(const char *dir, int version, struct pc_cgroup *cg, void *arg)
{
	char text[128], first[64];
	long long quota, period = 100000;

	(void)arg;
	if (version == 2) {
		/* "max 100000" is no quota; "150000 100000" is 1.5 CPUs. */
		if (sys_rootfs_readf(text, sizeof(text), NULL, "%s/cpu.max", dir) <= 0 ||
		    sscanf(text, "%63s %lld", first, &period) < 1 || !strcmp(first, "max"))
			return;
		quota = strtoll(first, NULL, 10);
	} else {
		char p[PC_ROOTFS_PATH_MAX];

		/* -1 is no quota. */
		if (snprintf(p, sizeof(p), "%s/cpu.cfs_quota_us", dir) >= (int)sizeof(p) ||
		    sys_rootfs_read_ll(NULL, p, &quota))
			return;
		snprintf(p, sizeof(p), "%s/cpu.cfs_period_us", dir);
		if (sys_rootfs_read_ll(NULL, p, &period))
			period = 100000;
	}
	set_quota(cg, quota, period);
}

static void memory_level(const char *dir, int version, struct pc_cgroup *cg, void *arg)
{
	char text[64], *end;
	unsigned long long v;

	(void)arg;
	if (sys_rootfs_readf(text, sizeof(text), NULL, "%s/%s", dir,
			     version == 2 ? "memory.max" : "memory.limit_in_bytes") <= 0 ||
	    !strcmp(text, "max"))
		return;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || *end || text[0] == '-' || v >= PC_CG_MEM_UNLIMITED)
		return;
	if (!cg->has_memory_limit || v < cg->memory_limit) {
		cg->has_memory_limit = true;
		cg->memory_limit = v;
	}
}

/* A cpuset that lists every online CPU restricts nothing. */
static bool cpuset_restricts(const char *root, const cpu_set_t *set)
{
	char text[4096];
	cpu_set_t online, both;

	if (sys_rootfs_read(root, "/sys/devices/system/cpu/online", text, sizeof(text)) <= 0 ||
	    pc_cpulist_parse(text, &online) || CPU_COUNT(&online) == 0)
		return true;
	CPU_AND(&both, &online, set);
	return !CPU_EQUAL(&both, &online);
}

int pc_cgroup_read(const char *root, struct pc_cgroup *cg)
{
	static const level_fn level[CTL_N] = { cpuset_level, cpu_level, memory_level };
	struct cg_info *ci;
	struct cpuset_acc cs = { .found = false };
	char *ctl_path[CTL_N];

	if (!cg)
		return -EINVAL;
	memset(cg, 0, sizeof(*cg));
	snprintf(cg->path, sizeof(cg->path), "/");
	ci = calloc(1, sizeof(*ci));
	if (!ci)
		return -ENOMEM;
	parse_self(root, ci);
	parse_mounts(root, ci);
	ctl_path[CTL_CPUSET] = cg->cpuset_path;
	ctl_path[CTL_CPU] = cg->cpu_path;
	ctl_path[CTL_MEMORY] = cg->memory_path;
	for (int c = 0; c < CTL_N; c++) {
		struct cg_where *w = malloc(sizeof(*w));

		if (!w) {
			free(ci);
			return -ENOMEM;
		}
		if (locate(root, ci, c, w)) {
			/* v1 wins the version when any controller lives there. */
			if (cg->version == 0 || w->version == 1)
				cg->version = w->version;
			snprintf(ctl_path[c], sizeof(cg->cpu_path), "%s", w->path);
			walk_up(w, level[c], cg, &cs);
		}
		free(w);
	}
	snprintf(cg->path, sizeof(cg->path), "%s",
		 cg->cpu_path[0] ? cg->cpu_path : cg->cpuset_path[0] ? cg->cpuset_path
				 : cg->memory_path[0] ? cg->memory_path : "/");
	if (cs.found) {
		cg->cpuset = cs.set;
		cg->has_cpuset = cpuset_restricts(root, &cs.set);
	}
	free(ci);
	return 0;
}
