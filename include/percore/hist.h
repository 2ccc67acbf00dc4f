/* SPDX-License-Identifier: MIT */
/* percore: a log-linear histogram of 64-bit values (latencies in ns).
 *
 * Values below 256 are counted exactly; above, each power of two is split
 * into 128 equal buckets, so a bucket is never wider than 1/128 of its
 * lowest value. A percentile answers with the middle of its bucket, which is
 * within 1/256 (0.4%) of every value the bucket holds: the 1% bound with
 * room to spare. The whole 64-bit range takes 7,424 buckets (58 KiB), so
 * recording never clamps and never allocates.
 *
 * Single-threaded: one histogram per thread (or shard); merge them after.
 */
#ifndef PERCORE_HIST_H
#define PERCORE_HIST_H

#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

#define PC_HIST_SUB_BITS 7
#define PC_HIST_SUB      (1u << PC_HIST_SUB_BITS)
/* Exact buckets 0..255, then 128 per power of two from 2^8 to 2^63. */
#define PC_HIST_BUCKETS  ((64 - PC_HIST_SUB_BITS) * PC_HIST_SUB + PC_HIST_SUB)

/* Fields starting with _ are private; read them through the functions. */
struct pc_hist {
	uint64_t _count;
	uint64_t _min;             /* UINT64_MAX while empty */
	uint64_t _max;
	pc_uint128_t _sum;         /* cannot overflow: 2^64 values of 2^64 */
	uint64_t _buckets[PC_HIST_BUCKETS];
};

/* The bucket that counts value v. */
static inline unsigned pc_hist_bucket(uint64_t v)
{
	/* shift is 0 below 256 (one bucket per value), else it keeps the top
	 * 8 bits of v: the leading 1 and 7 bits of linear position. */
	unsigned shift = (unsigned)(63 - __builtin_clzll(v | (2 * PC_HIST_SUB - 1))) - PC_HIST_SUB_BITS;
	return (shift << PC_HIST_SUB_BITS) + (unsigned)(v >> shift);
}

/* Count value v n times. Owner thread only. Never fails. */
static inline void pc_hist_record_n(struct pc_hist *h, uint64_t v, uint64_t n)
{
	h->_buckets[pc_hist_bucket(v)] += n;
	h->_count += n;
	h->_sum += (pc_uint128_t)v * n;
	if (v < h->_min)
		h->_min = v;
	if (v > h->_max)
		h->_max = v;
}

/* Count value v once. Owner thread only. Never fails. */
static inline void pc_hist_record(struct pc_hist *h, uint64_t v)
{
	pc_hist_record_n(h, v, 1);
}

/* Empty h (also how a caller-allocated one is prepared). */
PC_API void pc_hist_reset(struct pc_hist *h);

/* Allocate an empty histogram; NULL when out of memory. */
PC_API struct pc_hist *pc_hist_create(void);
PC_API void pc_hist_destroy(struct pc_hist *h);

/* Add everything src counted to dst. src is unchanged; neither may be
 * written meanwhile. */
PC_API void pc_hist_merge(struct pc_hist *dst, const struct pc_hist *src);

/* How many values were recorded. */
PC_API uint64_t pc_hist_count(const struct pc_hist *h);
/* Smallest and largest recorded value, exact; 0 when empty. */
PC_API uint64_t pc_hist_min(const struct pc_hist *h);
PC_API uint64_t pc_hist_max(const struct pc_hist *h);
/* Exact mean of the recorded values; 0 when empty. */
PC_API double pc_hist_mean(const struct pc_hist *h);

/* The value at percentile p (0..100; outside is clamped): the smallest
 * recorded value v with at least p% of values <= v, within 1% (the bucket
 * middle, kept inside [min, max], so p = 0 and p = 100 are exact).
 * 0 when empty. */
PC_API uint64_t pc_hist_percentile(const struct pc_hist *h, double p);

/* Lowest and highest value bucket b counts (b < PC_HIST_BUCKETS). */
PC_API uint64_t pc_hist_bucket_low(unsigned b);
PC_API uint64_t pc_hist_bucket_high(unsigned b);

/* Check the invariants: counts add up, min <= max, min and max inside the
 * first and last non-empty buckets. Returns 0, or -EINVAL and, when err is
 * not NULL, what broke in err (errlen bytes): the bucket or field, the
 * value found, the range expected. For tests. */
PC_API int pc_hist_validate(const struct pc_hist *h, char *err, size_t errlen);

PC_END_DECLS

#endif
