/* SPDX-License-Identifier: MIT */
/* percore: the echo message (schemas/echo.fbs) in FlatBuffers.
 *
 * Read:  pc_fb_echo_read(body, len, &e), then pc_fb_echo_id(e),
 *        pc_fb_echo_payload(e, &n).
 * Write: pc_fb_echo_build(b, id, payload, n), then pc_fb_builder_data(b).
 */
#ifndef PERCORE_FB_ECHO_H
#define PERCORE_FB_ECHO_H

#include "percore/defs.h"
#include "percore/fb.h"

PC_BEGIN_DECLS

/* Message id of an Echo body in the frame header. */
#define PC_MSG_ECHO 1u

/* Field ids, in schema order. */
enum { PC_FB_ECHO_ID, PC_FB_ECHO_PAYLOAD };

PC_FB_SCHEMA_TABLE(echo, pc_fb_echo_desc)
PC_FB_SCHEMA_SCALAR(echo, id, PC_FB_ECHO_ID, u64, uint64_t, 0)

/* The payload bytes and *len; NULL and 0 when absent. */
static inline const uint8_t *pc_fb_echo_payload(const struct pc_fb_echo *e, uint32_t *len)
{
	return (const uint8_t *)pc_fb_get_vector((const struct pc_fb_table *)e, PC_FB_ECHO_PAYLOAD, len);
}

/* Write an Echo table (not finished); payload NULL leaves it out (an empty
 * payload is a non-NULL pointer with len 0). Returns its ref, or 0 (see the
 * builder's sticky error). */
static inline pc_fb_ref pc_fb_echo_create(struct pc_fb_builder *b, uint64_t id,
					  const void *payload, size_t len)
{
	pc_fb_ref p = payload ? pc_fb_vector_create(b, payload, len, 1, 1) : 0;

	pc_fb_table_start(b);
	pc_fb_add_u64(b, PC_FB_ECHO_ID, id, 0);
	if (payload)
		pc_fb_add_ref(b, PC_FB_ECHO_PAYLOAD, p);
	return pc_fb_table_end(b);
}

/* Build a whole Echo buffer (payload as for pc_fb_echo_create). Returns 0, -ENOSPC or -EINVAL. */
static inline int pc_fb_echo_build(struct pc_fb_builder *b, uint64_t id,
				   const void *payload, size_t len)
{
	return pc_fb_finish(b, pc_fb_echo_create(b, id, payload, len), NULL);
}

PC_END_DECLS

#endif
