/* percore: AddressSanitizer poisoning for the pools (slab, arena).
 *
 * In builds with PC_ASAN (make test), memory a pool holds but has not handed
 * out is poisoned, so a use after free, a double free or an overrun into
 * the pool's spare room is reported by ASan at the faulting access. In
 * other builds the macros compile to nothing. */
#ifndef PERCORE_ASAN_H
#define PERCORE_ASAN_H

#include <stddef.h>

#ifdef PC_ASAN
#include <sanitizer/asan_interface.h>
#define PC_ASAN_POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define PC_ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define PC_ASAN_IS_POISONED(p) __asan_address_is_poisoned(p)
#else
#define PC_ASAN_POISON(p, n)   ((void)(p), (void)(n))
#define PC_ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#define PC_ASAN_IS_POISONED(p) ((void)(p), 0)
#endif

#endif
