/* SPDX-License-Identifier: MIT */
/* percore rt: the log's ring of records, one producer and the writer.
 *
 * head and tail count bytes since the start and never wrap (2^64 bytes is
 * centuries of logging); a record's bytes sit at head mod size and run on
 * across the end. The producer publishes a record with a release store of
 * head after copying it; the writer takes it after an acquire load of
 * head and frees its bytes with a release store of tail, which the
 * producer loads (acquire) before reusing them. */
#include <stdlib.h>
#include <string.h>

#include "rt/log_impl.h"

struct rt_log_ring *rt_log_ring_new(uint32_t size, int shard, uint64_t *stat)
{
	struct rt_log_ring *r;

	if (posix_memalign((void **)&r, PC_CACHE_PAD, sizeof(*r)))
		return NULL;
	memset(r, 0, sizeof(*r));
	r->buf = malloc(size);
	if (!r->buf) {
		free(r);
		return NULL;
	}
	r->size = size;
	r->shard = shard;
	r->stat = stat;
	return r;
}

void rt_log_ring_free(struct rt_log_ring *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r);
}

static void copy_in(struct rt_log_ring *r, uint64_t at, const unsigned char *src, size_t len)
{
	size_t off = (size_t)(at & (r->size - 1)), first = r->size - off;

	if (first > len)
		first = len;
	memcpy(r->buf + off, src, first);
	memcpy(r->buf, src + first, len - first);
}

static void copy_out(const struct rt_log_ring *r, uint64_t at, unsigned char *dst, size_t len)
{
	size_t off = (size_t)(at & (r->size - 1)), first = r->size - off;

	if (first > len)
		first = len;
	memcpy(dst, r->buf + off, first);
	memcpy(dst + first, r->buf, len - first);
}

/* Whether len more bytes fit; reads the writer's tail only when the copy
 * seen last says they do not, so a ring with room costs no shared line. */
static bool room(struct rt_log_ring *r, uint64_t head, size_t len)
{
	if (head - r->tail_seen + len <= r->size)
		return true;
	r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
	return head - r->tail_seen + len <= r->size;
}

static bool put_one(struct rt_log_ring *r, const unsigned char *rec, size_t len)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);

	if (!room(r, head, len))
		return false;
	copy_in(r, head, rec, len);
	/* release: the record's bytes before the new head */
	atomic_store_explicit(&r->head, head + len, memory_order_release);
	return true;
}

static void count_drop(struct rt_log_ring *r)
{
	r->drops++;
	atomic_store_explicit(&r->dropped, r->drops, memory_order_relaxed);
	if (r->stat)
		__atomic_store_n(r->stat, *r->stat + 1, __ATOMIC_RELAXED);
}

bool rt_log_ring_put(struct rt_log_ring *r, const unsigned char *rec, size_t len)
{
	/* Drops are announced before the next line, in its place: if the
	 * announcement does not fit, neither is the line written (it would
	 * come out ahead of the news of the lines lost before it). */
	if (PC_UNLIKELY(r->drops != r->reported)) {
		unsigned char note[RT_LOG_REC_MAX];
		size_t n = rt_log_encode_drops(note, r->drops - r->reported);

		if (!put_one(r, note, n)) {
			count_drop(r);
			return false;
		}
		r->reported = r->drops;
	}
	if (put_one(r, rec, len))
		return true;
	count_drop(r);
	return false;
}

bool rt_log_ring_take(struct rt_log_ring *r, unsigned char *buf)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	struct rt_log_rec h;

	if (tail == head)
		return false;
	copy_out(r, tail, (unsigned char *)&h, sizeof(h));
	copy_out(r, tail, buf, h.len);
	/* release: done reading these bytes before the producer reuses them */
	atomic_store_explicit(&r->tail, tail + h.len, memory_order_release);
	return true;
}
