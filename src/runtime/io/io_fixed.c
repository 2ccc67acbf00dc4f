/* SPDX-License-Identifier: MIT */
/* percore io: the shard's registered buffer region.
 *
 * io_uring reads and writes into a registered buffer skip pinning and
 * mapping the user pages on every request. A shard with a file ring
 * registers one region of IO_FIXED_PAGES pages on its NUMA node, and
 * pc_file_buf_alloc() hands out runs of its pages while they last (then
 * plain pages). One region per shard, registered once, because the
 * buffers are freed on any shard: a table of buffers registered one at a
 * time would keep an entry after its buffer's address was unmapped and
 * reused, and a fixed request would then reach the old pages.
 *
 * Ownership of a page is one bit: only the owning shard sets bits
 * (allocation), any thread clears them (pc_file_buf_free, an atomic AND),
 * so the owner never finds a page busy that it thinks free. Frees find
 * their region in a process-wide table. A region outlives its shard while
 * buffers of it are out (off the ring then; the last free unmaps it). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"
#include "mem/pages.h"

/* Measured beside fio on a virtio disk, 3 rounds of 5 repetitions, ratio
 * to fio in the same round, medians with / without the region: 1.01x /
 * 0.93x reads and 1.00x / 0.91x writes at depth 1, 1.08x / 0.98x reads
 * and 1.05x / 1.05x writes at depth 32 (docs/BENCHMARKS.md, Files).
 * 1 MiB of 4 KiB pages: depth 128 of 8 KiB, and under the 8 MiB that
 * RLIMIT_MEMLOCK allows an unprivileged process on Debian for 8 shards. */
#define IO_FIXED_PAGES 256u
#define WORD_BITS 64u
#define WORDS (IO_FIXED_PAGES / WORD_BITS)
/* Regions at once in the process: one per shard of every engine. */
#define IO_FIXED_MAX 1024u

struct io_fixed {
	unsigned char *base;
	unsigned slot;                /* its entry in the table */
	/* One for the shard while it lives, one per page handed out: whoever
	 * takes it to zero (the shard closing, or the last free after that)
	 * unmaps the region, once. */
	_Atomic unsigned long refs;
	_Atomic uint64_t used[WORDS]; /* a set bit: the page is handed out */
};

/* The regions of the process, for frees. A region's entry is read only
 * while a page of it is out, which keeps the region alive; the bases are
 * read first, so an entry being reused is never dereferenced. */
static _Atomic uintptr_t table_base[IO_FIXED_MAX];
static struct io_fixed *_Atomic table_fx[IO_FIXED_MAX];
/* Entries ever used: a free of a plain buffer looks at these only. */
static _Atomic unsigned table_len;

static size_t page_bytes(void)
{
	return mem_pages_round(1);
}

static size_t region_bytes(void)
{
	return (size_t)IO_FIXED_PAGES * page_bytes();
}

static bool publish(struct io_fixed *fx)
{
	for (unsigned i = 0; i < IO_FIXED_MAX; i++) {
		uintptr_t none = 0;

		if (atomic_compare_exchange_strong(&table_base[i], &none, (uintptr_t)fx->base)) {
			atomic_store_explicit(&table_fx[i], fx, memory_order_release);
			fx->slot = i;
			for (unsigned len = atomic_load(&table_len);
			     len < i + 1 && !atomic_compare_exchange_weak(&table_len, &len, i + 1);)
				;
			return true;
		}
	}
	return false;
}

static void release(struct io_fixed *fx, unsigned long n)
{
	if (atomic_fetch_sub_explicit(&fx->refs, n, memory_order_acq_rel) != n)
		return;
	atomic_store_explicit(&table_fx[fx->slot], NULL, memory_order_relaxed);
	atomic_store_explicit(&table_base[fx->slot], 0, memory_order_release);
	mem_pages_free(fx->base, region_bytes());
	free(fx);
}

void io_fixed_open(struct io_shard *io)
{
	struct io_fixed *fx = calloc(1, sizeof(*fx));
	struct iovec iov;

	if (!fx)
		return;
	fx->base = mem_pages_alloc(region_bytes(), io->node);
	iov = (struct iovec){ .iov_base = fx->base, .iov_len = region_bytes() };
	/* Without it (RLIMIT_MEMLOCK, an old kernel) buffers are plain pages. */
	if (!fx->base || io_uring_register_buffers(&io->ring, &iov, 1) || !publish(fx)) {
		if (fx->base)
			mem_pages_free(fx->base, region_bytes());
		free(fx);
		return;
	}
	atomic_init(&fx->refs, 1);
	io->fixed = fx;
}

/* The shard is going; the registration ends with its ring. The region
 * stays mapped while buffers of it are out. */
void io_fixed_close(struct io_shard *io)
{
	struct io_fixed *fx = io->fixed;

	io->fixed = NULL;
	if (fx)
		release(fx, 1);
}

static bool page_used(struct io_fixed *fx, unsigned p)
{
	return atomic_load_explicit(&fx->used[p / WORD_BITS], memory_order_acquire) >>
		       (p % WORD_BITS) & 1u;
}

static void mark(struct io_fixed *fx, unsigned first, unsigned n, bool used)
{
	for (unsigned p = first; p < first + n; p++) {
		uint64_t bit = 1ull << (p % WORD_BITS);

		if (used)
			atomic_fetch_or_explicit(&fx->used[p / WORD_BITS], bit, memory_order_relaxed);
		else
			atomic_fetch_and_explicit(&fx->used[p / WORD_BITS], ~bit,
						  memory_order_release);
	}
}

static unsigned pages_of(size_t bytes)
{
	return (unsigned)((bytes + page_bytes() - 1) / page_bytes());
}

void *io_fixed_alloc(struct io_shard *io, size_t bytes)
{
	struct io_fixed *fx = io ? io->fixed : NULL;
	unsigned n, run = 0;

	if (!fx || bytes == 0 || bytes > region_bytes())
		return NULL;
	n = pages_of(bytes);
	for (unsigned p = 0; p < IO_FIXED_PAGES; p++) {
		run = page_used(fx, p) ? 0 : run + 1;
		if (run == n) {
			unsigned char *at = fx->base + (size_t)(p + 1 - n) * page_bytes();

			atomic_fetch_add_explicit(&fx->refs, n, memory_order_relaxed);
			mark(fx, p + 1 - n, n, true);
			memset(at, 0, (size_t)n * page_bytes()); /* pc_file_buf_alloc: zeroed */
			return at;
		}
	}
	return NULL;
}

static struct io_fixed *region_of(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	unsigned len = atomic_load_explicit(&table_len, memory_order_acquire);

	for (unsigned i = 0; i < len; i++) {
		uintptr_t b = atomic_load_explicit(&table_base[i], memory_order_acquire);

		if (b && a >= b && a < b + region_bytes())
			return atomic_load_explicit(&table_fx[i], memory_order_acquire);
	}
	return NULL;
}

bool io_fixed_free(void *p, size_t bytes)
{
	struct io_fixed *fx = region_of(p);
	unsigned n;

	if (!fx)
		return false;
	n = pages_of(bytes);
	mark(fx, (unsigned)(((unsigned char *)p - fx->base) / page_bytes()), n, false);
	release(fx, n);
	return true;
}

int io_fixed_index(const struct io_shard *io, const void *buf, size_t len)
{
	const struct io_fixed *fx = io->fixed;
	const unsigned char *b = buf;

	if (!fx || b < fx->base || b + len > fx->base + region_bytes())
		return -1;
	return 0;
}
