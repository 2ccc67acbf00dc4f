/* percore: byte ring buffer set-up (mirrored mapping, plain allocation).
 * The data path is inline in include/percore/ringbuf.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "percore/ringbuf.h"

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
	rb->_buf = buf;
	rb->_mask = cap - 1;
	rb->_head = rb->_tail = 0;
	rb->_mirrored = mirrored;
	return 0;
}

void pc_ringbuf_destroy(struct pc_ringbuf *rb)
{
	if (!rb->_buf)
		return;
	if (rb->_mirrored)
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
