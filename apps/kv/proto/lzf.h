/* SPDX-License-Identifier: MIT */
/* LZF, the compression RDB files and DUMP payloads use for long strings
 * (Redis's rdbcompression). The format: a stream of items, each opened
 * by a control byte c:
 *  - c < 32: a literal run, the next c + 1 bytes copied as they are;
 *  - else a back reference: length l = c >> 5 (when 7, plus the next
 *    byte), then the offset's low byte; it copies l + 2 bytes starting
 *    ((c & 31) << 8) + low + 1 bytes behind the output's end (the copy
 *    may overlap what it writes). References reach 8192 bytes back and
 *    copy 3 to 264 bytes.
 * Pure functions, any thread. Internal to apps/kv. */
#ifndef KV_LZF_H
#define KV_LZF_H

#include <stddef.h>
#include <stdint.h>

/* Compresses in[0..n) into out[0..cap). Returns the compressed length,
 * or 0 when it does not fit in cap (the caller stores the bytes plain). */
size_t kv_lzf_compress(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

/* Decompresses in[0..n) into out[0..cap). Returns the length written, or
 * -EINVAL when the stream is malformed (a run or reference past either
 * buffer, a reference before the output's start) or -E2BIG when the
 * output does not fit in cap. */
long kv_lzf_decompress(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

#endif
