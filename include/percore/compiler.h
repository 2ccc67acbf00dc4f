/* percore: compiler helpers and cache-line layout, shared by every layer. */
#ifndef PERCORE_COMPILER_H
#define PERCORE_COMPILER_H

#include <stddef.h>

/* A cache line as the hardware moves it. x86-64's adjacent-line prefetcher
 * pulls lines in pairs, so fields written by different cores are kept 128
 * bytes apart there; 64 is enough elsewhere. */
#define PC_CACHE_LINE 64
#if defined(__x86_64__)
#define PC_CACHE_PAD 128
#else
#define PC_CACHE_PAD 64
#endif

/* Start a field (and so the rest of the block) on its own padded line. */
#define PC_CACHE_ALIGNED __attribute__((aligned(PC_CACHE_PAD)))
/* Pad the end of a struct so nothing placed after it shares its last line. */
#define PC_CACHE_GUARD(name) char name[PC_CACHE_PAD] __attribute__((aligned(PC_CACHE_PAD)))

#define PC_LIKELY(x)   __builtin_expect(!!(x), 1)
#define PC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PC_INLINE      static inline __attribute__((always_inline))
#define PC_NOINLINE    __attribute__((noinline))
#define PC_UNUSED      __attribute__((unused))

/* The struct of type `type` whose member `member` is at ptr: from an
 * intrusive link (a struct pc_timer, a list node) back to its owner. The
 * type check makes a wrong member a compile error. */
#define pc_container_of(ptr, type, member)                                     \
	({                                                                     \
		__typeof__(((type *)0)->member) *pc_mptr_ = (ptr);             \
		(type *)(void *)((char *)pc_mptr_ - offsetof(type, member));   \
	})

/* Keep the optimiser from deleting a value a benchmark computed. */
#define PC_DO_NOT_OPTIMIZE(v) __asm__ volatile("" : : "g"(v) : "memory")
#define PC_COMPILER_BARRIER() __asm__ volatile("" ::: "memory")

/* Spin-wait hint: frees the pipeline for the SMT sibling. */
static inline void pc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

#define PC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define PC_IS_POW2(x)   ((x) != 0 && ((x) & ((x) - 1)) == 0)

/* Smallest power of two >= x (x >= 1, x <= 2^63). */
static inline size_t pc_next_pow2(size_t x)
{
	return x <= 1 ? 1 : (size_t)1 << (64 - __builtin_clzll((unsigned long long)x - 1));
}

#endif
