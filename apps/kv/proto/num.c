/* SPDX-License-Identifier: MIT */
/* Number parsing and printing with Redis's rules: see num.h. */
#include "num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

bool kv_str2ll(const char *s, size_t n, int64_t *out)
{
	/* 20 characters hold every int64 ("-9223372036854775808") */
	if (n == 0 || n > 20)
		return false;
	if (n == 1 && s[0] == '0') {
		*out = 0;
		return true;
	}
	bool neg = s[0] == '-';
	size_t i = neg ? 1 : 0;
	if (i >= n || s[i] < '1' || s[i] > '9')
		return false;
	uint64_t v = 0;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

bool kv_str2ld(const char *s, size_t n, long double *out)
{
	char buf[KV_LD_MAX_CHARS];

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *end;
	errno = 0;
	long double v = strtold(buf, &end);
	if (isspace((unsigned char)buf[0]) || (size_t)(end - buf) != n || isnan(v))
		return false;
	/* ERANGE with a finite, non-zero result is a denormal: Redis keeps it */
	if (errno == ERANGE && (isinf(v) || v == 0))
		return false;
	if (errno == EINVAL)
		return false;
	*out = v;
	return true;
}

size_t kv_ld2str(char *buf, long double v)
{
	if (!isfinite(v))
		return 0;
	int w = snprintf(buf, KV_LD_MAX_CHARS + 1, "%.17Lf", v);
	if (w <= 0 || w > KV_LD_MAX_CHARS)
		return 0;
	size_t l = (size_t)w;
	/* "%.17Lf" always prints a '.': drop the zeros after it, then the '.'
	 * itself when nothing is left behind it */
	while (buf[l - 1] == '0')
		l--;
	if (buf[l - 1] == '.')
		l--;
	if (l == 2 && buf[0] == '-' && buf[1] == '0') {
		buf[0] = '0';
		l = 1;
	}
	buf[l] = '\0';
	return l;
}

size_t kv_ull2str(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0, l = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		buf[l++] = tmp[--n];
	return l;
}

size_t kv_ll2str(char *buf, int64_t v)
{
	if (v >= 0)
		return kv_ull2str(buf, (uint64_t)v);
	/* negate in unsigned, so INT64_MIN does not overflow */
	buf[0] = '-';
	return 1 + kv_ull2str(buf + 1, 0 - (uint64_t)v);
}

bool kv_memtoull(const char *s, size_t n, uint64_t *out)
{
	static const struct { const char *unit; uint64_t mul; } units[] = {
		{ "", 1 }, { "b", 1 }, { "k", 1000 }, { "kb", 1024 }, { "m", 1000 * 1000 },
		{ "mb", 1024 * 1024 }, { "g", 1000ull * 1000 * 1000 }, { "gb", 1024ull * 1024 * 1024 },
	};
	size_t d = 0;
	uint64_t v = 0;

	while (d < n && s[d] >= '0' && s[d] <= '9') {
		if (v > (UINT64_MAX - (uint64_t)(s[d] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[d++] - '0');
	}
	if (!d)
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strlen(units[i].unit) != n - d || strncasecmp(units[i].unit, s + d, n - d))
			continue;
		if (v > UINT64_MAX / units[i].mul)
			return false;
		*out = v * units[i].mul;
		return true;
	}
	return false;
}
