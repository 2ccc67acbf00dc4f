/* SPDX-License-Identifier: MIT */
/* percore sys: core kinds (P-cores and E-cores) and their speed ranking.
 *
 * hwloc's cpukinds come first: on hybrid Intel CPUs they carry CoreType
 * (IntelCore, IntelAtom) and an efficiency ranking; on ARM big.LITTLE the
 * kernel's cpu_capacity. Where hwloc finds one kind or none, per-core
 * cpuinfo_max_freq still tells fast cores from slow ones; with neither the
 * machine is uniform. Rank 0 is always the fastest kind. */
#define _GNU_SOURCE 1   /* CPU_* macros; must precede every libc header */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sys/errmsg.h"
#include "sys/rootfs.h"
#include "sys/topo_priv.h"

struct kind_in {
	cpu_set_t cpus;
	int efficiency;        /* -1 unknown */
	unsigned mhz;          /* 0 unknown */
	int order;             /* position in the source's list */
	char name[32];
};

/* Descending by speed: efficiency where every kind has one (hwloc's own
 * ranking), else maximum frequency, else the source's order reversed
 * (hwloc lists kinds from least to most efficient). */
enum sort_key { BY_EFFICIENCY, BY_MHZ, BY_ORDER };

static int cmp_kind(const void *pa, const void *pb, void *key)
{
	const struct kind_in *a = pa, *b = pb;
	long ka, kb;

	switch (*(enum sort_key *)key) {
	case BY_EFFICIENCY: ka = a->efficiency; kb = b->efficiency; break;
	case BY_MHZ:        ka = a->mhz;        kb = b->mhz;        break;
	default:            ka = a->order;      kb = b->order;      break;
	}
	return ka != kb ? (ka < kb ? 1 : -1) : a->order - b->order;
}

static enum sort_key choose_key(const struct kind_in *k, unsigned n)
{
	bool all_eff = true, all_mhz = true;

	for (unsigned i = 0; i < n; i++) {
		all_eff &= k[i].efficiency >= 0;
		all_mhz &= k[i].mhz > 0;
	}
	return all_eff ? BY_EFFICIENCY : all_mhz ? BY_MHZ : BY_ORDER;
}

static void name_kind(struct kind_in *k, const char *core_type)
{
	if (core_type && *core_type)
		snprintf(k->name, sizeof(k->name), "%s", core_type);
	else if (k->mhz)
		snprintf(k->name, sizeof(k->name), "%u MHz", k->mhz);
	else
		snprintf(k->name, sizeof(k->name), "kind %d", k->order);
}

/* Every kind hwloc knows. *n stays 0 when it knows none. */
static int hwloc_kinds(hwloc_topology_t h, struct kind_in **out, unsigned *n,
		       char *err, size_t errlen)
{
	int nr = hwloc_cpukinds_get_nr(h, 0);
	hwloc_bitmap_t set;
	struct kind_in *k;

	*n = 0;
	if (nr <= 0)
		return 0;
	k = calloc((size_t)nr, sizeof(*k));
	set = hwloc_bitmap_alloc();
	if (!k || !set) {
		free(k);
		hwloc_bitmap_free(set);
		return sys_errmsg(err, errlen, -ENOMEM, "out of memory reading CPU kinds");
	}
	for (int i = 0; i < nr; i++) {
		struct hwloc_info_s *infos = NULL;
		unsigned ninfos = 0;
		const char *core_type = NULL;
		int eff = -1;

		if (hwloc_cpukinds_get_info(h, (unsigned)i, set, &eff, &ninfos, &infos, 0) ||
		    sys_topo_bitmap_to_set(set, &k[i].cpus)) {
			free(k);
			hwloc_bitmap_free(set);
			return sys_errmsg(err, errlen, -EPROTO, "unreadable CPU kind %d", i);
		}
		for (unsigned j = 0; j < ninfos; j++) {
			if (!strcmp(infos[j].name, "CoreType"))
				core_type = infos[j].value;
			else if (!strcmp(infos[j].name, "FrequencyMaxMHz"))
				k[i].mhz = (unsigned)strtoul(infos[j].value, NULL, 10);
		}
		k[i].efficiency = eff;
		k[i].order = i;
		name_kind(&k[i], core_type);
	}
	hwloc_bitmap_free(set);
	*out = k;
	*n = (unsigned)nr;
	return 0;
}

/* cpuinfo_max_freq of one CPU in MHz, 0 when unreadable. */
static unsigned cpufreq_mhz(const char *root, int cpu)
{
	char path[128];
	long long khz = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq",
		 cpu);
	if (sys_rootfs_read_ll(root, path, &khz) || khz <= 0)
		return 0;
	return (unsigned)(khz / 1000);
}

