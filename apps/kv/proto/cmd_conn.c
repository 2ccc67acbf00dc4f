/* SPDX-License-Identifier: MIT */
/* Connection commands: HELLO, QUIT and CLIENT's subcommands, with Redis
 * 7's replies and errors. Most run on the connection's own shard and act
 * on c->conn; CLIENT LIST, UNBLOCK and KILL run on every shard (typed
 * parts), each acting on its own connections through the view. */
#include "cmd_impl.h"

#include <stdlib.h>

#include "num.h"
#include "pubsub.h"
#include "txn.h"

/* The connection, or NULL after replying an error (an executor with no
 * connection, such as a fuzz target). */
static struct kv_conn *need_conn(struct kv_call *c)
{
	if (!c->conn)
		kv_err(c, KV_ERR_NO_CONN);
	return c->conn;
}

/* Redis's rule for names: printable ASCII, no space. */
static bool valid_name(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '!' || s[i] > '~')
			return false;
	return true;
}

/* Sets the connection's name from argument i ("" clears it); false after
 * replying the error. */
static bool set_name(struct kv_call *c, uint32_t i)
{
	if (!valid_name(c->argv[i], c->argl[i])) {
		kv_err(c, KV_ERR_CLIENT_NAME);
		return false;
	}
	if (kv_conn_set_str(&c->conn->name, c->argv[i], c->argl[i])) {
		kv_err_oom(c);
		return false;
	}
	return true;
}

/* HELLO [protover [AUTH username password] [SETNAME clientname]]: RESP2
 * only; the default user has no password, so AUTH takes any password for
 * "default" and refuses every other user, as Redis does out of the box. */
void kv_hello(struct kv_call *c)
{
	struct kv_conn *conn = need_conn(c);
	int64_t ver = 0;
	uint32_t setname = 0;

	if (!conn)
		return;
	if (c->argc >= 2 && !kv_str2ll(c->argv[1], c->argl[1], &ver)) {
		kv_err(c, KV_ERR_PROTO_VERSION);
		return;
	}
	if (c->argc >= 2 && ver != 2) {
		kv_err(c, "NOPROTO unsupported protocol version");
		return;
	}
	bool bad_user = false;
	for (uint32_t j = 2; j < c->argc; j++) {
		uint32_t more = c->argc - 1 - j;
		if (kv_arg_is(c, j, "auth") && more >= 2) {
			bad_user |= !(c->argl[j + 1] == 7 && memcmp(c->argv[j + 1], "default", 7) == 0);
			j += 2;
		} else if (kv_arg_is(c, j, "setname") && more >= 1) {
			setname = ++j;
		} else {
			kv_reply_errorf(c->out, KV_ERR_HELLO_OPT_FMT,
					(int)c->argl[j], c->argv[j]);
			return;
		}
	}
	if (bad_user) {
		kv_err(c, KV_ERR_WRONGPASS);
		return;
	}
	if (setname && !set_name(c, setname))
		return;
	kv_reply_array(c->out, 14);
	kv_reply_bulk(c->out, "server", 6);
	kv_reply_bulk(c->out, "redis", 5);
	kv_reply_bulk(c->out, "version", 7);
	kv_reply_bulk(c->out, KV_REDIS_VERSION, sizeof(KV_REDIS_VERSION) - 1);
	kv_reply_bulk(c->out, "proto", 5);
	kv_reply_int(c->out, conn->proto);
	kv_reply_bulk(c->out, "id", 2);
	kv_reply_int(c->out, (int64_t)conn->id);
	kv_reply_bulk(c->out, "mode", 4);
	kv_reply_bulk(c->out, "standalone", 10);
	kv_reply_bulk(c->out, "role", 4);
	kv_reply_bulk(c->out, "master", 6);
	kv_reply_bulk(c->out, "modules", 7);
	kv_reply_array(c->out, 0);
}

/* QUIT: OK, then the server closes the connection once it is written. */
void kv_quit(struct kv_call *c)
{
	if (c->conn)
		c->conn->flags |= KV_CONN_CLOSE;
	kv_reply_status(c->out, "OK");
}

/* RESET: the connection as it was made, as Redis 7.0 leaves it: no
 * transaction or watched key, no subscription, database 0, RESP2, no name
 * (CLIENT NO-EVICT and the library strings stay, as in Redis). Inside
 * MULTI it runs at once, not queued. */
