/* SPDX-License-Identifier: MIT */
/* percore tools: topology and placement as JSON (cJSON), for `percore topo
 * --json` and the benchmark results' percore.topology / percore.placement. */
#define _GNU_SOURCE 1   /* CPU_* macros; must precede every libc header */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "percore/cpulist.h"
#include "percore/json.h"
#include "percore/place.h"
#include "percore/topo.h"

/* A CPU set as CPU-list text; a set never needs more than this. */
static cJSON *add_cpus(cJSON *o, const char *name, const cpu_set_t *s)
{
	char buf[4096];

	if (pc_cpulist_format(s, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return cJSON_AddStringToObject(o, name, buf);
}

/* A new object appended to array a; NULL (and nothing leaked) on failure. */
static cJSON *push_object(cJSON *a)
{
	cJSON *o = a ? cJSON_CreateObject() : NULL;

	if (o && !cJSON_AddItemToArray(a, o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static bool add_kinds(cJSON *root, const struct pc_topo *t)
{
	cJSON *a = cJSON_AddArrayToObject(root, "kinds");

	for (unsigned i = 0; a && i < pc_topo_nkinds(t); i++) {
		const struct pc_topo_kind *k = pc_topo_kind(t, i);
		cJSON *o = push_object(a);

		if (!o)
			return false;
		cJSON_AddNumberToObject(o, "rank", k->rank);
		cJSON_AddStringToObject(o, "name", k->name);
		cJSON_AddNumberToObject(o, "efficiency", k->efficiency);
		cJSON_AddNumberToObject(o, "max_mhz", k->max_mhz);
		if (!add_cpus(o, "cpus", &k->cpus))
			return false;
	}
	return a != NULL;
}

static bool add_nodes(cJSON *root, const struct pc_topo *t)
{
	cJSON *a = cJSON_AddArrayToObject(root, "nodes");

	for (unsigned i = 0; a && i < pc_topo_nnodes(t); i++) {
		const struct pc_topo_node *n = pc_topo_node(t, i);
		cpu_set_t usable;
		cJSON *o = push_object(a);

		if (!o)
			return false;
		CPU_AND(&usable, &n->cpus, &pc_topo_limits(t)->usable);
		cJSON_AddNumberToObject(o, "node", n->os_index);
		cJSON_AddNumberToObject(o, "memory_bytes", (double)n->memory);
		cJSON_AddNumberToObject(o, "cores", n->ncores);
		cJSON_AddNumberToObject(o, "usable_cores", n->nusable_cores);
		add_cpus(o, "cpus", &n->cpus);
		if (!add_cpus(o, "usable_cpus", &usable))
			return false;
	}
	return a != NULL;
}

static bool add_cores(cJSON *root, const struct pc_topo *t)
{
	cJSON *a = cJSON_AddArrayToObject(root, "cores");

	for (unsigned i = 0; a && i < pc_topo_ncores(t); i++) {
		const struct pc_topo_core *k = pc_topo_core(t, i);
		cJSON *o = push_object(a), *th;

		if (!o)
			return false;
		cJSON_AddNumberToObject(o, "core", k->index);
		cJSON_AddNumberToObject(o, "package", k->package);
		cJSON_AddNumberToObject(o, "node", pc_topo_node(t, (unsigned)k->node)->os_index);
		cJSON_AddStringToObject(o, "kind", pc_topo_kind(t, (unsigned)k->kind)->name);
		cJSON_AddNumberToObject(o, "usable_threads", k->nusable);
		th = cJSON_CreateIntArray(k->threads, (int)k->nthreads);
		if (!th || !cJSON_AddItemToObject(o, "cpus", th)) {
			cJSON_Delete(th);
			return false;
		}
	}
	return a != NULL;
}

static bool add_cpu_table(cJSON *root, const struct pc_topo *t)
{
	cJSON *a = cJSON_AddArrayToObject(root, "cpus");

	for (unsigned i = 0; a && i < pc_topo_ncpus(t); i++) {
		const struct pc_topo_cpu *c = pc_topo_cpu(t, i);
		cJSON *o = push_object(a);

		if (!o)
			return false;
		cJSON_AddNumberToObject(o, "cpu", c->os_index);
		cJSON_AddNumberToObject(o, "core", c->core);
		cJSON_AddNumberToObject(o, "package", c->package);
		cJSON_AddNumberToObject(o, "node", pc_topo_node(t, (unsigned)c->node)->os_index);
		cJSON_AddNumberToObject(o, "kind", c->kind);
		cJSON_AddNumberToObject(o, "smt", c->smt);
		if (!cJSON_AddBoolToObject(o, "usable", c->usable))
			return false;
	}
	return a != NULL;
}

static bool add_caches(cJSON *root, const struct pc_topo *t)
{
	cJSON *a = cJSON_AddArrayToObject(root, "caches");

	for (unsigned i = 0; a && i < pc_topo_ncaches(t); i++) {
		const struct pc_topo_cache *c = pc_topo_cache(t, i);
		cJSON *o = push_object(a);

		if (!o)
			return false;
		cJSON_AddNumberToObject(o, "level", c->level);
		cJSON_AddNumberToObject(o, "size_bytes", (double)c->size);
		cJSON_AddNumberToObject(o, "line_bytes", c->line);
		if (!add_cpus(o, "cpus", &c->cpus))
			return false;
	}
	return a != NULL;
}

static bool add_limits(cJSON *root, const struct pc_topo *t)
{
	const struct pc_topo_limits *l = pc_topo_limits(t);
	cJSON *o = cJSON_AddObjectToObject(root, "limits");

	if (!o)
		return false;
	cJSON_AddNumberToObject(o, "cgroup_version", l->cgroup_version);
	cJSON_AddStringToObject(o, "cgroup_path", l->cgroup_path);
	if (l->has_affinity)
		add_cpus(o, "affinity", &l->affinity);
	else
		cJSON_AddNullToObject(o, "affinity");
	if (l->has_cpuset)
		add_cpus(o, "cpuset", &l->cpuset);
	else
		cJSON_AddNullToObject(o, "cpuset");
	cJSON_AddBoolToObject(o, "xml_allowed_cpuset", l->has_hwloc_allowed);
	if (l->quota_cpus > 0) {
		cJSON_AddNumberToObject(o, "quota_cpus", l->quota_cpus);
		cJSON_AddNumberToObject(o, "quota_shards", l->quota_shards);
	} else {
		cJSON_AddNullToObject(o, "quota_cpus");
		cJSON_AddNullToObject(o, "quota_shards");
	}
	cJSON_AddNumberToObject(o, "usable", l->nusable);
	cJSON_AddNumberToObject(o, "usable_cores", l->nusable_cores);
	return add_cpus(o, "usable_cpus", &l->usable) != NULL;
}

cJSON *pc_topo_to_json(const struct pc_topo *t)
{
	cJSON *root = cJSON_CreateObject();

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "source", pc_topo_source(t));
	cJSON_AddNumberToObject(root, "packages", pc_topo_npackages(t));
	cJSON_AddStringToObject(root, "kinds_source",
				pc_topo_kind_source_name(pc_topo_kind_source(t)));
	if (!add_kinds(root, t) || !add_nodes(root, t) || !add_cores(root, t) ||
	    !add_cpu_table(root, t) || !add_caches(root, t) || !add_limits(root, t)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

static bool add_shards(cJSON *root, const struct pc_topo *t, const struct pc_placement *p)
{
	cJSON *a = cJSON_AddArrayToObject(root, "placement");

	for (unsigned s = 0; a && s < p->n; s++) {
		const struct pc_shard_place *sh = &p->shards[s];
		cJSON *o = push_object(a);

		if (!o)
			return false;
		cJSON_AddNumberToObject(o, "shard", s);
		cJSON_AddNumberToObject(o, "cpu", sh->cpu);
		cJSON_AddNumberToObject(o, "node", sh->node);
		cJSON_AddNumberToObject(o, "core", sh->core);
		if (sh->kind >= 0)
			cJSON_AddStringToObject(o, "kind", pc_topo_kind(t, (unsigned)sh->kind)->name);
		else
			cJSON_AddNullToObject(o, "kind");
	}
	return a != NULL;
}

cJSON *pc_placement_to_json(const struct pc_topo *t, const struct pc_placement *p)
{
	cJSON *root = cJSON_CreateObject(), *w;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "policy", pc_place_policy_name(p->policy));
	cJSON_AddBoolToObject(root, "pinned", p->pinned);
	cJSON_AddBoolToObject(root, "floating", p->floating);
	cJSON_AddNumberToObject(root, "shards", p->n);
	cJSON_AddBoolToObject(root, "default_shards", p->default_count);
	cJSON_AddBoolToObject(root, "oversubscribed", p->oversubscribed);
	w = cJSON_AddArrayToObject(root, "warnings");
	for (unsigned i = 0; w && i < p->nwarnings; i++)
		cJSON_AddItemToArray(w, cJSON_CreateString(p->warnings[i]));
	if (!w || !add_shards(root, t, p)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}
