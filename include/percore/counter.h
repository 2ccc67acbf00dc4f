/* SPDX-License-Identifier: MIT */
/* percore: striped counter.
 *
 * A count many threads add to and few read (requests served, bytes sent):
 * one cell per CPU, each on its own padded cache line, so adds from
 * different cores never contend for a line; reading sums the cells. The
 * idea of Java's LongAdder, with cells indexed by CPU (or shard) instead of
 * a per-thread hash.
 *
 * Ordering: every cell update is a relaxed atomic. A sum is exact when no
 * add runs concurrently; otherwise it includes every add that finished
 * before the sum began, and any subset of those in flight. Counts wrap
 * modulo 2^64 like unsigned arithmetic (the signed view of the sum stays
 * right while the true total fits in int64_t).
 */
#ifndef PERCORE_COUNTER_H
#define PERCORE_COUNTER_H

#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>

PC_BEGIN_DECLS
#define PC_COUNTER_HAVE_RSEQ 1
#endif
#endif
#ifndef PC_COUNTER_HAVE_RSEQ
#define PC_COUNTER_HAVE_RSEQ 0
#endif

/* One cell: written by whichever threads run on its CPU (or own its shard). */
struct pc_counter_cell {
	PC_CACHE_ALIGNED PC_ATOMIC(uint64_t) _v;
};

/* A sharded counter. Opaque to callers; public so that the add functions
 * can be inline. */
struct pc_counter {
	struct pc_counter_cell *_cells;
	size_t _mask;           /* cells - 1; written at create only */
};

/* A counter with one cell per possible CPU (ncells 0), or ncells cells
 * rounded up to a power of two (e.g. one per shard). Returns NULL when
 * memory runs out or ncells is absurd (> 2^20). */
PC_API struct pc_counter *pc_counter_create(size_t ncells);

/* Free the counter (NULL ignored). No thread may use it any more. */
PC_API void pc_counter_destroy(struct pc_counter *c);

/* Number of cells. Any thread. */
static inline size_t pc_counter_cells(const struct pc_counter *c)
{
	return c->_mask + 1;
}

/* Add v to the cell at index (taken modulo the cell count): a shard passes
 * its own index. Any thread; contention-free when each thread uses its own
 * index. */
PC_INLINE void pc_counter_add_at(struct pc_counter *c, size_t index, int64_t v)
{
	PC_ATOMIC_FETCH_ADD(&c->_cells[index & c->_mask]._v, (uint64_t)v, PC_MO_RELAXED);
}

/* sched_getcpu(), for when there is no rseq area. Internal. */
PC_API unsigned pc_counter__cpu_slow(void);

/* The CPU the caller runs on. With glibc's restartable-sequences area
 * (glibc >= 2.35 registers one per thread, __rseq_size says so) it is one
 * load: the kernel keeps cpu_id current across migrations. Otherwise
 * sched_getcpu(), a vDSO call of several nanoseconds. Any thread. */
PC_INLINE unsigned pc_counter__cpu(void)
{
#if PC_COUNTER_HAVE_RSEQ
	if (PC_LIKELY(__rseq_size != 0)) {
		unsigned cpu;

		/* one load relative to the thread pointer; volatile because
		 * the kernel rewrites it when the thread migrates */
		__asm__ volatile("movl %%fs:(%1), %0"
				 : "=r"(cpu)
				 : "r"(__rseq_offset + offsetof(struct rseq, cpu_id)));
		return cpu;
	}
#endif
	return pc_counter__cpu_slow();
}

/* Add v to the cell of the CPU the caller runs on. A thread that migrates
 * between reading its CPU and adding lands on another CPU's cell: still
 * counted exactly (cells are atomic), only briefly shared. Any thread. */
PC_INLINE void pc_counter_add(struct pc_counter *c, int64_t v)
{
	pc_counter_add_at(c, pc_counter__cpu(), v);
}

/* Add v to cell index without a locked instruction: a relaxed load and
 * store. Only for a cell with a single writer (the shard that owns index);
 * two threads using this on one cell lose counts. */
PC_INLINE void pc_counter_add_owned(struct pc_counter *c, size_t index, int64_t v)
{
	PC_ATOMIC(uint64_t) *cell = &c->_cells[index & c->_mask]._v;

	PC_ATOMIC_STORE(cell, PC_ATOMIC_LOAD(cell, PC_MO_RELAXED) + (uint64_t)v, PC_MO_RELAXED);
}

/* The total over every cell (see the header comment for what it includes
 * while adds run). Any thread. */
PC_API int64_t pc_counter_sum(const struct pc_counter *c);

/* Set every cell to zero and return what they held. Each cell is taken with
 * an atomic exchange, so an add running concurrently is counted either in
 * the returned total or in the counter afterwards, never lost (but
 * pc_counter_add_owned on the same cell can lose it). Any thread. */
PC_API int64_t pc_counter_reset(struct pc_counter *c);

PC_END_DECLS

#endif
