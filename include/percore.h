/* percore: the umbrella header. Include this, or one component's header
 * from include/percore/. */
#ifndef PERCORE_H
#define PERCORE_H

#include "percore/compiler.h"
#include "percore/clock.h"
#include "percore/bench.h"
#include "percore/wheel.h"
#include "percore/hist.h"
#include "percore/ringbuf.h"
#include "percore/frame.h"
#include "percore/map.h"
#include "percore/dispatch.h"
#include "percore/cgroup.h"
#include "percore/audit.h"
#include "percore/tune.h"
#include "percore/topo.h"
#include "percore/place.h"
#include "percore/numa.h"
#include "percore/spsc.h"
#include "percore/mpsc.h"
#include "percore/counter.h"
#include "percore/backoff.h"
#include "percore/slab.h"
#include "percore/arena.h"
#include "percore/fb.h"
#include "percore/fb_chat.h"
#include "percore/fb_echo.h"
#include "percore/fb_error.h"
#include "percore/fb_heartbeat.h"

#endif
