/* SPDX-License-Identifier: MIT */
/* percore data: CRC32C three ways (percore/crc32c.h). The instructions
 * take 8 bytes a step; the table takes one. Each keeps the CRC inverted
 * while it runs, so that the public value starts at 0. */
#include <string.h>

#include "percore/crc32c.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#endif

/* The reflected Castagnoli polynomial. */
#define POLY 0x82f63b78u

static uint32_t table[256];

__attribute__((constructor)) static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY & (0u - (c & 1)));
		table[i] = c;
	}
}

static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t n)
{
	while (n--)
		crc = (crc >> 8) ^ table[(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const unsigned char *p,
							     size_t n)
{
	uint64_t c = crc;

	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c = _mm_crc32_u64(c, w);
	}
	crc = (uint32_t)c;
	while (n--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}
#endif

#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
static uint32_t crc_armv8(uint32_t crc, const unsigned char *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		crc = __crc32cd(crc, w);
	}
	while (n--)
		crc = __crc32cb(crc, *p++);
	return crc;
}
#endif

bool pc_crc32c_available(enum pc_crc32c_impl impl)
{
	switch (impl) {
	case PC_CRC32C_TABLE:
		return true;
	case PC_CRC32C_SSE42:
#if defined(__x86_64__)
		return __builtin_cpu_supports("sse4.2");
#else
		return false;
#endif
	case PC_CRC32C_ARMV8:
#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
		return true;
#else
		return false;
#endif
	}
	return false;
}

uint32_t pc_crc32c_with(enum pc_crc32c_impl impl, uint32_t crc, const void *p, size_t n)
{
	crc = ~crc;
	if (!pc_crc32c_available(impl))
		impl = PC_CRC32C_TABLE;
	switch (impl) {
#if defined(__x86_64__)
	case PC_CRC32C_SSE42:
		crc = crc_sse42(crc, p, n);
		break;
#endif
#if defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
	case PC_CRC32C_ARMV8:
		crc = crc_armv8(crc, p, n);
		break;
#endif
	default:
		crc = crc_table(crc, p, n);
		break;
	}
	return ~crc;
}

/* The implementation pc_crc32c() uses, chosen once. */
static enum pc_crc32c_impl best(void)
{
	static enum pc_crc32c_impl chosen = (enum pc_crc32c_impl)-1;
	enum pc_crc32c_impl c = __atomic_load_n(&chosen, __ATOMIC_RELAXED);

	if (c == (enum pc_crc32c_impl)-1) {
		c = pc_crc32c_available(PC_CRC32C_SSE42)   ? PC_CRC32C_SSE42
		    : pc_crc32c_available(PC_CRC32C_ARMV8) ? PC_CRC32C_ARMV8
							   : PC_CRC32C_TABLE;
		__atomic_store_n(&chosen, c, __ATOMIC_RELAXED);
	}
	return c;
}

uint32_t pc_crc32c(uint32_t crc, const void *p, size_t n)
{
	return pc_crc32c_with(best(), crc, p, n);
}
