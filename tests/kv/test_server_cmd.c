/* SPDX-License-Identifier: MIT */
/* The connection and server commands (HELLO, CLIENT, CONFIG, INFO,
 * COMMAND, QUIT) against a connection, settings and a server view the
 * test controls: replies byte for byte where Redis's are fixed, the state
 * they change, and the whole-server figures INFO takes from the view. */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmd.h"

struct fixture {
	struct kv_db *db;
	struct kv_reply out;
	struct kv_conn conn;
	struct kv_conn other;  /* another connection the view lists */
	uint64_t unblocked;    /* the id client_unblock was asked for */
	uint64_t killed[16];   /* the ids client_kill closed, in order */
	bool killed_self[16];
	int nkilled;
	bool unblock_error;
	struct kv_config cfg;
	struct kv_server_view view;
	bool with_view;
	int config_sets;       /* config_set calls */
	int config_rc;         /* what config_set returns */
	struct kv_totals tot;  /* what totals hands out */
	int64_t now;           /* the requests' clock, ms */
};

static int apply(void *arg, const struct kv_config *next, char *why, size_t whylen)
{
	struct fixture *f = arg;
	(void)why;
	(void)whylen;
	f->config_sets++;
	if (f->config_rc == 0)
		f->cfg = *next;
	return f->config_rc;
}

static void totals(void *arg, struct kv_totals *t)
{
	*t = ((struct fixture *)arg)->tot;
}

static void clients(void *arg, void (*fn)(void *ctx, const struct kv_conn *conn), void *ctx)
{
	struct fixture *f = arg;
	fn(ctx, &f->conn);
	fn(ctx, &f->other);
}

static bool kill(void *arg, uint64_t id, bool self)
{
	struct fixture *f = arg;
	f->killed_self[f->nkilled] = self;
	f->killed[f->nkilled++] = id;
	return true;
}

/* Connection 99 waits on keys. */
static bool unblock(void *arg, uint64_t id, bool error)
{
	struct fixture *f = arg;
	f->unblocked = id;
	f->unblock_error = error;
	return id == 99;
}

/* Runs the command (arguments split at spaces, '~' in one stands for a
 * space; "''" is an empty one) and
 * returns the reply, 0-terminated. */
static const char *run(struct fixture *f, const char *cmd)
{
	static char buf[512];
	const char *argv[32];
	size_t argl[32];
	uint32_t argc = 0;
	snprintf(buf, sizeof(buf), "%s", cmd);
	for (char *save, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		bool empty = strcmp(t, "''") == 0;
		for (char *q = t; (q = strchr(q, '~'));)
			*q = ' ';
		argv[argc] = empty ? "" : t;
		argl[argc++] = empty ? 0 : strlen(t);
	}
	struct kv_call c = { .db = f->db, .out = &f->out, .now = f->now, .max_bulk = 1 << 20,
			     .conn = &f->conn, .cfg = &f->cfg, .view = f->with_view ? &f->view : NULL,
			     .argc = argc, .argv = argv, .argl = argl };
	kv_reply_clear(&f->out);
	kv_cmd_exec(&c);
	char *r = kv_reply_reserve(&f->out, 1);
	assert_non_null(r);
	*r = '\0';
	return f->out.buf;
}

static void expect(struct fixture *f, const char *cmd, const char *want)
{
	const char *got = run(f, cmd);
	if (strcmp(got, want) != 0)
		fail_msg("%s: got \"%s\", want \"%s\"", cmd, got, want);
}

static void expect_has(struct fixture *f, const char *cmd, const char *part)
{
	const char *got = run(f, cmd);
	if (!strstr(got, part))
		fail_msg("%s: \"%s\" lacks \"%s\"", cmd, got, part);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	f->db = kv_db_new();
	kv_reply_init(&f->out);
	kv_conn_init(&f->conn, 7, 1000);
	kv_config_init(&f->cfg);
	f->view = (struct kv_server_view){ .totals = totals, .config_set = apply,
					   .clients = clients, .client_unblock = unblock,
					   .client_kill = kill, .arg = f };
	kv_conn_init(&f->other, 99, 1000);
	f->with_view = true;
	f->now = 5000;
	*state = f;
	return f->db ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	kv_conn_fini(&f->conn);
	kv_conn_fini(&f->other);
	kv_reply_free(&f->out);
	kv_db_free(f->db);
	free(f);
	return 0;
}

