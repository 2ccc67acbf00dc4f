/* SPDX-License-Identifier: MIT */
/* COMMAND and its subcommands (COUNT, DOCS, GETKEYS, INFO, LIST, HELP):
 * the command table as Redis 7 describes its own, so client libraries and
 * redis-cli (which asks COMMAND DOCS on start for its help and hints) find
 * what they expect. Summaries are this server's own words. */
#include "cmd_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "glob.h"

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
	const char *g = cmd->group;
	const char *cat = !strcmp(g, "generic") ? "@keyspace" :
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
	size_t nsubs;
	const struct kv_cmd *subs = kv_cmd_subs(cmd, &nsubs);

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
	kv_reply_array(c->out, nsubs);
	for (size_t i = 0; i < nsubs; i++)
		reply_info(c, &subs[i]);
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

void kv_command_count(struct kv_call *c)
{
	size_t n;
	kv_cmd_table(&n);
	kv_reply_int(c->out, (int64_t)n);
}

/* COMMAND INFO [name ...]: the named commands' entries (null for a name
 * there is no command of), every command's with no name. */
void kv_command_info(struct kv_call *c)
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
	size_t nsubs;
	const struct kv_cmd *subs = kv_cmd_subs(cmd, &nsubs);

	bulk_str(c, shown);
	kv_reply_array(c->out, 6 + (nsubs ? 2 : 0));
	bulk_str(c, "summary");
	bulk_str(c, cmd->summary);
	bulk_str(c, "since");
	bulk_str(c, cmd->since);
	bulk_str(c, "group");
	bulk_str(c, cmd->group);
	if (!nsubs)
		return;
	bulk_str(c, "subcommands");
	kv_reply_array(c->out, 2 * nsubs);
	for (size_t i = 0; i < nsubs; i++)
		reply_doc(c, &subs[i], subs[i].name);
}

/* COMMAND DOCS [name ...]: pairs of name and documentation; names there is
 * no command of are left out. */
void kv_command_docs(struct kv_call *c)
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
void kv_command_list(struct kv_call *c)
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
void kv_command_getkeys(struct kv_call *c)
{
	const struct kv_cmd *cmd = kv_cmd_lookup(c->argv[2], c->argl[2]);
	uint32_t argc = c->argc - 2;

	if (!cmd) {
		kv_err(c, KV_ERR_GETKEYS_CMD);
		return;
	}
	if (!kv_cmd_arity_ok(cmd, argc)) {
		kv_err(c, KV_ERR_GETKEYS_ARITY);
		return;
	}
	if (!cmd->first_key) {
		kv_err(c, KV_ERR_GETKEYS_NONE);
		return;
	}
	uint32_t n = kv_cmd_nkeys(cmd, argc, c->argv + 2, c->argl + 2);

	kv_reply_array(c->out, n);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = kv_cmd_key_arg(cmd, k, argc, c->argv + 2, c->argl + 2);

		kv_reply_bulk(c->out, c->argv[2 + i], c->argl[2 + i]);
	}
}

void kv_command_help(struct kv_call *c)
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
