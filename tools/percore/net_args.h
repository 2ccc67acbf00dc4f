/* SPDX-License-Identifier: MIT */
/* percore echo and percore load: reading their option values. */
#ifndef PERCORE_TOOL_NET_ARGS_H
#define PERCORE_TOOL_NET_ARGS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

/* A decimal count up to max. Returns 0 or -EINVAL. */
int net_arg_count(const char *s, uint64_t max, uint64_t *out);

/* Bytes: a decimal count with an optional K, M or G suffix (powers of
 * 1024), up to max. Returns 0 or -EINVAL. */
int net_arg_bytes(const char *s, uint64_t max, uint64_t *out);

/* A time: decimal seconds ("2.5"), or with a unit: "500ms", "10s", "2m".
 * Up to max_s seconds. Returns 0 or -EINVAL. */
int net_arg_time(const char *s, double max_s, uint64_t *ns);

/* A host as pc_sockaddr_parse takes it: numeric IPv4 or IPv6, "localhost"
 * (127.0.0.1), "" or "*" (every address). Names are not resolved, so a
 * server's address and a benchmark's target never depend on a resolver.
 * Returns 0 or -EINVAL. */
int net_arg_host(const char *s);

/* A placement as the engine takes it (pc_engine_cfg.placement): a policy
 * name or a CPU list. Returns 0 or -EINVAL, so a bad one is a usage error
 * rather than a failed start. */
int net_arg_placement(const char *s);

/* Read argv with getopt_long: -h/--help prints usage(stdout) and returns
 * PC_EXIT_OK; every other option goes to take(a, option, value), value
 * NULL for options without one, which returns 0 or -EINVAL (a usage
 * error naming the option and value). A missing value, an unknown option
 * or a stray argument is a usage error with its reason. Returns -1 to go
 * on, or the exit status. */
int net_args_parse(const char *cmd, int argc, char **argv, const struct option *opts,
		   void (*usage)(FILE *f), int (*take)(void *a, int opt, const char *v), void *a);

#endif
