/* SPDX-License-Identifier: MIT */
/* percore sys: one CPU per shard.
 *
 * Every usable CPU gets a tier: the SMT slot it fills on its core (0 for
 * the first usable thread, 1 for the next...) times the number of kinds,
 * plus its kind rank. Tier order is therefore: one thread of every fastest
 * core, one of every next-fastest core, ..., then the SMT siblings in the
 * same kind order. Policies differ only in how they walk the tiers across
 * NUMA nodes. */
#define _GNU_SOURCE 1   /* CPU_* macros; must precede every libc header */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/cpulist.h"
#include "percore/place.h"
#include "sys/errmsg.h"

/* Far more shards than any machine has CPUs: a guard against garbage. */
#define PC_PLACE_MAX_SHARDS 65536

struct cand {
	int tier, node, core, cpu;  /* node: index into the node table */
	int kind;
};

struct plan {
	const struct pc_topo *t;
	struct cand *c;            /* usable CPUs, sorted by tier, node, core */
	unsigned nc;
	int fastest;               /* rank of the fastest usable kind */
	unsigned nfast;            /* usable cores of that kind */
	struct pc_placement *p;
	char *err;
	size_t errlen;
};

static int by_tier(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->tier != b->tier)
		return a->tier - b->tier;
	if (a->node != b->node)
		return a->node - b->node;
	return a->core - b->core;
}

static int by_node_then_tier(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	return a->node != b->node ? a->node - b->node : by_tier(pa, pb);
}

/* Every usable CPU as a candidate, in tier order. */
static int gather(struct plan *pl)
{
	const struct pc_topo *t = pl->t;
	unsigned nkinds = pc_topo_nkinds(t);

	pl->c = calloc(pc_topo_limits(t)->nusable + 1, sizeof(*pl->c));
	if (!pl->c)
		return -ENOMEM;
	for (unsigned i = 0; i < pc_topo_ncores(t); i++) {
		const struct pc_topo_core *k = pc_topo_core(t, i);
		int slot = 0;

		for (unsigned j = 0; j < k->nthreads; j++) {
			const struct pc_topo_cpu *cpu = pc_topo_cpu_by_os(t, k->threads[j]);

			if (!cpu->usable)
				continue;
			/* The CPU's own node: a damaged file can put one core's
			 * threads under two nodes, and validation checks each CPU. */
			pl->c[pl->nc++] = (struct cand){
				.tier = slot * (int)nkinds + k->kind, .node = cpu->node,
				.core = k->index, .cpu = cpu->os_index, .kind = k->kind };
			slot++;
		}
	}
	qsort(pl->c, pl->nc, sizeof(*pl->c), by_tier);
	/* Tier 0..nkinds-1 hold one thread per core, kinds in rank order, so
	 * the first candidate is of the fastest usable kind. */
	pl->fastest = pl->nc ? pl->c[0].kind : -1;
	while (pl->nfast < pl->nc && pl->c[pl->nfast].tier == pl->fastest)
		pl->nfast++;
	return 0;
}

static void put(struct plan *pl, unsigned shard, const struct cand *c)
{
	pl->p->shards[shard] = (struct pc_shard_place){
		.cpu = c->cpu, .node = pc_topo_node(pl->t, (unsigned)c->node)->os_index,
		.core = c->core, .kind = c->kind };
}

/* Take want of the tier's cands [lo, hi), shared out over nodes in
 * proportion to how many each has (largest remainder), node by node. */
static unsigned take_proportional(struct plan *pl, unsigned lo, unsigned hi, unsigned want,
				  unsigned shard)
{
	unsigned nn = pc_topo_nnodes(pl->t), total = hi - lo;
	unsigned have[nn], quota[nn], given = 0;

	memset(have, 0, sizeof(have));
	for (unsigned i = lo; i < hi; i++)
		have[pl->c[i].node]++;
	for (unsigned n = 0; n < nn; n++) {
		quota[n] = want * have[n] / total;
		given += quota[n];
	}
	while (given < want) { /* the largest remainders get one more */
		unsigned best = nn;

		for (unsigned n = 0; n < nn; n++)
			if (quota[n] < have[n] &&
			    (best == nn || (want * have[n]) % total > (want * have[best]) % total))
				best = n;
		quota[best]++;
		given++;
	}
	for (unsigned i = lo; i < hi; i++)
		if (quota[pl->c[i].node]) {
			quota[pl->c[i].node]--;
			put(pl, shard++, &pl->c[i]);
		}
	return shard;
}

