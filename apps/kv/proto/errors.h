/* SPDX-License-Identifier: MIT */
/* Every error text percore kv replies, in one list: Redis 7's wording
 * where Redis has the error. Fixed texts are string literals whose
 * lengths the compiler computes (KV_REPLY_ERR); the *_FMT ones are
 * printf formats for kv_reply_errorf(). */
#ifndef KV_ERRORS_H
#define KV_ERRORS_H

#include "resp_reply.h"

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
#define KV_ERR_SUB_SYNTAX_FMT "ERR unknown subcommand or wrong number of arguments for '%.*s'. " \
	"Try %s HELP."
#define KV_ERR_OPTION_FMT    "ERR Unsupported option %.*s"
#define KV_ERR_NX_XX_GT_LT   "ERR NX and XX, GT or LT options at the same time are not compatible"
#define KV_ERR_GT_LT         "ERR GT and LT options at the same time are not compatible"

/* Keys and values */
#define KV_ERR_NO_KEY        "ERR no such key"
#define KV_ERR_SAME_OBJECT   "ERR source and destination objects are the same"
#define KV_ERR_OVERFLOW      "ERR increment or decrement would overflow"
#define KV_ERR_DECR_OVERFLOW "ERR decrement would overflow"
#define KV_ERR_NAN           "ERR increment would produce NaN or Infinity"
#define KV_ERR_NAN_INF       "ERR value is NaN or Infinity"
#define KV_ERR_WRONGTYPE     "WRONGTYPE Operation against a key holding the wrong kind of value"
#define KV_ERR_CROSSSLOT     "CROSSSLOT Keys in request don't hash to the same slot"
#define KV_ERR_HASH_NOT_INT  "ERR hash value is not an integer"
#define KV_ERR_HASH_NOT_FLOAT "ERR hash value is not a float"
#define KV_ERR_RANGE_FMT     "ERR value is out of range, value must between %lld and %lld"
#define KV_ERR_OUT_OF_RANGE  "ERR value is out of range"
#define KV_ERR_NOT_POSITIVE  "ERR value is out of range, must be positive"
#define KV_ERR_NUMKEYS       "ERR numkeys should be greater than 0"
#define KV_ERR_NUMKEYS_ARGS  "ERR Number of keys can't be greater than number of args"
#define KV_ERR_LIMIT_NEG     "ERR LIMIT can't be negative"
/* DUMP and RESTORE */
#define KV_ERR_BUSYKEY       "BUSYKEY Target key name already exists."
#define KV_ERR_DUMP_PAYLOAD  "ERR DUMP payload version or checksum are wrong"
#define KV_ERR_BAD_DATA      "ERR Bad data format"
#define KV_ERR_TTL           "ERR Invalid TTL value, must be >= 0"
#define KV_ERR_IDLETIME      "ERR Invalid IDLETIME value, must be >= 0"
#define KV_ERR_FREQ          "ERR Invalid FREQ value, must be >= 0 and <= 255"
#define KV_ERR_NO_LFU        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."

/* Memory and load */
#define KV_ERR_OOM           "OOM command not allowed when used memory > 'maxmemory'."
#define KV_ERR_NOMEM         "ERR out of memory"
#define KV_ERR_BUSY          "ERR server busy, try again"
/* a write while the append-only file cannot take it (strerror's text) */
#define KV_ERR_MISCONF_AOF_FMT "MISCONF Errors writing to the AOF file: %s"

/* Dumps */
#define KV_ERR_BGSAVE_RUNNING "ERR Background save already in progress"
#define KV_ERR_NO_BGSAVE      "ERR BGSAVE needs the server (no background work here)"
#define KV_ERR_AOFRW_RUNNING  "ERR Background append only file rewriting already in progress"
#define KV_ERR_AOFRW_BLOCKS_BGSAVE \
	"ERR An AOF log rewriting in progress: can't BGSAVE right now. Use BGSAVE SCHEDULE in " \
	"order to schedule a BGSAVE whenever possible."
#define KV_ERR_AOFRW_FAILED \
	"ERR Can't execute an AOF background rewriting. Please check the server logs for more " \
	"information."
#define KV_ERR_AOFRW_OFF      "ERR BGREWRITEAOF needs appendonly yes here"
#define KV_ERR_PUBSUB_CONTEXT_FMT "ERR Can't execute '%s': only (P|S)SUBSCRIBE / " \
	"(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
#define KV_ERR_PUBSUB_ELSEWHERE "ERR subscriptions are made on the connection's own shard only " \
	"(not inside a transaction whose keys live on another)"
