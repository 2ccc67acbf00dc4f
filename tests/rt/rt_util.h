/* SPDX-License-Identifier: MIT */
/* Helpers shared by the runtime tests. */
#ifndef PERCORE_TESTS_RT_UTIL_H
#define PERCORE_TESTS_RT_UTIL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "percore/engine.h"

/* A number from the environment (for sizing stress tests), or def. */
static inline uint64_t rt_env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return def;
	x = strtoull(v, &end, 10);
	return *end ? def : (uint64_t)x;
}

/* Failures seen on shard threads, where cmocka's asserts must not run
 * (they jump back into the main thread's stack). main asserts it is 0. */
static _Atomic unsigned rt_failures;

__attribute__((format(printf, 1, 2))) static inline void rt_fail(const char *fmt, ...)
{
	va_list ap;

	if (atomic_fetch_add(&rt_failures, 1) < 10) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
}

#define RT_CHECK(cond, ...)                                                   \
	do {                                                                  \
		if (!(cond))                                                  \
			rt_fail(__VA_ARGS__);                                 \
	} while (0)

/* Sum of one field over every shard after join. */
#define RT_SUM(e, field)                                                      \
	({                                                                    \
		uint64_t sum_ = 0;                                            \
		struct pc_shard_stats st_;                                    \
		for (unsigned i_ = 0; i_ < pc_engine_shards(e); i_++) {       \
			pc_engine_stats_read((e), i_, &st_);                  \
			sum_ += st_.field;                                    \
		}                                                             \
		sum_;                                                         \
	})

#endif
