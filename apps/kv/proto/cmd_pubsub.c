/* SPDX-License-Identifier: MIT */
/* SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and PUBSUB on
 * the tables of the connection's shard (pubsub.h). They run where the
 * connection lives (L); the server sends the changes they record to the
 * other shards before their confirmations go out. */
#include "cmd_impl.h"

#include <string.h>

#include "pubsub.h"

/* Whether the command can run: on a server with its tables; a change of
 * subscriptions (own) only on the connection's shard, whose thread
 * delivers its messages. */
static bool ready(struct kv_call *c, bool own)
{
	if (c->ps && (!own || (c->conn && c->conn->ps == c->ps)))
		return true;
	kv_err(c, KV_ERR_PUBSUB_ELSEWHERE);
	return false;
}

static void subscribe(struct kv_call *c, bool pattern)
{
	if (!ready(c, true))
		return;
	for (uint32_t i = 1; i < c->argc; i++) {
		if (kv_pubsub_subscribe(c->ps, c->conn, pattern, c->argv[i], c->argl[i]) < 0) {
			kv_err(c, KV_ERR_NOMEM);
			return;
		}
		kv_pubsub_confirm(c->out, pattern, true, c->argv[i], c->argl[i],
				  kv_pubsub_conn_subs(c->conn));
	}
}

static void unsubscribe(struct kv_call *c, bool pattern)
{
	if (!ready(c, true))
		return;
	if (c->argc == 1) {
		kv_pubsub_unsubscribe_all(c->ps, c->conn, pattern, c->out);
		return;
	}
	for (uint32_t i = 1; i < c->argc; i++) {
		kv_pubsub_unsubscribe(c->ps, c->conn, pattern, c->argv[i], c->argl[i]);
		kv_pubsub_confirm(c->out, pattern, false, c->argv[i], c->argl[i],
				  kv_pubsub_conn_subs(c->conn));
	}
}

void kv_subscribe(struct kv_call *c)
{
	subscribe(c, false);
}

void kv_psubscribe(struct kv_call *c)
{
	subscribe(c, true);
}

void kv_unsubscribe(struct kv_call *c)
{
	unsubscribe(c, false);
}

void kv_punsubscribe(struct kv_call *c)
{
	unsubscribe(c, true);
}

void kv_publish(struct kv_call *c)
{
	if (ready(c, false))
		kv_reply_int(c->out, (int64_t)kv_pubsub_publish(c->ps, c->argv[1], c->argl[1],
								c->argv[2], c->argl[2]));
}

void kv_pubsub_channels_cmd(struct kv_call *c)
{
	if (c->argc > 3)
		kv_reply_errorf(c->out, KV_ERR_SUB_SYNTAX_FMT, (int)c->argl[1], c->argv[1], "PUBSUB");
	else if (ready(c, false))
		kv_pubsub_channels(c->ps, c->argc == 3 ? c->argv[2] : NULL,
				   c->argc == 3 ? c->argl[2] : 0, c->out);
}

void kv_pubsub_numsub_cmd(struct kv_call *c)
{
	if (!ready(c, false))
		return;
	kv_reply_array(c->out, (size_t)(c->argc - 2) * 2);
	for (uint32_t i = 2; i < c->argc; i++) {
		kv_reply_bulk(c->out, c->argv[i], c->argl[i]);
		kv_reply_int(c->out, (int64_t)kv_pubsub_numsub(c->ps, c->argv[i], c->argl[i]));
	}
}

void kv_pubsub_numpat_cmd(struct kv_call *c)
{
	if (ready(c, false))
		kv_reply_int(c->out, (int64_t)kv_pubsub_numpat(c->ps));
}

void kv_pubsub_help(struct kv_call *c)
{
	static const char *const lines[] = {
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CHANNELS [<pattern>]", "    Channels with subscribers, those matching the pattern.",
		"NUMPAT", "    How many patterns have subscribers.",
		"NUMSUB [<channel> ...]", "    Each channel's subscribers, patterns not counted.",
		"HELP", "    This text.",
	};
	kv_reply_help(c, lines, sizeof(lines) / sizeof(lines[0]));
}
