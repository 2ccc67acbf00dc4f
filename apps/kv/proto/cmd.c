/* SPDX-License-Identifier: MIT */
/* The command table, lookup, the checks Redis makes before running a
 * command, shared helpers, and the connection and server commands. */
#include "cmd_impl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "num.h"
#include "pubsub.h"
#include "txn.h"

#define W  KV_CMD_WRITE
#define R  KV_CMD_READONLY
#define M  KV_CMD_DENYOOM
#define F  KV_CMD_FAST
#define A  KV_CMD_ALLSHARDS
#define L  KV_CMD_NOKEY_LOCAL
#define K  KV_CMD_KEYNUM
#define D  KV_CMD_DESTKEYNUM
#define B  KV_CMD_BLOCKING
#define P  KV_CMD_PUBSUB
#define S  KV_CMD_STOREKEY

#define KV_COMMAND(name, fn, arity, flags, first, last, step, multi, group, since, summary) \
	{ name, fn, arity, flags, first, last, step, KV_MULTI_##multi, group, since, summary },
#define KV_SUBCOMMAND(name, fn, arity, flags, multi, group, since, summary) /* the next table */
static const struct kv_cmd table[] = {
#include "commands.def"
};
#undef KV_COMMAND
#undef KV_SUBCOMMAND

#define KV_COMMAND(name, fn, arity, flags, first, last, step, multi, group, since, summary)
#define KV_SUBCOMMAND(name, fn, arity, flags, multi, group, since, summary) \
	{ name, fn, arity, flags, 0, 0, 0, KV_MULTI_##multi, group, since, summary },
static const struct kv_cmd subs[] = {
#include "commands.def"
};
#undef KV_COMMAND
#undef KV_SUBCOMMAND

#define NCMDS (sizeof(table) / sizeof(table[0]))
#define NSUBS (sizeof(subs) / sizeof(subs[0]))

static bool arg_word(const char *const *argv, const size_t *argl, uint32_t i, const char *w)
{
	size_t n = strlen(w);

	return argl[i] == n && !strncasecmp(argv[i], w, n);
}

/* The argument after the last STORE option of a SORT-like request
 * (options from first + 1 on, skipped as SORT reads them), or first. */
static uint32_t store_key(uint32_t first, uint32_t argc, const char *const *argv,
			  const size_t *argl)
{
	uint32_t at = first;

	for (uint32_t j = first + 1; j < argc; j++) {
		uint32_t left = argc - j - 1;

		if (arg_word(argv, argl, j, "limit") && left >= 2)
			j += 2;
		else if ((arg_word(argv, argl, j, "by") || arg_word(argv, argl, j, "get")) && left >= 1)
			j++;
		else if (arg_word(argv, argl, j, "store") && left >= 1)
			at = ++j;
	}
	return at;
}

/* The last key of a command whose keys are where its record says
 * (neither counted nor found by a keyword). */
static inline uint32_t fixed_last_key(const struct kv_cmd *cmd, uint32_t argc)
{
	return cmd->last_key < 0 ? (uint32_t)((int)argc + cmd->last_key) : (uint32_t)cmd->last_key;
}

uint32_t kv_cmd_last_key(const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
			 const size_t *argl)
{
	uint32_t first = (uint32_t)cmd->first_key;
	int64_t n;

	if (cmd->flags & KV_CMD_STOREKEY)
		return store_key(first, argc, argv, argl);

	if (cmd->flags & (KV_CMD_KEYNUM | KV_CMD_DESTKEYNUM)) {
		/* from: the first counted key, after its count. The arguments
		 * the arity asks for after one key (LMPOP's direction) follow
		 * the keys: a count that leaves no room for them is the
		 * command's own syntax error, with one key */
		uint32_t from = cmd->flags & KV_CMD_DESTKEYNUM ? first + 2 : first;
		int64_t after = (int64_t)(cmd->arity < 0 ? -cmd->arity : cmd->arity) - from - 1;

		return from <= argc && kv_str2ll(argv[from - 1], argl[from - 1], &n) && n >= 1 &&
		       n <= (int64_t)(argc - from) - after ? from + (uint32_t)n - 1 : first;
	}
	return fixed_last_key(cmd, argc);
}

const char *kv_cmd_timeout(const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
			   const size_t *argl, int64_t *ms)
{
	uint32_t i = cmd->flags & KV_CMD_KEYNUM ? 1 : argc - 1;
	char buf[128], *end;
	long double v;

	if (!argl[i] || argl[i] >= sizeof(buf) || isspace((unsigned char)argv[i][0]))
		return "ERR timeout is not a float or out of range";
	memcpy(buf, argv[i], argl[i]);
	buf[argl[i]] = 0;
	errno = 0;
	v = strtold(buf, &end);
	if (end != buf + argl[i] || isnan(v) ||
	    (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || v == 0)))
		return "ERR timeout is not a float or out of range";
	/* Redis 7.0 converts to a long long without a range check: past it
	 * (inf included) the value is negative there */
	v = ceill(v * 1000.0L);
	if (v < 0 || v >= 9223372036854775808.0L)
		return "ERR timeout is negative";
	*ms = (int64_t)v;
	return NULL;
}

uint32_t kv_cmd_nkeys(const struct kv_cmd *cmd, uint32_t argc, const char *const *argv,
		      const size_t *argl)
{
	uint32_t first = (uint32_t)cmd->first_key, last;

	if (!first || first >= argc)
		return 0;
	last = cmd->flags & (KV_CMD_STOREKEY | KV_CMD_KEYNUM | KV_CMD_DESTKEYNUM) ?
		       kv_cmd_last_key(cmd, argc, argv, argl) : fixed_last_key(cmd, argc);
	if (last >= argc)
		last = argc - 1;
	if ((cmd->flags & KV_CMD_DESTKEYNUM) && last > first)
		return last - first; /* the destination, then last - first - 1 counted */
	if (cmd->flags & KV_CMD_STOREKEY)
		return last > first ? 2 : 1;
	return (last - first) / (uint32_t)cmd->key_step + 1;
}

const struct kv_cmd *kv_cmd_table(size_t *count)
{
	*count = NCMDS;
	return table;
}

/* Where each command sits by a hash of its name (open addressing, four
 * slots a command or more, so that a lookup rarely probes past the
 * first); each name, zero-padded to the longest, and its length; and
 * where each container's subcommands sit in subs[] (sorted by
 * "container|sub", so together). Filled once. */
#define NAME_SLOTS 1024u
_Static_assert(NCMDS * 4 <= NAME_SLOTS, "the name index is too full");
static uint16_t by_name[NAME_SLOTS]; /* the command's index + 1; 0: none */
static char padded_name[NCMDS][KV_CMD_NAME_MAX];
static uint8_t name_len[NCMDS];
static uint8_t sub_first[NCMDS], sub_count[NCMDS];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

/* The slot of a name in lower case, len >= 1: from its first, middle and
 * last bytes and its length, which tell the commands' names apart well
 * enough (1.1 probes a name on average) at a few instructions. */
static inline size_t name_slot(const char *lower, size_t len)
{
	size_t h = ((size_t)(unsigned char)lower[0] << 5) ^
		   ((size_t)(unsigned char)lower[len / 2] << 2) ^
		   (size_t)(unsigned char)lower[len - 1] ^ (len << 7);

	return h & (NAME_SLOTS - 1);
}

static void index_subs(size_t cmd)
{
	size_t plen = name_len[cmd];

	for (size_t s = 0; s < NSUBS; s++) {
		if (strncmp(subs[s].name, table[cmd].name, plen) || subs[s].name[plen] != '|')
			continue;
		if (!sub_count[cmd])
			sub_first[cmd] = (uint8_t)s;
		sub_count[cmd]++;
	}
}

static void index_table(void)
{
	for (size_t i = 0; i < NCMDS; i++) {
		size_t slot;

		name_len[i] = (uint8_t)strlen(table[i].name);
		memcpy(padded_name[i], table[i].name, name_len[i]);
		for (slot = name_slot(table[i].name, name_len[i]); by_name[slot];
		     slot = (slot + 1) & (NAME_SLOTS - 1))
			;
		by_name[slot] = (uint16_t)(i + 1);
		index_subs(i);
	}
}

const struct kv_cmd *kv_cmd_subs(const struct kv_cmd *cmd, size_t *n)
{
	size_t i = (size_t)(cmd - table);

	pthread_once(&index_once, index_table);
	if (i >= NCMDS || !sub_count[i]) {
		*n = 0;
		return NULL;
	}
	*n = sub_count[i];
	return &subs[sub_first[i]];
}

/* Every request looks its command up: the name in lower case and
 * zero-padded, then the names from its slot on until an empty one, each
 * compared whole at once. */
const struct kv_cmd *kv_cmd_lookup(const char *name, size_t len)
{
	char key[KV_CMD_NAME_MAX] = { 0 };

	if (!len || len > KV_CMD_NAME_MAX)
		return NULL;
	pthread_once(&index_once, index_table);
	for (size_t k = 0; k < len; k++)
		key[k] = (char)(name[k] >= 'A' && name[k] <= 'Z' ? name[k] + 32 : name[k]);
	for (size_t slot = name_slot(key, len); by_name[slot]; slot = (slot + 1) & (NAME_SLOTS - 1)) {
		size_t i = by_name[slot] - 1u;

		if (name_len[i] == len && !memcmp(key, padded_name[i], sizeof(key)))
			return &table[i];
	}
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
	kv_reply_errorf(c->out, KV_ERR_UNKNOWN_FMT,
			c_len(c->argv[0], c->argl[0], 128), c->argv[0], args);
}

/* The subcommand of container cmd that argv[1] names, any letter case, or
 * NULL. */
static const struct kv_cmd *find_sub(const struct kv_cmd *cmd, const char *name, size_t len)
{
	size_t plen = strlen(cmd->name) + 1, n;
	const struct kv_cmd *s = kv_cmd_subs(cmd, &n);

	for (size_t i = 0; i < n; i++) {
		const char *sub = s[i].name + plen;
		if (strlen(sub) == len && strncasecmp(sub, name, len) == 0)
			return &s[i];
	}
	return NULL;
}

const struct kv_cmd *kv_cmd_placed(const struct kv_cmd *cmd, uint32_t argc,
				   const char *const *argv, const size_t *argl)
{
	size_t n;
	const struct kv_cmd *sub;

	if (!cmd || argc < 2 || !kv_cmd_subs(cmd, &n))
		return cmd;
	sub = find_sub(cmd, argv[1], argl[1]);
	return sub && (sub->flags & KV_CMD_ALLSHARDS) ? sub : cmd;
}

/* Redis's text for a subcommand the container lacks. */
static void unknown_sub(struct kv_call *c, const struct kv_cmd *container)
{
	char upper[16];
	size_t n = strlen(container->name);
	for (size_t i = 0; i <= n; i++)
		upper[i] = (char)(container->name[i] >= 'a' && container->name[i] <= 'z' ?
				  container->name[i] - 32 : container->name[i]);
	kv_reply_errorf(c->out, KV_ERR_UNKNOWN_SUB_FMT,
			c_len(c->argv[1], c->argl[1], 128), c->argv[1], upper);
}

bool kv_cmd_check(struct kv_call *c)
{
	const struct kv_cmd *cmd = kv_cmd_lookup(c->argv[0], c->argl[0]);

	if (!cmd) {
		c->cmd = NULL;
		unknown_command(c);
		return false;
	}
	return kv_cmd_check_as(c, cmd);
}

bool kv_cmd_check_as(struct kv_call *c, const struct kv_cmd *cmd)
{
	size_t nsubs;

	c->cmd = cmd;
	if (kv_cmd_subs(cmd, &nsubs) && c->argc >= 2) {
		const struct kv_cmd *sub = find_sub(c->cmd, c->argv[1], c->argl[1]);
		if (!sub) {
			unknown_sub(c, c->cmd);
			return false;
		}
		c->cmd = sub;
	}
	if (!kv_cmd_arity_ok(c->cmd, c->argc)) {
		kv_err_arity(c);
		return false;
	}
	if (c->conn) {
		c->conn->last_cmd = c->cmd->name;
		c->conn->last_active = c->now;
	}
	return true;
}

/* A command with a typed result: into the caller's part, or, run whole
 * here, into one of its own that becomes the reply. The command wrote an
 * error when out grew. */
static void run_typed(struct kv_call *c)
{
	struct kv_part own, *p = c->part;
	size_t mark = c->out->len;

	if (!p) {
		kv_part_init(&own);
		c->part = p = &own;
	}
	c->cmd->fn(c);
	if (p->failed && c->out->len == mark)
		kv_err_oom(c);
	if (p != &own)
		return;
	if (c->out->len == mark && c->cmd->multi == KV_MULTI_SAVE)
		kv_save_finish(c->cfg, c->view, (const struct kv_part *const *)&p, 1, c->now, c->out);
	else if (c->out->len == mark)
		kv_part_reply(c->cmd->multi, p, c->out);
	kv_part_free(&own);
	c->part = NULL;
}

/* A write that did not reply an error counts one change per key it
 * names (one for a write without keys, such as FLUSHALL): Redis counts
 * per change, so a write that changed nothing (a DEL of a missing key)
 * or changed several members of one key counts differently there. */
static void count_changes(const struct kv_call *c, size_t mark)
{
	uint64_t n = 1;

	if (!(c->cmd->flags & KV_CMD_WRITE) || (c->out->len > mark && c->out->buf[mark] == '-'))
		return;
	if (c->cmd->first_key && (uint32_t)c->cmd->first_key < c->argc) {
		uint32_t first = (uint32_t)c->cmd->first_key;
		uint32_t last = kv_cmd_last_key(c->cmd, c->argc, c->argv, c->argl);
		last = last < c->argc ? last : c->argc - 1;
		n = last >= first ? (last - first) / (uint32_t)c->cmd->key_step + 1 : 1;
	}
	kv_db_count_changes(c->db, n);
}

/* A command over several keys spaced evenly (MSET's, MGET's, DEL's)
 * has them looked up ahead (kv_db_ahead()). */
static bool look_ahead(struct kv_call *c)
{
	const struct kv_cmd *cmd = c->cmd;
	uint32_t n;

	if (!cmd->first_key || cmd->last_key == cmd->first_key ||
	    (cmd->flags & (KV_CMD_STOREKEY | KV_CMD_DESTKEYNUM)))
		return false;
	n = kv_cmd_nkeys(cmd, c->argc, c->argv, c->argl);
	if (n < 2)
		return false;
	kv_db_ahead(c->db, c->argv, c->argl, (uint32_t)cmd->first_key,
		    (uint32_t)cmd->key_step, n);
	return true;
}

void kv_cmd_run(struct kv_call *c)
{
	size_t mark = c->out->len;

	bool write = c->cmd->flags & KV_CMD_WRITE;

	if (write && c->log && c->log->err) {
		kv_reply_errorf(c->out, KV_ERR_MISCONF_AOF_FMT, strerror(-c->log->err));
		return;
	}
	if (!kv_db_make_room(c->db) && (c->cmd->flags & KV_CMD_DENYOOM)) {
		kv_err(c, KV_ERR_OOM);
		return;
	}
	bool ahead = look_ahead(c);
	if (kv_multi_typed(c->cmd->multi))
		run_typed(c);
	else
		c->cmd->fn(c);
	if (ahead)
		kv_db_ahead_end(c->db);
	kv_txn_touch_cmd(c, mark); /* WATCH sees the write */
	if (write && c->log)
		c->log->wrote(c->log, c, mark);
	count_changes(c, mark);
}

void kv_cmd_exec(struct kv_call *c)
{
	size_t mark = c->out->len;

	if (!kv_cmd_check(c))
		kv_txn_refused(c, mark);
	else if (!kv_txn_queue(c))
		kv_cmd_run(c);
}

void kv_cmd_exec_as(struct kv_call *c, const struct kv_cmd *cmd)
{
	size_t mark = c->out->len;

	if (!kv_cmd_check_as(c, cmd))
		kv_txn_refused(c, mark);
	else if (!kv_txn_queue(c))
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
	kv_reply_errorf(c->out, KV_ERR_ARITY_FMT, c->cmd->name);
}

void kv_err_expire(struct kv_call *c)
{
	kv_reply_errorf(c->out, KV_ERR_EXPIRE_FMT, c->cmd->name);
}

void kv_err_oom(struct kv_call *c)
{
	kv_err(c, KV_ERR_NOMEM);
}

void kv_ping(struct kv_call *c)
{
	if (c->argc > 2) {
		kv_err_arity(c);
	} else if (c->conn && kv_pubsub_conn_subs(c->conn)) {
		/* a subscribed connection's PONG is shaped as its messages */
		kv_reply_array(c->out, 2);
		kv_reply_bulk(c->out, "pong", 4);
		kv_reply_bulk(c->out, c->argc == 2 ? c->argv[1] : "", c->argc == 2 ? c->argl[1] : 0);
	} else if (c->argc == 2) {
		kv_reply_bulk(c->out, c->argv[1], c->argl[1]);
	} else {
		kv_reply_status(c->out, "PONG");
	}
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
		kv_err(c, KV_ERR_DB_RANGE);
	else if (id != 0)
		kv_err(c, KV_ERR_DB_INDEX);
	else
		kv_reply_status(c->out, "OK");
}

/* The wall clock: seconds and microseconds, as two strings. */
void kv_time(struct kv_call *c)
{
	struct timespec ts;
	char sec[24], usec[8];
	clock_gettime(CLOCK_REALTIME, &ts);
	kv_reply_array(c->out, 2);
	kv_reply_bulk(c->out, sec, (size_t)snprintf(sec, sizeof(sec), "%lld", (long long)ts.tv_sec));
	kv_reply_bulk(c->out, usec, (size_t)snprintf(usec, sizeof(usec), "%ld", ts.tv_nsec / 1000));
}

void kv_dbsize(struct kv_call *c)
{
	c->part->n = (int64_t)kv_db_size(c->db);
}

/* FLUSHALL and FLUSHDB [ASYNC | SYNC]: one database, so both empty it. */
void kv_flushall(struct kv_call *c)
{
	if (c->argc > 2 || (c->argc == 2 && !kv_arg_is(c, 1, "async") && !kv_arg_is(c, 1, "sync"))) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	kv_db_flush(c->db); /* typed (KV_MULTI_OK): the executor says OK */
}
