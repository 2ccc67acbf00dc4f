/* SPDX-License-Identifier: MIT */
/* percore: log-linear histogram (everything but recording). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "percore/hist.h"
#include "sys/errmsg.h"

void pc_hist_reset(struct pc_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->_min = UINT64_MAX;
}

struct pc_hist *pc_hist_create(void)
{
	struct pc_hist *h = malloc(sizeof(*h));

	if (h)
		pc_hist_reset(h);
	return h;
}

void pc_hist_destroy(struct pc_hist *h)
{
	free(h);
}

void pc_hist_merge(struct pc_hist *dst, const struct pc_hist *src)
{
	for (unsigned b = 0; b < PC_HIST_BUCKETS; b++)
		dst->_buckets[b] += src->_buckets[b];
	dst->_count += src->_count;
	dst->_sum += src->_sum;
	if (src->_min < dst->_min)
		dst->_min = src->_min;
	if (src->_max > dst->_max)
		dst->_max = src->_max;
}

uint64_t pc_hist_count(const struct pc_hist *h)
{
	return h->_count;
}

uint64_t pc_hist_min(const struct pc_hist *h)
{
	return h->_count ? h->_min : 0;
}

uint64_t pc_hist_max(const struct pc_hist *h)
{
	return h->_max;
}

double pc_hist_mean(const struct pc_hist *h)
{
	return h->_count ? (double)h->_sum / (double)h->_count : 0.0;
}

/* Bucket b is (shift << 7) + m: below 256 the value itself, above a top
 * byte m in [128, 255] scaled by 2^shift. */
uint64_t pc_hist_bucket_low(unsigned b)
{
	if (b < 2 * PC_HIST_SUB)
		return b;
	unsigned shift = (b >> PC_HIST_SUB_BITS) - 1;
	uint64_t m = (b & (PC_HIST_SUB - 1)) | PC_HIST_SUB;
	return m << shift;
}

uint64_t pc_hist_bucket_high(unsigned b)
{
	if (b < 2 * PC_HIST_SUB)
		return b;
	unsigned shift = (b >> PC_HIST_SUB_BITS) - 1;
	return pc_hist_bucket_low(b) + ((1ull << shift) - 1);
}

uint64_t pc_hist_percentile(const struct pc_hist *h, double p)
{
	if (!h->_count)
		return 0;
	if (!(p > 0))  /* also NaN */
		p = 0;
	if (p > 100)
		p = 100;
	/* The rank of the wanted value among the sorted values, 1-based. */
	double r = p / 100.0 * (double)h->_count;
	uint64_t rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank <= 1)
		return h->_min;
	/* The ends are known exactly. */
	if (rank >= h->_count)
		return h->_max;

	uint64_t seen = 0;
	unsigned b = 0;
	for (; b < PC_HIST_BUCKETS - 1; b++) {
		seen += h->_buckets[b];
		if (seen >= rank)
			break;
	}
	uint64_t lo = pc_hist_bucket_low(b), hi = pc_hist_bucket_high(b);
	uint64_t v = lo + (hi - lo) / 2;
	if (v < h->_min)
		v = h->_min;
	if (v > h->_max)
		v = h->_max;
	return v;
}

int pc_hist_validate(const struct pc_hist *h, char *err, size_t errlen)
{
	uint64_t total = 0;
	int first = -1, last = -1;

	for (unsigned b = 0; b < PC_HIST_BUCKETS; b++) {
		if (!h->_buckets[b])
			continue;
		total += h->_buckets[b];
		if (first < 0)
			first = (int)b;
		last = (int)b;
	}
	if (total != h->_count)
		return sys_errmsg(err, errlen, -EINVAL, "buckets hold %llu values, count says %llu",
				 (unsigned long long)total, (unsigned long long)h->_count);
	if (!total)
		return h->_min == UINT64_MAX && h->_max == 0 && h->_sum == 0 ? 0 :
		       sys_errmsg(err, errlen, -EINVAL,
				 "empty, yet min %llu max %llu (expected UINT64_MAX, 0) or a sum",
				 (unsigned long long)h->_min, (unsigned long long)h->_max);
	if (h->_min > h->_max)
		return sys_errmsg(err, errlen, -EINVAL, "min %llu above max %llu",
				 (unsigned long long)h->_min, (unsigned long long)h->_max);
	if (pc_hist_bucket(h->_min) != (unsigned)first || pc_hist_bucket(h->_max) != (unsigned)last)
		return sys_errmsg(err, errlen, -EINVAL,
				 "min %llu and max %llu fall in buckets %u and %u, expected the "
				 "first and last non-empty ones, %d and %d",
				 (unsigned long long)h->_min, (unsigned long long)h->_max,
				 pc_hist_bucket(h->_min), pc_hist_bucket(h->_max), first, last);
	/* The mean lies between min and max. */
	if (h->_sum < (unsigned __int128)h->_min * total ||
	    h->_sum > (unsigned __int128)h->_max * total)
		return sys_errmsg(err, errlen, -EINVAL,
				 "mean %.1f outside min..max %llu..%llu",
				 (double)h->_sum / (double)total, (unsigned long long)h->_min,
				 (unsigned long long)h->_max);
	return 0;
}
