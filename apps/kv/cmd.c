/* SPDX-License-Identifier: MIT */
/* The command table, lookup, the checks Redis makes before running a
 * command, shared helpers, and the connection and server commands. */
#include "cmd_impl.h"

#include <pthread.h>
#include <stdio.h>

#include "num.h"

#define W  KV_CMD_WRITE
#define R  KV_CMD_READONLY
#define M  KV_CMD_DENYOOM
#define F  KV_CMD_FAST
#define A  KV_CMD_ALLSHARDS
#define L  KV_CMD_NOKEY_LOCAL

/* Sorted by name, for the binary search in kv_cmd_lookup(). Arity and key
 * positions are Redis 7.0's. */
static const struct kv_cmd table[] = {
	{ "append",      3,  W | M | F,     1, 1, 1, kv_append, NULL, 0 },
	{ "client",      -2, L,             0, 0, 0, NULL, kv_client_subs, KV_CLIENT_NSUBS },
	{ "command",     -1, L,             0, 0, 0, kv_command, kv_command_subs, KV_COMMAND_NSUBS },
	{ "config",      -2, L,             0, 0, 0, NULL, kv_config_subs, KV_CONFIG_NSUBS },
	{ "dbsize",      1,  R | F | A,     0, 0, 0, kv_dbsize, NULL, 0 },
	{ "decr",        2,  W | M | F,     1, 1, 1, kv_decr, NULL, 0 },
	{ "decrby",      3,  W | M | F,     1, 1, 1, kv_decrby, NULL, 0 },
	{ "del",         -2, W,             1, -1, 1, kv_del, NULL, 0 },
	{ "echo",        2,  F | L,         0, 0, 0, kv_echo, NULL, 0 },
	{ "exists",      -2, R | F,         1, -1, 1, kv_exists, NULL, 0 },
	{ "expire",      -3, W | F,         1, 1, 1, kv_expire, NULL, 0 },
	{ "expireat",    -3, W | F,         1, 1, 1, kv_expireat, NULL, 0 },
	{ "flushall",    -1, W | A,         0, 0, 0, kv_flushall, NULL, 0 },
	{ "flushdb",     -1, W | A,         0, 0, 0, kv_flushall, NULL, 0 },
	{ "get",         2,  R | F,         1, 1, 1, kv_get, NULL, 0 },
	{ "getdel",      2,  W | F,         1, 1, 1, kv_getdel, NULL, 0 },
	{ "getex",       -2, W | F,         1, 1, 1, kv_getex, NULL, 0 },
	{ "getrange",    4,  R,             1, 1, 1, kv_getrange, NULL, 0 },
	{ "getset",      3,  W | M | F,     1, 1, 1, kv_getset, NULL, 0 },
	{ "hello",       -1, L | F,         0, 0, 0, kv_hello, NULL, 0 },
	{ "incr",        2,  W | M | F,     1, 1, 1, kv_incr, NULL, 0 },
	{ "incrby",      3,  W | M | F,     1, 1, 1, kv_incrby, NULL, 0 },
	{ "incrbyfloat", 3,  W | M | F,     1, 1, 1, kv_incrbyfloat, NULL, 0 },
	{ "info",        -1, L,             0, 0, 0, kv_info, NULL, 0 },
	{ "keys",        2,  R | A,         0, 0, 0, kv_keys, NULL, 0 },
	{ "mget",        -2, R | F,         1, -1, 1, kv_mget, NULL, 0 },
	{ "mset",        -3, W | M,         1, -1, 2, kv_mset, NULL, 0 },
	{ "msetnx",      -3, W | M,         1, -1, 2, kv_msetnx, NULL, 0 },
	{ "persist",     2,  W | F,         1, 1, 1, kv_persist, NULL, 0 },
	{ "pexpire",     -3, W | F,         1, 1, 1, kv_pexpire, NULL, 0 },
	{ "pexpireat",   -3, W | F,         1, 1, 1, kv_pexpireat, NULL, 0 },
	{ "ping",        -1, F | L,         0, 0, 0, kv_ping, NULL, 0 },
	{ "psetex",      4,  W | M,         1, 1, 1, kv_psetex, NULL, 0 },
	{ "pttl",        2,  R | F,         1, 1, 1, kv_pttl, NULL, 0 },
	{ "quit",        -1, L | F,         0, 0, 0, kv_quit, NULL, 0 },
	{ "rename",      3,  W,             1, 2, 1, kv_rename, NULL, 0 },
	{ "renamenx",    3,  W | F,         1, 2, 1, kv_renamenx, NULL, 0 },
	{ "scan",        -2, R | A,         0, 0, 0, kv_scan, NULL, 0 },
	{ "select",      2,  F | L,         0, 0, 0, kv_select, NULL, 0 },
	{ "set",         -3, W | M,         1, 1, 1, kv_set, NULL, 0 },
	{ "setex",       4,  W | M,         1, 1, 1, kv_setex, NULL, 0 },
	{ "setnx",       3,  W | M | F,     1, 1, 1, kv_setnx, NULL, 0 },
	{ "setrange",    4,  W | M,         1, 1, 1, kv_setrange, NULL, 0 },
	{ "strlen",      2,  R | F,         1, 1, 1, kv_strlen, NULL, 0 },
	{ "ttl",         2,  R | F,         1, 1, 1, kv_ttl, NULL, 0 },
	{ "type",        2,  R | F,         1, 1, 1, kv_type, NULL, 0 },
	{ "unlink",      -2, W | F,         1, -1, 1, kv_del, NULL, 0 },
};

