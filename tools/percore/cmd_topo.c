/* SPDX-License-Identifier: MIT */
/* percore topo: the machine as placement sees it, and where shards would go. */
#define _GNU_SOURCE 1   /* CPU_* macros; must precede every libc header */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "percore/cpulist.h"
#include "percore/json.h"
#include "percore/place.h"
#include "percore/topo.h"
#include "subcommand.h"

struct topo_args {
	bool json, oversubscribe, have_cpus, have_allowed;
	const char *xml, *root;
	unsigned shards;
	enum pc_place_policy policy;
	bool have_policy;
	cpu_set_t cpus, allowed;
	double quota;
};

static void help(void)
{
	printf("usage: percore topo [--json] [--xml FILE] [--shards N] [--policy P]\n"
	       "                    [--cpus LIST] [--oversubscribe] [--allowed LIST]\n"
	       "                    [--quota CPUS] [--root DIR]\n\n"
	       "Show the machine per NUMA node and core (CPUs, kind, SMT siblings, caches,\n"
	       "usable or not), the limits on this process, and the CPU each shard would\n"
	       "run on.\n\n"
	       "  --json            the same as data\n"
	       "  --xml FILE        a saved hwloc topology (lstopo --of xml) instead of\n"
	       "                    this machine\n"
	       "  --shards N        shards to place (default: usable cores of the fastest\n"
	       "                    kind, capped by the CPU quota)\n"
	       "  --policy P        auto (default), compact, spread, pcore, off, list\n"
	       "  --cpus LIST       place on exactly these CPUs (\"0-3,8\"; policy list)\n"
	       "  --oversubscribe   allow more shards than usable CPUs (with a warning)\n"
	       "  --allowed LIST    also restrict the usable CPUs to LIST (plan for a\n"
	       "                    container)\n"
	       "  --quota CPUS      assume a CPU quota of CPUS (2.5 = 250ms per 100ms)\n"
	       "  --root DIR        read cgroups and cpufreq from a fake /proc and /sys\n"
	       "                    tree under DIR\n");
}

static int parse_count(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > 65536)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static int parse_quota(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || *end || end == s || !(*out > 0) || *out > 1e6 ? -EINVAL : 0;
}

enum { OPT_XML = 256, OPT_SHARDS, OPT_POLICY, OPT_CPUS, OPT_OVER, OPT_ALLOWED,
       OPT_QUOTA, OPT_ROOT };

/* A CPU list that names at least one CPU: an empty one is as much a
 * usage error as a malformed one. */
static int cpu_list(const char *opt, const char *arg, cpu_set_t *set)
{
	if (pc_cpulist_parse(arg, set))
		return pc_cmd_usage_error("topo", "%s: malformed CPU list '%s'", opt, arg);
	if (!CPU_COUNT(set))
		return pc_cmd_usage_error("topo", "%s: the CPU list is empty", opt);
	return 0;
}

static int parse_one(int opt, const char *arg, char **argv, struct topo_args *a)
{
	switch (opt) {
	case 'j':         a->json = true; return 0;
	case OPT_XML:     a->xml = arg; return 0;
	case OPT_ROOT:    a->root = arg; return 0;
	case OPT_OVER:    a->oversubscribe = true; return 0;
	case OPT_SHARDS:
		return parse_count(arg, &a->shards)
		       ? pc_cmd_usage_error("topo", "--shards wants a count from 0 to 65536, "
					    "not '%s'", arg) : 0;
	case OPT_POLICY:
		a->have_policy = true;
		return pc_place_policy_parse(arg, &a->policy)
		       ? pc_cmd_usage_error("topo", "unknown policy '%s' (auto, compact, "
					    "spread, pcore, off, list)", arg) : 0;
	case OPT_CPUS:
		a->have_cpus = true;
		return cpu_list("--cpus", arg, &a->cpus);
	case OPT_ALLOWED:
		a->have_allowed = true;
		return cpu_list("--allowed", arg, &a->allowed);
	case OPT_QUOTA:
		return parse_quota(arg, &a->quota)
		       ? pc_cmd_usage_error("topo", "--quota wants a positive number of CPUs, "
					    "not '%s'", arg) : 0;
	case ':':
		return pc_cmd_usage_error("topo", "%s needs a value", argv[optind - 1]);
	default:
		return pc_cmd_usage_error("topo", "unknown option '%s'", argv[optind - 1]);
	}
}

static int parse_args(int argc, char **argv, struct topo_args *a)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "xml", required_argument, NULL, OPT_XML },
		{ "shards", required_argument, NULL, OPT_SHARDS },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "oversubscribe", no_argument, NULL, OPT_OVER },
		{ "allowed", required_argument, NULL, OPT_ALLOWED },
		{ "quota", required_argument, NULL, OPT_QUOTA },
		{ "root", required_argument, NULL, OPT_ROOT },
		{ NULL, 0, NULL, 0 },
	};
	int opt, r;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1)
		if ((r = parse_one(opt, optarg, argv, a)))
			return r;
	if (optind < argc)
		return pc_cmd_usage_error("topo", "unexpected argument '%s'", argv[optind]);
	if (a->have_cpus && a->have_policy && a->policy != PC_PLACE_LIST)
		return pc_cmd_usage_error("topo", "--cpus goes only with --policy list");
	if (a->have_cpus)
		a->policy = PC_PLACE_LIST;
	if (a->policy == PC_PLACE_LIST && !a->have_cpus)
		return pc_cmd_usage_error("topo", "--policy list needs --cpus LIST");
	return 0;
}

