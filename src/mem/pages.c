/* percore mem: the page source. Until the sys layer's NUMA allocator is in,
 * pages come from anonymous mmap: the kernel places them on the node of the
 * thread that first touches them, which is the owning shard when it builds
 * its own pools after pinning. node is then a hint only. */
#include <sys/mman.h>
#include <unistd.h>

#include "mem/pages.h"

static size_t page_size(void)
{
	long n = sysconf(_SC_PAGESIZE); /* from the aux vector: no system call */

	return n > 0 ? (size_t)n : 4096;
}

size_t pc_pages_round(size_t bytes)
{
	size_t page = page_size();

	if (bytes > (size_t)-1 - page)
		return 0;
	return (bytes + page - 1) & ~(page - 1);
}

void *pc_pages_alloc(size_t bytes, int node)
{
	void *p;

	(void)node;
	if (bytes == 0)
		return NULL;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void pc_pages_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}