const struct kv_cmd *kv_cmd_table(size_t *count)
{
	*count = sizeof(table) / sizeof(table[0]);
	return table;
}

/* Where each first letter's commands start in the table (sorted, so
 * they sit together): by_letter[l] .. by_letter[l + 1]; and each name's
 * length. Filled once. */
static uint8_t by_letter[27];
static uint8_t name_len[sizeof(table) / sizeof(table[0])];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void index_table(void)
{
	size_t n = sizeof(table) / sizeof(table[0]), i = 0;

	for (unsigned l = 0; l <= 26; l++) {
		while (i < n && (unsigned)(table[i].name[0] - 'a') < l)
			i++;
		by_letter[l] = (uint8_t)i;
	}
	for (i = 0; i < n; i++)
		name_len[i] = (uint8_t)strlen(table[i].name);
}

/* Every request looks its command up: the name in lower case, then the
 * few names of its first letter and its length. */
const struct kv_cmd *kv_cmd_lookup(const char *name, size_t len)
{
	char key[KV_CMD_NAME_MAX];
	unsigned l;

	if (!len || len > KV_CMD_NAME_MAX)
		return NULL;
	pthread_once(&index_once, index_table);
	for (size_t k = 0; k < len; k++)
		key[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] + 32 : name[k]);
	l = (unsigned)key[0] - 'a';
	if (l >= 26)
		return NULL;
	for (unsigned i = by_letter[l]; i < by_letter[l + 1]; i++)
		if (name_len[i] == len && !memcmp(key, table[i].name, len))
			return &table[i];
	return NULL;
}

/* How many bytes of s[0..n) Redis's "%.*s" prints: up to max, stopping at
 * a NUL. */
static int c_len(const char *s, size_t n, size_t max)
{
	const char *z = memchr(s, '\0', n);
	size_t l = z ? (size_t)(z - s) : n;
	return (int)(l < max ? l : max);
}

/* Redis's text: the name (128 bytes at most), then the first arguments,
 * each quoted, until 128 bytes of them are written. */
static void unknown_command(struct kv_call *c)
{
	char args[128 + 2 * 3 + 128 + 1];
	size_t used = 0;
	for (uint32_t i = 1; i < c->argc && used < 128; i++)
		used += (size_t)snprintf(args + used, sizeof(args) - used, "'%.*s' ",
					 c_len(c->argv[i], c->argl[i], 128 - used), c->argv[i]);
	args[used] = '\0';
	kv_reply_errorf(c->out, "ERR unknown command '%.*s', with args beginning with: %s",
			c_len(c->argv[0], c->argl[0], 128), c->argv[0], args);
}

/* The subcommand of container cmd that argv[1] names, any letter case, or
 * NULL. */
static const struct kv_cmd *find_sub(const struct kv_cmd *cmd, const char *name, size_t len)
{
	size_t plen = strlen(cmd->name) + 1;
	for (size_t i = 0; i < cmd->nsubs; i++) {
		const char *sub = cmd->subs[i].name + plen;
		if (strlen(sub) == len && strncasecmp(sub, name, len) == 0)
			return &cmd->subs[i];
	}
	return NULL;
}