void kv_reset(struct kv_call *c)
{
	if (c->conn) {
		kv_txn_reset(c->conn);
		if (c->conn->ps && c->conn->ps == c->ps) {
			kv_pubsub_unsubscribe_all(c->conn->ps, c->conn, false, NULL);
			kv_pubsub_unsubscribe_all(c->conn->ps, c->conn, true, NULL);
		}
		c->conn->db = 0;
		c->conn->proto = 2;
		kv_conn_set_str(&c->conn->name, NULL, 0);
	}
	kv_reply_status(c->out, "RESET");
}

void kv_client_id(struct kv_call *c)
{
	struct kv_conn *conn = need_conn(c);
	if (conn)
		kv_reply_int(c->out, (int64_t)conn->id);
}

void kv_client_getname(struct kv_call *c)
{
	struct kv_conn *conn = need_conn(c);
	if (!conn)
		return;
	if (conn->name)
		kv_reply_bulk(c->out, conn->name, strlen(conn->name));
	else
		kv_reply_null(c->out);
}

void kv_client_setname(struct kv_call *c)
{
	if (need_conn(c) && set_name(c, 2))
		kv_reply_status(c->out, "OK");
}

/* CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2; client libraries send
 * it on connect). */
void kv_client_setinfo(struct kv_call *c)
{
	struct kv_conn *conn = need_conn(c);
	char **field;

	if (!conn)
		return;
	if (kv_arg_is(c, 2, "lib-name"))
		field = &conn->lib_name;
	else if (kv_arg_is(c, 2, "lib-ver"))
		field = &conn->lib_ver;
	else {
		kv_reply_errorf(c->out, KV_ERR_CLIENT_OPT_FMT, (int)c->argl[2], c->argv[2]);
		return;
	}
	if (!valid_name(c->argv[3], c->argl[3])) {
		kv_reply_errorf(c->out, KV_ERR_SETINFO_FMT,
				field == &conn->lib_name ? "lib-name" : "lib-ver");
		return;
	}
	if (kv_conn_set_str(field, c->argv[3], c->argl[3]))
		kv_err_oom(c);
	else
		kv_reply_status(c->out, "OK");
}

/* CLIENT NO-EVICT ON|OFF: kept and reported; eviction here never closes
 * clients, so it changes nothing else. */