/* Deal the tier's cands [lo, hi) one node at a time until want are taken. */
static unsigned take_round_robin(struct plan *pl, unsigned lo, unsigned hi, unsigned want,
				 unsigned shard)
{
	unsigned nn = pc_topo_nnodes(pl->t), next[nn], end = shard + want;

	for (unsigned n = 0; n < nn; n++)
		next[n] = hi;
	for (unsigned i = hi; i-- > lo;)
		next[pl->c[i].node] = i;
	while (shard < end)
		for (unsigned n = 0; n < nn && shard < end; n++) {
			if (next[n] >= hi)
				continue;
			put(pl, shard++, &pl->c[next[n]]);
			while (++next[n] < hi && pl->c[next[n]].node != (int)n)
				;
		}
	return shard;
}

/* auto and spread: whole tiers while they fit, the last one shared out. */
static void walk_tiers(struct plan *pl, unsigned n, bool spread)
{
	unsigned shard = 0, lo = 0;

	while (shard < n && lo < pl->nc) {
		unsigned hi = lo, want;

		while (hi < pl->nc && pl->c[hi].tier == pl->c[lo].tier)
			hi++;
		want = n - shard < hi - lo ? n - shard : hi - lo;
		shard = spread ? take_round_robin(pl, lo, hi, want, shard)
			       : take_proportional(pl, lo, hi, want, shard);
		lo = hi;
	}
}

/* The candidate list as is, wrapping round when oversubscribed. */
static void walk_in_order(struct plan *pl, unsigned n)
{
	for (unsigned s = 0; s < n; s++)
		put(pl, s, &pl->c[s % pl->nc]);
}

unsigned pc_place_default_shards(const struct pc_topo *t)
{
	const struct pc_topo_limits *l = pc_topo_limits(t);
	int fastest = -1;
	unsigned n = 0;

	for (unsigned i = 0; i < pc_topo_ncores(t); i++) {
		const struct pc_topo_core *k = pc_topo_core(t, i);

		if (!k->nusable)
			continue;
		if (fastest < 0 || k->kind < fastest) {
			fastest = k->kind;
			n = 0;
		}
		n += k->kind == fastest;
	}
	if (l->quota_shards && n > l->quota_shards)
		n = l->quota_shards;
	return n;
}