/* Redis's text for a subcommand the container lacks. */
static void unknown_sub(struct kv_call *c, const struct kv_cmd *container)
{
	char upper[16];
	size_t n = strlen(container->name);
	for (size_t i = 0; i <= n; i++)
		upper[i] = (char)(container->name[i] >= 'a' && container->name[i] <= 'z' ?
				  container->name[i] - 32 : container->name[i]);
	kv_reply_errorf(c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
			c_len(c->argv[1], c->argl[1], 128), c->argv[1], upper);
}

bool kv_cmd_check(struct kv_call *c)
{
	const struct kv_cmd *cmd = kv_cmd_lookup(c->argv[0], c->argl[0]);

	if (!cmd) {
		unknown_command(c);
		return false;
	}
	return kv_cmd_check_as(c, cmd);
}

bool kv_cmd_check_as(struct kv_call *c, const struct kv_cmd *cmd)
{
	c->cmd = cmd;
	if (c->cmd->subs && c->argc >= 2) {
		const struct kv_cmd *sub = find_sub(c->cmd, c->argv[1], c->argl[1]);
		if (!sub) {
			unknown_sub(c, c->cmd);
			return false;
		}
		c->cmd = sub;
	}
	int a = c->cmd->arity;
	if ((a > 0 && (uint32_t)a != c->argc) || (a < 0 && c->argc < (uint32_t)-a)) {
		kv_err_arity(c);
		return false;
	}
	if (c->conn) {
		c->conn->last_cmd = c->cmd->name;
		c->conn->last_active = c->now;
	}
	return true;
}

void kv_cmd_run(struct kv_call *c)
{
	if (!kv_db_make_room(c->db) && (c->cmd->flags & KV_CMD_DENYOOM)) {
		kv_err(c, KV_ERR_OOM);
		return;
	}
	c->cmd->fn(c);
}

void kv_cmd_exec(struct kv_call *c)
{
	if (kv_cmd_check(c))
		kv_cmd_run(c);
}

void kv_cmd_exec_as(struct kv_call *c, const struct kv_cmd *cmd)
{
	if (kv_cmd_check_as(c, cmd))
		kv_cmd_run(c);
}

bool kv_arg_ll(struct kv_call *c, uint32_t i, int64_t *v)
{
	if (kv_str2ll(c->argv[i], c->argl[i], v))
		return true;
	kv_err(c, KV_ERR_NOT_INT);
	return false;
}

void kv_reply_help(struct kv_call *c, const char *const *lines, size_t n)
{
	kv_reply_array(c->out, n);
	for (size_t i = 0; i < n; i++)
		kv_reply_status(c->out, lines[i]);
}

void kv_err_arity(struct kv_call *c)
{
	kv_reply_errorf(c->out, "ERR wrong number of arguments for '%s' command", c->cmd->name);
}

void kv_err_expire(struct kv_call *c)
{
	kv_reply_errorf(c->out, "ERR invalid expire time in '%s' command", c->cmd->name);
}

void kv_err_oom(struct kv_call *c)
{
	kv_err(c, "ERR out of memory");
}

void kv_ping(struct kv_call *c)
{
	if (c->argc > 2)
		kv_err_arity(c);
	else if (c->argc == 2)
		kv_reply_bulk(c->out, c->argv[1], c->argl[1]);
	else
		kv_reply_status(c->out, "PONG");
}

void kv_echo(struct kv_call *c)
{
	kv_reply_bulk(c->out, c->argv[1], c->argl[1]);
}

/* One database: SELECT 0 works, any other number is out of range. */
void kv_select(struct kv_call *c)
{
	int64_t id;
	if (!kv_arg_ll(c, 1, &id))
		return;
	if (id < INT32_MIN || id > INT32_MAX)
		kv_err(c, "ERR value is out of range, value must between -2147483648 and 2147483647");
	else if (id != 0)
		kv_err(c, "ERR DB index is out of range");
	else
		kv_reply_status(c->out, "OK");
}

void kv_dbsize(struct kv_call *c)
{
	kv_reply_int(c->out, (int64_t)kv_db_size(c->db));
}

/* FLUSHALL and FLUSHDB [ASYNC | SYNC]: one database, so both empty it. */
void kv_flushall(struct kv_call *c)
{
	if (c->argc > 2 || (c->argc == 2 && !kv_arg_is(c, 1, "async") && !kv_arg_is(c, 1, "sync"))) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	kv_db_flush(c->db);
	kv_reply_status(c->out, "OK");
}
