/* SPDX-License-Identifier: MIT */
/* Transactions on the sharded server (server_internal.h). A connection
 * queues at home. Its EXEC runs in one go on the thread of the shard
 * that owns every key of every queued command (and every watched key)
 * when there is one such shard: at home, or shipped there as one job
 * (client.c), which that shard runs once no multi-shard transaction
 * holds any key of it; nothing else runs on that shard meanwhile. An
 * EXEC whose keys live on several shards, or on another shard's with a
 * change of subscriptions queued, locks them all first and runs from
 * home (exec.c). */
#include "server_internal.h"
#include "txn.h"

#define NO_SHARD (-1)
#define MANY_SHARDS (-2)

/* Joins shard s to *where (NO_SHARD: none yet). */
static void join_shard(int s, int *where)
{
	if (*where == NO_SHARD)
		*where = s;
	else if (*where != s)
		*where = MANY_SHARDS;
}

/* Joins key's shard to *where. */
static void join(const struct kv_shard *sh, const char *key, size_t len, int *where)
{
	join_shard((int)kv_key_shard(sh, key, len), where);
}

/* (P)(UN)SUBSCRIBE change the connection's subscriptions, kept on its
 * own shard, which delivers its messages (PING, also allowed a
 * subscriber, runs anywhere). */
static bool subscription(const struct kv_cmd *cmd)
{
	return (cmd->flags & KV_CMD_PUBSUB) && !kv_txn_is(cmd, "ping");
}

/* Joins the request's keys' shards to *where; a command on every shard
 * spans them all, a subscription needs home. */
static void join_request(const struct kv_shard *sh, const struct kv_txn_req *q, int *where)
{
	uint32_t n;

	if (q->cmd->flags & KV_CMD_ALLSHARDS) {
		*where = MANY_SHARDS;
		return;
	}
	if (subscription(q->cmd))
		join_shard((int)sh->idx, where);
	n = kv_cmd_nkeys(q->cmd, q->argc, q->argv, q->argl);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(q->cmd, k, q->argc, q->argv, q->argl);

		join(sh, q->argv[i], q->argl[i], where);
	}
}

int kv_txn_shard(const struct kv_shard *sh, const struct kv_conn *conn)
{
	const struct kv_txn *t = conn->txn;
	int where = NO_SHARD;

	for (uint32_t i = 0; t && i < t->n && where != MANY_SHARDS; i++)
		join_request(sh, t->q[i], &where);
	for (uint32_t i = 0; t && i < t->nwatch && where != MANY_SHARDS; i++)
		join(sh, t->w[i].key, t->w[i].len, &where);
	return where == NO_SHARD ? (int)sh->idx : where;
}

/* Whether the queue can run here now: every key this shard's (where,
 * kv_txn_shard's answer, says so), none held by a multi-shard
 * transaction. */
static bool runs_home(const struct kv_shard *sh, const struct kv_conn *conn, int where)
{
	const struct kv_txn *t = conn->txn;

	if (where != (int)sh->idx)
		return false;
	for (uint32_t i = 0; t && i < t->n; i++)
		if (!kv_shard_runs_now(sh, t->q[i]->cmd, t->q[i]->argc, t->q[i]->argv,
				       t->q[i]->argl))
			return false;
	return true;
}

enum kv_txn_route kv_txn_dispatch(struct kv_shard *sh, struct kv_conn *conn,
				  const struct kv_cmd *cmd, int64_t now,
				  const struct kv_resp_req *r, struct kv_reply *out)
{
	if (!cmd || sh->n == 1 || (!kv_txn_in_multi(conn) && !kv_txn_is_watch(cmd)))
		return KV_TXN_ROUTE;
	if (kv_txn_is(cmd, "exec") && kv_txn_in_multi(conn) && !conn->txn->dirty &&
	    kv_cmd_arity_ok(cmd, r->argc)) {
		int where = kv_txn_shard(sh, conn); /* hashes every key: once */

		if (!runs_home(sh, conn, where)) {
			conn->last_cmd = cmd->name; /* CLIENT LIST's cmd=exec while it runs */
			/* one shard's keys: the queue goes there; else it spans them */
			return where >= 0 ? KV_TXN_SHIP : KV_TXN_SPAN;
		}
	}
	kv_shard_exec(sh, conn, cmd, now, r->argc, r->argv, r->argl, out, NULL);
	return KV_TXN_DONE;
}