/* "48 KiB", "1.25 MiB", "64 GiB". */
static const char *human_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.3g %s", v, units[u]);
	return buf;
}

static const char *cpus_text(const cpu_set_t *s, char *buf, size_t len)
{
	if (pc_cpulist_format(s, buf, len) < 0)
		snprintf(buf, len, "(%d CPUs)", CPU_COUNT(s));
	return buf[0] ? buf : "none";
}

static void core_cpus(const struct pc_topo_core *k, cpu_set_t *s)
{
	CPU_ZERO(s);
	for (unsigned j = 0; j < k->nthreads; j++)
		CPU_SET(k->threads[j], s);
}

/* The core's L2 and L1d, each "private" or shared with whom. */
static void print_core_caches(const struct pc_topo *t, const struct pc_topo_core *k)
{
	char size[32], list[256];
	cpu_set_t mine;
	const char *sep = "";

	core_cpus(k, &mine);
	for (int level = 2; level >= 1; level--)
		for (unsigned i = 0; i < pc_topo_ncaches(t); i++) {
			const struct pc_topo_cache *c = pc_topo_cache(t, i);

			if (c->level != level || !CPU_ISSET(k->threads[0], &c->cpus))
				continue;
			printf("%s%s %s", sep, level == 1 ? "L1d" : "L2",
			       human_size(c->size, size, sizeof(size)));
			if (!CPU_EQUAL(&c->cpus, &mine))
				printf(" (shared with CPUs %s)",
				       cpus_text(&c->cpus, list, sizeof(list)));
			sep = ", ";
		}
	printf("\n");
}

/* One line per core: its CPUs (SMT siblings together), kind, whether
 * placement may use it, and its private or shared caches. */
static void print_core(const struct pc_topo *t, const struct pc_topo_core *k)
{
	char cpus[64] = "", usable[64] = "";
	size_t u = 0, c = 0;

	for (unsigned j = 0; j < k->nthreads; j++) {
		c += (size_t)snprintf(cpus + c, sizeof(cpus) - c, "%s%d", j ? "," : "", k->threads[j]);
		if (pc_topo_cpu_by_os(t, k->threads[j])->usable)
			u += (size_t)snprintf(usable + u, sizeof(usable) - u, "%s%d", u ? "," : "",
					      k->threads[j]);
		c = c < sizeof(cpus) ? c : sizeof(cpus) - 1;
		u = u < sizeof(usable) ? u : sizeof(usable) - 1;
	}
	if (k->nusable == 0)
		snprintf(usable, sizeof(usable), "no");
	else if (k->nusable < k->nthreads && u + 5 < sizeof(usable))
		snprintf(usable + u, sizeof(usable) - u, " only");
	else if (k->nusable == k->nthreads)
		snprintf(usable, sizeof(usable), "yes");
	printf("  %-5d %-9s %-11s %-8s ", k->index, cpus,
	       pc_topo_kind(t, (unsigned)k->kind)->name, usable);
	print_core_caches(t, k);
}

static void print_node(const struct pc_topo *t, unsigned n)
{
	const struct pc_topo_node *node = pc_topo_node(t, n);
	char size[32], list[512];

	printf("\nNUMA node %d: %s, CPUs %s, %u of %u cores usable\n", node->os_index,
	       human_size(node->memory, size, sizeof(size)),
	       cpus_text(&node->cpus, list, sizeof(list)), node->nusable_cores, node->ncores);
	for (unsigned i = 0; i < pc_topo_ncaches(t); i++) {
		const struct pc_topo_cache *c = pc_topo_cache(t, i);
		cpu_set_t both;

		CPU_AND(&both, &c->cpus, &node->cpus);
		if (c->level >= 3 && CPU_COUNT(&both))
			printf("  L%d %s shared by CPUs %s\n", c->level,
			       human_size(c->size, size, sizeof(size)),
			       cpus_text(&c->cpus, list, sizeof(list)));
	}
	printf("  core  CPUs      kind        usable   caches\n");
	for (unsigned i = 0; i < pc_topo_ncores(t); i++)
		if (pc_topo_core(t, i)->node == (int)n)
			print_core(t, pc_topo_core(t, i));
}

