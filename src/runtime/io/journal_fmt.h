/* SPDX-License-Identifier: MIT */
/* percore io: the journal's on-disk format, shared by the writer
 * (journal.c) and the recovery iterator (journal_iter.c). */
#ifndef PERCORE_SRC_IO_JOURNAL_FMT_H
#define PERCORE_SRC_IO_JOURNAL_FMT_H

#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "percore/crc32c.h"
#include "percore/journal.h"

/* A segment's name: its first LSN in 20 decimal digits, so that names
 * sort as LSNs do. */
#define JRN_SUFFIX ".wal"
#define JRN_NAME_LEN (20 + sizeof(JRN_SUFFIX) - 1)

static inline void jrn_name(char *out, size_t len, uint64_t first_lsn)
{
	snprintf(out, len, "%020llu" JRN_SUFFIX, (unsigned long long)first_lsn);
}

/* The CRC of a record: its length and LSN fields, then its payload. */
static inline uint32_t jrn_crc(const unsigned char *hdr, const void *p, size_t len)
{
	uint32_t crc = pc_crc32c(0, hdr, 4);

	crc = pc_crc32c(crc, hdr + 8, 8);
	return pc_crc32c(crc, p, len);
}

/* Write the header of a record of len bytes at p with that lsn. */
static inline void jrn_header(unsigned char *hdr, uint64_t lsn, const void *p, size_t len)
{
	uint32_t l = htole32((uint32_t)len), crc;
	uint64_t n = htole64(lsn);

	memcpy(hdr, &l, 4);
	memcpy(hdr + 8, &n, 8);
	crc = htole32(jrn_crc(hdr, p, len));
	memcpy(hdr + 4, &crc, 4);
}

static inline uint32_t jrn_le32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t jrn_le64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

#endif