/* One kind per distinct maximum frequency; *n stays 0 unless every CPU has
 * one. *common_mhz gets the frequency when all CPUs share it. */
static int cpufreq_kinds(const struct pc_topo *t, const char *root, struct kind_in **out,
			 unsigned *n, unsigned *common_mhz)
{
	struct kind_in *k = calloc(t->ncpus, sizeof(*k));
	unsigned nk = 0;

	*n = 0;
	*common_mhz = 0;
	if (!k)
		return -ENOMEM;
	for (unsigned i = 0; i < t->ncpus; i++) {
		unsigned mhz = cpufreq_mhz(root, t->cpus[i].os_index), j;

		if (!mhz) {
			free(k);
			return 0;
		}
		for (j = 0; j < nk && k[j].mhz != mhz; j++)
			;
		if (j == nk) {
			k[nk].mhz = mhz;
			k[nk].efficiency = -1;
			k[nk].order = (int)nk;
			name_kind(&k[nk], NULL);
			nk++;
		}
		CPU_SET(t->cpus[i].os_index, &k[j].cpus);
	}
	if (nk == 1)
		*common_mhz = k[0].mhz;
	if (nk < 2) {
		free(k);
		return 0;
	}
	*out = k;
	*n = nk;
	return 0;
}

/* The single kind of a machine nothing distinguishes. */
static struct kind_in *uniform_kind(const struct pc_topo *t, const struct kind_in *hw,
				    unsigned nhw, unsigned freq_mhz)
{
	struct kind_in *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	for (unsigned i = 0; i < t->ncpus; i++)
		CPU_SET(t->cpus[i].os_index, &k->cpus);
	k->efficiency = nhw == 1 ? hw[0].efficiency : -1;
	k->mhz = nhw == 1 && hw[0].mhz ? hw[0].mhz : freq_mhz;
	snprintf(k->name, sizeof(k->name), "uniform");
	return k;
}

/* Give each CPU and core the rank of its kind; a CPU no kind lists (hwloc
 * may leave some out) gets the slowest rank. */
static void assign_ranks(struct pc_topo *t)
{
	for (unsigned i = 0; i < t->ncpus; i++) {
		struct pc_topo_cpu *c = &t->cpus[i];

		c->kind = (int)t->nkinds - 1;
		for (unsigned k = 0; k < t->nkinds; k++)
			if (CPU_ISSET(c->os_index, &t->kinds[k].cpus)) {
				c->kind = (int)k;
				break;
			}
	}
	/* A core is of one kind: its first thread decides, and the others
	 * follow (only a damaged saved file lists them under two kinds). */
	for (unsigned i = 0; i < t->ncores; i++) {
		struct pc_topo_core *k = &t->cores[i];

		k->kind = t->cpus[t->by_os[k->threads[0]]].kind;
		for (unsigned j = 1; j < k->nthreads; j++)
			t->cpus[t->by_os[k->threads[j]]].kind = k->kind;
	}
}

int sys_topo_build_kinds(struct pc_topo *t, hwloc_topology_t h, bool read_cpufreq,
			 const char *root, char *err, size_t errlen)
{
	struct kind_in *hw = NULL, *k = NULL;
	unsigned nhw = 0, n = 0, freq_mhz = 0;
	enum sort_key key;
	int r = hwloc_kinds(h, &hw, &nhw, err, errlen);

	if (r)
		return r;
	if (nhw >= 2) {
		k = hw, n = nhw, hw = NULL;
		t->kind_source = PC_TOPO_KINDS_HWLOC;
	} else if (read_cpufreq) {
		r = cpufreq_kinds(t, root, &k, &n, &freq_mhz);
		if (r < 0) {
			free(hw);
			return sys_errmsg(err, errlen, r, "out of memory reading cpufreq");
		}
		t->kind_source = PC_TOPO_KINDS_CPUFREQ;
	}
	if (n < 2) {
		k = uniform_kind(t, hw, nhw, freq_mhz);
		n = 1;
		t->kind_source = PC_TOPO_KINDS_UNIFORM;
	}
	free(hw);
	t->kinds = k ? calloc(n, sizeof(*t->kinds)) : NULL;
	if (!t->kinds) {
		free(k);
		return sys_errmsg(err, errlen, -ENOMEM, "out of memory building CPU kinds");
	}
	key = choose_key(k, n);
	qsort_r(k, n, sizeof(*k), cmp_kind, &key);
	for (unsigned i = 0; i < n; i++) {
		struct pc_topo_kind *d = &t->kinds[i];

		d->rank = (int)i;
		d->efficiency = k[i].efficiency;
		d->max_mhz = k[i].mhz;
		d->cpus = k[i].cpus;
		snprintf(d->name, sizeof(d->name), "%s", k[i].name);
	}
	t->nkinds = n;
	free(k);
	assign_ranks(t);
	return 0;
}
