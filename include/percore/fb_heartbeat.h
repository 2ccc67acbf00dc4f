/* SPDX-License-Identifier: MIT */
/* percore: the heartbeat message (schemas/heartbeat.fbs) in FlatBuffers.
 *
 * Read:  pc_fb_heartbeat_read(body, len, &h), then pc_fb_heartbeat_seq(h),
 *        pc_fb_heartbeat_time_ns(h).
 * Write: pc_fb_heartbeat_build(b, seq, time_ns).
 */
#ifndef PERCORE_FB_HEARTBEAT_H
#define PERCORE_FB_HEARTBEAT_H

#include "percore/defs.h"
#include "percore/fb.h"

PC_BEGIN_DECLS

/* Message id of a heartbeat request with a Heartbeat body (the frame also
 * sets its heartbeat flag); the session layer answers with id 0 and the same
 * body, so the sender learns the round trip from its own clock. */
#define PC_MSG_HEARTBEAT 2u

enum { PC_FB_HEARTBEAT_SEQ, PC_FB_HEARTBEAT_TIME_NS };

PC_FB_SCHEMA_TABLE(heartbeat, pc_fb_heartbeat_desc)
PC_FB_SCHEMA_SCALAR(heartbeat, seq, PC_FB_HEARTBEAT_SEQ, u32, uint32_t, 0)
PC_FB_SCHEMA_SCALAR(heartbeat, time_ns, PC_FB_HEARTBEAT_TIME_NS, u64, uint64_t, 0)

/* Build a whole Heartbeat buffer. Returns 0, -ENOSPC or -EINVAL. */
static inline int pc_fb_heartbeat_build(struct pc_fb_builder *b, uint32_t seq,
					uint64_t time_ns)
{
	pc_fb_table_start(b);
	pc_fb_add_u64(b, PC_FB_HEARTBEAT_TIME_NS, time_ns, 0);
	pc_fb_add_u32(b, PC_FB_HEARTBEAT_SEQ, seq, 0);
	return pc_fb_finish(b, pc_fb_table_end(b), NULL);
}

PC_END_DECLS

#endif