void kv_client_no_evict(struct kv_call *c)
{
	struct kv_conn *conn = need_conn(c);
	if (!conn)
		return;
	if (kv_arg_is(c, 2, "on"))
		conn->flags |= KV_CONN_NO_EVICT;
	else if (kv_arg_is(c, 2, "off"))
		conn->flags &= ~KV_CONN_NO_EVICT;
	else {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	kv_reply_status(c->out, "OK");
}

/* Replies the text as one bulk string, or the out-of-memory error. */
static void reply_text(struct kv_call *c, struct kv_text *t)
{
	if (t->failed)
		kv_err_oom(c);
	else
		kv_reply_bulk(c->out, t->buf ? t->buf : "", t->len);
	kv_text_free(t);
}

/* The id of the connection running the request: a part's client's, or
 * the connection's own (0: none). */
static uint64_t caller_id(const struct kv_call *c)
{
	return c->caller ? c->caller : c->conn ? c->conn->id : 0;
}

/* The bytes of the request's arguments (argv-mem of the caller's line). */
static size_t args_bytes(const struct kv_call *c)
{
	size_t bytes = 0;

	for (uint32_t i = 0; i < c->argc; i++)
		bytes += c->argl[i];
	return bytes;
}

void kv_client_info(struct kv_call *c)
{
	struct kv_text t = { 0 };
	if (!need_conn(c))
		return;
	kv_client_info_line(&t, c->conn, c->now, args_bytes(c));
	reply_text(c, &t);
}

/* What CLIENT LIST lists: connections of one type (-1: any), or the ids
 * asked (argv[first..argc)), one string of the part each, in their order
 * (the merge puts every shard's string i together). */
struct list_want {
	struct kv_call *c;
	int type;                  /* KV_CLIENT_NORMAL, KV_CLIENT_PUBSUB, or -1 */
	uint32_t first;            /* ID's first argument; 0: no IDs */
	const int64_t *ids;
	uint32_t nids;
	struct kv_text *by_id;     /* a line per id, when this shard has it */
	uint64_t caller;           /* the connection running it (0: none) */
};

enum { KV_CLIENT_NORMAL, KV_CLIENT_PUBSUB, KV_CLIENT_NONE };

/* Redis's types by name: masters and replicas exist nowhere here. */
static int client_type(const char *s, size_t n)
{
	static const char *const names[] = { "normal", "pubsub", "master", "replica", "slave" };
	static const int types[] = { KV_CLIENT_NORMAL, KV_CLIENT_PUBSUB, KV_CLIENT_NONE,
				     KV_CLIENT_NONE, KV_CLIENT_NONE };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (n == strlen(names[i]) && !strncasecmp(s, names[i], n))
			return types[i];
	return -1;
}

static void list_one(void *ctx, const struct kv_conn *conn)
{
	struct list_want *w = ctx;
	int type = kv_pubsub_conn_subs(conn) ? KV_CLIENT_PUBSUB : KV_CLIENT_NORMAL;
	size_t argv_mem = conn->id == w->caller ? args_bytes(w->c) : 0;

	if (!w->first) {
		if (w->type < 0 || w->type == type)
			kv_client_info_line(&w->by_id[0], conn, w->c->now, argv_mem);
		return;
	}
	for (uint32_t i = 0; i < w->nids; i++)
		if ((uint64_t)w->ids[i] == conn->id)
			kv_client_info_line(&w->by_id[i], conn, w->c->now, argv_mem);
}

/* CLIENT LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID id ...] (Redis 7.0
 * takes one or the other): a typed command run on every shard, this
 * shard's lines in its part (TEXT), as strings the merge puts in order. */
void kv_client_list(struct kv_call *c)
{
	struct list_want w = { .c = c, .type = -1, .caller = caller_id(c) };
	uint32_t nout = 1;

	if (c->argc == 4 && kv_arg_is(c, 2, "type")) {
		w.type = client_type(c->argv[3], c->argl[3]);
		if (w.type < 0) {
			kv_reply_errorf(c->out, KV_ERR_CLIENT_TYPE_FMT, (int)c->argl[3],
					c->argv[3]);
			return;
		}
	} else if (c->argc > 3 && kv_arg_is(c, 2, "id")) {
		w.first = 3;
		w.nids = c->argc - 3;
		nout = w.nids;
	} else if (c->argc != 2) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	/* on the heap: a request may name any number of ids */
	int64_t *ids = calloc(w.nids ? w.nids : 1, sizeof(*ids));
	struct kv_text *lines = calloc(nout, sizeof(*lines));

	if (!ids || !lines) {
		kv_err_oom(c);
		goto out;
	}
	for (uint32_t i = 0; i < w.nids; i++)
		if (!kv_str2ll(c->argv[3 + i], c->argl[3 + i], &ids[i])) {
			kv_err(c, KV_ERR_CLIENT_ID);
			goto out;
		}
	w.ids = ids;
	w.by_id = lines;
	if (c->view && c->view->clients)
		c->view->clients(c->view->arg, list_one, &w);
	else if (c->conn)
		list_one(&w, c->conn);
	for (uint32_t i = 0; i < nout; i++) {
		if (lines[i].failed)
			c->part->failed = true;
		kv_part_add(c->part, lines[i].buf ? lines[i].buf : "", lines[i].len);
		kv_text_free(&lines[i]);
	}
out:
	free(ids);
	free(lines);
}

/* CLIENT UNBLOCK id [TIMEOUT|ERROR]: a typed command run on every shard,
 * the one where client id waits ending its wait (SUM: 1, else 0). */
void kv_client_unblock(struct kv_call *c)
{
	int64_t id;
	bool error = false;

	if (!kv_str2ll(c->argv[2], c->argl[2], &id)) {
		kv_err(c, KV_ERR_NOT_INT);
		return;
	}
	if (c->argc == 4) {
		error = kv_arg_is(c, 3, "error");
		if (!error && !kv_arg_is(c, 3, "timeout")) {
			kv_err(c, KV_ERR_UNBLOCK_REASON);
			return;
		}
	} else if (c->argc > 4) {
		kv_reply_errorf(c->out, KV_ERR_SUB_SYNTAX_FMT, (int)c->argl[1], c->argv[1], "CLIENT");
		return;
	}
	c->part->n = c->view && c->view->client_unblock && id > 0 &&
		     c->view->client_unblock(c->view->arg, (uint64_t)id, error);
}

/* Which connections CLIENT KILL closes: each filter given must match. */
struct kill_want {
	struct kv_call *c;
	uint64_t id;               /* 0: any */
	int type;                  /* as CLIENT LIST's; -1: any */
	const char *addr, *laddr;  /* NULL: any */
	size_t addrl, laddrl;
	bool skipme;
	int64_t killed;
};

static bool same_text(const char *s, const char *p, size_t n)
{
	return strlen(s) == n && !memcmp(s, p, n);
}

static void kill_one(void *ctx, const struct kv_conn *conn)
{
	struct kill_want *w = ctx;
	int type = kv_pubsub_conn_subs(conn) ? KV_CLIENT_PUBSUB : KV_CLIENT_NORMAL;
	bool self = conn->id == w->c->caller;

	if ((w->id && conn->id != w->id) || (w->type >= 0 && w->type != type) ||
	    (w->addr && !same_text(conn->addr, w->addr, w->addrl)) ||
	    (w->laddr && !same_text(conn->laddr, w->laddr, w->laddrl)) || (self && w->skipme))
		return;
	if (w->c->view->client_kill(w->c->view->arg, conn->id, self))
		w->killed++;
}

/* CLIENT KILL's filters from argument 2 on, in pairs; false after
 * replying Redis's error. */
static bool kill_filters(struct kv_call *c, struct kill_want *w)
{
	for (uint32_t i = 2; i < c->argc; i += 2) {
		const char *v;
		size_t vl;
		int64_t id;

		if (i + 1 >= c->argc) { /* a filter without its value */
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
		v = c->argv[i + 1];
		vl = c->argl[i + 1];
		if (kv_arg_is(c, i, "id")) {
			if (!kv_str2ll(v, vl, &id) || id < 1) {
				kv_err(c, KV_ERR_KILL_ID);
				return false;
			}
			w->id = (uint64_t)id;
		} else if (kv_arg_is(c, i, "type")) {
			w->type = client_type(v, vl);
			if (w->type < 0) {
				kv_reply_errorf(c->out, KV_ERR_CLIENT_TYPE_FMT, (int)vl, v);
				return false;
			}
		} else if (kv_arg_is(c, i, "addr")) {
			w->addr = v;
			w->addrl = vl;
		} else if (kv_arg_is(c, i, "laddr")) {
			w->laddr = v;
			w->laddrl = vl;
		} else if (kv_arg_is(c, i, "user")) {
			if (!(vl == 7 && !memcmp(v, "default", 7))) { /* the only user */
				kv_reply_errorf(c->out, KV_ERR_NO_USER_FMT, (int)vl, v);
				return false;
			}
		} else if (kv_arg_is(c, i, "skipme") && (kv_arg_is(c, i + 1, "yes") ||
							 kv_arg_is(c, i + 1, "no"))) {
			w->skipme = kv_arg_is(c, i + 1, "yes");
		} else {
			kv_err(c, KV_ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

/* CLIENT KILL addr, or CLIENT KILL [ID id] [TYPE type] [ADDR ip:port]
 * [LADDR ip:port] [USER name] [SKIPME yes|no]: a typed command run on
 * every shard (KILL), each closing its connections that match. */
void kv_client_kill(struct kv_call *c)
{
	struct kill_want w = { .c = c, .type = -1, .skipme = true };

	if (c->argc == 3) { /* the old form: any but itself */
		w.addr = c->argv[2];
		w.addrl = c->argl[2];
		w.skipme = false;
		kv_part_add(c->part, "old", 3);
	} else if (!kill_filters(c, &w)) {
		return;
	}
	c->caller = caller_id(c);
	if (c->view && c->view->clients && c->view->client_kill)
		c->view->clients(c->view->arg, kill_one, &w);
	c->part->n = w.killed;
}

/* Our own words for the subcommands there are. */
void kv_client_help(struct kv_call *c)
{
	static const char *const lines[] = {
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GETNAME", "    The name of this connection, or null.",
		"ID", "    This connection's unique id.",
		"INFO", "    This connection's state, as one CLIENT LIST line.",
		"KILL <ip:port>", "    Close the connection at that address.",
		"KILL <filter> <value> ... [SKIPME yes|no]",
		"    Close the connections matching every filter: ID, TYPE, ADDR, LADDR, USER.",
		"LIST [TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID <id> [<id> ...]]",
		"    Every connection's state (of that type, or those ids), a line each.",
		"NO-EVICT (ON|OFF)", "    Keep the flag (eviction never closes clients here).",
		"SETINFO LIB-NAME|LIB-VER <value>", "    The client library's name or version.",
		"SETNAME <name>", "    Name this connection (\"\" removes the name).",
		"UNBLOCK <id> [TIMEOUT|ERROR]",
		"    End the wait of a client blocked on keys: nil (TIMEOUT) or an error.",
		"HELP", "    This text.",
	};
	kv_reply_help(c, lines, sizeof(lines) / sizeof(lines[0]));
}
