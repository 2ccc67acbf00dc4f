/* SPDX-License-Identifier: MIT */
/* Transactions on the sharded server (server_internal.h). A connection
 * queues at home; its EXEC runs there, in one go on the home shard's
 * thread, which nothing else runs on meanwhile: atomic when every key
 * of every queued command (and every watched key) is the home shard's
 * and no multi-shard transaction holds one of them. An EXEC reaching
 * other shards is refused whole, nothing run: atomic EXEC across shards
 * is not there yet. */
#include "server_internal.h"
#include "txn.h"

/* Whether every key of the request is shard sh's. */
static bool keys_home(const struct kv_shard *sh, const struct kv_cmd *cmd, uint32_t argc,
		      const char *const *argv, const size_t *argl)
{
	uint32_t last;

	if ((cmd->flags & KV_CMD_ALLSHARDS) && sh->n > 1)
		return false;
	if (!cmd->first_key || (uint32_t)cmd->first_key >= argc)
		return true;
	last = kv_cmd_last_key(cmd, argc, argv, argl);
	for (uint32_t i = (uint32_t)cmd->first_key; i <= last && i < argc;
	     i += (uint32_t)cmd->key_step)
		if (kv_key_shard(sh, argv[i], argl[i]) != sh->idx)
			return false;
	return kv_shard_runs_now(sh, cmd, argc, argv, argl);
}

bool kv_txn_home_only(const struct kv_shard *sh, const struct kv_conn *conn)
{
	const struct kv_txn *t = conn->txn;

	for (uint32_t i = 0; t && i < t->n; i++)
		if (!keys_home(sh, t->q[i]->cmd, t->q[i]->argc, t->q[i]->argv, t->q[i]->argl))
			return false;
	for (uint32_t i = 0; t && i < t->nwatch; i++)
		if (kv_key_shard(sh, t->w[i].key, t->w[i].len) != sh->idx)
			return false;
	return true;
}

bool kv_txn_dispatch(struct kv_shard *sh, struct kv_conn *conn, const struct kv_cmd *cmd,
		     int64_t now, const struct kv_resp_req *r, struct kv_reply *out)
{
	if (!cmd || sh->n == 1 || (!kv_txn_in_multi(conn) && !kv_txn_is(cmd, "watch")))
		return false;
	if (kv_txn_is(cmd, "exec") && kv_txn_in_multi(conn) && !conn->txn->dirty &&
	    kv_cmd_arity_ok(cmd, r->argc) && !kv_txn_home_only(sh, conn)) {
		kv_txn_reset(conn);
		KV_REPLY_ERR(out, KV_ERR_EXEC_CROSS);
		return true;
	}
	kv_shard_exec(sh, conn, cmd, now, r->argc, r->argv, r->argl, out, NULL);
	return true;
}
