/* SPDX-License-Identifier: MIT */
/* percore: the umbrella header: every public header. Include this, or one
 * component's header from include/percore/.
 *
 * bench.h, audit.h, tune.h, load.h and json.h belong to the measuring
 * tools: their functions are in libpercore-bench (pkg-config percore-bench,
 * CMake percore::bench), which links cJSON; everything else is in
 * libpercore, which needs no JSON library. */
#ifndef PERCORE_H
#define PERCORE_H

#include "percore/defs.h"
#include "percore/clock.h"
#include "percore/cpulist.h"
#include "percore/bench.h"
#include "percore/spsc.h"
#include "percore/spsc_seq.h"
#include "percore/mpsc.h"
#include "percore/counter.h"
#include "percore/slab.h"
#include "percore/arena.h"
#include "percore/wheel.h"
#include "percore/hist.h"
#include "percore/crc32c.h"
#include "percore/ringbuf.h"
#include "percore/frame.h"
#include "percore/cgroup.h"
#include "percore/audit.h"
#include "percore/tune.h"
#include "percore/topo.h"
#include "percore/place.h"
#include "percore/numa.h"
#include "percore/reactor.h"
#include "percore/file.h"
#include "percore/journal.h"
#include "percore/engine.h"
#include "percore/shard.h"
#include "percore/log.h"
#include "percore/crash.h"
#include "percore/outbox.h"
#include "percore/service.h"
#include "percore/shared_buf.h"
#include "percore/map.h"
#include "percore/dispatch.h"
#include "percore/fb.h"
#include "percore/fb_build.h"
#include "percore/fb_verify.h"
#include "percore/fb_chat.h"
#include "percore/fb_echo.h"
#include "percore/fb_error.h"
#include "percore/fb_heartbeat.h"
#include "percore/listener.h"
#include "percore/metrics.h"
#include "percore/session.h"
#include "percore/reply.h"
#include "percore/server.h"
#include "percore/load.h"
#include "percore/json.h"

#endif
