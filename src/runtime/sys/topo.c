/* SPDX-License-Identifier: MIT */
/* percore sys: the machine's topology through hwloc, and the CPUs we may use.
 *
 * hwloc is loaded with disallowed CPUs included, so the tables always show
 * the whole machine and "usable" is our own decision: the affinity mask
 * intersected with the cgroup cpuset (pc_cgroup_read, the one cgroup reader
 * of the project), or for an XML file the allowed_cpuset it was saved with,
 * narrowed by the caller's options in both cases. */
#define _GNU_SOURCE 1   /* CPU_* macros; must precede every libc header */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "percore/cgroup.h"
#include "sys/errmsg.h"
#include "sys/topo_priv.h"

struct build {
	hwloc_topology_t h;
	struct pc_topo *t;
	const struct pc_topo_opts *o;
	char *err;
	size_t errlen;
};

int sys_topo_bitmap_to_set(hwloc_const_bitmap_t b, cpu_set_t *s)
{
	int last = hwloc_bitmap_last(b);

	CPU_ZERO(s);
	if (hwloc_bitmap_iszero(b))
		return 0;
	if (last >= CPU_SETSIZE)
		return -ENOTSUP;
	if (last < 0) /* infinite: every CPU from some index on */
		last = CPU_SETSIZE - 1;
	for (int i = hwloc_bitmap_first(b); i >= 0 && i <= last; i = hwloc_bitmap_next(b, i))
		CPU_SET(i, s);
	return 0;
}

