/* SPDX-License-Identifier: MIT */
/* percore: what every public header shares: the export and linkage
 * markers, cache-line layout, compiler hints and small helpers, and the
 * atomics the inline queue code uses, in a form both C and C++ read.
 *
 * The headers define no feature-test macro and need none: each compiles
 * alone under strict ISO C11 and as C++. A program that works on the
 * cpu_set_t of cgroup.h, cpulist.h, place.h or topo.h with glibc's CPU_*
 * macros needs _GNU_SOURCE for those, defined before its first system
 * header (g++ defines it already). */
#ifndef PERCORE_DEFS_H
#define PERCORE_DEFS_H

#include <stddef.h>
#include <stdint.h>

/* Marks a declaration the shared libraries export. The libraries are built
 * with hidden visibility: what a header does not mark is internal. */
#define PC_API __attribute__((visibility("default")))

/* C linkage for the declarations between them, when read by C++. */
#ifdef __cplusplus
#define PC_BEGIN_DECLS extern "C" {
#define PC_END_DECLS   }
#else
#define PC_BEGIN_DECLS
#define PC_END_DECLS
#endif

#ifdef __cplusplus
#define PC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define PC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

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

#define PC_LIKELY(x)   __builtin_expect(!!(x), 1)
#define PC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define PC_INLINE      static inline __attribute__((always_inline))
#define PC_UNUSED      __attribute__((unused))
#define PC_NOINLINE    __attribute__((noinline))
#define PC_IS_POW2(x)  ((x) != 0 && ((x) & ((x) - 1)) == 0)
#define PC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The struct of type `type` whose member `member` is at ptr: from an
 * intrusive link (a struct pc_timer, a list node) back to its owner. The
 * type check makes a wrong member a compile error. A GNU statement
 * expression, as in C++ with g++ and clang. */
#define pc_container_of(ptr, type, member)                                     \
	__extension__({                                                        \
		__typeof__(((type *)0)->member) *pc_mptr_ = (ptr);             \
		(type *)(void *)((char *)pc_mptr_ - offsetof(type, member));   \
	})

/* Keep the optimiser from deleting a value a benchmark computed. */
#define PC_DO_NOT_OPTIMIZE(v) __asm__ volatile("" : : "g"(v) : "memory")

/* Spin-wait hint: frees the pipeline for the SMT sibling. */
static inline void pc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#endif
}

/* Smallest power of two >= x (x >= 1, x <= 2^63). */
static inline size_t pc_next_pow2(size_t x)
{
	return x <= 1 ? 1 : (size_t)1 << (64 - __builtin_clzll((unsigned long long)x - 1));
}

/* A 128-bit unsigned integer (sums that cannot overflow, wide multiplies).
 * A GNU extension: __extension__ keeps -Wpedantic quiet about it. */
__extension__ typedef unsigned __int128 pc_uint128_t;

/* Atomics. C sees C11 <stdatomic.h>; C++ sees std::atomic<T>, which has the
 * same size, alignment and lock-free representation for the types used
 * here (integers and pointers). The inline queue code names the operations
 * and orders through these macros, so a C++ program's global namespace gets
 * no using-declarations from the headers. */
#ifdef __cplusplus
#include <atomic>
#define PC_ATOMIC(T) std::atomic<T>
#define PC_ATOMIC_NS_ std::
#else
#include <stdatomic.h>
#define PC_ATOMIC(T) _Atomic(T)
#define PC_ATOMIC_NS_
#endif
#define PC_ATOMIC_LOAD(p, mo)          PC_ATOMIC_NS_ atomic_load_explicit((p), (mo))
#define PC_ATOMIC_STORE(p, v, mo)      PC_ATOMIC_NS_ atomic_store_explicit((p), (v), (mo))
#define PC_ATOMIC_FETCH_ADD(p, v, mo)  PC_ATOMIC_NS_ atomic_fetch_add_explicit((p), (v), (mo))
/* Weak compare-and-exchange: *p from *expected to desired; on failure
 * *expected gets the value found. */
#define PC_ATOMIC_CAS_WEAK(p, expected, desired, mo_ok, mo_fail)                \
	PC_ATOMIC_NS_ atomic_compare_exchange_weak_explicit((p), (expected), (desired), \
							    (mo_ok), (mo_fail))
#define PC_MO_RELAXED PC_ATOMIC_NS_ memory_order_relaxed
#define PC_MO_ACQUIRE PC_ATOMIC_NS_ memory_order_acquire
#define PC_MO_RELEASE PC_ATOMIC_NS_ memory_order_release
#define PC_MO_ACQ_REL PC_ATOMIC_NS_ memory_order_acq_rel

/* Pool poisoning for AddressSanitizer. The library's sanitizer builds, and
 * a program built with ASan against one, define PC_ASAN so that the inline
 * pool code (slab.h, arena.h) keeps ASan's view of pool memory in step with
 * the library's; otherwise these compile to nothing. */
#ifdef PC_ASAN
#include <sanitizer/asan_interface.h>
#define PC_ASAN_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define PC_ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define PC_ASAN_POISON(p, n)   ((void)(p), (void)(n))
#define PC_ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
