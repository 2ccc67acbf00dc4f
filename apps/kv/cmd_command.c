/* SPDX-License-Identifier: MIT */
/* COMMAND and its subcommands (COUNT, DOCS, GETKEYS, INFO, LIST, HELP):
 * the command table as Redis 7 describes its own, so client libraries and
 * redis-cli (which asks COMMAND DOCS on start for its help and hints) find
 * what they expect. Summaries are this server's own words. */
#include "cmd_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "glob.h"

struct doc {
	const char *name;
	const char *group;     /* Redis's command group */
	const char *since;     /* the Redis version that added it */
	const char *summary;
};

/* Sorted by name (subcommands as "container|sub"). */
static const struct doc docs[] = {
	{ "append", "string", "2.0.0", "Add bytes to the end of a string value" },
	{ "client", "connection", "2.4.0", "Inspect and name client connections" },
	{ "client|getname", "connection", "2.6.9", "This connection's name" },
	{ "client|help", "connection", "5.0.0", "What CLIENT can do" },
	{ "client|id", "connection", "5.0.0", "This connection's id" },
	{ "client|info", "connection", "6.2.0", "This connection's state" },
	{ "client|list", "connection", "2.4.0", "Every connection's state" },
	{ "client|no-evict", "connection", "7.0.0", "Set the no-evict flag of this connection" },
	{ "client|setinfo", "connection", "7.2.0", "Record the client library's name or version" },
	{ "client|setname", "connection", "2.6.9", "Name this connection" },
	{ "command", "server", "2.8.13", "Describe every command" },
	{ "command|count", "server", "2.8.13", "How many commands there are" },
	{ "command|docs", "server", "7.0.0", "Documentation of commands" },
	{ "command|getkeys", "server", "2.8.13", "Which arguments of a command are keys" },
	{ "command|help", "server", "5.0.0", "What COMMAND can do" },
	{ "command|info", "server", "2.8.13", "Describe the named commands" },
	{ "command|list", "server", "7.0.0", "The names of the commands" },
	{ "config", "server", "2.0.0", "Read and change settings" },
	{ "config|get", "server", "2.0.0", "Settings matching patterns, with their values" },
	{ "config|help", "server", "5.0.0", "What CONFIG can do" },
	{ "config|set", "server", "2.0.0", "Change settings, all or none" },
	{ "dbsize", "server", "1.0.0", "How many keys there are" },
	{ "decr", "string", "1.0.0", "Subtract one from an integer value" },
	{ "decrby", "string", "1.0.0", "Subtract a number from an integer value" },
	{ "del", "generic", "1.0.0", "Remove keys" },
	{ "echo", "connection", "1.0.0", "Reply with the argument" },
	{ "exists", "generic", "1.0.0", "Count the named keys that exist" },
	{ "expire", "generic", "1.0.0", "Set a key's time to live in seconds" },
	{ "expireat", "generic", "1.2.0", "Set a key's expiry as a Unix time in seconds" },
	{ "flushall", "server", "1.0.0", "Remove every key" },
	{ "flushdb", "server", "1.0.0", "Remove every key of the database" },
	{ "get", "string", "1.0.0", "A key's value" },
	{ "getdel", "string", "6.2.0", "A key's value, removing the key" },
	{ "getex", "string", "6.2.0", "A key's value, changing its expiry" },
	{ "getrange", "string", "2.4.0", "Part of a string value" },
	{ "getset", "string", "1.0.0", "Set a value, replying the old one" },
	{ "hello", "connection", "6.0.0", "Choose the protocol and describe the server" },
	{ "incr", "string", "1.0.0", "Add one to an integer value" },
	{ "incrby", "string", "1.0.0", "Add a number to an integer value" },
	{ "incrbyfloat", "string", "2.6.0", "Add a decimal number to a numeric value" },
	{ "info", "server", "1.0.0", "Figures about the server" },
	{ "keys", "generic", "1.0.0", "Every key matching a pattern" },
	{ "mget", "string", "1.0.0", "The values of several keys" },
	{ "mset", "string", "1.0.1", "Set several keys at once" },
	{ "msetnx", "string", "1.0.1", "Set several keys at once when none exists" },
	{ "persist", "generic", "2.2.0", "Remove a key's expiry" },
	{ "pexpire", "generic", "2.6.0", "Set a key's time to live in milliseconds" },
	{ "pexpireat", "generic", "2.6.0", "Set a key's expiry as a Unix time in milliseconds" },
	{ "ping", "connection", "1.0.0", "Check the connection" },
	{ "psetex", "string", "2.6.0", "Set a value with a time to live in milliseconds" },
	{ "pttl", "generic", "2.6.0", "A key's time to live in milliseconds" },
	{ "quit", "connection", "1.0.0", "Close the connection" },
	{ "rename", "generic", "1.0.0", "Give a key another name" },
	{ "renamenx", "generic", "1.0.0", "Give a key a name no other key has" },
	{ "scan", "generic", "2.8.0", "Walk the keys with a cursor" },
	{ "select", "connection", "1.0.0", "Choose the database (there is one)" },
	{ "set", "string", "1.0.0", "Set a key's value" },
	{ "setex", "string", "2.0.0", "Set a value with a time to live in seconds" },
	{ "setnx", "string", "1.0.0", "Set a value when the key does not exist" },
	{ "setrange", "string", "2.2.0", "Overwrite part of a string value" },
	{ "strlen", "string", "2.2.0", "A string value's length" },
	{ "ttl", "generic", "1.0.0", "A key's time to live in seconds" },
	{ "type", "generic", "1.0.0", "A key's type" },
	{ "unlink", "generic", "4.0.0", "Remove keys" },
};

