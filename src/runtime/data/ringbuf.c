/* SPDX-License-Identifier: MIT */
/* percore: byte ring buffer set-up (mirrored mapping, plain allocation).
 * The data path is inline in include/percore/ringbuf.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "percore/ringbuf.h"
#include "sys/errmsg.h"

/* Map the same memfd pages at base and base + cap. The range is reserved
 * first (PROT_NONE) so both halves land back to back and nothing else can
 * be mapped in between. */
static int map_mirrored(size_t cap, uint8_t **out)
{
	int fd = memfd_create("percore-ringbuf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = 0;
	void *base = MAP_FAILED;
	if (ftruncate(fd, (off_t)cap) < 0) {
		err = -errno;
		goto out;
	}
	base = mmap(NULL, 2 * cap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto out;
	}
	for (int half = 0; half < 2; half++) {
		void *want = (uint8_t *)base + (size_t)half * cap;
		void *got = mmap(want, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
		if (got != want) {
			err = got == MAP_FAILED ? -errno : -ENOMEM;
			munmap(base, 2 * cap);
			goto out;
		}
	}
	*out = base;
out:
	/* The mappings keep the pages alive; the descriptor is not needed. */
	close(fd);
	return err;
}

static void set_up(struct pc_ringbuf *rb, uint8_t *buf, size_t cap, bool mirrored, bool lent)
{
	*rb = (struct pc_ringbuf){ ._buf = buf, ._mask = cap - 1, ._mirrored = mirrored, ._lent = lent };
}

int pc_ringbuf_init(struct pc_ringbuf *rb, size_t capacity, unsigned flags)
{
	bool mirrored = flags & PC_RINGBUF_MIRRORED;
	uint8_t *buf = NULL;

	if (capacity == 0 || capacity > PC_RINGBUF_MAX_CAPACITY || (flags & ~PC_RINGBUF_MIRRORED))
		return -EINVAL;
	size_t cap = pc_next_pow2(capacity);
	if (mirrored) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		if (cap < page)
			cap = page;
		int err = map_mirrored(cap, &buf);
		if (err)
			return err;
	} else {
		/* Second half: where a wrapped region is made contiguous. */
		buf = aligned_alloc(PC_CACHE_LINE, 2 * cap < PC_CACHE_LINE ? PC_CACHE_LINE : 2 * cap);
		if (!buf)
			return -ENOMEM;
	}
	set_up(rb, buf, cap, mirrored, false);
	return 0;
}

int pc_ringbuf_init_at(struct pc_ringbuf *rb, void *mem, size_t capacity)
{
	if (!mem || !capacity || capacity > PC_RINGBUF_MAX_CAPACITY || (capacity & (capacity - 1)))
		return -EINVAL;
	set_up(rb, mem, capacity, false, true);
	return 0;
}

void pc_ringbuf_destroy(struct pc_ringbuf *rb)
{
	if (!rb->_buf)
		return;
	if (rb->_lent)
		; /* the caller's */
	else if (rb->_mirrored)
		munmap(rb->_buf, 2 * pc_ringbuf_capacity(rb));
	else
		free(rb->_buf);
	rb->_buf = NULL;
}

const uint8_t *pc__ringbuf_unwrap(struct pc_ringbuf *rb, size_t n)
{
	size_t cap = pc_ringbuf_capacity(rb);
	size_t off = (size_t)rb->_head & rb->_mask, first = cap - off;

	/* Bytes [off, cap) are already in place; their continuation, now at
	 * the buffer's start, is copied right after its end. */
	memcpy(rb->_buf + cap, rb->_buf, n - first);
	return rb->_buf + off;
}

/* Mirrored: the page just before the end and the page at the start must
 * show the same bytes through both mappings. Two bytes per end are enough
 * to catch a mirror that maps other memory; the whole ring would cost
 * O(capacity). */
static int mirror_check(const struct pc_ringbuf *rb, size_t cap, char *err, size_t errlen)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const size_t at[] = { 0, cap - 1 };

	if (cap % page)
		return sys_errmsg(err, errlen, -EINVAL,
				 "mirrored capacity %zu is not a multiple of the page size %zu", cap,
				 page);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (rb->_buf[at[i]] != rb->_buf[at[i] + cap])
			return sys_errmsg(err, errlen, -EINVAL,
					 "byte %zu is 0x%02x, its mirror at %zu is 0x%02x, expected "
					 "equal", at[i], rb->_buf[at[i]], at[i] + cap,
					 rb->_buf[at[i] + cap]);
	return 0;
}

int pc_ringbuf_validate(const struct pc_ringbuf *rb, char *err, size_t errlen)
{
	size_t cap;

	if (!rb || !rb->_buf)
		return sys_errmsg(err, errlen, -EINVAL, "no buffer: not initialised or destroyed");
	cap = rb->_mask + 1;
	if (!PC_IS_POW2(cap) || cap > PC_RINGBUF_MAX_CAPACITY)
		return sys_errmsg(err, errlen, -EINVAL,
				 "capacity %zu (mask 0x%zx), expected a power of two up to %zu",
				 cap, rb->_mask, PC_RINGBUF_MAX_CAPACITY);
	if (rb->_tail - rb->_head > cap)
		return sys_errmsg(err, errlen, -EINVAL,
				 "head %llu, tail %llu: %llu bytes used, expected 0..%zu "
				 "(head <= tail <= head + capacity)",
				 (unsigned long long)rb->_head, (unsigned long long)rb->_tail,
				 (unsigned long long)(rb->_tail - rb->_head), cap);
	return rb->_mirrored ? mirror_check(rb, cap, err, errlen) : 0;
}
