/* SPDX-License-Identifier: MIT */
/* Every error text percore kv replies, in one list: Redis 7's wording
 * where Redis has the error. Fixed texts are string literals whose
 * lengths the compiler computes (KV_REPLY_ERR); the *_FMT ones are
 * printf formats for kv_reply_errorf(). */
#ifndef KV_ERRORS_H
#define KV_ERRORS_H

#include "reply.h"

/* Writes fixed error text (a literal from this list) to reply r. */
#define KV_REPLY_ERR(r, text) kv_reply_error((r), "" text, sizeof(text) - 1)

/* Arguments */
#define KV_ERR_SYNTAX        "ERR syntax error"
#define KV_ERR_NOT_INT       "ERR value is not an integer or out of range"
#define KV_ERR_NOT_FLOAT     "ERR value is not a valid float"
#define KV_ERR_TOO_BIG       "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
#define KV_ERR_OFFSET        "ERR offset is out of range"
#define KV_ERR_CURSOR        "ERR invalid cursor"
#define KV_ERR_DB_RANGE      "ERR value is out of range, value must between -2147483648 and 2147483647"
#define KV_ERR_DB_INDEX      "ERR DB index is out of range"
#define KV_ERR_ARITY_FMT     "ERR wrong number of arguments for '%s' command"
#define KV_ERR_EXPIRE_FMT    "ERR invalid expire time in '%s' command"
#define KV_ERR_UNKNOWN_FMT   "ERR unknown command '%.*s', with args beginning with: %s"
#define KV_ERR_UNKNOWN_SUB_FMT "ERR unknown subcommand '%.*s'. Try %s HELP."
#define KV_ERR_OPTION_FMT    "ERR Unsupported option %.*s"
#define KV_ERR_NX_XX_GT_LT   "ERR NX and XX, GT or LT options at the same time are not compatible"
#define KV_ERR_GT_LT         "ERR GT and LT options at the same time are not compatible"

/* Keys and values */
#define KV_ERR_NO_KEY        "ERR no such key"
#define KV_ERR_OVERFLOW      "ERR increment or decrement would overflow"
#define KV_ERR_DECR_OVERFLOW "ERR decrement would overflow"
#define KV_ERR_NAN           "ERR increment would produce NaN or Infinity"

/* Memory and load */
#define KV_ERR_OOM           "OOM command not allowed when used memory > 'maxmemory'."
#define KV_ERR_NOMEM         "ERR out of memory"
#define KV_ERR_BUSY          "ERR server busy, try again"
#define KV_ERR_MAXCLIENTS    "ERR max number of clients reached"
#define KV_ERR_PROTO_FMT     "ERR %s"

/* COMMAND */
#define KV_ERR_GETKEYS_CMD   "ERR Invalid command specified"
#define KV_ERR_GETKEYS_ARITY "ERR Invalid number of arguments specified for command"
#define KV_ERR_GETKEYS_NONE  "ERR The command has no key arguments"

/* Connections */
#define KV_ERR_NO_CONN       "ERR no connection to act on"
#define KV_ERR_CLIENT_NAME   "ERR Client names cannot contain spaces, newlines or special characters."
#define KV_ERR_PROTO_VERSION "ERR Protocol version is not an integer or out of range"
#define KV_ERR_HELLO_OPT_FMT "ERR Syntax error in HELLO option '%.*s'"
#define KV_ERR_WRONGPASS     "WRONGPASS invalid username-password pair or user is disabled."
#define KV_ERR_CLIENT_OPT_FMT "ERR Unrecognized option '%.*s'"
#define KV_ERR_SETINFO_FMT   "ERR %s cannot contain spaces, newlines or special characters."
#define KV_ERR_CLIENT_TYPE_FMT "ERR Unknown client type '%.*s'"

#endif
