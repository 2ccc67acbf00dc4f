/* SPDX-License-Identifier: MIT */
/* percore: the chat messages (schemas/chat.fbs) in FlatBuffers.
 *
 * One root table per message id: the frame header already says what a body
 * is, so a union (and its type byte and extra table) would only repeat it.
 *
 * Read a body with pc_fb_<table>_read(body, len, &t) (verifies, then
 * returns the root), then the field accessors below; strings come back as a
 * pointer into the body and a length (NUL-terminated as well).
 * Build with pc_fb_<table>_build(b, ...); pc_fb_message_create writes a
 * Message without finishing, for a History.
 */
#ifndef PERCORE_FB_CHAT_H
#define PERCORE_FB_CHAT_H

#include "percore/defs.h"
#include "percore/fb.h"

PC_BEGIN_DECLS

/* Message ids of chat bodies in the frame header: the one list of them
 * (examples/chat_server.c uses these, and tests/fb/chat_client.py reads
 * them from this file). A refusal is an Error (percore/fb_error.h,
 * PC_MSG_ERROR) with the frame's error flag set. */
#define PC_MSG_CHAT_JOIN    16u  /* client -> server: Join */
#define PC_MSG_CHAT_SAY     17u  /* client -> server: Say */
#define PC_MSG_CHAT_LEAVE   18u  /* client -> server: Leave; and back: left */
#define PC_MSG_CHAT_MESSAGE 19u  /* server -> members: Message */
#define PC_MSG_CHAT_HISTORY 20u  /* server -> joiner: History (joined) */

/* Field ids, in schema order. */
enum { PC_FB_JOIN_ROOM, PC_FB_JOIN_USER };
enum { PC_FB_SAY_ROOM, PC_FB_SAY_TEXT };
enum { PC_FB_LEAVE_ROOM };
enum { PC_FB_MESSAGE_ROOM, PC_FB_MESSAGE_USER, PC_FB_MESSAGE_TEXT, PC_FB_MESSAGE_SEQ };
enum { PC_FB_HISTORY_ROOM, PC_FB_HISTORY_MESSAGES };

PC_FB_SCHEMA_TABLE(join, pc_fb_join_desc)
PC_FB_SCHEMA_STRING(join, room, PC_FB_JOIN_ROOM)
PC_FB_SCHEMA_STRING(join, user, PC_FB_JOIN_USER)

PC_FB_SCHEMA_TABLE(say, pc_fb_say_desc)
PC_FB_SCHEMA_STRING(say, room, PC_FB_SAY_ROOM)
PC_FB_SCHEMA_STRING(say, text, PC_FB_SAY_TEXT)

PC_FB_SCHEMA_TABLE(leave, pc_fb_leave_desc)
PC_FB_SCHEMA_STRING(leave, room, PC_FB_LEAVE_ROOM)

PC_FB_SCHEMA_TABLE(message, pc_fb_message_desc)
PC_FB_SCHEMA_STRING(message, room, PC_FB_MESSAGE_ROOM)
PC_FB_SCHEMA_STRING(message, user, PC_FB_MESSAGE_USER)
PC_FB_SCHEMA_STRING(message, text, PC_FB_MESSAGE_TEXT)
PC_FB_SCHEMA_SCALAR(message, seq, PC_FB_MESSAGE_SEQ, u64, uint64_t, 0)

PC_FB_SCHEMA_TABLE(history, pc_fb_history_desc)
PC_FB_SCHEMA_STRING(history, room, PC_FB_HISTORY_ROOM)

/* The messages of a History: the first element (pass it to
 * pc_fb_history_message) and *n; NULL and 0 when absent. */
static inline const void *pc_fb_history_messages(const struct pc_fb_history *h,
						 uint32_t *n)
{
	return pc_fb_get_vector((const struct pc_fb_table *)h, PC_FB_HISTORY_MESSAGES, n);
}

/* Message i (< n) of the vector pc_fb_history_messages returned. */
static inline const struct pc_fb_message *pc_fb_history_message(const void *elems,
								 uint32_t i)
{
	return (const struct pc_fb_message *)pc_fb_vec_table(elems, i);
}

/* A table of string fields, written in one call: strings first (they must
 * precede the table), then the table pointing at them. Returns its ref, or
 * 0 (see the builder's sticky error). */
