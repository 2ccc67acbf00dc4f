/* SPDX-License-Identifier: MIT */
/* percore bench: the "context" object of the results file, in Google
 * Benchmark's layout: when, where and on what the benchmarks ran. */
#define _GNU_SOURCE 1
#include <cjson/cJSON.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bench/runner.h"

/* ISO 8601 local time with a "+hh:mm" offset, as Google Benchmark writes. */
static void format_date(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	size_t n;

	localtime_r(&now, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S%z", &tm);
	if (n >= 5 && n + 2 <= len) {
		memmove(buf + n - 1, buf + n - 2, 3);   /* "+0100" -> "+01:00" */
		buf[n - 2] = ':';
	}
}

static double read_number(const char *path, double fallback)
{
	FILE *f = fopen(path, "r");
	double v;

	if (!f)
		return fallback;
	if (fscanf(f, "%lf", &v) != 1)
		v = fallback;
	fclose(f);
	return v;
}

/* The highest frequency cpufreq reports, else what /proc/cpuinfo says
 * (virtual machines often expose only that), else 0. */
static double mhz_per_cpu(void)
{
	double khz = read_number("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", 0);
	char line[256];
	double mhz = 0;
	FILE *f;

	if (khz > 0)
		return khz / 1000;
	f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "cpu MHz", 7) && sscanf(strchr(line, ':') ?: line, ": %lf", &mhz) == 1)
			break;
	fclose(f);
	return mhz;
}

/* Frequency scaling is on when cpu0's governor exists and is not
 * "performance" (what Google Benchmark checks too). */
static bool cpu_scaling_enabled(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "r");
	char gov[64] = "";
	bool on;

	if (!f)
		return false;
	on = fgets(gov, sizeof(gov), f) && strncmp(gov, "performance", 11);
	fclose(f);
	return on;
}

static const char *cache_type(hwloc_obj_cache_type_t t)
{
	return t == HWLOC_OBJ_CACHE_DATA ? "Data"
	       : t == HWLOC_OBJ_CACHE_INSTRUCTION ? "Instruction" : "Unified";
}

/* The caches above the first CPU, innermost first. */
static cJSON *caches_json(void)
{
	cJSON *arr = cJSON_CreateArray();
	hwloc_topology_t topo;
	hwloc_obj_t pu;

	if (!arr || hwloc_topology_init(&topo))
		return arr;
	/* hwloc leaves instruction caches out unless asked. */
	hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (!hwloc_topology_load(topo) && (pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, 0))) {
		for (hwloc_obj_t o = pu->parent; o; o = o->parent) {
			cJSON *c;

			if (!hwloc_obj_type_is_cache(o->type) || !(c = cJSON_CreateObject()))
				continue;
			cJSON_AddStringToObject(c, "type", cache_type(o->attr->cache.type));
			cJSON_AddNumberToObject(c, "level", o->attr->cache.depth);
			cJSON_AddNumberToObject(c, "size", (double)o->attr->cache.size);
			cJSON_AddNumberToObject(c, "num_sharing", hwloc_bitmap_weight(o->cpuset));
			cJSON_AddItemToArray(arr, c);
		}
	}
	hwloc_topology_destroy(topo);
	return arr;
}

cJSON *bench_context_json(void)
{
	char date[64] = "", host[256] = "", exe[PATH_MAX] = "";
	cJSON *ctx = cJSON_CreateObject(), *load;
	double avg[3] = { 0, 0, 0 };
	ssize_t n;

	if (!ctx)
		return NULL;
	format_date(date, sizeof(date));
	gethostname(host, sizeof(host) - 1);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (getloadavg(avg, 3) < 0)
		avg[0] = avg[1] = avg[2] = 0;
	cJSON_AddStringToObject(ctx, "date", date);
	cJSON_AddStringToObject(ctx, "host_name", host);
	cJSON_AddStringToObject(ctx, "executable", exe);
	cJSON_AddNumberToObject(ctx, "num_cpus", (double)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_AddNumberToObject(ctx, "mhz_per_cpu", (double)(long)(mhz_per_cpu() + 0.5));
	cJSON_AddBoolToObject(ctx, "cpu_scaling_enabled", cpu_scaling_enabled());
	cJSON_AddItemToObject(ctx, "caches", caches_json());
	load = cJSON_CreateDoubleArray(avg, 3);
	cJSON_AddItemToObject(ctx, "load_avg", load);
	cJSON_AddStringToObject(ctx, "library_build_type",
				strcasecmp(PC_BUILD_TYPE, "Debug") ? "release" : "debug");
	return ctx;
}
