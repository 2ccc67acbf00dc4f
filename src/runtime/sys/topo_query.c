/* SPDX-License-Identifier: MIT */
/* percore sys: reading a loaded topology, and checking its invariants. */
#define _GNU_SOURCE 1   /* CPU_* macros; must precede every libc header */
#include <errno.h>
#include <stddef.h>

#include "sys/errmsg.h"
#include "sys/topo_priv.h"

unsigned pc_topo_ncpus(const struct pc_topo *t) { return t->ncpus; }
unsigned pc_topo_ncores(const struct pc_topo *t) { return t->ncores; }
unsigned pc_topo_nnodes(const struct pc_topo *t) { return t->nnodes; }
unsigned pc_topo_nkinds(const struct pc_topo *t) { return t->nkinds; }
unsigned pc_topo_ncaches(const struct pc_topo *t) { return t->ncaches; }
unsigned pc_topo_npackages(const struct pc_topo *t) { return t->npackages; }

const struct pc_topo_cpu *pc_topo_cpu(const struct pc_topo *t, unsigned i)
{
	return i < t->ncpus ? &t->cpus[i] : NULL;
}

const struct pc_topo_core *pc_topo_core(const struct pc_topo *t, unsigned i)
{
	return i < t->ncores ? &t->cores[i] : NULL;
}

const struct pc_topo_node *pc_topo_node(const struct pc_topo *t, unsigned i)
{
	return i < t->nnodes ? &t->nodes[i] : NULL;
}

const struct pc_topo_kind *pc_topo_kind(const struct pc_topo *t, unsigned i)
{
	return i < t->nkinds ? &t->kinds[i] : NULL;
}

const struct pc_topo_cache *pc_topo_cache(const struct pc_topo *t, unsigned i)
{
	return i < t->ncaches ? &t->caches[i] : NULL;
}

const struct pc_topo_cpu *pc_topo_cpu_by_os(const struct pc_topo *t, int os_index)
{
	if (os_index < 0 || os_index >= CPU_SETSIZE || t->by_os[os_index] < 0)
		return NULL;
	return &t->cpus[t->by_os[os_index]];
}

enum pc_topo_kind_source pc_topo_kind_source(const struct pc_topo *t)
{
	return t->kind_source;
}

const struct pc_topo_limits *pc_topo_limits(const struct pc_topo *t)
{
	return &t->limits;
}

const char *pc_topo_source(const struct pc_topo *t)
{
	return t->source;
}

const char *pc_topo_kind_source_name(enum pc_topo_kind_source s)
{
	switch (s) {
	case PC_TOPO_KINDS_HWLOC:   return "hwloc cpukinds";
	case PC_TOPO_KINDS_CPUFREQ: return "cpufreq";
	default:                    return "uniform";
	}
}

/* Which index of CPU c is out of range, or NULL. */
static const char *cpu_bad_index(const struct pc_topo *t, const struct pc_topo_cpu *c,
				 int *v, unsigned *n)
{
	const struct { const char *name; int v; unsigned n; } f[] = {
		{ "core", c->core, t->ncores }, { "node", c->node, t->nnodes },
		{ "kind", c->kind, t->nkinds }, { "package", c->package, t->npackages },
	};

	for (size_t j = 0; j < sizeof(f) / sizeof(f[0]); j++)
		if (f[j].v < 0 || (unsigned)f[j].v >= f[j].n) {
			*v = f[j].v;
			*n = f[j].n;
			return f[j].name;
		}
	return NULL;
}

static int validate_cpu(const struct pc_topo *t, unsigned i, char *err, size_t errlen)
{
	const struct pc_topo_cpu *c = &t->cpus[i];
	const struct pc_topo_core *k;
	const char *what;
	unsigned n;
	int v;

	if (c->os_index < 0 || c->os_index >= CPU_SETSIZE || t->by_os[c->os_index] != (int)i)
		return sys_errmsg(err, errlen, -EINVAL,
				 "cpu entry %u: OS index %d, expected 0..%d and mapped back to %u",
				 i, c->os_index, CPU_SETSIZE - 1, i);
	if (i && c->os_index <= t->cpus[i - 1].os_index)
		return sys_errmsg(err, errlen, -EINVAL,
				 "cpu entry %u: OS index %d, expected above entry %u's %d", i,
				 c->os_index, i - 1, t->cpus[i - 1].os_index);
	if ((what = cpu_bad_index(t, c, &v, &n)))
		return sys_errmsg(err, errlen, -EINVAL, "cpu %d: %s %d, expected 0..%d",
				 c->os_index, what, v, (int)n - 1);
	k = &t->cores[c->core];
	if (c->smt < 0 || (unsigned)c->smt >= k->nthreads || k->threads[c->smt] != c->os_index)
		return sys_errmsg(err, errlen, -EINVAL,
				 "cpu %d: thread %d of core %d, which has %u threads and does not "
				 "list it there", c->os_index, c->smt, c->core, k->nthreads);
	if (c->usable != !!CPU_ISSET(c->os_index, &t->limits.usable))
		return sys_errmsg(err, errlen, -EINVAL,
				 "cpu %d: usable %d, but the usable set says %d", c->os_index,
				 (int)c->usable, !!CPU_ISSET(c->os_index, &t->limits.usable));
	return 0;
}