/* Every command is documented, every subcommand is named after its
 * container, and the server can tell where each runs: keys, every shard,
 * or the connection's shard. */
static void test_table(void **state)
{
	(void)state;
	size_t n;
	const struct kv_cmd *t = kv_cmd_table(&n);
	for (size_t i = 0; i < n; i++) {
		bool keyless = t[i].first_key == 0;
		unsigned where = t[i].flags & (KV_CMD_ALLSHARDS | KV_CMD_NOKEY_LOCAL);
		size_t nsubs;
		const struct kv_cmd *subs = kv_cmd_subs(&t[i], &nsubs);
		if (!t[i].group[0] || !t[i].since[0] || !t[i].summary[0])
			fail_msg("%s has no documentation", t[i].name);
		if (keyless != (where == KV_CMD_ALLSHARDS || where == KV_CMD_NOKEY_LOCAL))
			fail_msg("%s: keys %d, placement flags %#x", t[i].name, t[i].first_key, where);
		/* a command over several keys says how its shards' parts merge */
		if (t[i].first_key && t[i].last_key != t[i].first_key && t[i].multi == KV_MULTI_NONE)
			fail_msg("%s spans keys but has no merge", t[i].name);
		if ((t[i].flags & KV_CMD_ALLSHARDS) && !kv_multi_typed(t[i].multi))
			fail_msg("%s runs on every shard but has no typed merge", t[i].name);
		assert_non_null(t[i].fn);
		for (size_t j = 0; j < nsubs; j++) {
			const struct kv_cmd *s = &subs[j];
			size_t l = strlen(t[i].name);
			assert_true(strncmp(s->name, t[i].name, l) == 0 && s->name[l] == '|');
			assert_true(s->group[0] && s->summary[0]);
			assert_non_null(s->fn);
			assert_true(s->arity >= 2 || s->arity <= -2);
		}
	}
	assert_non_null(kv_cmd_lookup("CONFIG", 6));
	assert_non_null(kv_cmd_lookup("Hello", 5));
}

