/* SPDX-License-Identifier: MIT */
/* percore: striped counter, creation and reading (adds are inline). */
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "percore/counter.h"

unsigned pc_counter__cpu_slow(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : (unsigned)cpu;
}

struct pc_counter *pc_counter_create(size_t ncells)
{
	struct pc_counter *c;

	if (ncells == 0) {
		long n = sysconf(_SC_NPROCESSORS_CONF);

		ncells = n > 0 ? (size_t)n : 1;
	}
	if (ncells > ((size_t)1 << 20))
		return NULL;
	ncells = pc_next_pow2(ncells);
	c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	c->_cells = aligned_alloc(PC_CACHE_PAD, ncells * sizeof(struct pc_counter_cell));
	if (!c->_cells) {
		free(c);
		return NULL;
	}
	for (size_t i = 0; i < ncells; i++)
		atomic_init(&c->_cells[i]._v, 0);
	c->_mask = ncells - 1;
	return c;
}

void pc_counter_destroy(struct pc_counter *c)
{
	if (!c)
		return;
	free(c->_cells);
	free(c);
}

int64_t pc_counter_sum(const struct pc_counter *c)
{
	uint64_t sum = 0;

	for (size_t i = 0; i <= c->_mask; i++)
		sum += atomic_load_explicit(&c->_cells[i]._v, memory_order_relaxed);
	return (int64_t)sum;
}

int64_t pc_counter_reset(struct pc_counter *c)
{
	uint64_t sum = 0;

	for (size_t i = 0; i <= c->_mask; i++)
		sum += atomic_exchange_explicit(&c->_cells[i]._v, 0, memory_order_relaxed);
	return (int64_t)sum;
}
