/* percore sys: reading a loaded topology, and checking its invariants. */
#define _GNU_SOURCE 1   /* CPU_* macros; must precede every libc header */
#include <errno.h>
#include <stddef.h>

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

static int validate_cpu(const struct pc_topo *t, unsigned i)
{
	const struct pc_topo_cpu *c = &t->cpus[i];
	const struct pc_topo_core *k;

	if (c->os_index < 0 || c->os_index >= CPU_SETSIZE || t->by_os[c->os_index] != (int)i)
		return -EINVAL;
	if (i && c->os_index <= t->cpus[i - 1].os_index)
		return -EINVAL;
	if (c->core < 0 || (unsigned)c->core >= t->ncores || c->node < 0 ||
	    (unsigned)c->node >= t->nnodes || c->kind < 0 || (unsigned)c->kind >= t->nkinds ||
	    c->package < 0 || (unsigned)c->package >= t->npackages)
		return -EINVAL;
	k = &t->cores[c->core];
	if (c->smt < 0 || (unsigned)c->smt >= k->nthreads || k->threads[c->smt] != c->os_index)
		return -EINVAL;
	if (c->usable != !!CPU_ISSET(c->os_index, &t->limits.usable))
		return -EINVAL;
	return 0;
}

static int validate_core(const struct pc_topo *t, unsigned i)
{
	const struct pc_topo_core *k = &t->cores[i];
	unsigned usable = 0;

	if (k->index != (int)i || k->nthreads == 0 || k->nthreads > PC_TOPO_MAX_SMT)
		return -EINVAL;
	for (unsigned j = 0; j < k->nthreads; j++) {
		const struct pc_topo_cpu *c = pc_topo_cpu_by_os(t, k->threads[j]);

		if (!c || c->core != (int)i || c->smt != (int)j)
			return -EINVAL;
		usable += c->usable;
	}
	return usable == k->nusable ? 0 : -EINVAL;
}

static int validate_counts(const struct pc_topo *t)
{
	unsigned usable = 0, cores = 0, node_cores = 0, node_usable = 0;

	for (unsigned i = 0; i < t->ncpus; i++)
		usable += t->cpus[i].usable;
	for (unsigned i = 0; i < t->ncores; i++)
		cores += t->cores[i].nusable > 0;
	for (unsigned i = 0; i < t->nnodes; i++) {
		if (i && t->nodes[i].os_index <= t->nodes[i - 1].os_index)
			return -EINVAL;
		node_cores += t->nodes[i].ncores;
		node_usable += t->nodes[i].nusable_cores;
	}
	for (unsigned i = 0; i < t->nkinds; i++)
		if (t->kinds[i].rank != (int)i)
			return -EINVAL;
	if (usable != t->limits.nusable || cores != t->limits.nusable_cores ||
	    node_cores != t->ncores || node_usable != cores)
		return -EINVAL;
	return 0;
}

int pc_topo_validate(const struct pc_topo *t)
{
	if (!t || t->ncpus == 0 || t->ncores == 0 || t->nnodes == 0 || t->nkinds == 0)
		return -EINVAL;
	for (unsigned i = 0; i < t->ncpus; i++)
		if (validate_cpu(t, i))
			return -EINVAL;
	for (unsigned i = 0; i < t->ncores; i++)
		if (validate_core(t, i))
			return -EINVAL;
	return validate_counts(t);
}
