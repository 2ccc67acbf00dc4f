/* SPDX-License-Identifier: MIT */
/* percore net: the per-shard ring buffer pool (see bufpool.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/bufpool.h"
#include "sys/errmsg.h"

int net_bufpool_init(struct net_bufpool *p, unsigned keep, size_t keep_bytes)
{
	memset(p, 0, sizeof(*p));
	p->keep = keep;
	p->keep_bytes = keep_bytes;
	net_arena_init(&p->arena);
	if (!keep)
		return 0;
	for (unsigned c = 0; c < NET_BUF_CLASSES; c++) {
		p->free[c] = calloc(keep, sizeof(*p->free[c]));
		if (!p->free[c]) {
			net_bufpool_fini(p);
			return -ENOMEM;
		}
	}
	return 0;
}

static void ring_free(struct net_bufpool *p, struct pc_ringbuf *rb)
{
	size_t cap = pc_ringbuf_capacity(rb);

	net_arena_free(&p->arena, rb->_buf, 2 * cap);
	free(rb);
}

void net_bufpool_fini(struct net_bufpool *p)
{
	for (unsigned c = 0; c < NET_BUF_CLASSES; c++) {
		for (unsigned i = 0; i < p->nfree[c]; i++)
			ring_free(p, p->free[c][i]);
		free(p->free[c]);
		p->free[c] = NULL;
		p->nfree[c] = 0;
	}
	p->idle_bytes = 0;
	net_arena_fini(&p->arena);
}

/* The smallest class holding bytes (at least 1), or -1. A session takes
 * and returns a ring for every read and every flush it makes, so this
 * is one bit scan rather than a loop over the classes. */
static int class_of(size_t bytes)
{
	unsigned shift;

	if (bytes <= ((size_t)1 << NET_BUF_MIN_SHIFT))
		return 0;
	if (bytes > ((size_t)1 << NET_BUF_MAX_SHIFT))
		return -1;
	/* ceil(log2(bytes)) for bytes >= 2 */
	shift = (unsigned)(64 - __builtin_clzll((unsigned long long)bytes - 1));
	return (int)(shift - NET_BUF_MIN_SHIFT);
}

size_t net_buf_class_size(size_t bytes)
{
	int c = class_of(bytes);

	return c < 0 ? 0 : (size_t)1 << (NET_BUF_MIN_SHIFT + (unsigned)c);
}

/* A plain ring on an arena block: the ring and its copy half. */
static struct pc_ringbuf *ring_new(struct net_bufpool *p, size_t cap)
{
	struct pc_ringbuf *rb = malloc(sizeof(*rb));
	void *mem = rb ? net_arena_alloc(&p->arena, 2 * cap) : NULL;

	if (!mem || pc_ringbuf_init_at(rb, mem, cap)) {
		net_arena_free(&p->arena, mem, 2 * cap);
		free(rb);
		return NULL;
	}
	p->maps++;
	return rb;
}

struct pc_ringbuf *net_buf_get(struct net_bufpool *p, size_t bytes)
{
	int c = class_of(bytes ? bytes : 1);
	struct pc_ringbuf *rb;
	size_t cap;

	if (c < 0)
		return NULL;
	cap = (size_t)1 << (NET_BUF_MIN_SHIFT + (unsigned)c);
	if (p->nfree[c]) {
		rb = p->free[c][--p->nfree[c]];
		p->idle_bytes -= cap;
	} else {
		rb = ring_new(p, cap);
		if (!rb)
			return NULL;
	}
	p->busy++;
	p->busy_bytes += cap;
	return rb;
}

void net_buf_put(struct net_bufpool *p, struct pc_ringbuf *rb)
{
	size_t cap;
	int c;

	if (!rb)
		return;
	cap = pc_ringbuf_capacity(rb);
	c = class_of(cap);
	p->busy--;
	p->busy_bytes -= cap;
	/* A ring whose capacity is not exactly its class (cannot happen for
	 * rings made here) is freed rather than filed under the wrong class. */
	if (c >= 0 && cap == net_buf_class_size(cap) && p->nfree[c] < p->keep &&
	    p->idle_bytes + cap <= p->keep_bytes) {
		pc_ringbuf_reset(rb);
		p->free[c][p->nfree[c]++] = rb;
		p->idle_bytes += cap;
		return;
	}
	ring_free(p, rb);
}

struct pc_ringbuf *net_buf_grow(struct net_bufpool *p, struct pc_ringbuf *rb, size_t bytes)
{
	struct pc_ringbuf *n;
	struct iovec iov[2];
	int k;

	if (bytes < pc_ringbuf_used(rb))
		return NULL;
	n = net_buf_get(p, bytes);
	if (!n)
		return NULL;
	k = pc_ringbuf_read_iov(rb, iov);
	for (int i = 0; i < k; i++)
		pc_ringbuf_write(n, iov[i].iov_base, iov[i].iov_len);
	net_buf_put(p, rb);
	return n;
}

int net_bufpool_validate(const struct net_bufpool *p, char *err, size_t errlen)
{
	size_t idle = 0;

	for (unsigned c = 0; c < NET_BUF_CLASSES; c++) {
		if (p->nfree[c] > p->keep)
			return sys_errmsg(err, errlen, -EINVAL, "class %u: %u idle, expected at most %u",
					 c, (unsigned)p->nfree[c], (unsigned)p->keep);
		for (unsigned i = 0; i < p->nfree[c]; i++) {
			const struct pc_ringbuf *rb = p->free[c][i];

			if (pc_ringbuf_capacity(rb) != (size_t)1 << (NET_BUF_MIN_SHIFT + c) ||
			    pc_ringbuf_used(rb))
				return sys_errmsg(err, errlen, -EINVAL,
						 "class %u entry %u: %zu bytes holding %zu, expected "
						 "%zu holding 0", c, i, pc_ringbuf_capacity(rb),
						 pc_ringbuf_used(rb),
						 (size_t)1 << (NET_BUF_MIN_SHIFT + c));
			idle += pc_ringbuf_capacity(rb);
		}
	}
	int rc = net_arena_validate(&p->arena, err, errlen);

	if (rc)
		return rc;
	if (idle != p->idle_bytes || idle > p->keep_bytes)
		return sys_errmsg(err, errlen, -EINVAL,
				 "%zu idle bytes, count says %zu, expected at most %zu", idle,
				 (size_t)p->idle_bytes, (size_t)p->keep_bytes);
	return 0;
}
