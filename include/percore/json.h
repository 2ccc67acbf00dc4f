/* SPDX-License-Identifier: MIT */
/* percore: the runtime's objects as cJSON trees, for the measuring tools.
 *
 * These are in libpercore-bench (pkg-config percore-bench, CMake
 * percore::bench), which links cJSON; libpercore itself needs no JSON
 * library. A server that only wants its statistics as JSON text has
 * pc_server_stats_print() (percore/server.h) in the runtime.
 *
 * Each function returns a new tree the caller frees with cJSON_Delete(),
 * or NULL when out of memory. Any thread.
 */
#ifndef PERCORE_JSON_H
#define PERCORE_JSON_H

#include "percore/defs.h"
#include "percore/place.h"
#include "percore/server.h"
#include "percore/topo.h"

PC_BEGIN_DECLS

struct cJSON;

/* The topology as an object: source, packages, kinds, nodes, cores, cpus,
 * caches and limits. CPU sets are written as CPU lists ("0-3,8"). */
PC_API struct cJSON *pc_topo_to_json(const struct pc_topo *t);

/* The placement as an object: policy, pinned, floating, shards, oversubscribed,
 * per-shard cpu/node/core/kind name, and warnings. */
PC_API struct cJSON *pc_placement_to_json(const struct pc_topo *t, const struct pc_placement *p);

/* st as an object, one member per figure, closed_reason[] as closed_peer,
 * closed_local, ... (the members pc_server_stats_print() writes). */
PC_API struct cJSON *pc_server_stats_json(const struct pc_server_stats *st);

PC_END_DECLS

#endif