static int doc_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct doc *)elem)->name);
}

static const struct doc *find_doc(const char *name)
{
	return bsearch(name, docs, sizeof(docs) / sizeof(docs[0]), sizeof(docs[0]), doc_cmp);
}

const char *kv_cmd_group(const char *name)
{
	const struct doc *d = find_doc(name);
	return d ? d->group : NULL;
}

static void bulk_str(struct kv_call *c, const char *s)
{
	kv_reply_bulk(c->out, s, strlen(s));
}

/* Redis's flag names, in its order. */
static void reply_flags(struct kv_call *c, unsigned flags)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ KV_CMD_WRITE, "write" }, { KV_CMD_READONLY, "readonly" },
		{ KV_CMD_DENYOOM, "denyoom" }, { KV_CMD_FAST, "fast" },
	};
	size_t n = 0;
	for (size_t i = 0; i < 4; i++)
		n += (flags & names[i].bit) != 0;
	kv_reply_array(c->out, n);
	for (size_t i = 0; i < 4; i++)
		if (flags & names[i].bit)
			kv_reply_status(c->out, names[i].name);
}

/* ACL categories as Redis derives them: read or write, the group's
 * category, fast or slow. */
static void reply_categories(struct kv_call *c, const struct kv_cmd *cmd)
{
	const char *g = kv_cmd_group(cmd->name);
	const char *cat = !g ? NULL : !strcmp(g, "generic") ? "@keyspace" :
			  !strcmp(g, "string") ? "@string" : !strcmp(g, "connection") ?
			  "@connection" : NULL;
	bool rw = cmd->flags & (KV_CMD_WRITE | KV_CMD_READONLY);

	kv_reply_array(c->out, (size_t)rw + (cat != NULL) + 1);
	if (rw)
		kv_reply_status(c->out, cmd->flags & KV_CMD_WRITE ? "@write" : "@read");
	if (cat)
		kv_reply_status(c->out, cat);
	kv_reply_status(c->out, cmd->flags & KV_CMD_FAST ? "@fast" : "@slow");
}

/* One command's COMMAND INFO entry: name, arity, flags, first key, last
 * key, step, ACL categories, tips, key specifications (none given: the
 * positions say it all for these commands), subcommands. */
static void reply_info(struct kv_call *c, const struct kv_cmd *cmd)
{
	kv_reply_array(c->out, 10);
	bulk_str(c, cmd->name);
	kv_reply_int(c->out, cmd->arity);
	reply_flags(c, cmd->flags);
	kv_reply_int(c->out, cmd->first_key);
	kv_reply_int(c->out, cmd->last_key);
	kv_reply_int(c->out, cmd->key_step);
	reply_categories(c, cmd);
	kv_reply_array(c->out, 0);
	kv_reply_array(c->out, 0);
	kv_reply_array(c->out, cmd->nsubs);
	for (size_t i = 0; i < cmd->nsubs; i++)
		reply_info(c, &cmd->subs[i]);
}

/* COMMAND: every command's entry. */
void kv_command(struct kv_call *c)
{
	size_t n;
	const struct kv_cmd *t = kv_cmd_table(&n);
	kv_reply_array(c->out, n);
	for (size_t i = 0; i < n; i++)
		reply_info(c, &t[i]);
}

static void command_count(struct kv_call *c)
{
	size_t n;
	kv_cmd_table(&n);
	kv_reply_int(c->out, (int64_t)n);
}

/* COMMAND INFO [name ...]: the named commands' entries (null for a name
 * there is no command of), every command's with no name. */
static void command_info(struct kv_call *c)
{
	if (c->argc == 2) {
		kv_command(c);
		return;
	}
	kv_reply_array(c->out, c->argc - 2);
	for (uint32_t a = 2; a < c->argc; a++) {
		const struct kv_cmd *cmd = kv_cmd_lookup(c->argv[a], c->argl[a]);
		if (cmd)
			reply_info(c, cmd);
		else
			kv_reply_null(c->out);
	}
}

/* One command's COMMAND DOCS entry: its name, then a map of summary,
 * since, group and its subcommands' entries. */
