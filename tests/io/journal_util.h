/* SPDX-License-Identifier: MIT */
/* Records the journal tests write and check: record k's payload is a
 * function of k alone, so any reader can tell a right record from a
 * wrong one. Its length (20 to 219 bytes) never has a zero low byte, so a
 * header cut after its first byte never reads as the zeros of a clean
 * end. */
#ifndef PERCORE_TESTS_IO_JOURNAL_UTIL_H
#define PERCORE_TESTS_IO_JOURNAL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "percore/journal.h"

#define REC_MAX 220

static inline size_t rec_len(uint64_t lsn)
{
	return 20 + (size_t)(lsn * 37 % 200);
}

static inline void rec_fill(uint64_t lsn, unsigned char *p)
{
	for (size_t i = 0; i < rec_len(lsn); i++)
		p[i] = (unsigned char)(lsn * 131 + i);
}

static inline bool rec_ok(uint64_t lsn, const void *p, size_t len)
{
	unsigned char want[REC_MAX];

	rec_fill(lsn, want);
	return len == rec_len(lsn) && !memcmp(p, want, len);
}

/* Read the journal in dir: how many records checked out in order from
 * LSN 1 (stopping at the first that does not), the iterator's last
 * answer in *end, its position in *off. */
static inline uint64_t recover_count(const char *dir, int *end, uint64_t *off)
{
	struct pc_journal_iter *it;
	uint64_t n = 0, lsn;
	const void *p;
	size_t len;
	int rc;

	if (pc_journal_iter_open(&it, dir))
		return 0;
	while ((rc = pc_journal_iter_next(it, &lsn, &p, &len)) == 1 && lsn == n + 1 &&
	       rec_ok(lsn, p, len))
		n++;
	*end = rc;
	if (off)
		pc_journal_iter_where(it, off);
	pc_journal_iter_close(it);
	return n;
}

#endif
