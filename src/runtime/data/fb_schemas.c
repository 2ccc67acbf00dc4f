/* SPDX-License-Identifier: MIT */
/* Verifier descriptions of the tables in the schemas/ folder. Field ids are the
 * declaration order in each schema; keep both in step (the interop tests
 * fail when they drift, since flatc then reads other fields). */
#include "percore/fb_chat.h"
#include "percore/fb_echo.h"
#include "percore/fb_error.h"
#include "percore/fb_heartbeat.h"

#define DESC(var, tname, list)                                                \
	const struct pc_fb_table_desc var = {                                 \
		.name = tname, .fields = list, .nfields = PC_ARRAY_LEN(list), \
	}

static const struct pc_fb_field_desc echo_fields[] = {
	PC_FB_F_SCALAR(PC_FB_ECHO_ID, uint64_t),
	PC_FB_F_VECTOR(PC_FB_ECHO_PAYLOAD, 1, 1, 0),
};
DESC(pc_fb_echo_desc, "percore.echo.Echo", echo_fields);

static const struct pc_fb_field_desc heartbeat_fields[] = {
	PC_FB_F_SCALAR(PC_FB_HEARTBEAT_SEQ, uint32_t),
	PC_FB_F_SCALAR(PC_FB_HEARTBEAT_TIME_NS, uint64_t),
};
DESC(pc_fb_heartbeat_desc, "percore.heartbeat.Heartbeat", heartbeat_fields);

static const struct pc_fb_field_desc error_fields[] = {
	PC_FB_F_SCALAR(PC_FB_ERROR_CODE, int32_t),
	PC_FB_F_STRING(PC_FB_ERROR_MESSAGE, 0),
};
DESC(pc_fb_error_desc, "percore.error.Error", error_fields);

static const struct pc_fb_field_desc join_fields[] = {
	PC_FB_F_STRING(PC_FB_JOIN_ROOM, 1),
	PC_FB_F_STRING(PC_FB_JOIN_USER, 1),
};
DESC(pc_fb_join_desc, "percore.chat.Join", join_fields);

static const struct pc_fb_field_desc say_fields[] = {
	PC_FB_F_STRING(PC_FB_SAY_ROOM, 1),
	PC_FB_F_STRING(PC_FB_SAY_TEXT, 1),
};
DESC(pc_fb_say_desc, "percore.chat.Say", say_fields);

static const struct pc_fb_field_desc leave_fields[] = {
	PC_FB_F_STRING(PC_FB_LEAVE_ROOM, 1),
};
DESC(pc_fb_leave_desc, "percore.chat.Leave", leave_fields);

static const struct pc_fb_field_desc message_fields[] = {
	PC_FB_F_STRING(PC_FB_MESSAGE_ROOM, 1),
	PC_FB_F_STRING(PC_FB_MESSAGE_USER, 1),
	PC_FB_F_STRING(PC_FB_MESSAGE_TEXT, 1),
	PC_FB_F_SCALAR(PC_FB_MESSAGE_SEQ, uint64_t),
};
DESC(pc_fb_message_desc, "percore.chat.Message", message_fields);

static const struct pc_fb_field_desc history_fields[] = {
	PC_FB_F_STRING(PC_FB_HISTORY_ROOM, 1),
	PC_FB_F_VECTOR_TABLE(PC_FB_HISTORY_MESSAGES, &pc_fb_message_desc, 0),
};
DESC(pc_fb_history_desc, "percore.chat.History", history_fields);
