/* SPDX-License-Identifier: MIT */
// Peer: absl::flat_hash_map<uint64_t, uint64_t> with absl's default hash,
// behind the C interface of map_peer.h. Benchmark-only code.
#include <cstdint>
#include <new>

#include <absl/container/flat_hash_map.h>

#include "map_peer.h"

namespace {

using Map = absl::flat_hash_map<uint64_t, uint64_t>;

void *create()
{
	return new (std::nothrow) Map();
}

void destroy(void *m)
{
	delete static_cast<Map *>(m);
}

void insert(void *m, const uint64_t *keys, size_t n)
{
	Map &map = *static_cast<Map *>(m);
	for (size_t i = 0; i < n; i++)
		map.emplace(keys[i], keys[i] + 1);
}

uint64_t find(void *m, const uint64_t *keys, size_t n)
{
	const Map &map = *static_cast<const Map *>(m);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		auto it = map.find(keys[i]);
		if (it != map.end())
			sum += it->second;
	}
	return sum;
}

uint64_t iterate(void *m)
{
	uint64_t sum = 0;
	for (const auto &kv : *static_cast<const Map *>(m))
		sum += kv.second;
	return sum;
}

} // namespace

extern "C" const struct map_peer map_peer_absl = { create, destroy, insert, find, iterate };