static int hwloc_open(hwloc_topology_t *h, const char *xml)
{
	if (hwloc_topology_init(h))
		return -ENOMEM;
	hwloc_topology_set_flags(*h, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	if (xml && hwloc_topology_set_xml(*h, xml))
		return -EPROTO;
	return hwloc_topology_load(*h) ? -EPROTO : 0;
}

/* hwloc 2.9 crashes or leaks on some corrupt XML (a 21-byte file is
 * enough), and a topology file is input a person hands us: a child process
 * reads it first, so a bad file costs an error message, not this process.
 * Returns 0 when the child loaded it or could not be run (hwloc then tries
 * here), -EPROTO when it failed or died. */
static int xml_preflight(const char *xml)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE };
	hwloc_topology_t h;
	int status, null;
	pid_t pid = fork();

	if (pid < 0)
		return 0;
	if (pid == 0) {
		/* die plainly: no sanitizer or fuzzer report for hwloc's crash */
		for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
			signal(fatal[i], SIG_DFL);
		null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		_exit(hwloc_open(&h, xml) ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0; /* SIGCHLD ignored: nothing to learn */
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPROTO;
}

static int load_hwloc(struct build *b)
{
	const char *xml = b->o->xml_path;
	int r;

	if (xml) {
		int fd = open(xml, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return sys_errmsg(b->err, b->errlen, -errno, "%s: %s", xml, strerror(errno));
		close(fd);
		if (xml_preflight(xml))
			return sys_errmsg(b->err, b->errlen, -EPROTO,
					  "%s: not a valid hwloc XML topology", xml);
	}
	r = hwloc_open(&b->h, xml);
	if (r == -ENOMEM)
		return sys_errmsg(b->err, b->errlen, r, "hwloc: cannot initialise");
	if (r)
		return xml ? sys_errmsg(b->err, b->errlen, r, "%s: not a valid hwloc XML topology",
					xml)
			   : sys_errmsg(b->err, b->errlen, r,
					"hwloc cannot read this machine's topology");
	return 0;
}

static int by_node_os(const void *a, const void *b)
{
	return ((const struct pc_topo_node *)a)->os_index -
	       ((const struct pc_topo_node *)b)->os_index;
}

static int build_nodes(struct build *b)
{
	struct pc_topo *t = b->t;
	int n = hwloc_get_nbobjs_by_type(b->h, HWLOC_OBJ_NUMANODE);

	if (n <= 0)
		return sys_errmsg(b->err, b->errlen, -EPROTO, "topology has no NUMA node");
	t->nodes = calloc((size_t)n, sizeof(*t->nodes));
	if (!t->nodes)
		return sys_errmsg(b->err, b->errlen, -ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		hwloc_obj_t o = hwloc_get_obj_by_type(b->h, HWLOC_OBJ_NUMANODE, (unsigned)i);
		struct pc_topo_node *d = &t->nodes[i];

		if (o->os_index > (unsigned)INT_MAX)
			return sys_errmsg(b->err, b->errlen, -EPROTO,
					  "NUMA node with an invalid OS index %u", o->os_index);
		d->os_index = (int)o->os_index;
		d->memory = o->attr ? o->attr->numanode.local_memory : 0;
		if (sys_topo_bitmap_to_set(o->cpuset, &d->cpus))
			return sys_errmsg(b->err, b->errlen, -ENOTSUP,
					  "NUMA node %d names a CPU >= %d", d->os_index, CPU_SETSIZE);
	}
	qsort(t->nodes, (size_t)n, sizeof(*t->nodes), by_node_os);
	/* A damaged file can name one node twice; everything after this
	 * relies on node OS indices being distinct. */
	for (int i = 1; i < n; i++)
		if (t->nodes[i].os_index == t->nodes[i - 1].os_index)
			return sys_errmsg(b->err, b->errlen, -EPROTO,
					  "NUMA node %d appears twice", t->nodes[i].os_index);
	t->nnodes = (unsigned)n;
	return 0;
}

static int node_of_cpu(const struct pc_topo *t, int cpu)
{
	for (unsigned i = 0; i < t->nnodes; i++)
		if (CPU_ISSET(cpu, &t->nodes[i].cpus))
			return (int)i;
	return 0; /* hwloc puts every CPU under some node; be safe anyway */
}

/* Add one PU to the CPU table and to its core's thread list. */
static int add_pu(struct build *b, hwloc_obj_t pu, unsigned ncores_hw, unsigned *norphans)
{
	struct pc_topo *t = b->t;
	hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(b->h, HWLOC_OBJ_CORE, pu);
	hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(b->h, HWLOC_OBJ_PACKAGE, pu);
	struct pc_topo_cpu *c = &t->cpus[t->ncpus];
	struct pc_topo_core *k;
	int os = (int)pu->os_index;

	if (os < 0 || os >= CPU_SETSIZE)
		return sys_errmsg(b->err, b->errlen, -ENOTSUP, "CPU %d is beyond the %d CPUs "
				  "percore supports", os, CPU_SETSIZE);
	/* A PU without a Core object (some virtual machines) is its own core. */
	c->core = core ? (int)core->logical_index : (int)(ncores_hw + (*norphans)++);
	k = &t->cores[c->core];
	if (k->nthreads == PC_TOPO_MAX_SMT)
		return sys_errmsg(b->err, b->errlen, -ENOTSUP, "core %d has more than %d threads",
				  c->core, PC_TOPO_MAX_SMT);
	c->os_index = os;
	c->package = pkg ? (int)pkg->logical_index : 0;
	c->node = node_of_cpu(t, os);
	c->smt = (int)k->nthreads;
	k->index = c->core;
	k->package = c->package;
	k->node = k->nthreads ? k->node : c->node;
	k->threads[k->nthreads++] = os;
	t->ncpus++;
	return 0;
}

static int by_cpu_os(const void *a, const void *b)
{
	return ((const struct pc_topo_cpu *)a)->os_index -
	       ((const struct pc_topo_cpu *)b)->os_index;
}

static int build_cpus(struct build *b)
{
	struct pc_topo *t = b->t;
	int npu = hwloc_get_nbobjs_by_type(b->h, HWLOC_OBJ_PU);
	int ncore = hwloc_get_nbobjs_by_type(b->h, HWLOC_OBJ_CORE);
	unsigned norphans = 0;
	int r;

	if (npu <= 0)
		return sys_errmsg(b->err, b->errlen, -EPROTO, "topology has no CPU");
	ncore = ncore < 0 ? 0 : ncore;
	t->cpus = calloc((size_t)npu, sizeof(*t->cpus));
	t->cores = calloc((size_t)(ncore + npu), sizeof(*t->cores));
	if (!t->cpus || !t->cores)
		return sys_errmsg(b->err, b->errlen, -ENOMEM, "out of memory");
	for (int i = 0; i < npu; i++) {
		r = add_pu(b, hwloc_get_obj_by_type(b->h, HWLOC_OBJ_PU, (unsigned)i),
			   (unsigned)ncore, &norphans);
		if (r)
			return r;
	}
	t->ncores = (unsigned)ncore + norphans;
	for (unsigned i = 0; i < t->ncores; i++)
		if (t->cores[i].nthreads == 0)
			return sys_errmsg(b->err, b->errlen, -EPROTO, "core %u has no CPU", i);
	qsort(t->cpus, t->ncpus, sizeof(*t->cpus), by_cpu_os);
	for (unsigned i = 0; i < t->ncpus; i++) {
		if (i && t->cpus[i].os_index == t->cpus[i - 1].os_index)
			return sys_errmsg(b->err, b->errlen, -EPROTO, "CPU %d appears twice",
					  t->cpus[i].os_index);
		t->by_os[t->cpus[i].os_index] = (int)i;
	}
	t->npackages = (unsigned)hwloc_get_nbobjs_by_type(b->h, HWLOC_OBJ_PACKAGE);
	if (t->npackages == 0)
		t->npackages = 1;
	return 0;
}

static int by_cache(const void *pa, const void *pb)
{
	const struct pc_topo_cache *a = pa, *b = pb;
	int fa = 0, fb = 0;

	if (a->level != b->level)
		return a->level - b->level;
	while (fa < CPU_SETSIZE && !CPU_ISSET(fa, &a->cpus))
		fa++;
	while (fb < CPU_SETSIZE && !CPU_ISSET(fb, &b->cpus))
		fb++;
	return fa - fb;
}

/* L1 data, L2 and L3: the caches shards share or must not share. */
static int build_caches(struct build *b)
{
	static const hwloc_obj_type_t types[] = { HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE,
						  HWLOC_OBJ_L3CACHE };
	struct pc_topo *t = b->t;
	unsigned total = 0;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int n = hwloc_get_nbobjs_by_type(b->h, types[i]);

		/* -1: hwloc found this cache type at several depths, which only
		 * a damaged file produces; counting it would undersize the table. */
		if (n < 0)
			return sys_errmsg(b->err, b->errlen, -EPROTO,
					  "L%zu caches at several depths of the topology", i + 1);
		total += (unsigned)n;
	}
	t->caches = calloc(total ? total : 1, sizeof(*t->caches));
	if (!t->caches)
		return sys_errmsg(b->err, b->errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int n = hwloc_get_nbobjs_by_type(b->h, types[i]);

		for (int j = 0; j < n; j++) {
			hwloc_obj_t o = hwloc_get_obj_by_type(b->h, types[i], (unsigned)j);
			struct pc_topo_cache *c = &t->caches[t->ncaches];

			if (o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION)
				continue;
			c->level = (int)o->attr->cache.depth;
			c->size = o->attr->cache.size;
			c->line = o->attr->cache.linesize;
			if (sys_topo_bitmap_to_set(o->cpuset, &c->cpus))
				return sys_errmsg(b->err, b->errlen, -ENOTSUP, "cache names a CPU >= %d",
						  CPU_SETSIZE);
			t->ncaches++;
		}
	}
	qsort(t->caches, t->ncaches, sizeof(*t->caches), by_cache);
	return 0;
}

/* The cgroup's cpuset and CPU quota, read through opts->root. */
static int cgroup_limits(struct build *b, struct pc_topo_limits *l)
{
	struct pc_cgroup cg;
	int r = pc_cgroup_read(b->o->root, &cg);

	if (r)
		return sys_errmsg(b->err, b->errlen, r, "reading cgroup limits: %s", strerror(-r));
	l->cgroup_version = cg.version;
	snprintf(l->cgroup_path, sizeof(l->cgroup_path), "%s", cg.path);
	if (cg.has_cpuset) {
		l->has_cpuset = true;
		l->cpuset = cg.cpuset;
	}
	if (cg.has_cpu_quota && cg.quota_cpus > 0)
		l->quota_cpus = cg.quota_cpus;
	return 0;
}

static int affinity_limit(struct build *b, struct pc_topo_limits *l)
{
	if (sched_getaffinity(0, sizeof(l->affinity), &l->affinity))
		return sys_errmsg(b->err, b->errlen, -errno, "sched_getaffinity: %s",
				  strerror(errno));
	l->has_affinity = true;
	CPU_AND(&l->usable, &l->usable, &l->affinity);
	return 0;
}

/* What an XML file says this process was allowed (a container's export). */
static void xml_limits(struct build *b, struct pc_topo_limits *l)
{
	hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(b->h);
	hwloc_const_cpuset_t all = hwloc_topology_get_complete_cpuset(b->h);
	cpu_set_t s;

	if (hwloc_bitmap_isincluded(all, allowed) || sys_topo_bitmap_to_set(allowed, &s))
		return;
	l->has_hwloc_allowed = true;
	CPU_AND(&l->usable, &l->usable, &s);
}

static int build_limits(struct build *b)
{
	struct pc_topo *t = b->t;
	struct pc_topo_limits *l = &t->limits;
	int r;

	CPU_ZERO(&l->usable);
	for (unsigned i = 0; i < t->ncpus; i++)
		CPU_SET(t->cpus[i].os_index, &l->usable);
	if (b->o->xml_path)
		xml_limits(b, l);
	else if ((r = affinity_limit(b, l)))
		return r;
	/* A saved topology has no cgroup unless the caller names a tree. */
	if ((!b->o->xml_path || b->o->root) && (r = cgroup_limits(b, l)))
		return r;
	if (b->o->allowed) {
		if (l->has_cpuset)
			CPU_AND(&l->cpuset, &l->cpuset, b->o->allowed);
		else
			l->cpuset = *b->o->allowed;
		l->has_cpuset = true;
	}
	if (l->has_cpuset)
		CPU_AND(&l->usable, &l->usable, &l->cpuset);
	if (b->o->quota_cpus > 0)
		l->quota_cpus = b->o->quota_cpus;
	if (l->quota_cpus > 0) {
		double f = floor(l->quota_cpus);

		l->quota_shards = f < 1 ? 1 : (unsigned)f;
	}
	return 0;
}

static void mark_usable(struct pc_topo *t)
{
	struct pc_topo_limits *l = &t->limits;

	l->nusable = l->nusable_cores = 0;
	for (unsigned i = 0; i < t->ncpus; i++) {
		struct pc_topo_cpu *c = &t->cpus[i];

		c->usable = CPU_ISSET(c->os_index, &l->usable);
		if (c->usable) {
			l->nusable++;
			t->cores[c->core].nusable++;
		}
	}
	for (unsigned i = 0; i < t->ncores; i++) {
		const struct pc_topo_core *k = &t->cores[i];

		t->nodes[k->node].ncores++;
		if (k->nusable) {
			l->nusable_cores++;
			t->nodes[k->node].nusable_cores++;
		}
	}
}

int pc_topo_load(const struct pc_topo_opts *opts, struct pc_topo **out, char *err,
		 size_t errlen)
{
	struct pc_topo_opts none = { 0 };
	struct build b = { .o = opts ? opts : &none, .err = err, .errlen = errlen };
	int r;

	*out = NULL;
	if (b.o->quota_cpus < 0 || isnan(b.o->quota_cpus))
		return sys_errmsg(err, errlen, -EINVAL, "a CPU quota must be positive");
	b.t = calloc(1, sizeof(*b.t));
	if (!b.t)
		return sys_errmsg(err, errlen, -ENOMEM, "out of memory");
	memset(b.t->by_os, -1, sizeof(b.t->by_os));
	b.t->source = strdup(b.o->xml_path ? b.o->xml_path : "this machine");
	r = b.t->source ? 0 : sys_errmsg(err, errlen, -ENOMEM, "out of memory");
	if (!r)
		r = load_hwloc(&b);
	if (!r)
		r = build_nodes(&b);
	if (!r)
		r = build_cpus(&b);
	if (!r)
		r = sys_topo_build_kinds(b.t, b.h, !b.o->xml_path || b.o->root, b.o->root,
					 err, errlen);
	if (!r)
		r = build_caches(&b);
	if (!r)
		r = build_limits(&b);
	if (b.h)
		hwloc_topology_destroy(b.h);
	if (r) {
		pc_topo_free(b.t);
		return r;
	}
	mark_usable(b.t);
	/* hwloc accepts some damaged files that still leave no consistent
	 * machine (no CPU, a CPU outside every core...); placement relies on
	 * every invariant pc_topo_validate checks, so refuse those here. */
	if (pc_topo_validate(b.t, NULL, 0)) {
		pc_topo_free(b.t);
		return sys_errmsg(err, errlen, -EPROTO,
				  "the topology is inconsistent (a damaged saved file?)");
	}
	*out = b.t;
	return 0;
}

int pc_topo_load_xml(const char *path, struct pc_topo **out, char *err, size_t errlen)
{
	struct pc_topo_opts o = { .xml_path = path };

	if (!path) {
		*out = NULL;
		return sys_errmsg(err, errlen, -EINVAL, "no XML file given");
	}
	return pc_topo_load(&o, out, err, errlen);
}

void pc_topo_free(struct pc_topo *t)
{
	if (!t)
		return;
	free(t->source);
	free(t->cpus);
	free(t->cores);
	free(t->nodes);
	free(t->kinds);
	free(t->caches);
	free(t);
}
