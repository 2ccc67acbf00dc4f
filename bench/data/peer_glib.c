/* SPDX-License-Identifier: MIT */
/* Peer: GLib's GHashTable with keys and values stored in the pointers
 * themselves (g_direct_hash, no allocation per entry), behind map_peer.h. */
#include <glib.h>

#include "map_peer.h"

static void *create(void)
{
	return g_hash_table_new(g_direct_hash, NULL);
}

static void destroy(void *m)
{
	g_hash_table_destroy(m);
}

static void insert(void *m, const uint64_t *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		g_hash_table_insert(m, (gpointer)(uintptr_t)keys[i], (gpointer)(uintptr_t)(keys[i] + 1));
}

static uint64_t find(void *m, const uint64_t *keys, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += (uintptr_t)g_hash_table_lookup(m, (gconstpointer)(uintptr_t)keys[i]);
	return sum;
}

static uint64_t iterate(void *m)
{
	GHashTableIter it;
	gpointer k, v;
	uint64_t sum = 0;

	g_hash_table_iter_init(&it, m);
	while (g_hash_table_iter_next(&it, &k, &v))
		sum += (uintptr_t)v;
	return sum;
}

const struct map_peer map_peer_glib = { create, destroy, insert, find, iterate };
