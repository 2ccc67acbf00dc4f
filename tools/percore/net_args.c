/* SPDX-License-Identifier: MIT */
/* percore echo and percore load: reading their option values. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "subcommand.h"
#include "net_args.h"
#include "percore/cpulist.h"
#include "percore/listener.h"
#include "percore/place.h"

/* Split a number from its unit: the number must be all digits (and one
 * dot when fraction is allowed) and non-empty. */
static int split(const char *s, bool fraction, double *v, const char **unit)
{
	const char *p = s;
	char *end;
	int dots = 0;

	while ((*p >= '0' && *p <= '9') || (fraction && *p == '.' && !dots++))
		p++;
	if (p == s || (p == s + 1 && *s == '.'))
		return -EINVAL;
	errno = 0;
	*v = strtod(s, &end);
	if (errno || end != p || !isfinite(*v))
		return -EINVAL;
	*unit = p;
	return 0;
}

int net_arg_count(const char *s, uint64_t max, uint64_t *out)
{
	return net_arg_bytes(s, max, out) || strpbrk(s, "KMG") ? -EINVAL : 0;
}

int net_arg_bytes(const char *s, uint64_t max, uint64_t *out)
{
	static const char units[] = "KMG";
	const char *unit, *u;
	double v;

	if (split(s, false, &v, &unit))
		return -EINVAL;
	if (*unit) {
		if (unit[1] || !(u = strchr(units, *unit)))
			return -EINVAL;
		v = ldexp(v, 10 * (int)(u - units + 1));
	}
	if (v > (double)max)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

int net_arg_time(const char *s, double max_s, uint64_t *ns)
{
	static const struct {
		const char *name;
		double scale;
	} units[] = { { "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "m", 60 } };
	const char *unit;
	double v;

	if (split(s, true, &v, &unit))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(unit, units[i].name))
			continue;
		v *= units[i].scale;
		if (v > max_s)
			return -EINVAL;
		*ns = (uint64_t)llround(v * 1e9);
		return 0;
	}
	return -EINVAL;
}

int net_arg_host(const char *s)
{
	struct sockaddr_storage ss;
	socklen_t len;

	return pc_sockaddr_parse(s, 0, &ss, &len) ? -EINVAL : 0;
}

int net_arg_placement(const char *s)
{
	enum pc_place_policy policy;
	cpu_set_t set;

	return pc_place_policy_parse(s, &policy) && pc_cpulist_parse(s, &set) ? -EINVAL : 0;
}

int net_args_parse(const char *cmd, int argc, char **argv, const struct option *opts,
		   void (*usage)(FILE *f), int (*take)(void *a, int opt, const char *v), void *a)
{
	int c, li = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, &li)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return PC_EXIT_OK;
		}
		if (c == ':')
			return pc_cmd_usage_error(cmd, "%s needs a value", argv[optind - 1]);
		if (c == '?')
			return pc_cmd_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		if (!take(a, c, optarg))
			continue;
		if (!strcmp(opts[li].name, "host"))
			return pc_cmd_usage_error(cmd, "bad value '%s' for --host: an IPv4 or "
						  "IPv6 address or localhost (names are not "
						  "resolved)", optarg);
		return optarg ? pc_cmd_usage_error(cmd, "bad value '%s' for --%s", optarg,
						   opts[li].name) :
				pc_cmd_usage_error(cmd, "bad option --%s", opts[li].name);
	}
	if (optind < argc)
		return pc_cmd_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return -1;
}