#define KV_ERR_MAXCLIENTS    "ERR max number of clients reached"
#define KV_ERR_PROTO_FMT     "ERR %s"

/* The parser's (resp.c): the text after "ERR ", in the request's error */
#define KV_PROTO_FMT          "Protocol error: %s"
#define KV_PROTO_EXPECTED_FMT "expected '$', got '%c'"
#define KV_PROTO_BULK_COUNT   "too big bulk count string"
#define KV_PROTO_BULK_LEN     "invalid bulk length"
#define KV_PROTO_MBULK_COUNT  "too big mbulk count string"
#define KV_PROTO_MBULK_LEN    "invalid multibulk length"
#define KV_PROTO_INLINE       "too big inline request"
#define KV_PROTO_QUOTES       "unbalanced quotes in request"

/* CONFIG SET: the error, and the reason it gives */
#define KV_ERR_CONFIG_OPTION_FMT "ERR Unknown option or number of arguments for CONFIG SET - '%.*s'"
#define KV_ERR_CONFIG_ARG_FMT    "ERR CONFIG SET failed (possibly related to argument '%.*s') - %s"
#define KV_ERR_CONFIG_NO_SERVER  "ERR CONFIG SET failed - no server to apply the settings to"
#define KV_ERR_CONFIG_FAILED_FMT "ERR CONFIG SET failed - %s"
#define KV_WHY_IMMUTABLE      "can't set immutable config"
#define KV_WHY_DUPLICATE      "duplicate parameter"
#define KV_WHY_MEMORY         "argument must be a memory value"
#define KV_WHY_INTEGER        "argument couldn't be parsed into an integer"
#define KV_WHY_RANGE_FMT      "argument must be between %llu and %llu inclusive"
#define KV_WHY_RANGE_SIGNED_FMT "argument must be between %lld and %lld inclusive"
#define KV_WHY_SOFT_LIMIT     "only a hard limit is supported for the normal class"
#define KV_WHY_BUFFER_LIMIT   "Wrong number of arguments in buffer limit configuration."
#define KV_WHY_ONE_OF_FMT     "argument(s) must be one of the following: %s"

/* COMMAND */
#define KV_ERR_GETKEYS_CMD   "ERR Invalid command specified"
#define KV_ERR_GETKEYS_ARITY "ERR Invalid number of arguments specified for command"
#define KV_ERR_GETKEYS_NONE  "ERR The command has no key arguments"

/* Transactions */
#define KV_ERR_MULTI_NESTED  "ERR MULTI calls can not be nested"
#define KV_ERR_EXEC_NO_MULTI "ERR EXEC without MULTI"
#define KV_ERR_DISCARD_NO_MULTI "ERR DISCARD without MULTI"
#define KV_ERR_WATCH_IN_MULTI "ERR WATCH inside MULTI is not allowed"
#define KV_ERR_EXECABORT     "EXECABORT Transaction discarded because of previous errors."
#define KV_ERR_NOT_IN_MULTI  "ERR Command not allowed inside a transaction"
#define KV_ERR_EXECABORT_FMT "EXECABORT Transaction discarded because of: %s"

/* Connections */
#define KV_ERR_NO_CONN       "ERR no connection to act on"
#define KV_ERR_CLIENT_NAME   "ERR Client names cannot contain spaces, newlines or special characters."
#define KV_ERR_PROTO_VERSION "ERR Protocol version is not an integer or out of range"
#define KV_ERR_HELLO_OPT_FMT "ERR Syntax error in HELLO option '%.*s'"
#define KV_ERR_WRONGPASS     "WRONGPASS invalid username-password pair or user is disabled."
#define KV_ERR_CLIENT_OPT_FMT "ERR Unrecognized option '%.*s'"
#define KV_ERR_SETINFO_FMT   "ERR %s cannot contain spaces, newlines or special characters."
#define KV_ERR_CLIENT_TYPE_FMT "ERR Unknown client type '%.*s'"
#define KV_ERR_CLIENT_ID    "ERR Invalid client ID"
#define KV_ERR_KILL_ID      "ERR client-id should be greater than 0"
#define KV_ERR_NO_CLIENT    "ERR No such client"
#define KV_ERR_NO_USER_FMT  "ERR No such user '%.*s'"
#define KV_ERR_UNBLOCK_REASON "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
#define KV_ERR_UNBLOCKED    "UNBLOCKED client unblocked via CLIENT UNBLOCK"

#endif
