/* percore echo and percore load: reading their option values. */
#ifndef PERCORE_TOOL_NET_ARGS_H
#define PERCORE_TOOL_NET_ARGS_H

#include <stdint.h>

/* A decimal count up to max. Returns 0 or -EINVAL. */
int net_arg_count(const char *s, uint64_t max, uint64_t *out);

/* Bytes: a decimal count with an optional K, M or G suffix (powers of
 * 1024), up to max. Returns 0 or -EINVAL. */
int net_arg_bytes(const char *s, uint64_t max, uint64_t *out);

/* A time: decimal seconds ("2.5"), or with a unit: "500ms", "10s", "2m".
 * Up to max_s seconds. Returns 0 or -EINVAL. */
int net_arg_time(const char *s, double max_s, uint64_t *ns);

#endif