static void test_hello(void **state)
{
	struct fixture *f = *state;
	const char *map = "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"
			  "$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
			  "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
	expect(f, "HELLO", map);
	expect(f, "hello 2", map);
	expect(f, "HELLO 3", "-NOPROTO unsupported protocol version\r\n");
	expect(f, "HELLO 1", "-NOPROTO unsupported protocol version\r\n");
	expect(f, "HELLO two", "-ERR Protocol version is not an integer or out of range\r\n");
	expect(f, "HELLO 2 foo", "-ERR Syntax error in HELLO option 'foo'\r\n");
	expect(f, "HELLO 2 AUTH default", "-ERR Syntax error in HELLO option 'AUTH'\r\n");
	expect(f, "HELLO 2 AUTH bob pw",
	       "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
	expect(f, "HELLO 3 SETNAME x", "-NOPROTO unsupported protocol version\r\n");
	assert_null(f->conn.name);
	expect(f, "HELLO 2 AUTH default anything SETNAME conn1", map);
	assert_string_equal(f->conn.name, "conn1");
	expect(f, "HELLO 2 SETNAME", "-ERR Syntax error in HELLO option 'SETNAME'\r\n");
}

static void test_client(void **state)
{
	struct fixture *f = *state;
	expect(f, "CLIENT ID", ":7\r\n");
	expect(f, "CLIENT GETNAME", "$-1\r\n");
	expect(f, "CLIENT SETNAME app-1", "+OK\r\n");
	expect(f, "client getname", "$5\r\napp-1\r\n");
	expect(f, "CLIENT SETNAME a\nb",
	       "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
	expect(f, "client getname", "$5\r\napp-1\r\n");
	expect(f, "CLIENT SETNAME ''", "+OK\r\n");
	expect(f, "CLIENT GETNAME", "$-1\r\n");
	expect(f, "CLIENT", "-ERR wrong number of arguments for 'client' command\r\n");
	expect(f, "CLIENT SETNAME", "-ERR wrong number of arguments for 'client|setname' command\r\n");
	expect(f, "CLIENT nosuch x", "-ERR unknown subcommand 'nosuch'. Try CLIENT HELP.\r\n");
	expect(f, "CLIENT SETINFO LIB-NAME redis-py", "+OK\r\n");
	expect(f, "CLIENT SETINFO lib-ver 5.0", "+OK\r\n");
	expect(f, "CLIENT SETINFO color red", "-ERR Unrecognized option 'color'\r\n");
	expect(f, "CLIENT NO-EVICT on", "+OK\r\n");
	expect(f, "CLIENT NO-EVICT maybe", "-ERR syntax error\r\n");
	f->conn.fd = 12;
	strcpy(f->conn.addr, "127.0.0.1:5000");
	expect_has(f, "CLIENT INFO", "id=7 addr=127.0.0.1:5000 laddr= fd=12 name= age=4 idle=0 flags=e "
		   "db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=10 multi-mem=0 "
		   "rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=10 events=r cmd=client|info "
		   "user=default redir=-1 resp=2 lib-name=redis-py lib-ver=5.0\n");
	/* the view lists every connection */
	expect_has(f, "CLIENT LIST", "cmd=client|list");
	expect_has(f, "CLIENT LIST", "\nid=99 addr= ");
	expect(f, "CLIENT LIST TYPE pubsub", "$0\r\n\r\n");
	expect(f, "CLIENT LIST TYPE master", "$0\r\n\r\n");
	expect(f, "CLIENT LIST TYPE nope", "-ERR Unknown client type 'nope'\r\n");
	expect(f, "CLIENT LIST TYPE normal x", "-ERR syntax error\r\n");
	expect(f, "CLIENT LIST ID", "-ERR syntax error\r\n");
	expect(f, "CLIENT LIST ID 7 abc", "-ERR Invalid client ID\r\n");
	expect(f, "CLIENT LIST ID 5", "$0\r\n\r\n");
	/* in the order asked, a repeated one twice */
	const char *got = run(f, "CLIENT LIST ID 99 7 99");
	const char *first = strstr(got, "id=99 "), *mine = strstr(got, "id=7 ");
	assert_true(first && mine && first < mine && strstr(mine, "id=99 "));
	expect_has(f, "CLIENT HELP", "SETNAME");
	expect_has(f, "CLIENT HELP", "UNBLOCK");
	/* CLIENT UNBLOCK: the view ends the wait */
	expect(f, "CLIENT UNBLOCK 99", ":1\r\n");
	assert_int_equal(f->unblocked, 99);
	assert_false(f->unblock_error);
	expect(f, "CLIENT UNBLOCK 99 error", ":1\r\n");
	assert_true(f->unblock_error);
	expect(f, "CLIENT UNBLOCK 7 TIMEOUT", ":0\r\n");
	expect(f, "CLIENT UNBLOCK x", "-ERR value is not an integer or out of range\r\n");
	expect(f, "CLIENT UNBLOCK 99 maybe",
	       "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n");
	expect(f, "CLIENT UNBLOCK 99 error x",
	       "-ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.\r\n");
	expect(f, "CLIENT UNBLOCK", "-ERR wrong number of arguments for 'client|unblock' command\r\n");
	/* CLIENT KILL: filters pick the view's connections; SKIPME yes spares
	 * the caller; the old form answers OK or Redis's error */
	expect(f, "CLIENT KILL ID 99", ":1\r\n");
	expect(f, "CLIENT KILL ID 7", ":0\r\n");
	expect(f, "CLIENT KILL TYPE normal SKIPME no", ":2\r\n");
	assert_int_equal(f->nkilled, 3);
	assert_true(f->killed[0] == 99 && f->killed[1] == 7 && f->killed[2] == 99);
	assert_true(f->killed_self[1] && !f->killed_self[2]);
	expect(f, "CLIENT KILL TYPE pubsub", ":0\r\n");
	expect(f, "CLIENT KILL USER default ID 99", ":1\r\n");
	expect(f, "CLIENT KILL 127.0.0.1:5000", "+OK\r\n");
	expect(f, "CLIENT KILL 10.0.0.1:1", "-ERR No such client\r\n");
	expect(f, "CLIENT KILL ADDR 10.0.0.1:1", ":0\r\n");
	expect(f, "CLIENT KILL ID x", "-ERR client-id should be greater than 0\r\n");
	expect(f, "CLIENT KILL ID 0", "-ERR client-id should be greater than 0\r\n");
	expect(f, "CLIENT KILL TYPE x", "-ERR Unknown client type 'x'\r\n");
	expect(f, "CLIENT KILL USER x", "-ERR No such user 'x'\r\n");
	expect(f, "CLIENT KILL SKIPME maybe", "-ERR syntax error\r\n");
	expect(f, "CLIENT KILL ID 1 TYPE", "-ERR syntax error\r\n");
	expect(f, "CLIENT KILL MAXAGE 1", "-ERR syntax error\r\n");
	expect(f, "CLIENT KILL", "-ERR wrong number of arguments for 'client|kill' command\r\n");
	f->with_view = false;
	expect_has(f, "CLIENT LIST TYPE normal", "id=7 ");
	assert_null(strstr(run(f, "CLIENT LIST"), "id=99"));
	expect(f, "CLIENT UNBLOCK 99", ":0\r\n");
}

static void test_config_get(void **state)
{
	struct fixture *f = *state;
	expect(f, "CONFIG GET save", "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
	expect(f, "CONFIG GET appendonly", "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
	expect(f, "config get MAXMEMORY", "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n");
	expect(f, "CONFIG GET nosuch", "*0\r\n");
	/* each parameter once, whatever matched it */
	expect(f, "CONFIG GET maxmemory max*y maxmemory-p?licy",
	       "*4\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
	       "$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n");
	expect_has(f, "CONFIG GET *", "$18\r\nproto-max-bulk-len\r\n$9\r\n536870912\r\n");
	expect_has(f, "CONFIG GET *", "$9\r\ndatabases\r\n$1\r\n1\r\n");
	expect(f, "CONFIG GET", "-ERR wrong number of arguments for 'config|get' command\r\n");
}

static void test_config_set(void **state)
{
	struct fixture *f = *state;
	expect(f, "CONFIG SET maxmemory 10mb maxmemory-policy ALLKEYS-LRU", "+OK\r\n");
	assert_int_equal(f->cfg.maxmemory, 10 * 1024 * 1024);
	assert_int_equal(f->cfg.maxmemory_policy, KV_POLICY_ALLKEYS_LRU);
	expect(f, "CONFIG SET maxmemory 2k", "+OK\r\n");
	assert_int_equal(f->cfg.maxmemory, 2000);
	expect(f, "CONFIG SET maxmemory 1x",
	       "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value\r\n");
	expect(f, "CONFIG SET maxmemory-policy bad",
	       "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) "
	       "must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, "
	       "allkeys-lru, allkeys-lfu, allkeys-random, noeviction\r\n");
	expect_has(f, "CONFIG SET maxmemory-policy allkeys-lfu", "only the noeviction and allkeys-lru");
	expect(f, "CONFIG SET timeout -1",
	       "-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive\r\n");
	expect(f, "CONFIG SET timeout x",
	       "-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer\r\n");
	expect(f, "CONFIG SET proto-max-bulk-len 10",
	       "-ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive\r\n");
	expect(f, "CONFIG SET databases 2",
	       "-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config\r\n");
	expect(f, "CONFIG SET port 1",
	       "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config\r\n");
	expect(f, "CONFIG SET hz 1 HZ 2",
	       "-ERR CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter\r\n");
	expect(f, "CONFIG SET foo 1", "-ERR Unknown option or number of arguments for CONFIG SET - 'foo'\r\n");
	expect(f, "CONFIG SET hz", "-ERR wrong number of arguments for 'config|set' command\r\n");
	expect(f, "CONFIG SET hz 1 timeout", "-ERR syntax error\r\n");
	/* all or nothing: the valid first pair is not applied either */
	int calls = f->config_sets;
	expect_has(f, "CONFIG SET timeout 5 maxclients 0", "'maxclients') - argument must be between 1");
	assert_int_equal(f->config_sets, calls);
	assert_int_equal(f->cfg.timeout, 0);
	/* a fixed value may be set to what it is */
	expect(f, "CONFIG SET save '' appendonly no", "+OK\r\n");
	/* Redis keeps hz in 1..500 */
	expect(f, "CONFIG SET hz 0", "+OK\r\n");
	assert_int_equal(f->cfg.hz, 1);
	expect(f, "CONFIG SET client-output-buffer-limit normal~1mb~0~0", "+OK\r\n");
	assert_int_equal(f->cfg.client_output_limit, 1024 * 1024);
	expect_has(f, "CONFIG GET client-output-buffer-limit", "normal 1048576 0 0 slave");
	/* the server refusing leaves the settings */
	f->config_rc = -EINVAL;
	expect_has(f, "CONFIG SET timeout 9", "-ERR CONFIG SET failed - ");
	assert_int_equal(f->cfg.timeout, 0);
	f->with_view = false;
	expect_has(f, "CONFIG SET timeout 9", "-ERR CONFIG SET failed - ");
}

static void test_info(void **state)
{
	struct fixture *f = *state;
	f->tot = (struct kv_totals){ .connected_clients = 3, .total_connections = 10,
				     .total_commands = 77, .keys = 5, .expires = 2,
				     .used_memory = 2048, .evicted_keys = 4, .start_time = 1000,
				     .shards = 2 };
	const char *all = run(f, "INFO");
	const char *order[] = { "# Server\r\n", "# Clients\r\n", "# Memory\r\n", "# Stats\r\n",
				"# Keyspace\r\n" };
	const char *at = all;
	for (int i = 0; i < 5; i++) {
		at = strstr(at, order[i]);
		if (!at)
			fail_msg("INFO lacks %s in order", order[i]);
	}
	expect_has(f, "INFO", "\r\nconnected_clients:3\r\n");
	expect_has(f, "INFO", "\r\ntotal_commands_processed:77\r\n");
	expect_has(f, "INFO", "\r\nused_memory:2048\r\nused_memory_human:2.00K\r\n");
	expect_has(f, "INFO", "\r\ndb0:keys=5,expires=2,avg_ttl=0\r\n");
	expect_has(f, "INFO", "\r\nevicted_keys:4\r\n");
	expect_has(f, "INFO", "\r\nuptime_in_seconds:4\r\n");
	expect_has(f, "INFO all", "\r\nshards:2\r\n");
	const char *mem = run(f, "INFO memory");
	assert_true(strncmp(mem, "$", 1) == 0 && strstr(mem, "\r\n# Memory\r\n"));
	assert_null(strstr(mem, "# Server"));
	assert_non_null(strstr(run(f, "INFO server KEYSPACE"), "# Keyspace"));
	expect(f, "INFO nosuch", "$0\r\n\r\n");
	/* without a view: this keyspace and connection, no invented counters */
	f->with_view = false;
	expect(f, "SET k v", "+OK\r\n");
	expect_has(f, "INFO", "\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n");
	expect_has(f, "INFO", "\r\nconnected_clients:1\r\n");
	assert_null(strstr(run(f, "INFO"), "total_commands_processed"));
}

static void test_command(void **state)
{
	struct fixture *f = *state;
	size_t n;
	char want[32];
	kv_cmd_table(&n);
	snprintf(want, sizeof(want), ":%zu\r\n", n);
	expect(f, "COMMAND COUNT", want);
	snprintf(want, sizeof(want), "*%zu\r\n*10\r\n", n);
	assert_true(strncmp(run(f, "COMMAND"), want, strlen(want)) == 0);
	expect(f, "COMMAND INFO get nosuch",
	       "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
	       "*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*0\r\n*0\r\n$-1\r\n");
	expect_has(f, "COMMAND INFO config", "$10\r\nconfig|set\r\n:-4\r\n");
	expect(f, "COMMAND DOCS nosuch", "*0\r\n");
	expect(f, "COMMAND DOCS get",
	       "*2\r\n$3\r\nget\r\n*6\r\n$7\r\nsummary\r\n$13\r\nA key's value\r\n"
	       "$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n");
	expect_has(f, "COMMAND DOCS client", "$11\r\nsubcommands\r\n*20\r\n$14\r\nclient|getname\r\n");
	expect(f, "COMMAND GETKEYS mset a 1 b 2", "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
	expect(f, "COMMAND GETKEYS get a b", "-ERR Invalid number of arguments specified for command\r\n");
	expect(f, "COMMAND GETKEYS nosuch a", "-ERR Invalid command specified\r\n");
	expect(f, "COMMAND GETKEYS echo a", "-ERR The command has no key arguments\r\n");
	expect(f, "COMMAND LIST FILTERBY PATTERN get*",
	       "*6\r\n$3\r\nget\r\n$6\r\ngetbit\r\n$6\r\ngetdel\r\n$5\r\ngetex\r\n"
	       "$8\r\ngetrange\r\n$6\r\ngetset\r\n");
	expect(f, "COMMAND COUNT x", "-ERR wrong number of arguments for 'command|count' command\r\n");
}

static void test_quit_select(void **state)
{
	struct fixture *f = *state;
	expect(f, "SELECT 0", "+OK\r\n");
	expect(f, "SELECT 1", "-ERR DB index is out of range\r\n");
	assert_false(f->conn.flags & KV_CONN_CLOSE);
	expect(f, "QUIT", "+OK\r\n");
	assert_true(f->conn.flags & KV_CONN_CLOSE);
	assert_string_equal(f->conn.last_cmd, "quit");
}

/* Over the keyspace's limit, noeviction refuses DENYOOM commands with
 * Redis's text and runs the rest; allkeys-lru makes room instead. */
static void test_oom(void **state)
{
	struct fixture *f = *state;
	const char *oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
	expect(f, "SET a 1", "+OK\r\n");
	expect(f, "SET b 2", "+OK\r\n");
	kv_db_set_maxmemory(f->db, 1, KV_POLICY_NOEVICTION, 5);
	expect(f, "SET c 3", oom);
	expect(f, "APPEND a x", oom);
	expect(f, "INCR n", oom);
	expect(f, "MSET x 1 y 2", oom);
	expect(f, "GET a", "$1\r\n1\r\n");
	expect(f, "EXPIRE a 100", ":1\r\n");
	expect(f, "DEL b", ":1\r\n");
	expect(f, "PING", "+PONG\r\n");
	expect(f, "DBSIZE", ":1\r\n");
	kv_db_set_maxmemory(f->db, 0, KV_POLICY_NOEVICTION, 5);
	expect(f, "SET c 3", "+OK\r\n");
	/* allkeys-lru with room for nothing: every key goes, then OOM */
	kv_db_set_maxmemory(f->db, 1, KV_POLICY_ALLKEYS_LRU, 5);
	expect(f, "SET d 4", oom);
	expect(f, "DBSIZE", ":0\r\n");
	f->with_view = false;
	expect_has(f, "INFO stats", "\r\nevicted_keys:2\r\n");
	/* room for some keys: writes go on, the least recently used go */
	kv_db_set_maxmemory(f->db, kv_db_used(f->db) + 600, KV_POLICY_ALLKEYS_LRU, 5);
	char cmd[64];
	for (int i = 0; i < 200; i++) {
		snprintf(cmd, sizeof(cmd), "SET key:%d value", i);
		f->now++;
		expect(f, cmd, "+OK\r\n");
	}
	expect(f, "EXISTS key:199", ":1\r\n");
	expect(f, "EXISTS key:0", ":0\r\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test_setup_teardown(test_hello, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_get, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quit_select, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oom, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