static int validate_core(const struct pc_topo *t, unsigned i, char *err, size_t errlen)
{
	const struct pc_topo_core *k = &t->cores[i];
	unsigned usable = 0;

	if (k->index != (int)i || k->nthreads == 0 || k->nthreads > PC_TOPO_MAX_SMT)
		return sys_errmsg(err, errlen, -EINVAL,
				 "core entry %u: index %d, %u threads; expected %u, 1..%d", i,
				 k->index, k->nthreads, i, PC_TOPO_MAX_SMT);
	for (unsigned j = 0; j < k->nthreads; j++) {
		const struct pc_topo_cpu *c = pc_topo_cpu_by_os(t, k->threads[j]);

		if (!c || c->core != (int)i || c->smt != (int)j)
			return sys_errmsg(err, errlen, -EINVAL,
					 "core %u thread %u: cpu %d %s", i, j, k->threads[j],
					 c ? "names another core or thread" : "does not exist");
		usable += c->usable;
	}
	if (usable != k->nusable)
		return sys_errmsg(err, errlen, -EINVAL, "core %u: %u usable threads, count says %u",
				 i, usable, k->nusable);
	return 0;
}

static int validate_counts(const struct pc_topo *t, char *err, size_t errlen)
{
	unsigned usable = 0, cores = 0, node_cores = 0, node_usable = 0;

	for (unsigned i = 0; i < t->ncpus; i++)
		usable += t->cpus[i].usable;
	for (unsigned i = 0; i < t->ncores; i++)
		cores += t->cores[i].nusable > 0;
	for (unsigned i = 0; i < t->nnodes; i++) {
		if (i && t->nodes[i].os_index <= t->nodes[i - 1].os_index)
			return sys_errmsg(err, errlen, -EINVAL,
					 "node entry %u: OS index %d, expected above entry %u's %d",
					 i, t->nodes[i].os_index, i - 1, t->nodes[i - 1].os_index);
		node_cores += t->nodes[i].ncores;
		node_usable += t->nodes[i].nusable_cores;
	}
	for (unsigned i = 0; i < t->nkinds; i++)
		if (t->kinds[i].rank != (int)i)
			return sys_errmsg(err, errlen, -EINVAL, "kind entry %u: rank %d, expected %u",
					 i, t->kinds[i].rank, i);
	if (usable != t->limits.nusable || cores != t->limits.nusable_cores)
		return sys_errmsg(err, errlen, -EINVAL,
				 "%u usable CPUs on %u cores, limits say %u on %u", usable, cores,
				 t->limits.nusable, t->limits.nusable_cores);
	if (node_cores != t->ncores || node_usable != cores)
		return sys_errmsg(err, errlen, -EINVAL,
				 "nodes hold %u cores (%u usable), expected %u (%u)", node_cores,
				 node_usable, t->ncores, cores);
	return 0;
}

int pc_topo_validate(const struct pc_topo *t, char *err, size_t errlen)
{
	int rc;

	if (!t || t->ncpus == 0 || t->ncores == 0 || t->nnodes == 0 || t->nkinds == 0)
		return sys_errmsg(err, errlen, -EINVAL,
				 "empty: %u CPUs, %u cores, %u nodes, %u kinds; expected at least "
				 "one of each", t ? t->ncpus : 0, t ? t->ncores : 0,
				 t ? t->nnodes : 0, t ? t->nkinds : 0);
	for (unsigned i = 0; i < t->ncpus; i++)
		if ((rc = validate_cpu(t, i, err, errlen)))
			return rc;
	for (unsigned i = 0; i < t->ncores; i++)
		if ((rc = validate_core(t, i, err, errlen)))
			return rc;
	return validate_counts(t, err, errlen);
}
