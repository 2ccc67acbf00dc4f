/* SPDX-License-Identifier: MIT */
/* The flat-map comparison: each implementation behind the same five calls,
 * each call looping over a batch inside its own translation unit so the
 * map's own lookup code is inlined there, as a user of that map gets it. */
#ifndef PERCORE_BENCH_DATA_MAP_PEER_H
#define PERCORE_BENCH_DATA_MAP_PEER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct map_peer {
	void *(*create)(void);                                 /* NULL: no memory */
	void (*destroy)(void *m);
	/* Map each key to key + 1 (so a found value is never 0). */
	void (*insert)(void *m, const uint64_t *keys, size_t n);
	/* Look every key up; the sum of the values found (misses add 0). */
	uint64_t (*find)(void *m, const uint64_t *keys, size_t n);
	/* Visit every entry; the sum of the values. */
	uint64_t (*iterate)(void *m);
};

extern const struct map_peer map_peer_percore;  /* pc_map */
extern const struct map_peer map_peer_absl;     /* absl::flat_hash_map */
extern const struct map_peer map_peer_glib;     /* GHashTable */

#ifdef __cplusplus
}
#endif

#endif
