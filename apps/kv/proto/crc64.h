/* SPDX-License-Identifier: MIT */
/* CRC-64 as Redis computes it for RDB files and DUMP payloads: the Jones
 * polynomial 0xad93d23594c935a9, bits reflected, initial value 0, no
 * final xor ("123456789" gives 0xe9c6d914c4b8d9ca). Any thread.
 * Internal to apps/kv. */
#ifndef KV_CRC64_H
#define KV_CRC64_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of p[0..n) continued from crc (0 to start). */
uint64_t kv_crc64(uint64_t crc, const void *p, size_t n);

#endif
