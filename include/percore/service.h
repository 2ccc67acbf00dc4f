/* SPDX-License-Identifier: MIT */
/* percore: what a service on the engine needs in its first hour.
 *
 *  - a pointer of the application's own per shard (pc_shard_set_user);
 *  - periodic timers on a reactor, every N ms without drift;
 *  - map-reduce over the shards: run a function on every shard, then a
 *    callback once, here, with every result (totals, a barrier);
 *  - how many shards a configuration will start, before starting it
 *    (pc_engine_cfg_shards);
 *  - pc_container_of (percore/defs.h), from an embedded timer or link
 *    back to its owner.
 */
#ifndef PERCORE_SERVICE_H
#define PERCORE_SERVICE_H

#include <stddef.h>
#include <stdint.h>

#include "percore/defs.h"
#include "percore/engine.h"
#include "percore/reactor.h"
#include "percore/shard.h"
#include "percore/wheel.h"

PC_BEGIN_DECLS

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the shard's own pointer ---------------------------------------------- */

/* Store p as this shard's user pointer (typically in on_start, pointing
 * at the shard's state). Returns 0, or -EPERM off a shard. */
PC_API int pc_shard_set_user(void *p);

/* This shard's user pointer: NULL until set, and off a shard. */
PC_API void *pc_shard_user(void);

/* ---- periodic timers ------------------------------------------------------ */

struct pc_periodic;
typedef void (*pc_periodic_fn)(struct pc_periodic *p, void *arg);

/* A timer that runs fn every period. The caller owns the struct (embed it
 * and find the owner with pc_container_of); fields starting with _ are
 * private. Deadlines are start + k * period, so the k-th run is never
 * early and late runs do not push later ones back (no drift). When a run
 * comes later than a whole period, the periods it overran are skipped
 * and counted in missed rather than run back to back. */
struct pc_periodic {
	struct pc_timer _timer;
	struct pc_reactor *_r;
	uint64_t _next_ns;            /* CLOCK_MONOTONIC deadline of the next run */
	uint64_t _period_ns;
	pc_periodic_fn _fn;
	void *_arg;
	uint64_t runs;                /* times fn ran */
	uint64_t missed;              /* periods skipped because a run was late */
};

/* Start p on reactor r (a shard's: pc_shard_reactor()): fn(p, arg) every
 * period_ms, first one period from now. p may be started again to
 * change its period (the counts restart). Reactor owner thread. Returns
 * 0, or -EINVAL for a NULL r, p or fn or a period of 0. */
PC_API int pc_periodic_start(struct pc_periodic *p, struct pc_reactor *r, uint32_t period_ms,
			     pc_periodic_fn fn, void *arg);

/* Stop p: fn does not run again. May be called from fn, after which p
 * may be freed. Calling it on a stopped timer does nothing. Reactor
 * owner thread. */
PC_API void pc_periodic_stop(struct pc_periodic *p);

/* The deadline (CLOCK_MONOTONIC ns) of p's next run; 0 when stopped. */
PC_API uint64_t pc_periodic_next(const struct pc_periodic *p);

/* ---- map-reduce over shards ------------------------------------------------ */

/* What pc_shard_map() calls when every shard has returned: results[k] is
 * shard k's return value (n of them), valid during the call only. */
typedef void (*pc_shard_map_done)(const intptr_t *results, unsigned n, void *ctx);

/* Run fn(arg) on every shard (this one included, on a later turn), then
 * done(results, n, ctx) once on this shard when all have returned:
 * results[k] is shard k's return value, valid during done only. The calls
 * go through the outbox (percore/outbox.h): a full ring delays them and
 * neither the budget nor call_limit refuses them. If the engine stops
 * before every shard has answered, done(NULL, 0, ctx) runs instead, on
 * this shard after its last turn (to free ctx). Returns 0; -ECANCELED
 * when the engine is
 * stopping; -ENOMEM (nothing sent); -EINVAL for a NULL fn or done; -EPERM
 * off a shard. */
PC_API int pc_shard_map(pc_shard_call_fn fn, void *arg, pc_shard_map_done done, void *ctx);

/* ---- before start --------------------------------------------------------- */

/* How many shards pc_engine_start(cfg) would start on this machine now
 * (the placement decides when cfg->shards is 0). Any thread. Returns the
 * count, or pc_engine_start()'s -EINVAL for a configuration it would
 * refuse (err gets the reason; may be NULL). */
PC_API int pc_engine_cfg_shards(const struct pc_engine_cfg *cfg, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

PC_END_DECLS

#endif
