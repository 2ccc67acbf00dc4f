/* SPDX-License-Identifier: MIT */
/* CRC-64/Jones (crc64.h), a byte at a time through a table built once. */
#include "crc64.h"

#include <pthread.h>

/* The polynomial with its bits reversed, for the reflected form. */
#define POLY_REFLECTED 0x95ac9329ac4bc9b5ull

static uint64_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_build(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ POLY_REFLECTED : c >> 1;
		table[i] = c;
	}
}

uint64_t kv_crc64(uint64_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	pthread_once(&table_once, table_build);
	for (size_t i = 0; i < n; i++)
		crc = table[(crc ^ b[i]) & 0xff] ^ crc >> 8;
	return crc;
}
