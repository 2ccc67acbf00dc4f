/* SPDX-License-Identifier: MIT */
/* Helpers shared by the topology and placement tests: load a fixture,
 * place on it, and compare a placement's CPUs as text ("0,2,4"), so a
 * failing assertion shows the whole placement. */
#ifndef PC_TEST_TOPOTEST_H
#define PC_TEST_TOPOTEST_H

#define _GNU_SOURCE 1
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "percore/cpulist.h"
#include "percore/place.h"
#include "percore/topo.h"

/* tests/fixtures/<area>/<name> under $PC_SOURCE_DIR. */
static inline const char *topotest_path(const char *area, const char *name)
{
	static char path[4][1024];
	static int next;
	const char *src = getenv("PC_SOURCE_DIR");
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/tests/fixtures/%s/%s", src ? src : ".", area, name);
	return p;
}

/* Load tests/fixtures/topo/<name> with extra limits; fails the test on
 * error. allowed may be NULL, quota 0. */
static inline struct pc_topo *topotest_load(const char *name, const char *allowed,
					    double quota)
{
	struct pc_topo_opts o = { .xml_path = topotest_path("topo", name), .quota_cpus = quota };
	struct pc_topo *t = NULL;
	cpu_set_t set;
	char err[256] = "";

	if (allowed) {
		assert_int_equal(pc_cpulist_parse(allowed, &set), 0);
		o.allowed = &set;
	}
	if (pc_topo_load(&o, &t, err, sizeof(err)))
		fail_msg("loading %s: %s", name, err);
	assert_int_equal(pc_topo_validate(t, NULL, 0), 0);
	return t;
}

/* The shards' CPUs in shard order, comma-separated ("-1" when unpinned). */
static inline const char *topotest_cpus(const struct pc_placement *p)
{
	static char buf[4096];
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned s = 0; s < p->n && used < sizeof(buf); s++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%d", s ? "," : "",
					 p->shards[s].cpu);
	return buf;
}

/* Place and check: returns the placement (validated) for more asserts. */
static inline struct pc_placement *topotest_place(const struct pc_topo *t, unsigned n,
						  enum pc_place_policy policy,
						  const char *list, unsigned flags,
						  const char *want_cpus)
{
	struct pc_placement *p = NULL;
	cpu_set_t set;
	char err[256] = "";

	if (list)
		assert_int_equal(pc_cpulist_parse(list, &set), 0);
	if (pc_place(t, n, policy, list ? &set : NULL, flags, &p, err, sizeof(err)))
		fail_msg("placing %u shards (%s): %s", n, pc_place_policy_name(policy), err);
	assert_int_equal(pc_placement_validate(t, p, NULL, 0), 0);
	assert_string_equal(topotest_cpus(p), want_cpus);
	return p;
}

/* Expect pc_place to fail with rc and a message containing want. */
static inline void topotest_place_fails_rc(const struct pc_topo *t, unsigned n,
					   enum pc_place_policy policy, const char *list,
					   unsigned flags, int rc, const char *want)
{
	struct pc_placement *p = (struct pc_placement *)1;
	cpu_set_t set;
	char err[256] = "";

	if (list)
		assert_int_equal(pc_cpulist_parse(list, &set), 0);
	assert_int_equal(pc_place(t, n, policy, list ? &set : NULL, flags, &p, err, sizeof(err)),
			 rc);
	assert_null(p);
	if (!strstr(err, want))
		fail_msg("message '%s' lacks '%s'", err, want);
}

/* A placement refused with -EINVAL. */
static inline void topotest_place_fails(const struct pc_topo *t, unsigned n,
					enum pc_place_policy policy, const char *list,
					unsigned flags, const char *want)
{
	topotest_place_fails_rc(t, n, policy, list, flags, -EINVAL, want);
}

/* True when some warning of p contains text. */
static inline int topotest_warns(const struct pc_placement *p, const char *text)
{
	for (unsigned i = 0; i < p->nwarnings; i++)
		if (strstr(p->warnings[i], text))
			return 1;
	return 0;
}

#endif
