/* SPDX-License-Identifier: MIT */
/* percore: CRC32C (Castagnoli), the checksum of the journal's records.
 *
 * Three implementations give the same result: the SSE4.2 crc32
 * instruction (x86-64, chosen at run time when the CPU has it), the ARMv8
 * CRC instructions (where the compiler targets them, __ARM_FEATURE_CRC32),
 * and a table. pc_crc32c() uses the fastest one this machine has. Any
 * thread.
 */
#ifndef PERCORE_CRC32C_H
#define PERCORE_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"

PC_BEGIN_DECLS

/* The implementations, for pc_crc32c_with() and pc_crc32c_available(). */
enum pc_crc32c_impl {
	PC_CRC32C_TABLE = 0,
	PC_CRC32C_SSE42 = 1,
	PC_CRC32C_ARMV8 = 2,
};

/* The CRC32C of n bytes at p, continuing from crc: 0 to start, the
 * previous result to extend it (the checksum of a || b is
 * pc_crc32c(pc_crc32c(0, a, na), b, nb)). */
PC_API uint32_t pc_crc32c(uint32_t crc, const void *p, size_t n);

/* Whether this build on this CPU can run impl. */
PC_API bool pc_crc32c_available(enum pc_crc32c_impl impl);

/* pc_crc32c() with the implementation impl (for tests and benchmarks).
 * An implementation that is not available computes with the table. */
PC_API uint32_t pc_crc32c_with(enum pc_crc32c_impl impl, uint32_t crc, const void *p, size_t n);

PC_END_DECLS

#endif
