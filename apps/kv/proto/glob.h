/* SPDX-License-Identifier: MIT */
/* Glob-style matching as Redis's KEYS and SCAN MATCH do it (util.c's
 * stringmatchlen, case-sensitive): '*' any run, '?' any byte, '[...]'
 * a set with ranges and '^' negation, '\' escapes. Binary-safe: both
 * strings carry lengths and may hold NUL. Pure; any thread. */
#ifndef KV_GLOB_H
#define KV_GLOB_H

#include <stdbool.h>
#include <stddef.h>

/* Whether s[0..slen) matches pattern p[0..plen). A pattern nesting more
 * than 1000 '*' levels deep matches nothing, so a hostile pattern cannot
 * exhaust the stack. */
bool kv_glob_match(const char *p, size_t plen, const char *s, size_t slen);

#endif