static void reply_doc(struct kv_call *c, const struct kv_cmd *cmd, const char *shown)
{
	const struct doc *d = find_doc(cmd->name);

	bulk_str(c, shown);
	kv_reply_array(c->out, 6 + (cmd->nsubs ? 2 : 0));
	bulk_str(c, "summary");
	bulk_str(c, d ? d->summary : "");
	bulk_str(c, "since");
	bulk_str(c, d ? d->since : "");
	bulk_str(c, "group");
	bulk_str(c, d ? d->group : "");
	if (!cmd->nsubs)
		return;
	bulk_str(c, "subcommands");
	kv_reply_array(c->out, 2 * cmd->nsubs);
	for (size_t i = 0; i < cmd->nsubs; i++)
		reply_doc(c, &cmd->subs[i], cmd->subs[i].name);
}

/* COMMAND DOCS [name ...]: pairs of name and documentation; names there is
 * no command of are left out. */
static void command_docs(struct kv_call *c)
{
	size_t n, found = 0;
	const struct kv_cmd *t = kv_cmd_table(&n);

	if (c->argc == 2) {
		kv_reply_array(c->out, 2 * n);
		for (size_t i = 0; i < n; i++)
			reply_doc(c, &t[i], t[i].name);
		return;
	}
	for (uint32_t a = 2; a < c->argc; a++)
		found += kv_cmd_lookup(c->argv[a], c->argl[a]) != NULL;
	kv_reply_array(c->out, 2 * found);
	for (uint32_t a = 2; a < c->argc; a++) {
		const struct kv_cmd *cmd = kv_cmd_lookup(c->argv[a], c->argl[a]);
		if (cmd)
			reply_doc(c, cmd, cmd->name);
	}
}

/* COMMAND LIST [FILTERBY PATTERN pattern]: command names. */
static void command_list(struct kv_call *c)
{
	size_t n, shown = 0;
	const struct kv_cmd *t = kv_cmd_table(&n);
	bool filter = c->argc == 5 && kv_arg_is(c, 2, "filterby") && kv_arg_is(c, 3, "pattern");

	if (c->argc != 2 && !filter) {
		kv_err(c, KV_ERR_SYNTAX);
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			kv_reply_array(c->out, shown);
		for (size_t i = 0; i < n; i++) {
			if (filter && !kv_glob_match(c->argv[4], c->argl[4], t[i].name, strlen(t[i].name)))
				continue;
			if (pass == 0)
				shown++;
			else
				bulk_str(c, t[i].name);
		}
	}
}

/* COMMAND GETKEYS command [arg ...]: the arguments that are keys. */
static void command_getkeys(struct kv_call *c)
{
	const struct kv_cmd *cmd = kv_cmd_lookup(c->argv[2], c->argl[2]);
	uint32_t argc = c->argc - 2;

	if (!cmd) {
		kv_err(c, "ERR Invalid command specified");
		return;
	}
	if ((cmd->arity > 0 && (uint32_t)cmd->arity != argc) ||
	    (cmd->arity < 0 && argc < (uint32_t)-cmd->arity)) {
		kv_err(c, "ERR Invalid number of arguments specified for command");
		return;
	}
	if (!cmd->first_key) {
		kv_err(c, "ERR The command has no key arguments");
		return;
	}
	uint32_t last = cmd->last_key < 0 ? argc - 1 : (uint32_t)cmd->last_key;
	size_t n = 0;
	for (uint32_t i = (uint32_t)cmd->first_key; i <= last; i += (uint32_t)cmd->key_step)
		n++;
	kv_reply_array(c->out, n);
	for (uint32_t i = (uint32_t)cmd->first_key; i <= last; i += (uint32_t)cmd->key_step)
		kv_reply_bulk(c->out, c->argv[2 + i], c->argl[2 + i]);
}

static void command_help(struct kv_call *c)
{
	static const char *const lines[] = {
		"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"(no subcommand)", "    Every command's description.",
		"COUNT", "    How many commands there are.",
		"DOCS [<command-name> ...]", "    Documentation of the named commands, or of all.",
		"GETKEYS <full-command>", "    Which arguments of the command are keys.",
		"INFO [<command-name> ...]", "    Description of the named commands, or of all.",
		"LIST [FILTERBY PATTERN <pattern>]", "    Command names, those matching the pattern.",
		"HELP", "    This text.",
	};
	kv_reply_help(c, lines, sizeof(lines) / sizeof(lines[0]));
}

#define L  KV_CMD_NOKEY_LOCAL

const struct kv_cmd kv_command_subs[] = {
	{ "command|count",   2,  L, 0, 0, 0, command_count, NULL, 0 },
	{ "command|docs",    -2, L, 0, 0, 0, command_docs, NULL, 0 },
	{ "command|getkeys", -4, L, 0, 0, 0, command_getkeys, NULL, 0 },
	{ "command|help",    2,  L, 0, 0, 0, command_help, NULL, 0 },
	{ "command|info",    -2, L, 0, 0, 0, command_info, NULL, 0 },
	{ "command|list",    -2, L, 0, 0, 0, command_list, NULL, 0 },
};
_Static_assert(sizeof(kv_command_subs) / sizeof(kv_command_subs[0]) == KV_COMMAND_NSUBS,
	       "KV_COMMAND_NSUBS is the table's length");