static void warn(struct pc_placement *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warn(struct pc_placement *p, const char *fmt, ...)
{
	va_list ap;

	if (p->nwarnings == PC_PLACE_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(p->warnings[p->nwarnings++], PC_PLACE_WARNING_LEN, fmt, ap);
	va_end(ap);
}

/* What a person should know about the placement chosen. */
static void add_warnings(struct plan *pl)
{
	struct pc_placement *p = pl->p;
	const struct pc_topo *t = pl->t;
	const struct pc_topo_limits *l = pc_topo_limits(t);
	unsigned slower = 0, shared = 0;
	unsigned char *used = calloc(pc_topo_ncores(t), 1);

	/* An explicit list is what the caller chose: no advice on kinds. */
	for (unsigned s = 0; p->pinned && used && s < p->n; s++) {
		slower += p->policy != PC_PLACE_LIST && p->shards[s].kind > pl->fastest;
		shared += used[p->shards[s].core]++ > 0;
	}
	free(used);
	if (p->oversubscribed)
		warn(p, "%u shards on %u usable CPUs: some CPUs run more than one shard",
		     p->n, l->nusable);
	if (slower)
		warn(p, "%u of %u shards %s on slower cores: only %u %s cores are usable",
		     slower, p->n, slower == 1 ? "runs" : "run", pl->nfast,
		     pc_topo_kind(t, (unsigned)pl->fastest)->name);
	if (shared && !p->oversubscribed)
		warn(p, "%u shard%s a physical core with another shard (SMT siblings)",
		     shared, shared == 1 ? " shares" : "s share");
	if (l->quota_cpus > 0 && p->n > l->quota_cpus)
		warn(p, "%u shards exceed the CPU quota of %.2f CPUs: the kernel will "
		     "throttle them", p->n, l->quota_cpus);
}

/* Why a CPU that exists is not usable. */
static const char *unusable_reason(const struct pc_topo_limits *l, int cpu)
{
	if (l->has_affinity && !CPU_ISSET(cpu, &l->affinity))
		return "outside this process's affinity mask";
	if (l->has_cpuset && !CPU_ISSET(cpu, &l->cpuset))
		return "outside the cgroup cpuset (or the allowed CPUs given)";
	if (l->has_hwloc_allowed)
		return "outside the allowed CPUs the topology file records";
	return "not allowed to this process";
}

/* The explicit list replaces the candidates, after checking each CPU. */
static int list_cands(struct plan *pl, const cpu_set_t *cpus, unsigned *n)
{
	const struct pc_topo *t = pl->t;
	unsigned m = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		const struct pc_topo_cpu *c;

		if (!CPU_ISSET(cpu, cpus))
			continue;
		c = pc_topo_cpu_by_os(t, cpu);
		if (!c)
			return sys_errmsg(pl->err, pl->errlen, -EINVAL, "CPU %d does not exist "
					  "(CPUs are 0-%d)", cpu,
					  pc_topo_cpu(t, pc_topo_ncpus(t) - 1)->os_index);
		if (!c->usable)
			return sys_errmsg(pl->err, pl->errlen, -EINVAL, "CPU %d is not usable: %s",
					  cpu, unusable_reason(pc_topo_limits(t), cpu));
		pl->c[m++] = (struct cand){ .node = c->node, .core = c->core, .cpu = cpu,
					    .kind = c->kind };
	}
	if (m == 0)
		return sys_errmsg(pl->err, pl->errlen, -EINVAL, "the CPU list is empty");
	if (*n == 0)
		*n = m;
	if (*n > m)
		return sys_errmsg(pl->err, pl->errlen, -EINVAL, "%u shards but the CPU list "
				  "has only %u CPUs", *n, m);
	pl->nc = m;
	return 0;
}

/* pcore keeps the first tier only: one thread of each fastest core. */
static int pcore_cands(struct plan *pl, unsigned n)
{
	pl->nc = pl->nfast;
	if (n > pl->nfast)
		return sys_errmsg(pl->err, pl->errlen, -EINVAL, "%u shards but only %u %s cores "
				  "are usable (pcore places one shard per fastest core)", n,
				  pl->nfast, pc_topo_kind(pl->t, (unsigned)pl->fastest)->name);
	return 0;
}

static int check_args(const struct pc_topo *t, unsigned nshards, enum pc_place_policy policy,
		      const cpu_set_t *cpus, char *err, size_t errlen)
{
	if (!t || (unsigned)policy > PC_PLACE_LIST)
		return sys_errmsg(err, errlen, -EINVAL, "no topology or unknown policy");
	if ((policy == PC_PLACE_LIST) != (cpus != NULL))
		return sys_errmsg(err, errlen, -EINVAL, policy == PC_PLACE_LIST
				  ? "the list policy needs a CPU list"
				  : "a CPU list goes only with the list policy");
	if (nshards > PC_PLACE_MAX_SHARDS)
		return sys_errmsg(err, errlen, -EINVAL, "%u shards is more than the %d supported",
				  nshards, PC_PLACE_MAX_SHARDS);
	if (pc_topo_limits(t)->nusable == 0)
		return sys_errmsg(err, errlen, -EINVAL, "no usable CPU");
	return 0;
}

/* Resolve the shard count and the candidates the policy draws from. */
static int prepare(struct plan *pl, unsigned *n, enum pc_place_policy policy,
		   const cpu_set_t *cpus, unsigned flags)
{
	unsigned nusable = pc_topo_limits(pl->t)->nusable;
	int r = gather(pl);

	if (r)
		return sys_errmsg(pl->err, pl->errlen, r, "out of memory");
	if (policy == PC_PLACE_LIST)
		return list_cands(pl, cpus, n);
	if (*n == 0)
		*n = pc_place_default_shards(pl->t);
	if (policy == PC_PLACE_PCORE)
		return pcore_cands(pl, *n);
	if (*n > nusable && !(flags & PC_PLACE_OVERSUBSCRIBE))
		return sys_errmsg(pl->err, pl->errlen, -E2BIG, "%u shards but only %u usable "
				  "CPUs", *n, nusable);
	if (policy == PC_PLACE_COMPACT)
		qsort(pl->c, pl->nc, sizeof(*pl->c), by_node_then_tier);
	return 0;
}

int pc_place(const struct pc_topo *t, unsigned nshards, enum pc_place_policy policy,
	     const cpu_set_t *cpus, unsigned flags, struct pc_placement **out,
	     char *err, size_t errlen)
{
	struct plan pl = { .t = t, .err = err, .errlen = errlen };
	unsigned n = nshards;
	int r;

	*out = NULL;
	r = check_args(t, nshards, policy, cpus, err, errlen);
	if (!r)
		r = prepare(&pl, &n, policy, cpus, flags);
	if (!r && !(pl.p = calloc(1, sizeof(*pl.p) + n * sizeof(pl.p->shards[0]))))
		r = sys_errmsg(err, errlen, -ENOMEM, "out of memory");
	if (r) {
		free(pl.c);
		return r;
	}
	pl.p->policy = policy;
	pl.p->n = n;
	pl.p->default_count = nshards == 0;
	pl.p->pinned = policy != PC_PLACE_OFF;
	pl.p->oversubscribed = n > pl.nc;
	pl.p->floating = policy == PC_PLACE_AUTO && n >= pl.nc && pl.nc > 1;
	if (policy == PC_PLACE_AUTO || policy == PC_PLACE_SPREAD || policy == PC_PLACE_PCORE)
		n > pl.nc ? walk_in_order(&pl, n) : walk_tiers(&pl, n, policy == PC_PLACE_SPREAD);
	else if (pl.p->pinned)
		walk_in_order(&pl, n);
	else
		for (unsigned s = 0; s < n; s++)
			pl.p->shards[s] = (struct pc_shard_place){ -1, -1, -1, -1 };
	add_warnings(&pl);
	free(pl.c);
	*out = pl.p;
	return 0;
}

void pc_placement_free(struct pc_placement *p)
{
	free(p);
}

void pc_placement_cpus(const struct pc_placement *p, unsigned shard, cpu_set_t *out)
{
	CPU_ZERO(out);
	if (!p || !p->pinned || shard >= p->n)
		return;
	for (unsigned s = 0; s < p->n; s++)
		if (s == shard || (p->floating && p->shards[s].node == p->shards[shard].node))
			CPU_SET(p->shards[s].cpu, out);
}

int pc_placement_validate(const struct pc_topo *t, const struct pc_placement *p, char *err,
			  size_t errlen)
{
	cpu_set_t seen;

	if (!t || !p)
		return sys_errmsg(err, errlen, -EINVAL, "no topology or no placement");
	CPU_ZERO(&seen);
	for (unsigned s = 0; s < p->n; s++) {
		const struct pc_shard_place *sh = &p->shards[s];
		const struct pc_topo_cpu *c;

		if (!p->pinned) {
			if (sh->cpu != -1 || sh->node != -1 || sh->core != -1 || sh->kind != -1)
				return sys_errmsg(err, errlen, -EINVAL,
						 "shard %u: cpu %d node %d core %d kind %d in an "
						 "unpinned placement, expected all -1", s, sh->cpu,
						 sh->node, sh->core, sh->kind);
			continue;
		}
		c = pc_topo_cpu_by_os(t, sh->cpu);
		if (!c || !c->usable)
			return sys_errmsg(err, errlen, -EINVAL, "shard %u: cpu %d is %s", s, sh->cpu,
					 c ? "not usable" : "not in the topology");
		if (sh->core != c->core || sh->kind != c->kind ||
		    sh->node != pc_topo_node(t, (unsigned)c->node)->os_index)
			return sys_errmsg(err, errlen, -EINVAL,
					 "shard %u on cpu %d: core %d kind %d node %d, expected %d %d %d",
					 s, sh->cpu, sh->core, sh->kind, sh->node, c->core, c->kind,
					 pc_topo_node(t, (unsigned)c->node)->os_index);
		if (CPU_ISSET(sh->cpu, &seen) && !p->oversubscribed)
			return sys_errmsg(err, errlen, -EINVAL,
					 "shard %u: cpu %d already has a shard and the placement is "
					 "not oversubscribed", s, sh->cpu);
		CPU_SET(sh->cpu, &seen);
	}
	if (p->nwarnings > PC_PLACE_MAX_WARNINGS)
		return sys_errmsg(err, errlen, -EINVAL, "%u warnings, expected at most %d",
				 (unsigned)p->nwarnings, PC_PLACE_MAX_WARNINGS);
	return 0;
}

static const char *const policy_names[] = {
	[PC_PLACE_AUTO] = "auto",   [PC_PLACE_COMPACT] = "compact",
	[PC_PLACE_SPREAD] = "spread", [PC_PLACE_PCORE] = "pcore",
	[PC_PLACE_OFF] = "off",     [PC_PLACE_LIST] = "list",
};

const char *pc_place_policy_name(enum pc_place_policy p)
{
	return (unsigned)p <= PC_PLACE_LIST ? policy_names[p] : "?";
}

int pc_place_policy_parse(const char *name, enum pc_place_policy *out)
{
	for (unsigned i = 0; name && i <= PC_PLACE_LIST; i++)
		if (!strcmp(name, policy_names[i])) {
			*out = (enum pc_place_policy)i;
			return 0;
		}
	return -EINVAL;
}

int pc_pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pc_pin_self_set(&set);
}

int pc_pin_self_set(const cpu_set_t *cpus)
{
	if (!cpus || !CPU_COUNT(cpus))
		return -EINVAL;
	/* pthread_setaffinity_np returns the error instead of setting errno. */
	return -pthread_setaffinity_np(pthread_self(), sizeof(*cpus), cpus);
}