static void print_limits(const struct pc_topo *t)
{
	const struct pc_topo_limits *l = pc_topo_limits(t);
	char list[512];

	printf("usable: CPUs %s (%u CPUs on %u cores)\n",
	       cpus_text(&l->usable, list, sizeof(list)), l->nusable, l->nusable_cores);
	if (l->has_affinity)
		printf("  affinity mask: %s\n", cpus_text(&l->affinity, list, sizeof(list)));
	if (l->has_hwloc_allowed)
		printf("  the XML file's allowed CPUs apply\n");
	if (l->cgroup_version)
		printf("  cgroup: v%d %s\n", l->cgroup_version, l->cgroup_path);
	else
		printf("  cgroup: %s\n", l->has_affinity || l->cgroup_path[0] ? "none found"
						  : "not read (saved topology)");
	printf("  cpuset (cgroup, --allowed): %s\n",
	       l->has_cpuset ? cpus_text(&l->cpuset, list, sizeof(list)) : "no limit");
	if (l->quota_cpus > 0)
		printf("  CPU quota: %.2f CPUs (default shards at most %u)\n", l->quota_cpus,
		       l->quota_shards);
	else
		printf("  CPU quota: none\n");
}

static void print_placement(const struct pc_topo *t, const struct pc_placement *p)
{
	printf("\nplacement: policy %s, %u shard%s%s%s\n", pc_place_policy_name(p->policy), p->n,
	       p->n == 1 ? "" : "s", p->default_count ? " (default count)" : "",
	       !p->pinned ? ", not pinned" : p->floating ? ", each free on its node's CPUs" : "");
	if (p->pinned) {
		printf("  shard   cpu  node  core  kind\n");
		for (unsigned s = 0; s < p->n; s++)
			printf("  %5u %5d %5d %5d  %s\n", s, p->shards[s].cpu, p->shards[s].node,
			       p->shards[s].core, pc_topo_kind(t, (unsigned)p->shards[s].kind)->name);
	}
	for (unsigned i = 0; i < p->nwarnings; i++)
		printf("warning: %s\n", p->warnings[i]);
}

static void print_human(const struct pc_topo *t, const struct pc_placement *p)
{
	enum pc_topo_kind_source ks = pc_topo_kind_source(t);

	printf("%s: %u package%s, %u NUMA node%s, %u cores, %u CPUs\n", pc_topo_source(t),
	       pc_topo_npackages(t), pc_topo_npackages(t) == 1 ? "" : "s", pc_topo_nnodes(t),
	       pc_topo_nnodes(t) == 1 ? "" : "s", pc_topo_ncores(t), pc_topo_ncpus(t));
	printf("kinds (%s): ", ks == PC_TOPO_KINDS_UNIFORM
	       ? "neither cpukinds nor cpufreq tell cores apart" : pc_topo_kind_source_name(ks));
	for (unsigned i = 0; i < pc_topo_nkinds(t); i++) {
		const struct pc_topo_kind *k = pc_topo_kind(t, i);

		printf("%s%s", i ? ", " : "", k->name);
		if (k->max_mhz && !strstr(k->name, "MHz"))
			printf(" %u MHz", k->max_mhz);
	}
	printf("%s\n", pc_topo_nkinds(t) > 1 ? " (fastest first)" : "");
	print_limits(t);
	for (unsigned n = 0; n < pc_topo_nnodes(t); n++)
		print_node(t, n);
	print_placement(t, p);
}

static int print_json(const struct pc_topo *t, const struct pc_placement *p)
{
	cJSON *root = cJSON_CreateObject(), *topo = pc_topo_to_json(t),
	      *place = pc_placement_to_json(t, p);
	char *text = NULL;

	if (root && topo && place) {
		cJSON_AddItemToObject(root, "topology", topo);
		cJSON_AddItemToObject(root, "placement", place);
		topo = place = NULL;
		text = cJSON_Print(root);
	}
	cJSON_Delete(root);
	cJSON_Delete(topo);
	cJSON_Delete(place);
	if (!text) {
		fprintf(stderr, "percore topo: out of memory\n");
		return PC_EXIT_FAIL;
	}
	printf("%s\n", text);
	free(text);
	return PC_EXIT_OK;
}

static int topo_main(int argc, char **argv)
{
	struct topo_args a = { .policy = PC_PLACE_AUTO };
	struct pc_topo_opts o = { 0 };
	struct pc_topo *t = NULL;
	struct pc_placement *p = NULL;
	char err[256];
	int r;

	if (pc_cmd_wants_help(argc, argv)) {
		help();
		return PC_EXIT_OK;
	}
	if ((r = parse_args(argc, argv, &a)))
		return r;
	o.xml_path = a.xml;
	o.root = a.root;
	o.allowed = a.have_allowed ? &a.allowed : NULL;
	o.quota_cpus = a.quota;
	r = pc_topo_load(&o, &t, err, sizeof(err));
	if (!r)
		r = pc_place(t, a.shards, a.policy, a.have_cpus ? &a.cpus : NULL,
			     a.oversubscribe ? PC_PLACE_OVERSUBSCRIBE : 0, &p, err, sizeof(err));
	if (r) {
		pc_topo_free(t);
		return pc_cmd_refused("topo", r, err);
	}
	if (a.json)
		r = print_json(t, p);
	else
		print_human(t, p);
	pc_placement_free(p);
	pc_topo_free(t);
	return r;
}

static const struct pc_cmd topo_cmd = {
	.name = "topo",
	.summary = "show the machine (cores, kinds, caches, NUMA, limits) and shard placement",
	.order = 10,
	.main = topo_main,
};
PC_CMD_REGISTER(topo_cmd)
