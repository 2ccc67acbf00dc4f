/* SPDX-License-Identifier: MIT */
/* percore: the error reply (schemas/error.fbs) in FlatBuffers.
 *
 * Read:  pc_fb_error_read(body, len, &e), then pc_fb_error_code(e),
 *        pc_fb_error_message(e, &n).
 * Write: pc_fb_error_build(b, code, message, n).
 */
#ifndef PERCORE_FB_ERROR_H
#define PERCORE_FB_ERROR_H

#include "percore/defs.h"
#include "percore/fb.h"

PC_BEGIN_DECLS

/* Message id of an Error body: a refusal, so the frame also sets its error
 * flag. pc_session_error() (percore/session.h) builds and sends one. */
#define PC_MSG_ERROR 3u

enum { PC_FB_ERROR_CODE, PC_FB_ERROR_MESSAGE };

PC_FB_SCHEMA_TABLE(error, pc_fb_error_desc)
PC_FB_SCHEMA_SCALAR(error, code, PC_FB_ERROR_CODE, i32, int32_t, 0)
PC_FB_SCHEMA_STRING(error, message, PC_FB_ERROR_MESSAGE)

/* Build a whole Error buffer; message may be NULL (absent). Returns 0,
 * -ENOSPC or -EINVAL. */
static inline int pc_fb_error_build(struct pc_fb_builder *b, int32_t code,
				    const char *message, size_t len)
{
	pc_fb_ref m = message ? pc_fb_string_create(b, message, len) : 0;

	pc_fb_table_start(b);
	pc_fb_add_i32(b, PC_FB_ERROR_CODE, code, 0);
	if (message)
		pc_fb_add_ref(b, PC_FB_ERROR_MESSAGE, m);
	return pc_fb_finish(b, pc_fb_table_end(b), NULL);
}

PC_END_DECLS

#endif
