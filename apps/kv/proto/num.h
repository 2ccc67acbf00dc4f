/* SPDX-License-Identifier: MIT */
/* Numbers as Redis reads and writes them: integers without '+', spaces or
 * leading zeros; long doubles for INCRBYFLOAT, printed in Redis's "human"
 * form (17 decimals, trailing zeros dropped). Pure functions, any thread. */
#ifndef KV_NUM_H
#define KV_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest text kv_ld2str() writes, and the longest kv_str2ld() accepts
 * (Redis's MAX_LONG_DOUBLE_CHARS). */
#define KV_LD_MAX_CHARS (5 * 1024)

/* Reads s[0..n) as a signed 64-bit decimal: an optional '-', then "0" or a
 * digit 1-9 and more digits, nothing else, within int64. Returns false
 * (and leaves *out alone) for anything else. */
bool kv_str2ll(const char *s, size_t n, int64_t *out);

/* Reads s[0..n) as a long double with strtold, refusing what Redis
 * refuses: empty, too long, leading space, trailing bytes, NaN, overflow to
 * infinity or underflow to zero. Returns false when refused. */
bool kv_str2ld(const char *s, size_t n, long double *out);

/* Writes v as Redis's INCRBYFLOAT does ("%.17Lf" without trailing zeros,
 * "-0" as "0") into buf (at least KV_LD_MAX_CHARS + 1 bytes). Returns the
 * length, or 0 when v is not finite. */
size_t kv_ld2str(char *buf, long double v);

/* Writes v in decimal into buf (at least 21 bytes); returns the length. */
size_t kv_ll2str(char *buf, int64_t v);
size_t kv_ull2str(char *buf, uint64_t v);

/* Reads s[0..n) as a size, by Redis's rules (memtoull): decimal digits
 * (leading zeros allowed), then an optional unit, any case: b 1, k 1000,
 * kb 1024, m 1000^2, mb 1024^2, g 1000^3, gb 1024^3. Refused, where Redis
 * is more lenient: no digits (Redis reads "" and "mb" as 0) and values
 * past 2^64 - 1 (Redis wraps or saturates). Returns false when refused
 * (*out left alone). Every size kv takes, on its command line and in
 * CONFIG SET, is read with it. */
bool kv_memtoull(const char *s, size_t n, uint64_t *out);

#endif