static inline pc_fb_ref pc_fb_chat_strings(struct pc_fb_builder *b, unsigned n,
					   const char *const *s, const size_t *len)
{
	pc_fb_ref ref[3];

	for (unsigned i = 0; i < n; i++)
		ref[i] = pc_fb_string_create(b, s[i], len[i]);
	pc_fb_table_start(b);
	for (unsigned i = 0; i < n; i++)
		pc_fb_add_ref(b, i, ref[i]);
	return pc_fb_table_end(b);
}

/* Build a whole Join / Say / Leave buffer. Each returns 0, -ENOSPC or
 * -EINVAL (a NULL string with a nonzero length). */
static inline int pc_fb_join_build(struct pc_fb_builder *b, const char *room,
				   size_t room_len, const char *user, size_t user_len)
{
	const char *s[] = { room, user };
	const size_t len[] = { room_len, user_len };

	return pc_fb_finish(b, pc_fb_chat_strings(b, 2, s, len), NULL);
}

/* A whole Say buffer: text said in room. As pc_fb_join_build(). */
static inline int pc_fb_say_build(struct pc_fb_builder *b, const char *room,
				  size_t room_len, const char *text, size_t text_len)
{
	const char *s[] = { room, text };
	const size_t len[] = { room_len, text_len };

	return pc_fb_finish(b, pc_fb_chat_strings(b, 2, s, len), NULL);
}

/* A whole Leave buffer for room. As pc_fb_join_build(). */
static inline int pc_fb_leave_build(struct pc_fb_builder *b, const char *room,
				    size_t room_len)
{
	return pc_fb_finish(b, pc_fb_chat_strings(b, 1, &room, &room_len), NULL);
}

/* Write a Message table without finishing the buffer (for a History).
 * Returns its ref, or 0. */
static inline pc_fb_ref pc_fb_message_create(struct pc_fb_builder *b,
					     const char *room, size_t room_len,
					     const char *user, size_t user_len,
					     const char *text, size_t text_len,
					     uint64_t seq)
{
	pc_fb_ref r = pc_fb_string_create(b, room, room_len);
	pc_fb_ref u = pc_fb_string_create(b, user, user_len);
	pc_fb_ref t = pc_fb_string_create(b, text, text_len);

	pc_fb_table_start(b);
	pc_fb_add_u64(b, PC_FB_MESSAGE_SEQ, seq, 0);
	pc_fb_add_ref(b, PC_FB_MESSAGE_ROOM, r);
	pc_fb_add_ref(b, PC_FB_MESSAGE_USER, u);
	pc_fb_add_ref(b, PC_FB_MESSAGE_TEXT, t);
	return pc_fb_table_end(b);
}

/* Bytes of space pc_fb_message_build needs at most for strings of these
 * lengths: theirs plus a fixed part (length words, NULs, the table, its
 * vtable, the root offset and the padding between them) under 128 bytes.
 * For sizing a buffer before the message is built into it, so it can be
 * built in its final place; add PC_FRAME_HEADER_LEN for a frame header. */
static inline size_t pc_fb_message_space(size_t room_len, size_t user_len, size_t text_len)
{
	return room_len + user_len + text_len + 128;
}

/* Build a whole Message buffer. Returns 0, -ENOSPC or -EINVAL. */
static inline int pc_fb_message_build(struct pc_fb_builder *b,
				      const char *room, size_t room_len,
				      const char *user, size_t user_len,
				      const char *text, size_t text_len, uint64_t seq)
{
	return pc_fb_finish(b, pc_fb_message_create(b, room, room_len, user, user_len,
						    text, text_len, seq), NULL);
}

/* Build a whole History buffer from n Messages written before with
 * pc_fb_message_create; messages NULL leaves the vector out. Returns 0,
 * -ENOSPC or -EINVAL. */
static inline int pc_fb_history_build(struct pc_fb_builder *b, const char *room,
				      size_t room_len, const pc_fb_ref *messages,
				      size_t n)
{
	pc_fb_ref r = pc_fb_string_create(b, room, room_len);
	pc_fb_ref v = messages ? pc_fb_refs_create(b, messages, n) : 0;

	pc_fb_table_start(b);
	pc_fb_add_ref(b, PC_FB_HISTORY_ROOM, r);
	if (messages)
		pc_fb_add_ref(b, PC_FB_HISTORY_MESSAGES, v);
	return pc_fb_finish(b, pc_fb_table_end(b), NULL);
}

PC_END_DECLS

#endif
